package diocount

import (
	"os"
	"testing"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exploreAll explores a configuration to the end and calls visit for every
// reachable state and each of its transitions.
func exploreAll(t *testing.T, c Config, visit func(s State, l explore.Label, next State)) *explore.Result[State] {
	t.Helper()
	sys, err := NewSystem(c)
	require.NoError(t, err)
	r := explore.Explore[State](sys, explore.Options{Workers: 1})
	for id := 0; id < r.Len(); id++ {
		s := r.State(id)
		sys.Next(s, func(l explore.Label, n State) { visit(s, l, n) })
	}
	return r
}

// TestDIOCountStaleReadsNeverZero: under Relaxed, inode_dio_wait's first
// atomic_read does read stale values (Relaxed is not SC in disguise here),
// but in the real variants never a stale 0: i_mutex's release/acquire
// orders the writer's inode_dio_begin before truncate's read, and every 0
// stored after it is a moment with no counted I/O. Counting after the
// unlock (the mutant) loses exactly that, and a stale 0 appears. Under SC
// no read is stale.
func TestDIOCountStaleReadsNeverZero(t *testing.T) {
	for _, tc := range []struct {
		V         Variant
		m         memory.Model
		stale     bool // some read is stale
		staleZero bool // some stale read returns 0
	}{
		{Baseline, memory.Relaxed, true, false},
		{Patched, memory.Relaxed, true, false},
		{BenignSkipSync, memory.Relaxed, true, false},
		{Patched, memory.SC, false, false},
		{Patched, memory.TSO, false, false},
		{MutantBeginAfterUnlock, memory.Relaxed, true, true},
	} {
		c := StandardConfig(tc.V, tc.m, DAX, AIO)
		var stale, staleZero bool
		exploreAll(t, c, func(_ State, l explore.Label, _ State) {
			if Op(l.Kind) == OpWaitRead && int(l.ID) != int(int16(l.Arg)) {
				stale = true
				staleZero = staleZero || l.Arg == 0
			}
		})
		assert.Equal(t, tc.stale, stale, "%v %v: stale reads", tc.V, tc.m)
		assert.Equal(t, tc.staleZero, staleZero, "%v %v: stale reads of 0", tc.V, tc.m)
	}
}

// TestDIOCountSafeRowsRace: the SAFE verdicts are not won by schedules that
// never race. In the reachable states of the real variants, truncate
// sleeps in inode_dio_wait while a write is between get_block and its
// landing; with the benign skip, it sleeps on the caller's count alone (1)
// while a synchronous bio is in flight; and with AIO, it sleeps while an
// AIO bio is in flight after its writer's own inode_dio_end.
func TestDIOCountSafeRowsRace(t *testing.T) {
	inFlightWhileAsleep := func(c Config, pred func(sys *System, s State) bool) bool {
		sys, err := NewSystem(c)
		require.NoError(t, err)
		found := false
		exploreAll(t, c, func(s State, _ explore.Label, _ State) {
			found = found || (s.trunc == truncSleep && pred(sys, s))
		})
		return found
	}
	syncBioOnCallerCount := func(sys *System, s State) bool {
		for w := 0; w < sys.n; w++ {
			if sys.op(s, w) == opWaitBio && s.mem.Newest(locCount) == 1 {
				return true
			}
		}
		return false
	}
	aioAfterReturn := func(sys *System, s State) bool {
		for w := 0; w < sys.n; w++ {
			if s.w[w].queued > 0 && s.w[w].pc == 0 {
				return true // the writer returned (-EIOCBQUEUED) and started over
			}
			if s.w[w].queued > 0 && int(s.w[w].pc) == len(sys.prog[w]) {
				return true
			}
		}
		return false
	}
	daxMapped := func(sys *System, s State) bool {
		for w := 0; w < sys.n; w++ {
			if sys.op(s, w) == OpDAXStore {
				return true
			}
		}
		return false
	}
	for _, v := range []Variant{Baseline, Patched, BenignSkipSync} {
		assert.True(t, inFlightWhileAsleep(StandardConfig(v, memory.SC, DAX, DAX), daxMapped), "%v: DAX", v)
		c := StandardConfig(v, memory.SC, AIO)
		c.IOs = 2
		assert.True(t, inFlightWhileAsleep(c, aioAfterReturn), "%v: AIO", v)
	}
	assert.True(t, inFlightWhileAsleep(StandardConfig(BenignSkipSync, memory.SC, SyncDIO, SyncDIO), syncBioOnCallerCount))
	assert.False(t, inFlightWhileAsleep(StandardConfig(Baseline, memory.SC, SyncDIO, SyncDIO), syncBioOnCallerCount),
		"the baseline counts a sync bio twice")
}

// TestDIOCountEveryStepReachable: over the verdict table's configurations
// every kind of step is taken somewhere (the hole that get_block finds
// after a premature truncate, only with the begin-after-unlock mutant), and
// every step has a description of its own.
func TestDIOCountEveryStepReachable(t *testing.T) {
	seen := map[Op]bool{}
	hole := false
	for _, c := range Checks() {
		sys, err := NewSystem(c)
		require.NoError(t, err)
		exploreAll(t, c, func(_ State, l explore.Label, _ State) {
			op := Op(l.Kind)
			if !seen[op] {
				seen[op] = true
				assert.NotContains(t, sys.Describe(l), "step ", "op %d", op)
			}
			hole = hole || (op == OpMap && l.Arg == 1)
		})
	}
	for op := OpLock; op <= OpTruncFree; op++ {
		assert.True(t, seen[op], "op %d never taken", op)
	}
	assert.True(t, hole, "get_block never found a hole")
}

// TestDIOCountRelaxedBound: NewSystem refuses Relaxed
// configurations that may keep more live stores than Memory holds, and every
// one it accepts explores without running out of room (a panic).
func TestDIOCountRelaxedBound(t *testing.T) {
	refused, accepted := 0, 0
	for _, v := range Variants() {
		for _, k1 := range Kinds() {
			for _, k2 := range Kinds() {
				for ios := 1; ios <= 3; ios++ {
					for _, hold := range []bool{false, true} {
						c := Config{Variant: v, Memory: memory.Relaxed, Writers: []Kind{k1, k2}, IOs: ios, HoldLock: hold}
						sys, err := NewSystem(c)
						if err != nil {
							assert.Contains(t, err.Error(), "live stores")
							refused++
							continue
						}
						accepted++
						require.NotPanics(t, func() { explore.Explore[State](sys, explore.Options{Workers: 1}) }, c.Row().Name())
					}
				}
			}
		}
	}
	assert.Greater(t, accepted, refused)
	// Up to 3 I/Os a writer every configuration fits; beyond, some do not.
	for _, v := range Variants() {
		for ios := 4; ios <= 6; ios++ {
			c := Config{Variant: v, Memory: memory.Relaxed, Writers: []Kind{AIO, AIO}, IOs: ios}
			if _, err := NewSystem(c); err != nil {
				assert.Contains(t, err.Error(), "live stores")
				refused++
			}
		}
	}
	assert.NotZero(t, refused)
}

func TestDIOCountConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Variant: Patched, Memory: memory.SC, IOs: 1},
		{Variant: Patched, Memory: memory.SC, Writers: make([]Kind, 6), IOs: 1},
		{Variant: Patched, Memory: memory.SC, Writers: []Kind{DAX}},
		{Variant: 0, Memory: memory.SC, Writers: []Kind{DAX}, IOs: 1},
		{Variant: Patched, Writers: []Kind{DAX}, IOs: 1},
		{Variant: Patched, Memory: memory.SC, Writers: []Kind{9}, IOs: 1},
		{Variant: Patched, Memory: memory.SC, Writers: []Kind{AIO, AIO}, IOs: 60},
		{Variant: Patched, Memory: memory.SC, Writers: []Kind{DAX}, IOs: 1, TruncateAfter: 2},
	} {
		_, err := NewSystem(c)
		assert.Error(t, err, "%+v", c)
	}
}

// TestDIOCountCheckCatchesLeaks: the counter's own invariants, on states
// that no variant reaches: a count left over when everything is done, and
// a negative count.
func TestDIOCountCheckCatchesLeaks(t *testing.T) {
	sys, err := NewSystem(Config{Variant: Patched, Memory: memory.SC, Writers: []Kind{DAX}, IOs: 1})
	require.NoError(t, err)
	s := sys.Init()[0]
	require.NoError(t, sys.Check(s))
	s.trunc, s.w[0].pc = truncDone, uint8(len(sys.prog[0]))
	require.NoError(t, sys.Check(s))
	s.mem = counterRMW(s.mem, 0, 1)[0].mem
	assert.ErrorContains(t, sys.Check(s), "without its inode_dio_end")
	s.mem = counterRMW(sys.Init()[0].mem, 0, -1)[0].mem
	assert.ErrorContains(t, sys.Check(s), "without its inode_dio_begin")
}

func ExampleWriteCosts() {
	if err := WriteCosts(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// VARIANT                    I/O       inode_dio_begin (atomic_inc)  inode_dio_end (atomic_dec_and_test)  RMWs PER I/O  VS BASELINE  SCHEDULES
	// baseline                   dax       2                             2                                    4             =            1
	// baseline                   sync-dio  2                             2                                    4             =            1
	// baseline                   aio-dio   2                             2                                    4             =            6
	// patched                    dax       1                             1                                    2             -2 (-50%)    1
	// patched                    sync-dio  2                             2                                    4             =            1
	// patched                    aio-dio   2                             2                                    4             =            6
	// benign-skip-sync           dax       1                             1                                    2             -2 (-50%)    1
	// benign-skip-sync           sync-dio  1                             1                                    2             -2 (-50%)    1
	// benign-skip-sync           aio-dio   2                             2                                    4             =            6
	// mutant-skip-async          dax       1                             1                                    2             -2 (-50%)    1
	// mutant-skip-async          sync-dio  2                             2                                    4             =            1
	// mutant-skip-async          aio-dio   1                             1                                    2             -2 (-50%)    3
	// mutant-begin-after-unlock  dax       1                             1                                    2             -2 (-50%)    1
	// mutant-begin-after-unlock  sync-dio  2                             2                                    4             =            1
	// mutant-begin-after-unlock  aio-dio   2                             2                                    4             =            6
}

// TestDIOCountRelaxedRestsOnTheLock: if inode_unlock published nothing, the
// unordered atomic_inc of inode_dio_begin could stay invisible to
// truncate's atomic_read under Relaxed, and every real variant would free a
// block under a direct write; under SC and TSO nothing changes. So the
// Relaxed verdicts are not vacuous: they rest on i_mutex's release/acquire,
// which is why the comment in ext4_ext_direct_IO asks for the increment
// under i_mutex.
func TestDIOCountRelaxedRestsOnTheLock(t *testing.T) {
	for _, v := range []Variant{Baseline, Patched, BenignSkipSync} {
		for _, m := range memory.Models() {
			sys, err := NewSystem(StandardConfig(v, m, DAX, AIO))
			require.NoError(t, err)
			sys.unorderedLock = true
			r := explore.Explore[State](sys, explore.Options{})
			if m != memory.Relaxed {
				assert.Nil(t, r.Violation, "%v %v", v, m)
				continue
			}
			require.NotNil(t, r.Violation, "%v %v", v, m)
			assert.ErrorContains(t, r.Violation.Err, "after truncate freed")
			assert.Contains(t, r.Violation.Timeline(), "i_dio_count -> 0 (stale: newest is ")
		}
	}
}

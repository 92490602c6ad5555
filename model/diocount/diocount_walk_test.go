package diocount_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/diocount"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestDIOCountVerdicts is the verdict table of DIO counting with DAX ("ext4:
// Add DIO_SKIP_DIO_COUNT flag to dax_do_io()"): every row of diocount.Rows,
// explored exhaustively with the liveness check. The real variants and the
// benign skip for synchronous block DIO must be SAFE (false-positive
// controls); the mutants must be UNSAFE wherever their bug can show
// (skipping the callee's count for AIO with an AIO writer; counting after
// dropping i_mutex on the overwrite path), each with a counterexample that
// replays and ends with a direct write landing in a block that truncate
// freed earlier on the same path. With -v it prints the table.
func TestDIOCountVerdicts(t *testing.T) {
	checks, rows := diocount.Checks(), diocount.Rows()
	require.Len(t, rows, len(checks))
	var table []verdict.Verdict
	for i, row := range rows {
		c := checks[i]
		require.Equal(t, c.Row().Name(), row.Name())
		t.Run(row.Name(), func(t *testing.T) {
			v, err := row.Check(explore.Options{Liveness: true})
			require.NoError(t, err)
			table = append(table, v)
			require.NotEqual(t, verdict.Unknown, v.Outcome)
			assert.Equal(t, c.ExpectUnsafe(), v.Negative)
			if !c.ExpectUnsafe() {
				assert.Equal(t, verdict.Safe, v.Outcome, "expected SAFE, got:\n%s", exploretest.Timeline(v))
				return
			}
			require.NotNil(t, v.Violation, "the negative control was not caught")
			assert.Equal(t, explore.Safety, v.Violation.Kind)
			assert.Regexp(t, `^[A-E]'s (dax|sync-dio|aio-dio) write landed in d\d after truncate freed d\d$`, v.Violation.Err.Error())
			sys, err := diocount.NewSystem(c)
			require.NoError(t, err)
			s, err := explore.Replay[diocount.State](sys, v.Violation.Path)
			require.NoError(t, err, "the counterexample path must replay")
			assert.EqualError(t, sys.Check(s), v.Violation.Err.Error())
			dioCountAssertReason(t, c, v.Violation.Path)
		})
	}
	t.Logf("verdict table (%d rows):\n%s", len(table), dioCountTable(table))
}

// dioCountAssertReason checks that a counterexample fails for the reason
// the mutant is there for: the last step is a direct write landing (a DAX
// store or a bio), truncate freed the blocks before it, and for the AIO
// skip the landing is an AIO bio whose writer had already dropped the
// caller's count.
func dioCountAssertReason(t *testing.T, c diocount.Config, path []explore.Step) {
	t.Helper()
	require.NotEmpty(t, path)
	last := diocount.Op(path[len(path)-1].Label.Kind)
	assert.Contains(t, []diocount.Op{diocount.OpDAXStore, diocount.OpBioLands}, last, "the last step must land a write")
	freed := -1
	for i, st := range path {
		if diocount.Op(st.Label.Kind) == diocount.OpTruncFree {
			freed = i
		}
	}
	assert.True(t, freed >= 0 && freed < len(path)-1, "truncate must free the blocks before the landing")
	if c.Variant == diocount.MutantSkipAsync {
		lands := path[len(path)-1].Label
		assert.Equal(t, diocount.OpBioLands, diocount.Op(lands.Kind))
		assert.Contains(t, path[len(path)-1].Text, "AIO bio lands")
		w := int(lands.ID)
		returned := false
		for _, st := range path[:freed] {
			if st.Actor == w && diocount.Op(st.Label.Kind) == diocount.OpCallerEnd {
				returned = true
			}
		}
		assert.True(t, returned, "the AIO writer's own inode_dio_end must come before the free")
	}
}

// dioCountTable renders verdicts the way `flushproof check` does.
func dioCountTable(vs []verdict.Verdict) string {
	var b strings.Builder
	_ = verdict.WriteTable(&b, vs)
	return b.String()
}

// TestDIOCountSkipAsyncTimeline: the shortest counterexample for skipping
// the callee's count for AIO reads as the bug: the writer submits its bio
// and returns -EIOCBQUEUED, its own inode_dio_end brings the count to 0,
// truncate's inode_dio_wait sees 0 and frees the block, and the bio lands
// in it.
func TestDIOCountSkipAsyncTimeline(t *testing.T) {
	v, err := diocount.Check(diocount.StandardConfig(diocount.MutantSkipAsync, memory.SC, diocount.AIO, diocount.AIO), explore.Options{})
	require.NoError(t, err)
	require.NotNil(t, v.Violation)
	got := v.Violation.Timeline()
	t.Logf("\n%s", got)
	want := []string{
		"submit_bio(d0); returns -EIOCBQUEUED",
		"inode_dio_end (ext4) -> 0",
		"inode_dio_wait: i_dio_count -> 0",
		"ext4_truncate frees d0,d1",
		"A's AIO bio lands in d0",
		"A's aio-dio write landed in d0 after truncate freed d0",
	}
	at := 0
	for _, step := range want {
		i := strings.Index(got[at:], step)
		require.GreaterOrEqual(t, i, 0, "%q missing or out of order in:\n%s", step, got)
		at += i + len(step)
	}
	assert.Len(t, v.Violation.Path, 10)
}

// dioCountWalkStats counts what the random walks exercised, so that runs
// that never raced cannot pass for a check of the race.
type dioCountWalkStats struct {
	runs, steps, writers, aio int
	sleeps                    int // truncate slept in inode_dio_wait
	wokenByAIO                int // ... and the inode_dio_end that woke it was an AIO's dio_complete
	staleReads                int // inode_dio_wait read an older value than the newest
	beyondEOF                 int // a write came after the truncate
	memory                    map[memory.Model]int
}

func (s *dioCountWalkStats) String() string {
	return fmt.Sprintf("%d runs (%d steps, %d writers, %d AIO writers): truncate slept %d times (%d woken by an AIO completion), %d stale reads, %d writes after the truncate; memory %v",
		s.runs, s.steps, s.writers, s.aio, s.sleeps, s.wokenByAIO, s.staleReads, s.beyondEOF, s.memory)
}

// dioCountWalkProp draws a configuration (variant, memory model, 1 to
// maxWriters writers of random kinds, 1 to maxIOs direct writes each,
// overwrite or not, and after how many started writes the truncate may
// come) and walks one random schedule of it to its end with the invariant
// checked in every state; at the end every task must have finished (no
// deadlock, no lost wake-up). Under Relaxed, the number of writes is
// lowered until the configuration fits Memory's bound on live stores.
func dioCountWalkProp(variants []diocount.Variant, mems []memory.Model, maxWriters, maxIOs int, st *dioCountWalkStats) func(*rapid.T) {
	return func(t *rapid.T) {
		c := diocount.Config{
			Variant:  rapid.SampledFrom(variants).Draw(t, "variant"),
			Memory:   rapid.SampledFrom(mems).Draw(t, "memory"),
			IOs:      rapid.IntRange(1, maxIOs).Draw(t, "direct writes per writer"),
			HoldLock: rapid.Bool().Draw(t, "i_mutex held across the I/O"),
		}
		for i, n := 0, rapid.IntRange(1, maxWriters).Draw(t, "writers"); i < n; i++ {
			c.Writers = append(c.Writers, rapid.SampledFrom(diocount.Kinds()).Draw(t, "kind"))
		}
		_, err := diocount.NewSystem(c)
		for err != nil && c.Memory == memory.Relaxed && c.IOs > 1 {
			c.IOs--
			_, err = diocount.NewSystem(c)
		}
		c.TruncateAfter = rapid.IntRange(0, len(c.Writers)*c.IOs).Draw(t, "truncate after this many writes")
		sys, err := diocount.NewSystem(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Row().Name(), err)
		}
		path, end := exploretest.Walk(t, sys, 20000)
		if !sys.Done(end) {
			t.Fatalf("%s: the walk stopped after %d steps before every task finished (blocked: %b)\n%s", c.Row().Name(), len(path), explore.Blocked[diocount.State](sys, end), exploretest.DescribePath(sys, path))
		}
		if st == nil {
			return
		}
		st.runs++
		st.steps += len(path)
		st.writers += len(c.Writers)
		st.memory[c.Memory]++
		for _, k := range c.Writers {
			if k == diocount.AIO {
				st.aio++
			}
		}
		lastZero := diocount.Op(0) // the step that last brought i_dio_count to 0
		for _, l := range path {
			op := diocount.Op(l.Kind)
			if op.CounterRMW() < 0 && int16(l.Arg) == 0 {
				lastZero = op
			}
			switch op {
			case diocount.OpWaitPrepare:
				if l.Arg != 0 {
					st.sleeps++
				}
			case diocount.OpWaitWoken:
				if lastZero == diocount.OpAIOComplete {
					st.wokenByAIO++
				}
			case diocount.OpWaitRead:
				if int(l.ID) != int(int16(l.Arg)) {
					st.staleReads++
				}
			case diocount.OpBeyondEOF:
				st.beyondEOF++
			}
		}
	}
}

// TestDIOCountWalkLarge runs the real variants and the benign skip far past
// the exhaustive bound: up to 5 writers x 4 direct writes under SC and TSO,
// and up to 2 writers under Relaxed (Memory's bound on live stores), with
// random kinds, lock behaviour and schedules. 300 checks per memory family
// by default (60 under -short; -rapid.checks=N for more). It also asserts
// that the runs raced: truncate slept on in-flight I/O, was woken by an AIO
// completion, read stale counts (Relaxed), and came before later writes.
func TestDIOCountWalkLarge(t *testing.T) {
	real := []diocount.Variant{diocount.Baseline, diocount.Patched, diocount.BenignSkipSync}
	for _, tc := range []struct {
		name       string
		mems       []memory.Model
		maxWriters int
		maxIOs     int
	}{
		{"SC+TSO/5x10", []memory.Model{memory.SC, memory.TSO}, 5, 10},
		{"Relaxed/2x3", []memory.Model{memory.Relaxed}, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &dioCountWalkStats{memory: map[memory.Model]int{}}
			rapidctl.Check(t, 2000, dioCountWalkProp(real, tc.mems, tc.maxWriters, tc.maxIOs, st))
			t.Log(st)
			require.NotZero(t, st.runs)
			assert.Len(t, st.memory, len(tc.mems), "every memory model must be drawn")
			assert.NotZero(t, st.sleeps, "truncate never slept on in-flight I/O")
			assert.NotZero(t, st.wokenByAIO, "truncate was never held back by an AIO bio alone")
			assert.NotZero(t, st.beyondEOF, "no write came after a truncate")
			if tc.mems[0] == memory.Relaxed {
				assert.NotZero(t, st.staleReads, "no stale read under Relaxed")
			} else {
				assert.Zero(t, st.staleReads, "a stale read under SC or TSO")
			}
		})
	}
}

// TestDIOCountWalkMutants are the negative controls at larger bounds: rapid
// must find each mutant's bug on random walks of up to 3 writers x 2
// direct writes (kinds drawn, so the AIO skip needs an AIO writer to be
// drawn too), the failure must replay from the seed rapid printed, and it
// must be the freed-block landing, not something else.
func TestDIOCountWalkMutants(t *testing.T) {
	for _, v := range []diocount.Variant{diocount.MutantSkipAsync, diocount.MutantBeginAfterUnlock} {
		t.Run(v.String(), func(t *testing.T) {
			f := rapidctl.Expect(t, 1000, dioCountWalkProp([]diocount.Variant{v}, []memory.Model{memory.SC, memory.TSO}, 3, 2, nil))
			t.Logf("caught; replays with -rapid.seed=%s\n%s", f.Seed, f.Output)
			assert.Regexp(t, `write landed in d\d after truncate freed d\d`, f.Output)
		})
	}
}

// TestDIOCountCostTable: the read-modify-writes of i_dio_count per direct
// write, as the model's steps give them. The patch halves them for DAX
// (2 atomic_inc + 2 atomic_dec_and_test before, 1 + 1 after) and leaves
// block DIO alone; the benign skip would halve synchronous block DIO too;
// the AIO skip halves AIO, which is exactly what is unsafe.
func TestDIOCountCostTable(t *testing.T) {
	want := map[diocount.Variant][3]int{ // dax, sync-dio, aio-dio: RMWs per write
		diocount.Baseline:               {4, 4, 4},
		diocount.Patched:                {2, 4, 4},
		diocount.BenignSkipSync:         {2, 2, 4},
		diocount.MutantSkipAsync:        {2, 4, 2},
		diocount.MutantBeginAfterUnlock: {2, 4, 4},
	}
	costs, err := diocount.Costs()
	require.NoError(t, err)
	require.Len(t, costs, len(want)*3)
	for _, c := range costs {
		w := want[c.Variant][c.Kind-diocount.DAX]
		assert.Equal(t, w, c.RMWs(), "%v %v", c.Variant, c.Kind)
		assert.Equal(t, c.Begins, c.Ends, "%v %v: every inode_dio_begin has its inode_dio_end", c.Variant, c.Kind)
		if c.Kind == diocount.AIO {
			assert.Greater(t, c.Paths, 1, "the device's completion interleaves with the AIO writer's return")
		}
	}
	var b strings.Builder
	require.NoError(t, diocount.WriteCosts(&b))
	t.Logf("cost table:\n%s", b.String())
	assert.Regexp(t, `(?m)^patched\s+dax\s+1\s+1\s+2\s+-2 \(-50%\)`, b.String())
	assert.Regexp(t, `(?m)^baseline\s+dax\s+2\s+2\s+4\s+=`, b.String())
}

package odsync

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

func TestNewODSyncSystemRejectsBadConfigs(t *testing.T) {
	fua := spec.Config{VolatileCache: true, NativeFUA: true}
	for _, c := range []Config{
		{Variant: 0, Device: fua, Tasks: 1, Writes: 1, Blocks: 1},
		{Variant: 99, Device: fua, Tasks: 1, Writes: 1, Blocks: 1},
		{Variant: Patched, Device: fua, Tasks: 0, Writes: 1, Blocks: 1},
		{Variant: Patched, Device: fua, Tasks: 5, Writes: 1, Blocks: 1},
		{Variant: Patched, Device: fua, Tasks: 1, Writes: 1, Blocks: 0},
		{Variant: Patched, Device: fua, Tasks: 1, Writes: 1, Blocks: 5},
		{Variant: Patched, Device: fua, Tasks: 3, Writes: 1, Blocks: 3}, // 9 blocks
		{Variant: Patched, Device: fua, Tasks: 1, Writes: 0, Blocks: 1},
		{Variant: Patched, Device: fua, Tasks: 2, Writes: 5, Blocks: 4}, // up to 40 device writes
		{Variant: Patched, Device: fua, Tasks: 4, Writes: 5, Blocks: 1}, // up to 20 flushes
	} {
		_, err := NewSystem(c)
		assert.Error(t, err, "%+v", c)
	}
	_, err := NewSystem(Config{Variant: Patched, Device: fua, Tasks: 2, Writes: 5, Blocks: 3})
	assert.NoError(t, err, "the random walks' bound must be accepted")
}

// TestODSyncLabelsDetermineSteps: a counterexample is a list of labels, so
// one label must lead to one state, and every label must render as a step
// of the code (not the fallback "step N").
func TestODSyncLabelsDetermineSteps(t *testing.T) {
	for _, v := range Variants() {
		for _, dev := range spec.Configs() {
			sys, err := NewSystem(Config{Variant: v, Device: dev, Tasks: 2, Writes: 1, Blocks: 1, Failures: true, Writeback: true})
			require.NoError(t, err)
			require.NoError(t, explore.LabelsDetermine[State](sys))
			r := explore.Explore[State](sys, explore.Options{})
			for i := 0; i < r.Len(); i++ {
				sys.Next(r.State(i), func(l explore.Label, _ State) {
					if d := sys.Describe(l); d == "" || strings.HasPrefix(d, "step ") {
						t.Fatalf("%v %v: label %+v renders as %q", v, dev, l, d)
					}
				})
			}
		}
	}
}

// TestODSyncSafeIsNotVacuous: the real variants are SAFE although the
// check has work to do. In the reachable states of the overwrite bound,
// write()s return blocks (obligations exist), a crash could leave newer
// data than a returned write() (which the obligation accepts), some
// write() returns -EIO, and, with a volatile cache, the flush matters: while
// a task waits for generic_write_sync's flush, a crash may still leave an
// older content on a block the write() is about to return.
func TestODSyncSafeIsNotVacuous(t *testing.T) {
	for _, v := range []Variant{Baseline, Patched} {
		for _, dev := range spec.Configs() {
			sys, err := NewSystem(OverwriteConfig(v, dev))
			require.NoError(t, err)
			r := explore.Explore[State](sys, explore.Options{})
			require.True(t, r.Exhausted)
			require.Nil(t, r.Violation)
			var acked, newer, eio, atRisk bool
			for i := 0; i < r.Len(); i++ {
				st := r.State(i)
				for b := 0; b < 2; b++ {
					set := st.CrashSet(b)
					if a := st.Acked(b); a > 0 {
						acked = true
						for _, w := range set.Contents() {
							newer = newer || (w > 0 && st.Version(w) > a)
						}
					}
					if tk := st.task[0]; tk.pc == pcFlushWait && b < int(tk.n) {
						atRisk = atRisk || set.Initial || hasOlder(st, set, tk.round)
					}
				}
				sys.Next(st, func(l explore.Label, _ State) {
					eio = eio || (l.Kind == odkReturn && uint8(l.Arg) == 0)
				})
			}
			assert.True(t, acked, "%v %v: no write() ever returned a block", v, dev)
			assert.True(t, newer, "%v %v: newer data than an acknowledged write() never at stake", v, dev)
			assert.True(t, eio, "%v %v: no write() returned -EIO", v, dev)
			if dev.VolatileCache {
				assert.True(t, atRisk, "%v %v: the flush never mattered", v, dev)
			}
		}
	}
}

func hasOlder(st State, set spec.CrashSet, ver uint8) bool {
	for _, w := range set.Contents() {
		if w > 0 && st.ver[w-1] < ver {
			return true
		}
	}
	return false
}

// TestODSyncCallCostCommands pins the device commands the model issues per
// write(): the pure direct path loses exactly the PREFLUSH of
// generic_write_sync, the fallback paths are unchanged by the patch.
func TestODSyncCallCostCommands(t *testing.T) {
	fua, emu, none := spec.Configs()[0], spec.Configs()[1], spec.Configs()[2]
	cases := []struct {
		V    Variant
		dev  spec.Config
		path Path
		want string
	}{
		{Baseline, fua, PureDirect, "W1 submit b0 FUA; F1 submit"},
		{Patched, fua, PureDirect, "W1 submit b0 FUA"},
		{Baseline, emu, PureDirect, "W1 submit b0 FUA; W1 data done, post-flush submitted; F1 submit"},
		{Patched, emu, PureDirect, "W1 submit b0 FUA; W1 data done, post-flush submitted"},
		{Baseline, none, PureDirect, "W1 submit b0 FUA; F1 submit"},
		{Patched, none, PureDirect, "W1 submit b0 FUA"},
		{Baseline, fua, FallbackAll, "W1 submit b0; F1 submit"},
		{Patched, fua, FallbackAll, "W1 submit b0; F1 submit"},
		{Patched, fua, ShortDirect, "W1 submit b0 FUA; W2 submit b1; F1 submit"},
		{MutantSkipSyncOnFallback, fua, ShortDirect, "W1 submit b0 FUA; W2 submit b1"},
		{MutantDropFUA, fua, PureDirect, "W1 submit b0"},
		{MutantFallbackDirty, fua, FallbackAll, ""},
	}
	for _, tc := range cases {
		c, err := CallCost(tc.V, tc.dev, tc.path)
		require.NoError(t, err)
		assert.Equal(t, tc.want, commandList(c.Commands), "%v %v %v", tc.V, tc.dev, tc.path)
	}
}

func commandList(es []spec.Event) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, e.String())
	}
	return strings.Join(parts, "; ")
}

// With emulated FUA (docs/odsync.md, "Cost per write()"): the baseline
// costs a write and two flushes per write(), the patched kernel a write and
// one flush.
func ExampleCallCost() {
	emulated := spec.Config{VolatileCache: true}
	for _, v := range []Variant{Baseline, Patched} {
		c, err := CallCost(v, emulated, PureDirect)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d write, %d flushes, %v\n", v, c.PlainWrites()+c.FUAWrites, c.Flushes, c.Latency(DefaultLatency))
	}
	// Output:
	// baseline: 1 write, 2 flushes, 16.578ms
	// patched: 1 write, 1 flushes, 8.354ms
}

// shortReturns explores one writer's write() calls of two blocks with EIO
// on every device configuration and returns how many of the reachable
// states run the short-write path (the direct part short, the fallback's
// write-back just failed) and the write() returns of a short count (some
// blocks, not all).
func shortReturns(t *testing.T, v Variant) (paths int, short []string) {
	for _, dev := range spec.Configs() {
		sys, err := NewSystem(Config{Variant: v, Device: dev, Tasks: 1, Writes: 2, Blocks: 2, Failures: true})
		require.NoError(t, err)
		r := explore.Explore[State](sys, explore.Options{})
		require.True(t, r.Exhausted)
		for i := 0; i < r.Len(); i++ {
			st := r.State(i)
			sys.Next(st, func(l explore.Label, _ State) {
				tk := st.task[0]
				if l.Kind == odkWBDone && tk.wbFor == callerFallback && tk.k > 0 && l.Arg>>8 == 1 {
					paths++
				}
				if ret := int(uint8(l.Arg)); l.Kind == odkReturn && ret > 0 && ret < 2 {
					short = append(short, fmt.Sprintf("%v %v: %s", v, dev, sys.Describe(l)))
				}
			})
		}
	}
	return paths, short
}

// TestODSyncShortWriteSyncs: a write() whose direct part was short and
// whose buffered fallback failed gets only its direct bytes back from
// direct_write_fallback (fs/libfs.c), and blkdev_write_iter still calls
// generic_write_sync for ret > 0; blkdev_fsync's
// file_check_and_advance_wb_err reports the fallback's write-back error,
// so the write() fails: in the baseline and the patched kernel no
// write() returns a short count. The durability obligation cannot tell
// (the direct blocks went with REQ_FUA and are durable, and a failed
// write() promises nothing), so this test is what catches
// mutate.ODSyncShortSkipsSync, which returns the short count without the
// sync.
func TestODSyncShortWriteSyncs(t *testing.T) {
	for _, v := range []Variant{Baseline, Patched} {
		paths, short := shortReturns(t, v)
		assert.Positive(t, paths, "%v: the short-write path with a failed fallback is never taken", v)
		assert.Empty(t, short, "%v: a write() returned a short count", v)
	}
	defer mutate.Set(t, mutate.ODSyncShortSkipsSync)()
	for _, v := range []Variant{Baseline, Patched} {
		_, short := shortReturns(t, v)
		assert.NotEmpty(t, short, "%v under %v: no write() returned a short count", v, mutate.ODSyncShortSkipsSync)
	}
}

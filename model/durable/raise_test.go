package durable

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// TestBarrierLanes: per instruction, the locations whose views nothing
// reads before a full barrier or the thread's end: a load of x takes x
// out until the smp_mb after it, a fully ordered RMW counts as a barrier
// before its read, a cmpxchg does not (its failure is a plain read), and
// a loop without a barrier that reads y keeps y out everywhere in it.
func TestBarrierLanes(t *testing.T) {
	src := `C lanes
{ }
P0(int *x, int *y, atomic_t *z)
{
	int r0;
	int r1;
	r0 = READ_ONCE(*x);
	smp_mb();
	r1 = READ_ONCE(*y);
	r0 = atomic_inc_return(z);
	r1 = READ_ONCE(*x);
	r0 = atomic_cmpxchg(z, 1, 2);
	r1 = READ_ONCE(*y);
}
P1(int *x, int *y)
{
	int r0;
	for (;;) {
		r0 = READ_ONCE(*y);
		if (r0 != 0)
			break;
	}
	WRITE_ONCE(*x, 1);
}
exists (0:r0=0)
`
	tt, err := litmus.Parse("lanes.litmus", []byte(src))
	require.NoError(t, err)
	s, err := compileDurable(memory.LKMM, tt, "lanes.litmus")
	require.NoError(t, err)
	s.startAhead()
	loc := func(name string) memory.LocSet {
		for i, l := range tt.Locs {
			if l == name {
				return 1 << i
			}
		}
		t.Fatalf("no location %s", name)
		return 0
	}
	x, y, z := loc("x"), loc("y"), loc("z")
	all := x | y | z
	// P0: the load of x, smp_mb, the load of y, inc_return (a barrier
	// first), the load of x, the cmpxchg of z, the load of y, the end.
	assert.Equal(t, []memory.LocSet{all &^ x, all, all &^ y, all, all &^ x &^ z &^ y, all &^ z &^ y, all &^ y, all}, s.barrierLanes[0])
	// P1 reads y in a loop and then stores x: at the loop's load
	// neither is free, at the store y is (nothing reads it again) and x
	// is not; z is free everywhere.
	p1 := s.barrierLanes[1]
	assert.Equal(t, z, p1[0], "P1's load of y")
	store := -1
	for pc, in := range s.code[1] {
		if in.kind == iAccess && in.access.Op == litmus.OpWriteOnce {
			store = pc
		}
	}
	require.Positive(t, store)
	assert.Equal(t, y|z, p1[store], "P1's store of x")
	assert.Equal(t, all, p1[len(s.code[1])], "P1's end")
}

// TestRaiseToBarrierKeepsVerdicts: the flush sequence at 2 tasks x 2
// fsyncs under LKMM, and its mutant with a relaxed numbering, give the same
// verdicts with the views raised before barriers (RaiseToBarrier) and
// without, and raising them leaves fewer states.
func TestRaiseToBarrierKeepsVerdicts(t *testing.T) {
	for _, c := range []struct {
		path, verdict string
	}{
		{"../../examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus", "SAFE"},
		{"../../examples/litmus/xfs-flushseq/xfs-flushseq-mutant-inc_return_relaxed.litmus", "UNSAFE"},
	} {
		tt, err := litmus.ParseFile(c.path)
		require.NoError(t, err)
		d, err := Read(c.path, tt)
		require.NoError(t, err)
		for _, dev := range d.Devices {
			cfg := Config{Model: memory.LKMM, Device: dev, Crash: d.Crash, Failures: d.Failures}
			run := func(raise bool) (string, int) {
				sys, err := d.system(cfg)
				require.NoError(t, err)
				if !raise {
					for t := range sys.op.barrierLanes {
						clear(sys.op.barrierLanes[t])
					}
				}
				r := explore.Explore[State](sys, explore.Options{Liveness: true})
				require.True(t, r.Exhausted || r.Violation != nil)
				if r.Violation != nil {
					return "UNSAFE", r.Len()
				}
				return "SAFE", r.Len()
			}
			v, n := run(true)
			v0, n0 := run(false)
			assert.Equal(t, c.verdict, v, "%s %v", c.path, dev)
			assert.Equal(t, v0, v, "%s %v", c.path, dev)
			if v == "SAFE" {
				assert.Less(t, n, n0, "%s %v: raising views merges states", c.path, dev)
			}
			t.Logf("%s %v: %s, %d states (%d without raising views)", c.path, dev, v, n, n0)
		}
	}
}

// TestRaiseToBarrierWeakFence: with smp_mb weakened to take nothing in
// (mutate.FenceWeak), raising views before it would hide the missing
// barrier from the reduced search only; since the reduction asks the
// barrier (memory.MbTakesIn), the flush sequence is UNSAFE under LKMM
// with reductions and without.
func TestRaiseToBarrierWeakFence(t *testing.T) {
	defer mutate.Set(t, mutate.FenceWeak)()
	const path = "../../examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus"
	tt, err := litmus.ParseFile(path)
	require.NoError(t, err)
	d, err := Read(path, tt)
	require.NoError(t, err)
	for _, dev := range d.Devices {
		cfg := Config{Model: memory.LKMM, Device: dev, Crash: d.Crash, Failures: d.Failures}
		for _, noReduce := range []bool{false, true} {
			sys, err := d.system(cfg)
			require.NoError(t, err)
			r := explore.Explore[State](sys, explore.Options{NoReduce: noReduce, Liveness: true})
			assert.NotNil(t, r.Violation, "%v, reductions off %v: the weakened smp_mb is caught", dev, noReduce)
		}
	}
}

// TestCanonicalCommutesDurable is TestCanonicalCommutes on durability
// files, with a device: under LKMM, for every state as the steps made it
// (expanded as it is, not in canonical form), the canonical forms of its
// successors are those of the successors of its canonical form:
// forgetting marks, raising views before barriers (RaiseToBarrier) and
// compacting (Compact) keep every future, so the search that stores
// canonical forms misses nothing and its counterexamples replay
// (explore's path rebuild needs this). One exception is allowed, and only
// one: where compacting made a pending barrier publish nothing new, it
// completes (Subsumption in model/memory/lkmm.go), and the canonical form
// lacks the successors where it completes later, which it subsumes; its
// own must then be successors of the state. Views raised without
// compacting after broke it (a state kept a store that the raise
// elsewhere dropped), and so did compacting in one pass (a blank store
// kept for propForbids at one location that compacting the next made
// needless: Canonical was not idempotent).
func TestCanonicalCommutesDurable(t *testing.T) {
	for _, path := range []string{
		"../../examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus",
		"../../examples/litmus/diocount/diocount-baseline-sync-dio.litmus",
		"../../examples/jbd2-commit/jbd2-commit.c",
		"../../examples/iowq/iowq.c",
	} {
		tt, err := readAny(path)
		require.NoError(t, err)
		d, err := Read(path, tt)
		require.NoError(t, err)
		cfg := Config{Model: memory.LKMM, Device: d.Devices[0], Crash: d.Crash, Failures: d.Failures}
		sys, err := d.system(cfg)
		require.NoError(t, err)
		succ := func(x State) map[State]bool {
			out := map[State]bool{}
			sys.Next(x, func(_ explore.Label, y State) { out[sys.Canonical(y)] = true })
			return out
		}
		bad, subsumed := 0, 0
		forms := walkCanonical[State](sys, 40_000, func(x, c State) bool {
			require.Equal(t, c, sys.Canonical(c), "%s: Canonical is idempotent", path)
			real, canon := succ(x), succ(c)
			if !maps.Equal(real, canon) && completed(x, c) {
				// Compacting made a pending barrier publish nothing new,
				// and it completed (memory's subsumption): the canonical
				// form lacks the successors where it completes later,
				// which it subsumes, and has no other.
				subsumed++
				for y := range canon {
					if !assert.True(t, real[y], "%s: a successor of the canonical form only", path) {
						bad++
						break
					}
				}
			} else if !assert.Equal(t, real, canon, "%s: the successors of a state and of its canonical form", path) {
				bad++
			}
			return bad <= 3
		})
		assert.Zero(t, bad, path)
		t.Logf("%s: %d canonical forms, their successors commute with Canonical (%d where a barrier completed leaves out subsumed ones)", path, forms, subsumed)
	}
}

// completed reports whether a thread's barrier is pending in x and not in
// its canonical form c.
func completed(x, c State) bool {
	for t := range memory.MaxThreads {
		if x.op.mem.Pending(t) && !c.op.mem.Pending(t) {
			return true
		}
	}
	return false
}

// readAny reads a durability litmus file or a kernel C harness.
func readAny(path string) (*litmus.Test, error) {
	if kernelc.IsHarness(path) {
		return kernelc.ReadFile(path, nil, func(string) {})
	}
	return litmus.ParseFile(path)
}

package explore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// The parallel search (Options.Workers > 1) must compute exactly what the
// sequential one (Workers: 1) computes: the same state numbering, parents
// and labels (so the same paths), statistics and counterexample.

// parallelFrom lowers the level size from which the search goes parallel,
// so that small systems exercise the parallel code, for the test's duration.
func parallelFrom(t *testing.T, n int) {
	t.Helper()
	old := parallelMinLevel
	parallelMinLevel = n
	t.Cleanup(func() { parallelMinLevel = old })
}

// requireSameResult compares a parallel result with the sequential one.
func requireSameResult[S comparable](t *testing.T, seq, par *Result[S], what string) {
	t.Helper()
	require.Equal(t, seq.States, par.States, "%s: states", what)
	require.Equal(t, seq.Transitions, par.Transitions, "%s: transitions", what)
	require.Equal(t, seq.MaxDepth, par.MaxDepth, "%s: depth", what)
	require.Equal(t, seq.Exhausted, par.Exhausted, "%s: exhausted", what)
	require.Equal(t, seq.Len(), par.Len(), "%s: Len", what)
	if seq.Violation == nil {
		require.Nil(t, par.Violation, "%s", what)
	} else {
		require.NotNil(t, par.Violation, "%s: %v", what, seq.Violation)
		require.Equal(t, seq.Violation.Kind, par.Violation.Kind, "%s", what)
		require.Equal(t, seq.Violation.Err.Error(), par.Violation.Err.Error(), "%s", what)
		require.Len(t, par.Violation.Path, len(seq.Violation.Path), "%s", what)
		require.Equal(t, seq.Violation.Path, par.Violation.Path, "%s: the same counterexample", what)
	}
	require.Equal(t, seq.parent, par.parent, "%s: parents", what)
	require.Equal(t, seq.label, par.label, "%s: labels", what)
	for i := 0; i < seq.Len(); i++ {
		if seq.State(i) != par.State(i) {
			t.Fatalf("%s: state %d differs: %v vs %v", what, i, seq.State(i), par.State(i))
		}
	}
}

// compareWorkers explores sys sequentially and with 2 and 3 workers.
func compareWorkers[S comparable](t *testing.T, sys System[S], opt Options, what string) *Result[S] {
	t.Helper()
	opt.Workers = 1
	seq := Explore(sys, opt)
	for _, w := range []int{2, 3} {
		opt.Workers = w
		par := Explore(sys, opt)
		requireSameResult(t, seq, par, fmt.Sprintf("%s, %d workers", what, w))
	}
	return seq
}

// graph: a pseudo-random graph over n states, 1 to 4 successors each;
// some states break the invariant, some have no successors (and some of
// those wait), the states below trap wait and lead only to one another:
// violations of every kind, several per level, found from many parents at
// once.
type graph struct {
	n               uint32
	bad, dead, wait uint32 // a state is bad if mix(s+3)%bad == 1 (0: never), ...
	trap            uint32
}

func mix(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

func (g graph) Actors() []string { return []string{"a", "b", "c", "d"} }
func (g graph) Init() []uint32   { return []uint32{g.n - 1, g.n - 2, g.n - 1} }
func (g graph) Next(s uint32, yield func(Label, uint32)) {
	if g.dead != 0 && mix(s+7)%g.dead == 0 {
		return
	}
	for a := uint32(0); a < 1+mix(s)%4; a++ {
		t := mix(s*4+a+1) % g.n
		if s < g.trap {
			t %= g.trap
		}
		yield(Label{Actor: uint8(a), ID: uint16(t), Arg: uint16(t >> 16)}, t)
	}
}
func (g graph) Describe(l Label) string { return fmt.Sprintf("to %d", uint32(l.Arg)<<16|uint32(l.ID)) }
func (g graph) Check(s uint32) error {
	if g.bad != 0 && mix(s+3)%g.bad == 1 {
		return fmt.Errorf("bad state %d", s)
	}
	return nil
}
func (g graph) Waiting(s uint32) uint64 {
	if s < g.trap || g.wait != 0 && mix(s+11)%g.wait == 0 {
		return 2
	}
	return 0
}

// symGraph: the graph with a symmetry that maps s to s with its lowest bit
// cleared (so the states of a pair are one class).
type symGraph struct{ graph }

func (g symGraph) Next(s uint32, yield func(Label, uint32)) { g.graph.Next(s&^1, yield) }
func (g symGraph) Check(s uint32) error                     { return g.graph.Check(s &^ 1) }
func (g symGraph) Waiting(s uint32) uint64                  { return g.graph.Waiting(s &^ 1) }
func (symGraph) Canonical(s uint32) uint32                  { return s &^ 1 }

func TestParallelExploreToySystems(t *testing.T) {
	parallelFrom(t, 1)
	for name, tc := range map[string]struct {
		sys System[[2]int]
		opt Options
	}{
		"grid":           {grid{n: 2, bad: none, noStep: none}, Options{}},
		"counterexample": {grid{n: 5, bad: [2]int{2, 3}, noStep: none}, Options{}},
		"deadlock":       {grid{n: 3, bad: none, noStep: [2]int{1, 1}}, Options{}},
		"budget":         {grid{n: 100, bad: none, noStep: none}, Options{MaxStates: 50}},
		"big grid":       {grid{n: 300, bad: none, noStep: none}, Options{}},
		"big cex":        {grid{n: 300, bad: [2]int{170, 150}, noStep: none}, Options{Liveness: true}},
		"big deadlock":   {grid{n: 300, bad: none, noStep: [2]int{100, 123}}, Options{}},
		"big budget":     {grid{n: 300, bad: none, noStep: none}, Options{MaxStates: 20000}},
		"liveness":       {grid{n: 40, bad: none, noStep: none}, Options{Liveness: true}},
	} {
		compareWorkers(t, tc.sys, tc.opt, name)
	}
	for _, opt := range []Options{{}, {Liveness: true}} {
		r := compareWorkers[spinState](t, spin{}, opt, fmt.Sprintf("spin %+v", opt))
		assert.Equal(t, opt.Liveness, r.Violation != nil)
	}
}

// star: state 0 has 2n transitions to n states (each reached twice, by
// different labels), which lead to one another.
type star struct{ n, bad uint32 }

func (g star) Actors() []string { return []string{"a"} }
func (g star) Init() []uint32   { return []uint32{0} }
func (g star) Next(s uint32, yield func(Label, uint32)) {
	if s == 0 {
		for i := uint32(0); i < 2*g.n; i++ {
			yield(Label{ID: uint16(i)}, 1+mix(i)%g.n)
		}
		return
	}
	yield(Label{ID: 1}, 1+mix(s)%g.n)
	yield(Label{ID: 2}, 1+mix(s+1)%(2*g.n))
}
func (g star) Describe(l Label) string { return fmt.Sprint(l.ID) }
func (g star) Check(s uint32) error {
	if s == g.bad {
		return fmt.Errorf("bad")
	}
	return nil
}
func (g star) Waiting(uint32) uint64 { return 0 }

func TestParallelExploreFanOut(t *testing.T) {
	parallelFrom(t, 1)
	for _, g := range []star{{n: 20000}, {n: 20000, bad: 1 + mix(30001)%20000}, {n: 20000, bad: 30017}} {
		for _, opt := range []Options{{}, {MaxStates: 5}, {Liveness: true}} {
			compareWorkers[uint32](t, g, opt, fmt.Sprintf("%+v %+v", g, opt))
		}
	}
}

func TestParallelExploreViolationOrder(t *testing.T) {
	kinds := map[ViolationKind]int{}
	for _, threshold := range []int{1, 4096} {
		parallelFrom(t, threshold)
		for i, g := range []graph{
			{n: 200000},
			{n: 200000, bad: 50000},
			{n: 200000, bad: 5000},
			{n: 200000, dead: 3000, wait: 2},
			{n: 200000, dead: 300, wait: 4, bad: 90000},
			{n: 200000, dead: 20, wait: 1000},
			{n: 1 << 20, bad: 400000},
			{n: 200000, trap: 30},
			{n: 200000, trap: 3000, bad: 150000},
		} {
			opts := []Options{{}, {MaxStates: 30000}, {Liveness: true}}
			if threshold > 1 {
				opts = opts[:1] // sequential and parallel levels mixed
			}
			for _, opt := range opts {
				what := fmt.Sprintf("threshold %d, graph %d %+v, %+v", threshold, i, g, opt)
				r := compareWorkers[uint32](t, g, opt, what)
				rs := compareWorkers[uint32](t, symGraph{g}, opt, "symmetric "+what)
				for _, r := range []*Result[uint32]{r, rs} {
					if r.Violation != nil {
						kinds[r.Violation.Kind]++
					}
				}
			}
		}
	}
	// The graphs must exercise every kind of violation.
	assert.NotZero(t, kinds[Safety])
	assert.NotZero(t, kinds[Deadlock])
	assert.NotZero(t, kinds[BlockedForever])
}

// TestParallelExploreDefaultWorkers: Workers 0 (GOMAXPROCS) gives the
// sequential result too.
func TestParallelExploreDefaultWorkers(t *testing.T) {
	for _, g := range []graph{{n: 400000}, {n: 200000, trap: 3000, bad: 150000}} {
		seq := Explore[uint32](g, Options{Workers: 1, Liveness: true})
		par := Explore[uint32](g, Options{Liveness: true})
		requireSameResult(t, seq, par, "default workers")
	}
}

// TestParallelExploreFsync: every row of the flush-sequence table (every
// variant under every memory model, 2 tasks x 2 fsyncs, and the DAX, waiter
// sleeps and log force rows), and 3 tasks x 1 fsync (more symmetry), with
// every level expanded in parallel.
func TestParallelExploreFsync(t *testing.T) {
	parallelFrom(t, 1)
	cfgs := flushseq.Checks()
	for _, v := range flushseq.Variants() {
		if v != flushseq.MutantDAXSkips {
			cfgs = append(cfgs, flushseq.Config{Variant: v, Memory: memory.Relaxed, Tasks: 3, Fsyncs: 1, FlushFailures: true})
		}
	}
	for _, cfg := range cfgs {
		sys, err := flushseq.NewSystem(cfg)
		require.NoError(t, err)
		what := fmt.Sprintf("%v %v %s", cfg.Variant, cfg.Memory, cfg.Describe())
		r := compareWorkers[flushseq.State](t, sys, Options{}, what)
		require.Equal(t, cfg.ExpectUnsafe(), r.Violation != nil, "%s", what)
		if r.Violation != nil {
			// The counterexample is a real path (symmetry) that replays.
			s, err := Replay[flushseq.State](sys, r.Violation.Path)
			require.NoError(t, err, "%s", what)
			assert.EqualError(t, sys.Check(s), r.Violation.Err.Error(), "%s", what)
		}
	}
	// With liveness, and a budget cut in the middle of a level.
	sys, err := flushseq.NewSystem(flushseq.StandardConfig(flushseq.Patched, memory.Relaxed))
	require.NoError(t, err)
	compareWorkers[flushseq.State](t, sys, Options{Liveness: true}, "patched relaxed, liveness")
	r := compareWorkers[flushseq.State](t, sys, Options{MaxStates: 10001}, "patched relaxed, budget")
	assert.False(t, r.Exhausted)
}

func TestParallelExploreDevice(t *testing.T) {
	parallelFrom(t, 256)
	for _, bug := range []device.Bug{device.Correct, device.FlushCoversInFlight, device.CrashRevertsDurable} {
		w := device.StandardWorkload(spec.CacheFUA, bug)
		s, err := device.NewSystem(w)
		require.NoError(t, err)
		what := fmt.Sprintf("device %v %v", spec.CacheFUA, bug)
		r := compareWorkers[device.State](t, s, Options{Liveness: true}, what)
		if bug == device.Correct {
			// Pinned by TestDeviceStateCountStandard.
			assert.Equal(t, 130364, r.States)
			assert.Equal(t, 192375, r.Transitions)
			assert.True(t, r.Exhausted)
		}
		if bug == device.Correct {
			// CheckDeviceSound with the default number of workers.
			d, err := device.CheckSound(w, Options{Liveness: true})
			require.NoError(t, err)
			requireSameResult(t, r, d, what+", CheckDeviceSound")
		}
	}
	// The completeness system interns device states as it goes: it is
	// searched sequentially whatever Workers says (the race detector would
	// see it otherwise), with the same result.
	w := device.StandardWorkload(spec.Config{VolatileCache: true, NativeFUA: true}, device.Correct)
	seq, err := device.CheckComplete(w, Options{Workers: 1})
	require.NoError(t, err)
	par, err := device.CheckComplete(w, Options{Workers: 2})
	require.NoError(t, err)
	assert.Equal(t, 24464, par.States)
	assert.Equal(t, seq.Stats.States, par.States)
	assert.Equal(t, seq.Transitions, par.Transitions)
}

// sleepy is a graph whose Next takes a millisecond.
type sleepy struct{ graph }

func (g sleepy) Next(s uint32, yield func(Label, uint32)) {
	time.Sleep(time.Millisecond)
	g.graph.Next(s, yield)
}

// TestParallelExploreProgress: Progress is called about once a second, from
// the goroutine that called Explore (the race detector checks that calls
// do not overlap), while the parallel search runs.
func TestParallelExploreProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2 seconds")
	}
	parallelFrom(t, 1)
	var calls []Stats
	r := Explore[uint32](sleepy{graph{n: 3000}}, Options{Workers: 2, Progress: func(s Stats) { calls = append(calls, s) }})
	require.True(t, r.Exhausted)
	t.Logf("%v; progress: %v", r.Stats, calls)
	require.NotEmpty(t, calls)
	assert.Less(t, calls[0].States, r.States)
}

// panicky is a graph whose Next panics at a few states.
type panicky struct{ graph }

func (g panicky) Next(s uint32, yield func(Label, uint32)) {
	if s > 1000 && mix(s)%20000 == 0 {
		panic("boom")
	}
	g.graph.Next(s, yield)
}

// TestParallelExplorePanics: a panic in a worker reaches the caller, as in
// the sequential search.
func TestParallelExplorePanics(t *testing.T) {
	parallelFrom(t, 1)
	g := panicky{graph{n: 200000}}
	require.PanicsWithValue(t, "boom", func() { Explore[uint32](g, Options{Workers: 1}) })
	for range 20 {
		require.PanicsWithValue(t, "boom", func() { Explore[uint32](g, Options{Workers: 2}) })
	}
}

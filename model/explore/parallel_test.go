package explore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parallel search (Options.Workers > 1) must compute exactly what the
// sequential one (Workers: 1) computes: the same state numbering, parents
// and labels (so the same paths), statistics and counterexample.

// compareWorkers explores sys sequentially and with 2 and 3 workers, every
// level of at least minLevel states expanded in parallel, and requires the
// same result (Result.Diff).
func compareWorkers[S comparable](t *testing.T, sys System[S], opt Options, minLevel int, what string) *Result[S] {
	t.Helper()
	opt.ParallelMinLevel = minLevel
	opt.Workers = 1
	seq := Explore(sys, opt)
	for _, w := range []int{2, 3} {
		opt.Workers = w
		require.NoError(t, seq.Diff(Explore(sys, opt)), "%s, %d workers", what, w)
	}
	return seq
}

// graph: a pseudo-random graph over n states, 1 to 4 successors each;
// some states break the invariant, some have no successors (and in some of
// those b has not returned), in the states below trap b has not returned
// and they lead only to one another:
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
func (g graph) Unfinished(s uint32) uint64 {
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
func (g symGraph) Unfinished(s uint32) uint64               { return g.graph.Unfinished(s &^ 1) }
func (symGraph) Canonical(s uint32) uint32                  { return s &^ 1 }

func TestParallelExploreToySystems(t *testing.T) {
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
		compareWorkers(t, tc.sys, tc.opt, 1, name)
	}
	for _, opt := range []Options{{}, {Liveness: true}} {
		r := compareWorkers[spinState](t, spin{}, opt, 1, fmt.Sprintf("spin %+v", opt))
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
func (g star) Unfinished(uint32) uint64 { return 0 }

func TestParallelExploreFanOut(t *testing.T) {
	for _, g := range []star{{n: 20000}, {n: 20000, bad: 1 + mix(30001)%20000}, {n: 20000, bad: 30017}} {
		for _, opt := range []Options{{}, {MaxStates: 5}, {Liveness: true}} {
			compareWorkers[uint32](t, g, opt, 1, fmt.Sprintf("%+v %+v", g, opt))
		}
	}
}

func TestParallelExploreViolationOrder(t *testing.T) {
	kinds := map[ViolationKind]int{}
	for _, threshold := range []int{1, 4096} {
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
				r := compareWorkers[uint32](t, g, opt, threshold, what)
				rs := compareWorkers[uint32](t, symGraph{g}, opt, threshold, "symmetric "+what)
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
		require.NoError(t, seq.Diff(par), "default workers")
	}
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
	var calls []Stats
	r := Explore[uint32](sleepy{graph{n: 3000}}, Options{Workers: 2, ParallelMinLevel: 1, Progress: func(s Stats) { calls = append(calls, s) }})
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
	g := panicky{graph{n: 200000}}
	require.PanicsWithValue(t, "boom", func() { Explore[uint32](g, Options{Workers: 1}) })
	for range 20 {
		require.PanicsWithValue(t, "boom", func() { Explore[uint32](g, Options{Workers: 2, ParallelMinLevel: 1}) })
	}
}

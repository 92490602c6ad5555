package flushseq

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/memory"
)

// TestParallelExploreFsync: every row of the flush-sequence table (every
// variant under every memory model, 2 tasks x 2 fsyncs, and the DAX, waiter
// sleeps and log force rows), and 3 tasks x 1 fsync (more symmetry), with
// every level expanded in parallel.
func TestParallelExploreFsync(t *testing.T) {
	cfgs := Checks()
	for _, v := range Variants() {
		if v != MutantDAXSkips {
			cfgs = append(cfgs, Config{Variant: v, Memory: memory.Relaxed, Tasks: 3, Fsyncs: 1, FlushFailures: true})
		}
	}
	for _, cfg := range cfgs {
		sys, err := NewSystem(cfg)
		require.NoError(t, err)
		what := fmt.Sprintf("%v %v %s", cfg.Variant, cfg.Memory, cfg.Describe())
		r := exploretest.SameWithWorkers[State](t, sys, explore.Options{}, 1, what)
		require.Equal(t, cfg.ExpectUnsafe(), r.Violation != nil, "%s", what)
		if r.Violation != nil {
			// The counterexample is a real path (symmetry) that replays.
			s, err := explore.Replay[State](sys, r.Violation.Path)
			require.NoError(t, err, "%s", what)
			assert.EqualError(t, sys.Check(s), r.Violation.Err.Error(), "%s", what)
		}
	}
	// With liveness, and a budget cut in the middle of a level.
	sys, err := NewSystem(StandardConfig(Patched, memory.Relaxed))
	require.NoError(t, err)
	exploretest.SameWithWorkers[State](t, sys, explore.Options{Liveness: true}, 1, "patched relaxed, liveness")
	r := exploretest.SameWithWorkers[State](t, sys, explore.Options{MaxStates: 10001}, 1, "patched relaxed, budget")
	assert.False(t, r.Exhausted)
}

// TestCompactSameAsWhole: the search that keeps the states collapsed (the
// default for State) gives the search that keeps them whole, state for
// state and counterexample for counterexample, sequentially and in
// parallel: every variant under SC and LKMM at the table's bound, 3 tasks
// x 1 fsync (symmetry), and with liveness and a budget cut in the middle
// of a level.
func TestCompactSameAsWhole(t *testing.T) {
	var cfgs []Config
	for _, v := range Variants() {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			cfgs = append(cfgs, StandardConfig(v, m))
		}
	}
	cfgs = append(cfgs, Config{Variant: Patched, Memory: memory.TSO, Tasks: 3, Fsyncs: 1, FlushFailures: true})
	for _, cfg := range cfgs {
		sys, err := NewSystem(cfg)
		require.NoError(t, err)
		what := fmt.Sprintf("%v %v %s", cfg.Variant, cfg.Memory, cfg.Describe())
		r := exploretest.SameWithStores[State](t, sys, explore.Options{}, 1, what)
		require.Equal(t, cfg.ExpectUnsafe(), r.Violation != nil, "%s", what)
	}
	sys, err := NewSystem(StandardConfig(Patched, memory.Relaxed))
	require.NoError(t, err)
	exploretest.SameWithStores[State](t, sys, explore.Options{Liveness: true, Obligations: true}, 1, "patched relaxed, liveness")
	r := exploretest.SameWithStores[State](t, sys, explore.Options{MaxStates: 10001}, 1, "patched relaxed, budget")
	assert.False(t, r.Exhausted)
}

// TestJudgedAtReturnOnly: Judged, which takes only the steps of tasks at
// pcReturn, says what taking every task's steps says, in every state of
// every row of the table (each variant under each memory model, with the
// DAX, waiter sleeps and log force rows), and 3 tasks x 1 fsync; and
// some state of each row judges the obligation.
func TestJudgedAtReturnOnly(t *testing.T) {
	cfgs := append(Checks(), Config{Variant: Patched, Memory: memory.LKMM, Tasks: 3, Fsyncs: 1, FlushFailures: true})
	for _, cfg := range cfgs {
		sys, err := NewSystem(cfg)
		require.NoError(t, err)
		what := fmt.Sprintf("%v %v %s", cfg.Variant, cfg.Memory, cfg.Describe())
		seen := map[State]bool{}
		queue := sys.Init()
		judged := 0
		for len(queue) > 0 {
			st := queue[0]
			queue = queue[1:]
			if seen[st] {
				continue
			}
			seen[st] = true
			fast, every := sys.Judged(st, false), sys.judged(st, true)
			require.Equal(t, every, fast, "%s: state %d", what, len(seen))
			if fast != 0 {
				judged++
			}
			if sys.Check(st) != nil {
				continue
			}
			sys.Next(st, func(_ explore.Label, n State) {
				if n = sys.Canonical(n); !seen[n] {
					queue = append(queue, n)
				}
			})
		}
		assert.NotZero(t, judged, "%s: %d states, none judged", what, len(seen))
	}
}

// Package exploretest helps a protocol's tests check its system against
// the search engine's promises, on the protocol's own small instances:
//
//   - [SameWithWorkers]: the parallel search gives the sequential search's
//     result, state numbering and counterexample included.
//
// explore.LabelsDetermine, the other promise a system must keep (one label,
// one successor), needs no testing.T and lives beside the engine.
package exploretest

import (
	"testing"

	"github.com/flushproof/flushproof/model/explore"
)

// SameWithWorkers explores sys sequentially and then with 2 and 3 workers,
// every BFS level of at least minLevel states expanded in parallel, fails t
// if a parallel search differs from the sequential one, and returns the
// sequential result.
func SameWithWorkers[S comparable](t testing.TB, sys explore.System[S], opt explore.Options, minLevel int, what string) *explore.Result[S] {
	t.Helper()
	opt.ParallelMinLevel = minLevel
	opt.Workers = 1
	seq := explore.Explore(sys, opt)
	for _, w := range []int{2, 3} {
		opt.Workers = w
		if err := seq.Diff(explore.Explore(sys, opt)); err != nil {
			t.Fatalf("%s, %d workers: %v", what, w, err)
		}
	}
	return seq
}

// Same fails t if two results of one system differ (explore.Result.Diff).
func Same[S comparable](t testing.TB, a, b *explore.Result[S], what string) {
	t.Helper()
	if err := a.Diff(b); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

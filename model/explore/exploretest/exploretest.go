// Package exploretest helps a protocol's tests check its system against
// the search engine's promises, on the protocol's own small instances:
//
//   - [SameWithWorkers]: the parallel search gives the sequential search's
//     result, state numbering and counterexample included.
//   - [SameWithStores]: the search that keeps states collapsed gives the
//     result of the one that keeps them whole, sequentially and in
//     parallel.
//   - [NeverReturns]: a search found an actor that cannot return (a
//     deadlock, or blocked forever), and its path replays to it.
//   - [LostWakeup]: with the mutation WaiterNeverWakes, and only with it,
//     some actor never returns.
//
// explore.LabelsDetermine, the other promise a system must keep (one label,
// one successor), needs no testing.T and lives beside the engine.
//
// It also has the helpers the protocols' rapid tests share: [Walk], a
// random run of a system with its invariant checked in every state,
// [DescribePath], the steps of a path as a failure message shows them, and
// [Timeline], what a verdict says went wrong.
package exploretest

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// LostWakeup explores sys with liveness as it is, where every actor must be
// able to return (the search exhausted, no violation), then with
// mutate.WaiterNeverWakes on, sequentially and in parallel alike, and
// returns that search's violation with what NeverReturns says of it. A
// protocol's test then checks that the actor stuck is its lost waiter.
func LostWakeup[S comparable](t testing.TB, sys explore.System[S]) (v *explore.Violation, end S, stuck uint64) {
	t.Helper()
	opt := explore.Options{Liveness: true}
	clean := explore.Explore(sys, opt)
	if clean.Violation != nil || !clean.Exhausted {
		t.Fatalf("without the mutation: violation %v, exhausted %v: the test needs a system where every actor returns", clean.Violation, clean.Exhausted)
	}
	defer mutate.Set(t, mutate.WaiterNeverWakes)()
	r := SameWithWorkers(t, sys, opt, 1, "a waiter that never wakes")
	end, stuck = NeverReturns(t, sys, r)
	return r.Violation, end, stuck
}

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

// SameWithStores explores sys with every state kept whole
// (explore.StoreWhole), sequentially, then collapsed (explore.StoreCompact)
// sequentially and with 2 and 3 workers, every BFS level of at least
// minLevel states expanded in parallel, fails t if a collapsed search
// differs from the whole one (explore.Result.Diff: the numbering, the
// states, their parents and labels, the statistics, the verdict and the
// counterexample) or if the states of sys cannot be collapsed, and returns
// the whole search's result.
func SameWithStores[S comparable](t testing.TB, sys explore.System[S], opt explore.Options, minLevel int, what string) *explore.Result[S] {
	t.Helper()
	opt.ParallelMinLevel = minLevel
	opt.Workers, opt.Store = 1, explore.StoreWhole
	whole := explore.Explore(sys, opt)
	for _, w := range []int{1, 2, 3} {
		opt.Workers, opt.Store = w, explore.StoreCompact
		r := explore.Explore(sys, opt)
		if !r.Compact {
			t.Fatalf("%s: the states of %T cannot be collapsed", what, *new(S))
		}
		if err := whole.Diff(r); err != nil {
			t.Fatalf("%s, collapsed, %d workers: %v", what, w, err)
		}
	}
	return whole
}

// Same fails t if two results of one system differ (explore.Result.Diff).
func Same[S comparable](t testing.TB, a, b *explore.Result[S], what string) {
	t.Helper()
	if err := a.Diff(b); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// NeverReturns checks that r, a search of sys, ended on an actor that
// cannot return, and returns the state its path replays to and the actors
// stuck there: for a Deadlock, the actors blocked in that state (every
// unfinished one, as no step is enabled), which the message names; for
// BlockedForever, the one actor the message names, unfinished in that
// state. It fails t on any other outcome, so that a test cannot pass on a
// safety violation or a search that found nothing.
func NeverReturns[S comparable](t testing.TB, sys explore.System[S], r *explore.Result[S]) (end S, stuck uint64) {
	t.Helper()
	v := r.Violation
	if v == nil {
		t.Fatalf("no violation (%v, exhausted %v): every actor can return", r.Stats, r.Exhausted)
	}
	end, err := explore.Replay(sys, v.Path)
	if err != nil {
		t.Fatalf("the %s counterexample does not replay: %v\n%s", v.Kind, err, v.Timeline())
	}
	names := sys.Actors()
	switch v.Kind {
	case explore.Deadlock:
		var steps int
		sys.Next(end, func(explore.Label, S) { steps++ })
		stuck = explore.Blocked(sys, end)
		if steps != 0 || stuck == 0 || stuck != sys.Unfinished(end) {
			t.Fatalf("the deadlock's path ends in a state with %d steps and blocked actors %b of unfinished %b\n%s", steps, stuck, sys.Unfinished(end), v.Timeline())
		}
		if msg := v.Err.Error(); !strings.HasPrefix(msg, explore.ActorList(names, stuck)+" ha") {
			t.Fatalf("the deadlock names %q, the state blocks %s", msg, explore.ActorList(names, stuck))
		}
	case explore.BlockedForever:
		// "A has not returned and no schedule lets it return", or with a
		// symmetry reduction "A, B have not returned and no schedule lets
		// them all return".
		msg := v.Err.Error()
		for _, verb := range []string{" has not returned and no schedule lets ", " have not returned and no schedule lets "} {
			if i := strings.Index(msg, verb); i > 0 {
				for _, n := range strings.Split(msg[:i], ", ") {
					for a := range names {
						if names[a] == n {
							stuck |= 1 << a
						}
					}
				}
			}
		}
		if stuck == 0 || sys.Unfinished(end)&stuck == 0 {
			t.Fatalf("%q: the path ends in a state where the actors %b have not returned\n%s", v.Err, sys.Unfinished(end), v.Timeline())
		}
	default:
		t.Fatalf("a %s violation, not a waiter that never returns: %v\n%s", v.Kind, v.Err, v.Timeline())
	}
	return end, stuck
}

// Walk is a random run of an explorer system chosen by rapid: from an
// initial state, each step draws one of the enabled transitions, and the
// invariant is checked in every state. It reaches bounds that exhaustive
// search cannot (more tasks, more rounds), and a failure shrinks and
// replays like any rapid test case. It returns the path taken and the
// state reached (after maxSteps steps, or where no transition is enabled).
// On a violation it fails t with the timeline of the path.
func Walk[S comparable](t *rapid.T, sys explore.System[S], maxSteps int) ([]explore.Label, S) {
	inits := sys.Init()
	s := inits[0]
	if len(inits) > 1 {
		s = inits[rapid.IntRange(0, len(inits)-1).Draw(t, "init")]
	}
	var path []explore.Label
	type succ struct {
		l explore.Label
		s S
	}
	var next []succ
	for step := 0; ; step++ {
		if err := sys.Check(s); err != nil {
			t.Fatalf("invariant broken after %d steps: %v\n%s", step, err, DescribePath(sys, path))
		}
		if step == maxSteps {
			return path, s
		}
		next = next[:0]
		sys.Next(s, func(l explore.Label, n S) { next = append(next, succ{l, n}) })
		if len(next) == 0 {
			return path, s
		}
		i := 0
		if len(next) > 1 {
			i = rapid.IntRange(0, len(next)-1).Draw(t, "transition")
		}
		path = append(path, next[i].l)
		s = next[i].s
	}
}

// DescribePath renders a path of sys one step a line: its number, the
// actor's name and sys.Describe of the label.
func DescribePath[S comparable](sys explore.System[S], path []explore.Label) string {
	var b strings.Builder
	actors := sys.Actors()
	for i, l := range path {
		who := fmt.Sprint(l.Actor)
		if int(l.Actor) < len(actors) {
			who = actors[l.Actor]
		}
		fmt.Fprintf(&b, "%4d  %-8s %s\n", i+1, who, sys.Describe(l))
	}
	return b.String()
}

// Timeline is what a test prints of a verdict that should have been SAFE:
// the counterexample's timeline, or without one the verdict's result.
func Timeline(v verdict.Verdict) string {
	if v.Violation == nil {
		return v.Result()
	}
	return v.Violation.Timeline()
}

// Collect returns, in order, what f makes of the labels of path's steps
// that it takes (a system's device events, say: Collect(path,
// sys.DeviceEvent)).
func Collect[E any](path []explore.Step, f func(explore.Label) (E, bool)) []E {
	var out []E
	for _, st := range path {
		if e, ok := f(st.Label); ok {
			out = append(out, e)
		}
	}
	return out
}

// Package worldtest checks Go durability code of one's own from a test,
// the way loom checks Rust concurrency code: the code, written against
// spec.Device, spec.Word, spec.Fence and spec.WaitQueue, runs in the model
// world, and every run up to the bound is searched (world.Search): every
// schedule, every value a load may read under the memory model, every
// device completion order, flush EIO if enabled, and a crash at every
// step. docs/world.md walks through an example.
package worldtest

import (
	"fmt"
	"testing"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/world"
)

// Options bound a check.
type Options struct {
	// MaxStates stops the search after this many states (0: 1,000,000):
	// the check then fails as UNKNOWN, never passes.
	MaxStates int
	// MaxDepth is the longest run followed (world.SearchOptions).
	MaxDepth int
	// Exact ignores the program's declarations (Task.Checkpoint,
	// World.Shared, World.Symmetric): slower, and must give the same
	// verdict.
	Exact bool
	// BoundPreemptions bounds each run's preemptions by Preemptions
	// (world.SearchOptions): for programs too large to search whole. A
	// search that the bound cut is "SAFE within k preemptions", never SAFE.
	BoundPreemptions bool
	Preemptions      int
	// NoObligations lets Check pass a program that never runs an Assert
	// or a MustSurvive (one checked for deadlocks alone); without it such
	// a SAFE fails, since it says nothing about what the program promises.
	NoObligations bool
	// NoLiveness checks deadlocks alone: without it a task blocked
	// forever (waiting in every state reachable from one, while another
	// task runs on without end) breaks the check too, as in `flushproof
	// check`. The liveness check keeps every transition in memory.
	NoLiveness bool
}

// Result is what a search found.
type Result struct {
	Safe        bool // every run up to the bound was searched and none broke an obligation
	Bounded     bool // the preemption bound left runs out: Safe means "SAFE within Preemptions preemptions"
	Preemptions int
	Unknown     string // why the search stopped early ("" if it did not)
	States      int
	Depth       int
	Runs        int64 // replays of the program
	Timeline    string
	Path        []int // the counterexample's choices (world.Search.Replay replays them)
	Err         error // the violation
	// Judged counts, per call site of Task.Assert and Task.MustSurvive
	// that some run reached (after "any Assert or MustSurvive"), the
	// states some step into which ran it (world.Search.Judged).
	Judged []explore.Judgment
}

// Search searches every run of prog in worlds of cfg.
func Search(cfg world.Config, prog world.Program, opt Options) (Result, error) {
	if opt.MaxStates == 0 {
		opt.MaxStates = 1_000_000
	}
	s, err := world.NewSearch(cfg, prog, world.SearchOptions{MaxDepth: opt.MaxDepth, Exact: opt.Exact,
		BoundPreemptions: opt.BoundPreemptions, Preemptions: opt.Preemptions})
	if err != nil {
		return Result{}, err
	}
	r := s.Explore(explore.Options{MaxStates: opt.MaxStates, Obligations: true, Liveness: !opt.NoLiveness})
	if r.JudgeErr != nil {
		return Result{}, r.JudgeErr
	}
	runs, _ := s.Runs()
	out := Result{States: r.States, Depth: r.MaxDepth, Runs: runs, Unknown: r.Stopped,
		Bounded: s.Bounded(), Preemptions: opt.Preemptions, Judged: r.Judged}
	if v := r.Violation; v != nil {
		out.Err, out.Timeline, out.Path = v.Err, v.Timeline(), world.Choices(v)
		return out, nil
	}
	out.Safe = r.Exhausted
	return out, nil
}

// Check searches every run of prog in worlds of cfg and fails t with the
// counterexample's timeline if a run breaks an obligation (Task.MustSurvive,
// Task.Assert, World.Fail), deadlocks or leaves a task blocked forever
// (Options.NoLiveness: deadlocks only), or if the search could not finish
// (a budget: UNKNOWN is not a pass).
func Check(t testing.TB, cfg world.Config, prog world.Program, opt Options) Result {
	t.Helper()
	r, err := Search(cfg, prog, opt)
	switch {
	case err != nil:
		t.Fatalf("worldtest: %v", err)
	case r.Err != nil:
		t.Fatalf("worldtest: %v memory, %d tasks: a run breaks an obligation (%d steps; replay: %v):\n%s",
			cfg.Memory, cfg.Tasks, len(r.Path), r.Path, r.Timeline)
	case !r.Safe:
		t.Fatalf("worldtest: UNKNOWN: the search stopped early (%s) after %d states", r.Unknown, r.States)
	case !opt.NoObligations && len(r.Judged) > 0 && r.Judged[0].Vacuous():
		t.Fatalf("worldtest: %v memory, %d tasks: SAFE in %d states, but no run reached a Task.Assert or Task.MustSurvive: the search proves only that no run deadlocks (Options.NoObligations if that is all it is for)",
			cfg.Memory, cfg.Tasks, r.States)
	default:
		t.Logf("worldtest: %s under %v: %d tasks: %d states, depth %d, %d runs", r.Verdict(), cfg.Memory, cfg.Tasks, r.States, r.Depth, r.Runs)
	}
	return r
}

// Verdict is the result in a word or a phrase: SAFE (every run searched),
// "SAFE within k preemptions" (the preemption bound left runs out),
// UNSAFE, or UNKNOWN (why).
func (r Result) Verdict() string {
	switch {
	case r.Err != nil:
		return "UNSAFE"
	case !r.Safe:
		return "UNKNOWN (" + r.Unknown + ")"
	case r.Bounded:
		return fmt.Sprintf("SAFE within %d preemptions", r.Preemptions)
	}
	return "SAFE"
}

// Package explore is the search engine: exhaustive, breadth-first search
// of explicit-state transition systems, with shortest counterexamples.
//
// A protocol describes itself as a [System]: initial states, the
// successors of a state (each with a [Label] that names the step), an
// invariant (Check), and which actors have not returned (Unfinished).
// States are comparable Go values, hashed whole. Who is blocked is derived
// from the steps, never listed by hand: [Blocked] is an unfinished actor
// with no step enabled; a state without steps in which some actor has not
// returned is a deadlock.
//
//   - [Explore]: search every reachable state, breadth first, until the
//     first violation or the end; [Options] bound it (states, memory, a stop
//     hook), add liveness (an actor that no schedule lets return) and set
//     the number of workers (the result does not depend on it).
//   - [Result]: Exhausted (SAFE at this bound), Violation (with the
//     shortest Path), or Stopped (UNKNOWN: why the search was cut short);
//     [Stats] counts states, transitions and depth. [Result.Diff] compares
//     two searches of one system.
//   - [Replay]: follow a counterexample path again from the initial
//     states; [Timeline] renders a path with one column per actor.
//   - [Obligations]: an optional list of the invariant's obligations
//     (assertions, a final condition) and which states judge each; with
//     Options.Obligations the search counts them (Result.Judged), so that
//     a SAFE whose assertions no state reached can say so.
//   - [Canonicalizer]: an optional symmetry reduction (one representative
//     per class of equivalent states); counterexamples are rebuilt as real
//     paths.
//   - [LabelsDetermine]: check the rule every System must keep: a label
//     leads to one state.
//
// Package exploretest has the helpers a protocol's tests use to check a
// system against the engine's promises.
package explore

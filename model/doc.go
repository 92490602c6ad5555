// Package model is a world where everything the spec allows can happen:
// explicit-state, hashable transition systems and a generic exhaustive
// explorer over them.
//
//   - [Device]: a block device with a volatile write cache as an operational
//     state machine (submit, land, complete, fail, flush, crash), plus test-only
//     wrong variants ([Bug]) that the checks must catch.
//   - [Explore]: breadth-first search with a visited set, an invariant, a
//     deadlock and blocked-forever check, shortest counterexamples, a state
//     budget and statistics.
//   - [Timeline]: a counterexample path rendered with one column per actor.
//   - [device.System]: the device driven by writer and flusher tasks, checked
//     against spec.Contract after every crash ([device.CheckSound]);
//     [CompletenessSystem] checks the other direction, every outcome the
//     contract allows is reachable ([device.CheckComplete]); [device.Check]
//     runs both and gives a row of `flushproof check`.
//   - [Explain]: the crash outcomes the device can produce for one given
//     history, over every landing order (used by rapid and porcupine checks).
package model

// Package flushseq checks xfs fsync's flush sequence, from the patch "xfs:
// skip the fsync flush when a later flush has completed": fsync skips its
// cache flush when a flush numbered after its data write completed has
// completed.
//
// The protocol is written once per kind, and the kinds are tied by trace
// validation:
//
//   - [System]: the explicit-state model for exhaustive search, one
//     [Variant] per version (Baseline, Patched, Improved, GroupCommit, the
//     benign BenignPlainStore, the Mutant* negative controls), under each
//     memory model ([Config]); [Check], [Rows], [Checks], [ProofChecks]: its
//     rows of the verdict table.
//   - [Program]: the same protocol as straight-line Go code in the model
//     world, as the kernel writes it (with the log force and group commit).
//   - impl.Syncer, the code hwbench benchmarks, also runs in the model world
//     (the skip-share cost table and impl's tests).
//   - [ValidateTrace]: every world run of Program or impl.Syncer must be a
//     run of System: loads, stores, device events and the typed
//     [Milestone]s (an fsync returned, a log-force branch, a wake-up) are
//     matched step by step.
//   - [SimulateCode], [Code], [Latency], [Timing]: runs under a latency
//     model; [Protocol]'s cost table prints the share of fsyncs that skip
//     their flush for Program and for impl.Syncer per policy.
//
// System is in flushseq.go (states, labels, the timeline's text) and
// steps.go (each step of a task and of the device).
package flushseq

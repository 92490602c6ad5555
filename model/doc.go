// Package model is the catalog: the one list of protocols that every
// command reads. Everything else of the model lives in the packages below
// it; model itself only names them.
//
//   - [Protocols]: every protocol in the order of the verdict table, each a
//     verdict.Protocol with its rows and cost table.
//   - [Rows]: the verdict table's rows, proof rows on request.
//   - [Protocol]: one entry by name (`flushproof cost -protocol`).
//
// The packages, bottom up (imports flow one way: spec, then the engine,
// memory, device and world, then the protocols, then this catalog, then
// cmd):
//
//   - explore: the search engine. A System is a hashable transition
//     system; Explore searches it breadth first (in parallel), keeps every
//     state once and returns SAFE at a bound, a shortest counterexample,
//     or UNKNOWN when a budget stopped it. Timeline renders a path.
//   - memory: SC, x86-TSO and Relaxed as values (Memory, for explicit-state
//     search) and as a mutable store (Wide, for the model world).
//   - litmus, lkmm: litmus tests (herd7's C format) run under the
//     operational models, and the axiomatic Linux kernel memory model
//     that judges them.
//   - device: the block device as a transition system, checked against
//     spec.Contract in both directions (the "device" rows).
//   - world: Go code over the spec interfaces run as coroutines, every call
//     a scheduling point; its device is differential-tested against
//     spec.Contract.
//   - verdict: Verdict, Row, Protocol, Cost, and the table and JSON writers.
//   - flushseq, odsync, iowq, diocount, jbd2: one package per protocol: its
//     variants, system, rows and cost table. A new protocol is a new
//     package and one line in [Protocols] (docs/architecture.md).
package model

// Package durable runs litmus tests by search: the memory models of
// model/memory on a litmus test's threads ([Operational]), and the
// durability checker that flushproof check runs on a file with a block
// device ([Test]). Both compile a [litmus.Test] to instructions and hand
// model/explore a transition system; the checker adds a device whose every
// rule is spec.Contract's.
//
// The API:
//   - [Operational]: a [litmus.Model] (SC, TSO, Relaxed, LKMM memory): every
//     final state of every interleaving; Witness gives a shortest run to an
//     outcome. [DependentStores] counts what memory.LKMM needs told.
//   - [Read] takes a parsed file and its header (Expect, Device, Models,
//     Failures, Crash, Daemons) to a [Test]; [ParseModels], [ParseDevices],
//     [ParseFailures] and [ParseCrash] read the same values from a command
//     line. [Test.Rows] are the file's rows of the verdict table;
//     [Test.Search] checks one row's [Config] and returns explore's result
//     over [State]. A run the checker cannot judge is a [FaultError].
//
// The files:
//   - operational.go, compile.go, deps.go: Operational, the compiler of
//     thread code to instructions, and LKMM memory's dependencies.
//   - durable.go: Test, its header, its rows and its search.
//   - dcompile.go: the durability statements compiled (loops, gotos and
//     labels, device calls, asserts, wait_event); regalloc.go: a thread's
//     register names (up to 64) shared among its 8 registers.
//   - dsystem.go: the checker's transition system (threads, device, bios
//     in flight); djudge.go: assertions, crash images and the final
//     condition; dtext.go: the timeline's text.
//   - dsym.go: thread and block symmetry, derived from the code;
//     dobligations.go: which states judge each assertion (vacuity).
//
// The language itself, with no semantics, is model/litmus; the LKMM judges
// of a litmus test (the axiomatic reference, the promise-based model) are
// model/lkmm.
package durable

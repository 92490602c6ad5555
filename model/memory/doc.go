// Package memory models how CPU loads may see stores: sequential
// consistency, x86-TSO and Relaxed (a view-based model of the Linux kernel
// memory model), for a few atomic64 words.
//
//   - [Model]: SC, TSO or Relaxed; [Models] lists them.
//   - [Memory]: memory as a comparable value, for explicit-state search: a
//     load has one result per store it may read ([Memory.Load]); stores,
//     fences and fully ordered read-modify-writes return the next memory.
//     The seams a protocol's symmetry reduction needs are methods:
//     [Memory.Permuted], [Memory.View], [Memory.Live], [Memory.BufferLen].
//     A location's readers ([New]) are a declaration the memory checks (a
//     plain load by a thread that is not a reader panics): stores no reader
//     can read are dropped, exactly. Readers narrow with [Memory.SetReaders]
//     and [Memory.DropReader] and grow only by an acquire
//     ([Memory.AddReader]); [Memory.JoinView] passes a view through a lock.
//   - Test-only mutations (internal/mutate) weaken smp_mb (FenceWeak), the
//     read-modify-writes (RMWStale) and the lock's view (JoinViewLost), in
//     Memory and Wide alike.
//   - [Wide]: the same rules as a mutable store without fixed bounds, for
//     the model world, where the scheduler picks which store a load reads.
//
// Litmus tests run on these models through package model/litmus
// (Operational), beside the axiomatic LKMM reference (model/lkmm).
package memory

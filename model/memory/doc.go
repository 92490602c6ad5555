// Package memory models how CPU loads may see stores: sequential
// consistency, x86-TSO, Relaxed (an older view-based model, stronger than
// the Linux kernel memory model) and LKMM (lkmm.go: the kernel's model for
// these primitives, exact where it does not refuse), for a few atomic64
// words.
//
//   - [Model]: SC, TSO, Relaxed or LKMM; [Models] lists those whose
//     operations have one result each (all but LKMM).
//   - [Memory]: memory as a comparable value, for explicit-state search:
//     every operation returns each result it may have ([Memory.Load],
//     [Memory.Stores], [Memory.RMW], [Memory.RMWUnordered],
//     [Memory.Fences]), one except under Relaxed's loads and under LKMM,
//     each with an [Alt] that names it; [Memory.Settle] is a step of a
//     thread that is not a memory operation (I/O). Under LKMM the memory
//     leaves out results another result subsumes, unless
//     [Memory.Unreduced]; the views are interned (intern.go).
//     With [Memory.UseOrderings], LKMM also has the orderings beyond
//     smp_mb: [Memory.StoresDep] and [Memory.RMWOrdered] (dependencies,
//     _acquire and _release RMWs), [Memory.LoadAcquire],
//     [Memory.StoresRelease], [Memory.Rmbs], [Memory.Wmbs],
//     [Memory.SpinLock] and [Memory.SpinUnlock].
//     For a caller that runs threads ahead of their loads (model/durable),
//     [Memory.LoadCovered], [RMWOrder.Covered] and [Memory.Uncover] mark
//     the loads whose load buffering it covers; [Memory.LockOnly] keeps
//     only the newest store of a location only locks access.
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
//   - [Wide]: the same rules (LKMM included, widelkmm.go) as a mutable
//     store without fixed bounds, for the model world, where the scheduler
//     picks which store a load reads, where a store goes and (LKMM) when a
//     pending barrier takes effect ([Wide.Pending], [Wide.Complete]).
//
// The files: memory.go (Model, Memory and the operations, each picking
// its model's rule), tso.go, relaxed.go, lkmm.go with lkmm_fence.go and
// lkmm_rmw.go (each model's rules; SC's are the operations' plain case),
// readers.go (readers, views and renaming), intern.go (LKMM's interned
// views), widemem.go and widelkmm.go (Wide).
//
// Litmus tests run on these models through package model/durable
// (Operational), beside the LKMM judges of model/lkmm.
package memory

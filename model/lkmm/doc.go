// Package lkmm is the axiomatic Linux kernel memory model, the reference
// the other memory models are held to: [Reference] gives the outcomes of a
// [litmus.Test] that the kernel's model allows. [Promise] is the package's
// second judge of a litmus test, an operational, promise-based model of
// the same cat (promise.go, promise_state.go, promise_prog.go), held to
// the Reference on the litmus corpus
// and on random programs. Both depend on the litmus language alone.
//
// It follows herd7 running tools/memory-model (linux-kernel.def,
// linux-kernel.bell, linux-kernel.cat as of Linux v6.18; the prose is
// tools/memory-model/Documentation/explanation.txt):
//
//  1. Each thread is run for every choice of the values its reads return,
//     drawn from the values the program can write (a fixpoint from the
//     initial values), giving its events: reads, writes and fences tagged
//     as the .def and .bell tag them, with program order, the rmw pairs of
//     atomic read-modify-writes, and the data and control dependencies
//     carried through registers (events.go).
//  2. For each combination of runs, every rf (each read takes its value from
//     a write of that value, the initial write included) and every co (the
//     writes of each location in some order after the initial write) is a
//     candidate execution.
//  3. A candidate is allowed when it satisfies the cat's axioms: coherence,
//     atomic, happens-before and propagation (cat.go). The outcome of an
//     allowed candidate is every thread's registers and every location's
//     co-last value.
//
// What is modelled: READ_ONCE, WRITE_ONCE, smp_load_acquire,
// smp_store_release, smp_mb, smp_rmb, smp_wmb, smp_mb__before_atomic,
// smp_mb__after_atomic, smp_mb__after_spinlock (which orders nothing
// without a lock), spin_lock, spin_unlock, barrier (which orders nothing among marked accesses),
// and every atomic RMW of [litmus.Op]: non-returning atomics (their read is
// Noreturn, so smp_rmb ignores it), value-returning ones fully ordered
// (their events carry Mb, as if enclosed by smp_mb), _relaxed, _acquire
// and _release, xchg, and cmpxchg whose failure is a bare read with no
// ordering. Control dependencies reach the events inside the arms of an
// if whose condition uses a loaded value, not the events after it.
//
// Locks follow tools/memory-model/lock.cat: spin_lock is an LKR (an
// Acquire) and an LKW paired by rmw, spin_unlock an UL (a Release); the
// critical sections of a lock take it in every order that keeps each
// thread's program order, which fixes the lock's co and the LKR reads
// (locks.go); po-unlock-lock-po is in ppo (within a thread) and in
// cumul-fence, and smp_mb__after_spinlock makes the spin_lock before it a
// full barrier. A thread that would wait forever for a lock (one never
// released, or one it already holds) gives no execution, as with herd7:
// the outcomes are those of the executions in which every thread runs to
// its end, and a test none of whose executions does has no outcome.
// spin_trylock and spin_is_locked are not litmus primitives; an
// ordinary access to a lock location, a final condition on one and an
// unlock of a lock not held, which lock.cat flags, are refused with
// [ErrUnsupported]. smp_mb__after_unlock_lock is not a litmus primitive,
// so its case of mb is empty.
//
// What is not (yet): RCU, SRCU, pointers, plain accesses, spin_trylock,
// spin_is_locked, atomic_add_unless and smp_mb__after_unlock_lock are
// read by the parser, but the reference refuses a test that uses one, at
// its line (litmus.Test.Refuse), so gp, rcu-fence, the rcu axiom, addr
// and the plain-access checks are empty here. A cmpxchg's expected value
// gives no dependency, only its new value does. The rmw-sequence of
// v6.3's cat is there: cumul-fence ends with (rf ; rmw)*, the rmw pairs
// including a lock's (lk-rmw).
//
// The search (search.go) does not enumerate the cross product of the
// threads' runs and then every rf and co: it places the threads one after
// another, each event by event, choosing each read's value and write (or
// deferring it to a write of a thread placed later) and each write's
// place in its location's co, and checks the axioms on each partial
// execution. A cut is sound because every relation of the cat that the
// axioms use is built from po, rf, co and fixed event sets by union,
// sequence, closure and intersection with fixed sets (prop \ id removes
// only the identity): adding events or rf and co edges only adds pairs,
// so a cycle (coherence, happens-before, propagation) or a pair the
// atomic axiom forbids, once present in a partial execution, is present
// in every execution that extends it. Decide evaluates the condition
// and the filter three-valued on what is placed so far (cond.go) and
// stops each side at its first witness.
//
// Bounds: none by construct (threads, locations, events). The budget is
// Reference.Candidates (partial executions checked) and
// Reference.Timeout; a search that reaches either fails with
// [ErrTooLarge], which wraps litmus.ErrCutShort, with its counts: an
// unknown answer, never a partial one.
package lkmm

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
//     atomic, happens-before, propagation, rcu and plain-coherence
//     (cat.go). The outcome of an allowed candidate is every thread's
//     registers and every location's co-last value, with the flags
//     (data-race, mixed-accesses, unmatched-rcu-lock, ...) some allowed
//     execution reaching it raises (litmus.Outcome.Flags).
//
// What is modelled: every primitive of linux-kernel.def. READ_ONCE, WRITE_ONCE, smp_load_acquire,
// smp_store_release, rcu_dereference (a READ_ONCE), rcu_assign_pointer
// (an smp_store_release), smp_store_mb, the fences (smp_mb, smp_rmb,
// smp_wmb, smp_mb__before_atomic, smp_mb__after_atomic,
// smp_mb__after_spinlock, smp_mb__after_unlock_lock,
// smp_mb__after_srcu_read_unlock, barrier), spin_lock, spin_unlock, and
// every atomic RMW of [litmus.Op]: non-returning atomics (their read is
// Noreturn, so smp_rmb ignores it), value-returning ones fully ordered
// (their events carry Mb, as if enclosed by smp_mb), _relaxed, _acquire
// and _release, xchg, cmpxchg and atomic_add_unless, whose failure is a
// bare read with no ordering. Control dependencies reach the events
// inside the arms of an if whose condition uses a loaded value, not the
// events after it.
//
// Pointers: a location's address is a value (litmus.AddrBase + its
// index); an access through a register goes to the location whose
// address the register holds, found when the thread runs, with an addr
// dependency on the reads the address came from (to-r, to-w, the
// pre-bounds of plain accesses). An execution LKMM allows that accesses
// memory through a value that is no address fails with [ErrFault].
//
// Plain accesses (r = *x, *x = v) are the bell's Plain events: hb, prop,
// pb and rb relate Marked events only, an addr dependency to a plain
// write extends to-w through a following smp_wmb, plain-coherence is an axiom, and data-race and mixed-accesses
// are flags, computed on each complete allowed execution.
//
// RCU and SRCU: rcu_read_lock, rcu_read_unlock and synchronize_rcu are
// fences (Rcu-lock, Rcu-unlock, Sync-rcu), matched in nested pairs per
// thread (rcu-rscs); srcu_read_lock is a read of its srcu_struct
// (Srcu-lock), srcu_read_unlock a write (Srcu-unlock) matched to the
// lock whose value it passes on (srcu-rscs, through data and rf),
// synchronize_srcu an event at the srcu_struct (Sync-srcu). gp is in
// strong-fence; rcu-order is computed as the least fixpoint of its nine
// cases (SRCU's restricted to the same srcu_struct); rcu-fence joins
// fence and strong-fence for the plain-access part, and rb must be
// irreflexive. The bell's nesting checks are flags.
//
// Locks follow tools/memory-model/lock.cat: spin_lock is an LKR (an
// Acquire) and an LKW paired by rmw, spin_unlock an UL (a Release); the
// critical sections of a lock take it in every order that keeps each
// thread's program order, which fixes the lock's co and the LKR reads
// (locks.go); po-unlock-lock-po (po or rf from an UL to an LKR) is in
// ppo (within a thread) and in cumul-fence, smp_mb__after_spinlock makes
// the spin_lock before it a full barrier, and smp_mb__after_unlock_lock
// one after a po-unlock-lock-po. A thread that would wait forever for a
// lock (one never released, or one it already holds) gives no execution,
// as with herd7: the outcomes are those of the executions in which every
// thread runs to its end, and a test none of whose executions does has
// no outcome. An ordinary access to a lock location, a final condition on
// one and an unlock of a lock not held, which lock.cat flags, are refused
// with [ErrUnsupported], as is a lock through a pointer. spin_trylock is
// spin_lock's LKR and LKW when it finds the lock free (returning 1), an LF
// reading an LKW when it finds it held (0); spin_is_locked an RL (reading
// an LKW, 1) or an RU (reading an UL or the initial write, 0): lock.cat's
// rf-lf, rf-rl and rf-ru, with coherence keeping such a read inside the
// thread's own critical section on that section's LKW.
//
// A cmpxchg's expected value gives no dependency, only its new value
// does. The rmw-sequence of v6.3's cat is there: cumul-fence ends with
// (rf ; rmw)*, the rmw pairs including a lock's (lk-rmw).
//
// The search (search.go) does not enumerate the cross product of the
// threads' runs and then every rf and co: it places the threads one after
// another, each event by event, choosing each read's value and write (or
// deferring it to a write of a thread placed later) and each write's
// place in its location's co, and checks the axioms on each partial
// execution. A cut is sound because every relation of the cat that the
// axioms use is built from po, rf, co and fixed event sets by union,
// sequence, closure, least fixpoint and intersection with fixed sets
// (prop \ id removes only the identity): adding
// events or rf and co edges only adds pairs, so a cycle (coherence,
// happens-before, propagation), a reflexive rb, or a pair the atomic or
// plain-coherence axiom forbids, once present in a partial execution, is
// present in every execution that extends it. The flags are not
// monotonic (data-race is a difference over rf and co): they are
// computed on complete executions, and a test that may raise one has
// every allowed execution visited, Decide included. Decide evaluates the condition
// and the filter three-valued on what is placed so far (cond.go) and
// stops each side at its first witness.
//
// Bounds: none by construct (threads, locations, events). The budget is
// Reference.Candidates (partial executions checked) and
// Reference.Timeout; a search that reaches either fails with
// [ErrTooLarge], which wraps litmus.ErrCutShort, with its counts: an
// unknown answer, never a partial one.
package lkmm

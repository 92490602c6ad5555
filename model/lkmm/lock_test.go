package lkmm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
)

// lock is spin_lock(l); unlock is spin_unlock(l).
func lock(l string) litmus.Stmt   { return acc(litmus.OpSpinLock, "", l, litmus.Expr{}) }
func unlock(l string) litmus.Stmt { return acc(litmus.OpSpinUnlock, "", l, litmus.Expr{}) }

// dclThread is one thread of the kernel's Documentation/litmus-tests
// locking/DCL-broken.litmus (release false) or DCL-fixed.litmus (true):
// double-checked initialization, the flag read and set outside and inside
// the lock.
func dclThread(fixed bool) litmus.Thread {
	load, store := rd("r0", "flag"), wr("flag", 1)
	if fixed {
		load, store = ldAcq("r0", "flag"), stRel("flag", 1)
	}
	zero := func(r string) litmus.Expr { return litmus.Bin("==", litmus.R(r), litmus.C(0)) }
	return th(
		load,
		when(zero("r0"),
			lock("lck"),
			rd("r1", "flag"),
			when(zero("r1"), wr("data", 1), store),
			unlock("lck")),
		rd("r2", "data"))
}

// lockCases are the kernel's lock litmus tests with their header results,
// and shapes reasoned from lock.cat.
func lockCases() []refCase {
	mpBad := and(reg(1, "r0", 1), reg(1, "r1", 0))
	dclBad := litmus.Bin("||", reg(0, "r2", 0), reg(1, "r2", 0))
	return []refCase{
		// tools/memory-model/litmus-tests, "Result:" in each header.
		{exists("MP+polocks", mpBad,
			th(wr("buf", 1), lock("mylock"), wr("flag", 1), unlock("mylock")),
			th(lock("mylock"), rd("r0", "flag"), unlock("mylock"), rd("r1", "buf"))), "Never", kernel},
		{exists("MP+porevlocks", and(reg(0, "r0", 1), reg(0, "r1", 0)),
			th(rd("r0", "flag"), lock("mylock"), rd("r1", "buf"), unlock("mylock")),
			th(lock("mylock"), wr("buf", 1), unlock("mylock"), wr("flag", 1))), "Never", kernel},
		{exists("ISA2+pooncelock+pooncelock+pombonce", and(reg(1, "r0", 1), reg(2, "r2", 1), reg(2, "r1", 0)),
			th(lock("mylock"), wr("x", 1), wr("y", 1), unlock("mylock")),
			th(lock("mylock"), rd("r0", "y"), wr("z", 1), unlock("mylock")),
			th(rd("r2", "z"), barrier(litmus.OpMb), rd("r1", "x"))), "Never", kernel},
		// Without smp_mb__after_spinlock the lock handover is no strong
		// fence: P2's store to z may be co-last while it misses x.
		{exists("Z6.0+pooncelock+pooncelock+pombonce", and(reg(1, "r0", 1), mem("z", 2), reg(2, "r1", 0)),
			th(lock("mylock"), wr("x", 1), wr("y", 1), unlock("mylock")),
			th(lock("mylock"), rd("r0", "y"), wr("z", 1), unlock("mylock")),
			th(wr("z", 2), barrier(litmus.OpMb), rd("r1", "x"))), "Sometimes", kernel},
		{exists("Z6.0+pooncelock+poonceLock+pombonce", and(reg(1, "r0", 1), mem("z", 2), reg(2, "r1", 0)),
			th(lock("mylock"), wr("x", 1), wr("y", 1), unlock("mylock")),
			th(lock("mylock"), barrier(litmus.OpMbAfterSpinlock), rd("r0", "y"), wr("z", 1), unlock("mylock")),
			th(wr("z", 2), barrier(litmus.OpMb), rd("r1", "x"))), "Never", kernel},
		// An unlock then a lock of another lock in one thread order the
		// accesses around them (po-unlock-lock-po & int in ppo).
		{exists("MP+unlocklockonceonce+fencermbonceonce", and(reg(1, "r1", 1), reg(1, "r2", 0)),
			th(lock("s"), wr("x", 1), unlock("s"), lock("t"), wr("y", 1), unlock("t")),
			th(rd("r1", "y"), barrier(litmus.OpRmb), rd("r2", "x"))), "Never", kernel},
		{exists("LB+unlocklockonceonce+poacquireonce", and(reg(0, "r1", 1), reg(1, "r2", 1)),
			th(lock("s"), rd("r1", "x"), unlock("s"), lock("t"), wr("y", 1), unlock("t")),
			th(ldAcq("r2", "y"), wr("x", 1))), "Never", kernel},
		// Documentation/litmus-tests/locking/DCL-{broken,fixed}.litmus.
		{exists("DCL-broken", dclBad, dclThread(false), dclThread(false)), "Sometimes", kernel},
		{exists("DCL-fixed", dclBad, dclThread(true), dclThread(true)), "Never", kernel},

		// Mutual exclusion: two increments in critical sections never
		// both read the initial value (one LKR reads the other's UL, so
		// its section is after the other's in hb), and never lose one.
		{exists("lock-increments-both-read-0", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			incThread(true), incThread(true)), "Never", reasoned},
		{exists("lock-increments-lose-one", mem("x", 1),
			incThread(true), incThread(true)), "Never", reasoned},
		// The same increments without the lock race.
		{exists("nolock-increments-both-read-0", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			incThread(false), incThread(false)), "Sometimes", reasoned},
		// A thread that never releases the lock takes it last (its LKW
		// is the one UNMATCHED-LKW, co-last): the other's critical
		// section always comes first, so its store is always seen.
		{exists("lock-never-released-comes-last", reg(0, "r0", 0),
			th(lock("s"), rd("r0", "x")),
			th(lock("s"), wr("x", 1), unlock("s"))), "Never", reasoned},
		// SB with the store and the load in two critical sections of a
		// thread's own lock: po-unlock-lock-po & int is in ppo, not in
		// strong-fence, so nothing forbids SB's outcome.
		{exists("SB+unlocklockonceonces", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(lock("s"), wr("x", 1), unlock("s"), lock("s"), rd("r0", "y"), unlock("s")),
			th(lock("t"), wr("y", 1), unlock("t"), lock("t"), rd("r0", "x"), unlock("t"))), "Sometimes", reasoned},
		// With one lock for both threads SB is forbidden: whichever
		// critical section is second sees the other's store.
		{exists("SB+samelock", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(lock("s"), wr("x", 1), rd("r0", "y"), unlock("s")),
			th(lock("s"), wr("y", 1), rd("r0", "x"), unlock("s"))), "Never", reasoned},
		// smp_mb__after_spinlock makes the lock a full barrier
		// ([M] ; po? ; [LKW] ; fencerel(After-spinlock) ; [M] in mb),
		// even for accesses before the lock: SB with it is Never.
		{exists("SB+lock-mbafterspinlock", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(wr("x", 1), lock("s"), barrier(litmus.OpMbAfterSpinlock), rd("r0", "y")),
			th(wr("y", 1), lock("t"), barrier(litmus.OpMbAfterSpinlock), rd("r0", "x"))), "Never", reasoned},
		// Without the fence the store and load around spin_lock are
		// unordered (a lock is only an acquire).
		{exists("SB+lock", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(wr("x", 1), lock("s"), rd("r0", "y")),
			th(wr("y", 1), lock("t"), rd("r0", "x"))), "Sometimes", reasoned},
	}
}

// incThread is r0 = READ_ONCE(x); WRITE_ONCE(x, r0 + 1), in a critical
// section of lock s when locked.
func incThread(locked bool) litmus.Thread {
	inc := []litmus.Stmt{rd("r0", "x"), wrE("x", litmus.Bin("+", litmus.R("r0"), litmus.C(1)))}
	if !locked {
		return th(inc...)
	}
	return th(append(append([]litmus.Stmt{lock("s")}, inc...), unlock("s"))...)
}

func TestLocks(t *testing.T) {
	for _, tc := range lockCases() {
		t.Run(tc.test.Name, func(t *testing.T) {
			a, err := litmus.Judge(Reference{}, tc.test)
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Result, "%s (%s): %d of %d outcomes match", tc.test.Name, tc.source, a.Matches, len(a.Outcomes))
		})
	}
}

// A lock's final value is in every outcome: 0 once released, 1 when a
// thread ends holding it.
func TestLockFinalValue(t *testing.T) {
	outs, err := Reference{}.Outcomes(exists("held-at-end", mem("x", 1),
		th(lock("s"), wr("x", 1)),
		th(lock("t"), unlock("t"))))
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, "s=1; t=0; x=1;", outs[0].Key())
}

// A thread that would wait forever for a lock gives no execution: when
// every execution has one, the test has no outcome at all (lock.cat's
// unmatched-locks and lock-nest axioms).
func TestLockDeadlockHasNoOutcome(t *testing.T) {
	for _, tc := range []*litmus.Test{
		exists("two-holders-never-release", mem("x", 0),
			th(lock("s"), wr("x", 1)),
			th(lock("s"), wr("x", 2))),
		exists("lock-taken-twice", mem("x", 0),
			th(lock("s"), lock("s"), wr("x", 1), unlock("s"))),
	} {
		t.Run(tc.Name, func(t *testing.T) {
			outs, err := Reference{}.Outcomes(tc)
			require.NoError(t, err)
			assert.Empty(t, outs)
		})
	}
	// Only the run that deadlocks is dropped: here P0 takes s twice only
	// when it reads x=1, so every outcome has it read 0.
	outs, err := Reference{}.Outcomes(exists("nest-on-one-path", reg(0, "r0", 0),
		th(rd("r0", "x"), lock("s"), when(litmus.R("r0"), lock("s")), unlock("s")),
		th(wr("x", 1))))
	require.NoError(t, err)
	require.NotEmpty(t, outs)
	for _, o := range outs {
		assert.Equal(t, int64(0), o.Regs[0]["r0"], o.Key())
	}
}

// What lock.cat flags, and herd7 would report as a suspect test, is
// refused with an error naming it.
func TestLockRefusals(t *testing.T) {
	for _, tc := range []struct {
		test *litmus.Test
		says string
	}{
		{exists("unmatched-unlock", mem("x", 0), th(unlock("s"), wr("x", 1))), "unmatched-unlock"},
		{exists("mixed-lock-accesses", mem("x", 0),
			th(lock("s"), wr("x", 1), unlock("s")), th(rd("r0", "s"))), "mixed-lock-accesses"},
		{exists("lock-final", mem("s", 0), th(lock("s"), unlock("s"))), "lock-final"},
	} {
		t.Run(tc.test.Name, func(t *testing.T) {
			_, err := Reference{}.Outcomes(tc.test)
			require.ErrorIs(t, err, ErrUnsupported)
			assert.ErrorIs(t, err, litmus.ErrUnsupported, "a refusal like any model's")
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

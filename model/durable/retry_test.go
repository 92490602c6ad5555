package durable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/memory"
)

// TestCmpxchgSuccessOrdersOnlyIfItCannotFail: a fully ordered cmpxchg that
// succeeds in every in-order run may still fail under LKMM, by reading a
// store made after the thread's next store (load buffering through the
// other thread's control dependency), and a failed cmpxchg orders
// nothing. LKMM allows 1:r0=1 /\ 1:r1=0 /\ 2:r0=1 here (the reference
// does: props' TestMemoryLKMMCmpxchgLB); the in-order model cannot reach
// it, so it must refuse the store after the cmpxchg rather than answer.
func TestCmpxchgSuccessOrdersOnlyIfItCannotFail(t *testing.T) {
	src := "C cmpxchg-lb\n{}\n" +
		"P0(int *x, int *y)\n{\n\tint r0;\n\tint r1;\n\tr0 = READ_ONCE(*x);\n\tr1 = READ_ONCE(*y);\n\tif (r0 != 0)\n\t\tatomic_add(1, y);\n}\n" +
		"P1(int *x, int *y)\n{\n\tint r0;\n\tr0 = cmpxchg(y, 0, 1);\n\tatomic_add(1, x);\n}\n" +
		"exists (0:r0=1 /\\ 0:r1=0 /\\ 1:r0=1 /\\ x=1 /\\ y=1)\n"
	tt := litmustest.MustParse(t, src)
	_, err := Operational{Model: memory.LKMM}.Outcomes(tt)
	require.Error(t, err)
	assert.ErrorIs(t, err, litmus.ErrUnsupported)
	assert.ErrorContains(t, err, "line 16: P1: LKMM lets this store be seen before its load of")
	assert.ErrorContains(t, err, "a cmpxchg between orders them only if it succeeds")

	// With the store depending on the cmpxchg's value it is ordered
	// after it, fail or not, and the model answers.
	dep := litmustest.MustParse(t, src[:len(src)-len("\tatomic_add(1, x);\n}\nexists (0:r0=1 /\\ 0:r1=0 /\\ 1:r0=1 /\\ x=1 /\\ y=1)\n")]+
		"\tif (r0 == 0)\n\t\tatomic_add(1, x);\n}\nexists (0:r0=1 /\\ 0:r1=0 /\\ 1:r0=1 /\\ x=1 /\\ y=1)\n")
	_, err = Operational{Model: memory.LKMM}.Outcomes(dep)
	assert.NoError(t, err)

	// smp_mb between: ordered whatever the cmpxchg read.
	mb := litmustest.MustParse(t, src[:len(src)-len("\tatomic_add(1, x);\n}\nexists (0:r0=1 /\\ 0:r1=0 /\\ 1:r0=1 /\\ x=1 /\\ y=1)\n")]+
		"\tsmp_mb();\n\tatomic_add(1, x);\n}\nexists (0:r0=1 /\\ 0:r1=0 /\\ 1:r0=1 /\\ x=1 /\\ y=1)\n")
	_, err = Operational{Model: memory.LKMM}.Outcomes(mb)
	assert.NoError(t, err)

	// SC and TSO answer as before (a failed cmpxchg is a locked
	// instruction under TSO).
	for _, m := range []memory.Model{memory.SC, memory.TSO} {
		_, err := Operational{Model: m}.Outcomes(tt)
		assert.NoError(t, err, m.String())
	}
}

// TestMarkRetries: a cmpxchg whose failure only loops back to it (through
// loads, waits and local code whose registers are dead there) is a retry;
// one whose failure goes on, stores, or leaves a value that is read later
// is not.
func TestMarkRetries(t *testing.T) {
	head := "C retry\n{}\nP0(int *x, int *y)\n{\n\tint r0;\n\tint r1;\n"
	tail := "}\nexists (x=1)\n"
	for _, tc := range []struct {
		name, body string
		retry      bool
	}{
		{"spin", "\tr0 = 1;\n\twhile (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t}\n\tWRITE_ONCE(*y, 1);\n", true},
		{"spin and wait", "\tr0 = 1;\n\twhile (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t\tif (r0 != 0) {\n\t\t\tr1 = READ_ONCE(*x);\n\t\t}\n\t}\n\tWRITE_ONCE(*y, 1);\n", true},
		{"read again, expect what was read", "\twhile (1) {\n\t\tr0 = READ_ONCE(*x);\n\t\tr1 = r0 + 1;\n\t\tr1 = cmpxchg_acquire(x, r0, r1);\n\t\tif (r1 == r0)\n\t\t\tbreak;\n\t}\n\tWRITE_ONCE(*y, 1);\n", true},
		{"read again, the value kept", "\twhile (1) {\n\t\tr0 = READ_ONCE(*x);\n\t\tr1 = r0 + 1;\n\t\tr1 = cmpxchg_acquire(x, r0, r1);\n\t\tif (r1 == r0)\n\t\t\tbreak;\n\t}\n\tWRITE_ONCE(*y, r1);\n", true},
		{"no loop", "\tr0 = cmpxchg_acquire(x, 0, 1);\n\tWRITE_ONCE(*y, 1);\n", false},
		{"store on failure", "\tr0 = 1;\n\twhile (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t\tWRITE_ONCE(*y, 2);\n\t}\n", false},
		{"failed value used", "\tr0 = 1;\n\twhile (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t\tif (r0 != 0) {\n\t\t\tr1 = READ_ONCE(*x);\n\t\t}\n\t}\n\tWRITE_ONCE(*y, r1);\n", false},
		{"gives up", "\tr0 = cmpxchg_acquire(x, 0, 1);\n\tif (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t}\n", false},
	} {
		tt := litmustest.MustParse(t, head+tc.body+tail)
		sys, err := compileDurable(memory.LKMM, tt, "t.litmus")
		require.NoError(t, err, tc.name)
		var got []bool
		for _, in := range sys.code[0] {
			if in.kind == iAccess && in.access.Op.IsCmpxchg() {
				got = append(got, in.retry)
			}
		}
		require.NotEmpty(t, got, tc.name)
		assert.Equal(t, tc.retry, got[0], "%s: %v", tc.name, got)
	}
}

// TestRetryFailedRead: the read of a retry loop's cmpxchg that fails is
// covered (memory.RMWOrder.FailCovered), so a store after the loop is not
// refused for it: LKMM lets the store be seen before that read, and the
// run without the failed pass (markRetries) has the store's outcomes. A
// load of the location at the loop's head is covered too: the cmpxchg
// that lets the thread go on is an acquire of its location
// (ahead.go's orderedAcquire).
func TestRetryFailedRead(t *testing.T) {
	head := "C fail-only\n(*\n * Crash: none\n *)\n{ x=1; }\nP0(int *x, int *y, int *z)\n{\n\tint r0;\n\tint r1;\n"
	other := "}\nP1(int *x, int *y, int *z)\n{\n\tint r0;\n\tr0 = READ_ONCE(*y);\n\tWRITE_ONCE(*z, r0);\n}\n" +
		"P2(int *x)\n{\n\tWRITE_ONCE(*x, 0);\n}\n~exists (1:r0=2)\n"
	for _, tc := range []struct {
		name, body string
	}{
		{"spin", "\tr0 = 1;\n\twhile (r0 != 0) {\n\t\tr0 = cmpxchg_acquire(x, 0, 1);\n\t}\n\tWRITE_ONCE(*y, 1);\n"},
		{"read again", "\twhile (1) {\n\t\tr0 = READ_ONCE(*x);\n\t\tr1 = r0 + 1;\n\t\tr1 = cmpxchg_acquire(x, r0, r1);\n\t\tif (r1 == r0)\n\t\t\tbreak;\n\t}\n\tWRITE_ONCE(*y, 1);\n"},
	} {
		tt := litmustest.MustParse(t, head+tc.body+other)
		tt.File = "t.litmus"
		res, err := searchFile(t, tt, memory.LKMM)
		require.NoError(t, err, tc.name)
		assert.Nil(t, res.Violation, tc.name)
		assert.True(t, res.Exhausted, tc.name)
	}
}

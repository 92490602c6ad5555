package lkmm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
)

// judgeLKMM runs src under the operational LKMM model: herd7's word for
// its exists condition.
func judgeLKMM(t *testing.T, src string) string {
	t.Helper()
	a, err := litmus.Judge(Promise{}, litmustest.MustParse(t, src))
	require.NoError(t, err)
	return a.Result
}

// TestLKMMShapes: the shapes the view-based Relaxed model got wrong
// (stronger than LKMM) and a few it got right, under the operational LKMM
// model.
func TestLKMMShapes(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"S", litmustest.Two("exists (x=2 /\\ 1:r0=1)",
			"WRITE_ONCE(*x, 2); WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, 1);"), "Sometimes"},
		{"2+2W", litmustest.Two("exists (x=1 /\\ y=1)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 2);",
			"WRITE_ONCE(*y, 1); WRITE_ONCE(*x, 2);"), "Sometimes"},
		{"MP+po+mb", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1);",
			"int r0; int r1; r0 = READ_ONCE(*y); smp_mb(); r1 = READ_ONCE(*x);"), "Sometimes"},
		{"MP+wmb+rmb", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); smp_wmb(); WRITE_ONCE(*y, 1);",
			"int r0; int r1; r0 = READ_ONCE(*y); smp_rmb(); r1 = READ_ONCE(*x);"), "Never"},
		{"MP+rel+acq", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); smp_store_release(y, 1);",
			"int r0; int r1; r0 = smp_load_acquire(y); r1 = READ_ONCE(*x);"), "Never"},
		{"SB", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; WRITE_ONCE(*x, 1); r0 = READ_ONCE(*y);",
			"int r0; WRITE_ONCE(*y, 1); r0 = READ_ONCE(*x);"), "Sometimes"},
		{"SB+mbs", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; WRITE_ONCE(*x, 1); smp_mb(); r0 = READ_ONCE(*y);",
			"int r0; WRITE_ONCE(*y, 1); smp_mb(); r0 = READ_ONCE(*x);"), "Never"},
		{"MP+locks", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); spin_lock(l); WRITE_ONCE(*y, 1); spin_unlock(l);",
			"int r0; int r1; spin_lock(l); r0 = READ_ONCE(*y); spin_unlock(l); r1 = READ_ONCE(*x);"), "Never"},
		// Load buffering, by a promise.
		{"LB", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, 1);"), "Sometimes"},
		// Dependencies on both sides: the promise would depend on itself.
		{"LB+datas", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, r0);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0);"), "Never"},
		{"LB+ctrl+po", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); if (r0) { WRITE_ONCE(*y, 1); }",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, 1);"), "Sometimes"},
		{"LB+ctrls", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); if (r0) { WRITE_ONCE(*y, 1); }",
			"int r0; r0 = READ_ONCE(*y); if (r0) { WRITE_ONCE(*x, 1); }"), "Never"},
		// Two loads the thread may reorder, the second feeding the store
		// the first reads through another thread.
		{"LB+reordered-loads", "C T\n{}\nP0(int *x, int *y, int *z)\n{\nint r1; int r2; r1 = READ_ONCE(*x); r2 = READ_ONCE(*y); WRITE_ONCE(*z, r2);\n}\n" +
			"P1(int *x, int *z)\n{\nint r3; r3 = READ_ONCE(*z); WRITE_ONCE(*x, r3);\n}\nP2(int *y)\n{\nWRITE_ONCE(*y, 1);\n}\nexists (0:r1=1)\n", "Sometimes"},
		// Found by the differential test: a pb edge (P2's read of x
		// overwritten by P0's first store, which P0's RMW passed on as a
		// strong fence) into the events after the fence that already ran.
		{"pb-into-the-past", "C T\n{}\nP0(int *x)\n{\nint r0; int r1; r0 = atomic_fetch_add(1, x); WRITE_ONCE(*x, 1); r1 = READ_ONCE(*x);\n}\n" +
			"P1(int *x, int *y)\n{\nint r0; int r1; r0 = atomic_fetch_add_acquire(1, x); r1 = READ_ONCE(*y);\n}\n" +
			"P2(int *x, int *y)\n{\nint r0; int r1; r0 = atomic_fetch_add(1, y); r1 = READ_ONCE(*x);\n}\n" +
			"exists (0:r0=0 /\\ 1:r0=1 /\\ 1:r1=0 /\\ 2:r0=0 /\\ 2:r1=0 /\\ x=2 /\\ y=1)\n", "Never"},
		// Found by the differential test: an RMW whose value depends on a
		// register, reading the second store of a location, was refused
		// because the loop over the stores it may read shifted the
		// dependency's positions once per store tried.
		{"RMW-data-after-insert", "C T\n{}\nP0(int *x, int *y)\n{\nint r0; int r1; r0 = smp_load_acquire(x); r1 = atomic_add_return_relaxed(2, y);\n}\n" +
			"P1(int *x)\n{\nint r9; WRITE_ONCE(*x, 1); r9 = READ_ONCE(*x);\n}\n" +
			"P2(int *x, int *y)\n{\nint r0; int r1; r0 = READ_ONCE(*y); r1 = xchg_relaxed(x, r0 + 2);\n}\n" +
			"exists (0:r0=1 /\\ 2:r0=2 /\\ 2:r1=1 /\\ 1:r9=4)\n", "Sometimes"},
	} {
		assert.Equal(t, tc.want, judgeLKMM(t, tc.src), tc.name)
	}
}

// TestLKMMBounds: a test beyond the model's state is refused, naming the
// bound, never answered from a partial search.
func TestLKMMBounds(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "WRITE_ONCE(*x, %d); ", i)
	}
	_, err := Promise{}.Outcomes(litmustest.MustParse(t, litmustest.Two("exists (x=1)", b.String(), "")))
	require.ErrorIs(t, err, litmus.ErrUnsupported)
	assert.Contains(t, err.Error(), "8 stores to location")

	_, err = Promise{MaxStates: 3}.Outcomes(litmustest.MustParse(t, litmustest.Two("exists (x=1)", "WRITE_ONCE(*x, 1);", "int r0; r0 = READ_ONCE(*x);")))
	require.ErrorIs(t, err, litmus.ErrCutShort)
}

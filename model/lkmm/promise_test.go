package lkmm

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

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

// ring returns a litmus test of n threads passing a message around n
// locations: P0 writes x0 then x1, each next thread reads the location its
// predecessor wrote and writes the next one, and the last reads x(n-1)
// then x0. With fence between the accesses of each thread (smp_mb() or
// nothing), it asks whether the last thread can see every flag and miss
// P0's first store.
func ring(n int, fence string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "C ring%d\n{}\n", n)
	fmt.Fprintf(&b, "P0(int *x0, int *x1)\n{\nWRITE_ONCE(*x0, 1); %s WRITE_ONCE(*x1, 1);\n}\n", fence)
	for i := 1; i < n-1; i++ {
		fmt.Fprintf(&b, "P%d(int *x%d, int *x%d)\n{\nint r0; r0 = READ_ONCE(*x%d); %s WRITE_ONCE(*x%d, 1);\n}\n", i, i, i+1, i, fence, i+1)
	}
	fmt.Fprintf(&b, "P%d(int *x%d, int *x0)\n{\nint r0; int r1; r0 = READ_ONCE(*x%d); %s r1 = READ_ONCE(*x0);\n}\n", n-1, n-1, n-1, fence)
	b.WriteString("exists (")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "%d:r0=1 /\\ ", i)
	}
	fmt.Fprintf(&b, "%d:r1=0)\n", n-1)
	return b.String()
}

// TestPromiseBeyondOldBounds: tests beyond the fixed bounds the model once
// had (4 threads, 4 locations, 7 stores to a location, 8 registers) run.
func TestPromiseBeyondOldBounds(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		// 6 threads, 6 locations: a message passed around a ring.
		{"ring6+mbs", ring(6, "smp_mb();"), "Never"},
		{"ring6", ring(6, ""), "Sometimes"},
		// 9 stores to one location, read by another thread.
		{"9 stores", litmustest.Two("exists (1:r0=5)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 2); WRITE_ONCE(*x, 3); WRITE_ONCE(*x, 4); WRITE_ONCE(*x, 5); WRITE_ONCE(*x, 6); WRITE_ONCE(*x, 7); WRITE_ONCE(*x, 8); WRITE_ONCE(*x, 9);",
			"int r0; r0 = READ_ONCE(*x);"), "Sometimes"},
		// 10 registers in one thread, and a sum of four of them.
		{"10 registers", litmustest.Two("exists (1:r9=4)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1);",
			"int r0; int r1; int r2; int r3; int r4; int r5; int r6; int r7; int r8; int r9; r0 = READ_ONCE(*x); r1 = READ_ONCE(*y); r2 = READ_ONCE(*x); r3 = READ_ONCE(*y); r4 = r0; r5 = r1; r6 = r2; r7 = r3; r8 = r4 + r5; r9 = r8 + r6 + r7;"), "Sometimes"},
	} {
		assert.Equal(t, tc.want, judgeLKMM(t, tc.src), tc.name)
	}
}

// TestPromiseBudget: a search that reaches MaxStates or Timeout is cut
// short, with its counts, never answered from a partial search.
func TestPromiseBudget(t *testing.T) {
	_, err := Promise{MaxStates: 3}.Outcomes(litmustest.MustParse(t, litmustest.Two("exists (x=1)", "WRITE_ONCE(*x, 1);", "int r0; r0 = READ_ONCE(*x);")))
	require.ErrorIs(t, err, litmus.ErrCutShort)
	assert.Contains(t, err.Error(), "state budget of 3")

	// Eight threads of the ring without fences: far more states than
	// 50 ms explore.
	test := litmustest.MustParse(t, ring(8, ""))
	start := time.Now()
	_, err = Promise{Timeout: 50 * time.Millisecond}.Outcomes(test)
	took := time.Since(start)
	require.ErrorIs(t, err, litmus.ErrCutShort)
	for _, part := range []string{"timeout of 50ms", " states in ", "8 threads", "16 events"} {
		assert.Contains(t, err.Error(), part)
	}
	assert.Less(t, took, 5*time.Second, "the search stops soon after its timeout")
}

// TestPromiseCachedHashes: each state's key is made from hashes of its
// parts, recomputed only for the parts a step marks changed. With every
// part rehashed at every state and compared with the cached hashes, the
// shapes and the rings find none stale.
func TestPromiseCachedHashes(t *testing.T) {
	promiseCheckHashes = true
	defer func() { promiseCheckHashes = false }()
	TestLKMMShapes(t)
	TestPromiseBeyondOldBounds(t)
}

// TestPromiseKeepsNothing: a run's memory is free once Outcomes returns;
// many runs leave the heap where one left it.
func TestPromiseKeepsNothing(t *testing.T) {
	test := litmustest.MustParse(t, ring(4, ""))
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	_, err := Promise{}.Outcomes(test)
	require.NoError(t, err)
	before := heap()
	for range 100 {
		_, err := Promise{}.Outcomes(test)
		require.NoError(t, err)
	}
	after := heap()
	t.Logf("heap after one run: %d KiB, after 100 more: %d KiB", before>>10, after>>10)
	assert.Less(t, after, before+256<<10, "the heap grew by more than 256 KiB over 100 runs")
}

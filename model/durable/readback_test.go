package durable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
)

// TestReadBack: a load of its own thread's store that depends on a load
// is ordered after that load ((dep ; [Marked] ; rfi) is in
// linux-kernel.cat's to-r), so what is ordered after the first load
// (an acquire's po) sees what the load it depends on read. Found by
// TestMemoryLKMMReleaseAcquire (seed 3): P1 read P0's release of y,
// stored back a value computed from it, read that back with an acquire,
// and memory.LKMM let the load of x after it read 0, an outcome LKMM
// forbids (MP through the dependency). The stores that are not read
// back are told no more than before (TestToldDeps), and a load not
// depended on orders nothing through the read back.
func TestReadBack(t *testing.T) {
	const p0 = "WRITE_ONCE(*x, 1); smp_store_release(y, 1);"
	for _, tc := range []struct {
		name, p1, cond string
		allowed        bool
	}{
		{"data dependency, same location", "int r0; int r1; int r2; r0 = READ_ONCE(*y); WRITE_ONCE(*y, r0 + 1); r1 = smp_load_acquire(y); r2 = READ_ONCE(*x);",
			"1:r0=1 /\\ 1:r1=2 /\\ 1:r2=0", false},
		{"a release stored back", "int r0; int r1; int r2; r0 = READ_ONCE(*y); smp_store_release(y, r0 + 1); r1 = smp_load_acquire(y); r2 = READ_ONCE(*x);",
			"1:r0=1 /\\ 1:r1=2 /\\ 1:r2=0", false},
		{"an RMW's read, control dependency", "int r0; int r1; int r2; r0 = atomic_fetch_add_release(1, y); if (r0 != 0) WRITE_ONCE(*y, r0 + 1); r1 = smp_load_acquire(y); if (r0 != 0) r2 = READ_ONCE(*x);",
			"1:r0=1 /\\ 1:r1=2 /\\ 1:r2=0", false},
		{"another location", "int r0; int r1; int r2; r0 = READ_ONCE(*y); WRITE_ONCE(*z, r0); r1 = smp_load_acquire(z); r2 = READ_ONCE(*x);",
			"1:r0=1 /\\ 1:r1=1 /\\ 1:r2=0", false},
		{"the store depends on another load only", "int r0; int r1; int r2; int r3; r0 = READ_ONCE(*z); r1 = READ_ONCE(*y); WRITE_ONCE(*y, r0 + 2); r2 = smp_load_acquire(y); r3 = READ_ONCE(*x);",
			"1:r1=1 /\\ 1:r2=2 /\\ 1:r3=0", true},
		{"read back plainly", "int r0; int r1; int r2; r0 = READ_ONCE(*y); WRITE_ONCE(*y, r0 + 1); r1 = READ_ONCE(*y); r2 = READ_ONCE(*x);",
			"1:r0=1 /\\ 1:r1=2 /\\ 1:r2=0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test := litmustest.MustParse(t, "C readback\n{}\nP0(int *x, int *y) { "+p0+" }\nP1(int *x, int *y, int *z) { "+tc.p1+" }\nexists ("+tc.cond+")\n")
			w, err := lkmm.Reference{}.Decide(test)
			require.NoError(t, err)
			require.Equal(t, tc.allowed, w.Sat != nil, "the reference")
			assert.Equal(t, outcomeSet(t, lkmm.Reference{}, test), outcomeSet(t, Operational{Model: memory.LKMM}, test))
		})
	}
}

// TestPendingBarrierThenCmpxchg: a fully ordered RMW's barrier orders
// its thread's loads before what follows whether or not a cmpxchg after it
// stores, so those loads are no reason to refuse a store after the
// cmpxchg. With the barrier left pending (no reductions) they were kept
// as ordered only by the cmpxchg's success and the store was refused,
// while with reductions (the barrier completed at once) it was not: the
// two modes must agree. Found by TestMemoryLKMMGuarded (seed 18).
func TestPendingBarrierThenCmpxchg(t *testing.T) {
	test := litmustest.MustParse(t, `C pending-barrier-cmpxchg
{}
P0(int *x, int *y) { int r0; int r1; r0 = atomic_add_return(1, x); r1 = cmpxchg(y, 0, 1); WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; r0 = READ_ONCE(*y); }
exists (0:r1=0 /\ 1:r0=1)
`)
	want := outcomeSet(t, lkmm.Reference{}, test)
	assert.Equal(t, want, outcomeSet(t, Operational{Model: memory.LKMM}, test))
	assert.Equal(t, want, outcomeSet(t, Operational{Model: memory.LKMM, NoReduce: true}, test))
}

// TestPropAcrossLocations: a load of a store whose message view holds a
// store that overwrites what its thread read at another location happens
// after that read ((fre ; cumul-fence ; rfe) & int is in hb), so it may
// not read a store that what that read carried overwrites. P2 reads x = 2
// (P0: y = 1, then a release of x = 2) and y = 2 (P1: x = 1, then a
// release of y = 2) with x = 1 and y = 1 last in co: each read is
// fr before a store that propagates before the other's, a cycle in hb.
// memory.LKMM allowed it (found by TestMemoryLKMMReleaseAcquire, seed 20,
// with RMWs and an acquire).
func TestPropAcrossLocations(t *testing.T) {
	for _, p2 := range []string{
		"int r0; int r1; r0 = READ_ONCE(*x); r1 = READ_ONCE(*y);",
		"int r0; int r1; r0 = READ_ONCE(*x); r1 = smp_load_acquire(y);",
		"int r0; int r1; r0 = atomic_fetch_add_release(2, x); r1 = smp_load_acquire(y);",
	} {
		test := litmustest.MustParse(t, `C prop-across
{}
P0(int *x, int *y) { WRITE_ONCE(*y, 1); smp_store_release(x, 2); }
P1(int *x, int *y) { WRITE_ONCE(*x, 1); smp_store_release(y, 2); }
P2(int *x, int *y) { `+p2+` }
exists (2:r0=2 /\ 2:r1=2 /\ x=1 /\ y=1)
`)
		w, err := lkmm.Reference{}.Decide(test)
		require.NoError(t, err)
		require.Nil(t, w.Sat, "LKMM forbids it: %s", p2)
		assert.Equal(t, outcomeSet(t, lkmm.Reference{}, test), outcomeSet(t, Operational{Model: memory.LKMM}, test), p2)
	}
}

// TestPropThroughOwnStore: a load of a store whose message view holds
// its thread's own newest store at another location happens after that
// store, and so after the thread's earlier accesses there. P0 reads y = 1
// from P2's xchg_release (made after P2's x = 2), stores y = 1, and reads
// x = 1 from P1's release, made after P1 read P0's y = 1: with x = 2 last
// in co that load of x is fr before x = 2, which propagates before the
// xchg P0 read, a cycle in hb. memory.LKMM allowed it (found by
// TestMemoryLKMMReleaseAcquire, seed 42). With P1 reading y = 0 instead
// the outcome is allowed, and compaction must not make P1's view of the
// initial y look like one that holds P0's store (the blank store
// lkCompact keeps).
func TestPropThroughOwnStore(t *testing.T) {
	test := litmustest.MustParse(t, `C prop-own-store
{}
P0(int *x, int *y) { int r0; int r1; r0 = READ_ONCE(*y); WRITE_ONCE(*y, 1); if (r0 != 0) r1 = READ_ONCE(*x); }
P1(int *x, int *y) { int r0; int r1; r0 = atomic_fetch_add_release(2, x); r1 = READ_ONCE(*y); smp_store_release(x, 1); }
P2(int *x, int *y) { int r0; WRITE_ONCE(*x, 2); r0 = xchg_release(y, 1); }
exists (0:r0=1 /\ 0:r1=1 /\ 1:r0=0 /\ 1:r1=1 /\ 2:r0=0 /\ x=2 /\ y=1)
`)
	w, err := lkmm.Reference{}.Decide(test)
	require.NoError(t, err)
	require.Nil(t, w.Sat, "LKMM forbids it")
	want := outcomeSet(t, lkmm.Reference{}, test)
	require.Contains(t, want, "0:r0=1; 0:r1=1; 1:r0=0; 1:r1=0; 2:r0=0; x=2; y=1;")
	assert.Equal(t, want, outcomeSet(t, Operational{Model: memory.LKMM}, test))
	assert.Equal(t, want, outcomeSet(t, Operational{Model: memory.LKMM, NoReduce: true}, test))
}

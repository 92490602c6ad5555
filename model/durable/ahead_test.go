package durable

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

func outcomeSet(t *testing.T, m litmus.Model, test *litmus.Test) []string {
	t.Helper()
	out, err := m.Outcomes(test)
	require.NoError(t, err, "%s under %s", test.Name, m.Name())
	var keys []string
	for _, o := range out {
		keys = append(keys, o.Key())
	}
	sort.Strings(keys)
	return keys
}

// TestRunAheadShapes: shapes that need a store to run ahead of a load of
// its thread (load buffering), and the faults the differential test
// found on the way, under memory.LKMM with threads that run ahead: the
// outcomes must be the LKMM reference's, and the load-buffering outcome
// reachable where LKMM allows it.
func TestRunAheadShapes(t *testing.T) {
	op := Operational{Model: memory.LKMM}
	for _, tc := range []struct {
		name, src string
		lb        bool // the exists clause (load buffering) is reachable
	}{
		{"LB", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, 1);"), true},
		// Through a relaxed RMW and a compiler barrier.
		{"LB+rmw", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = smp_load_acquire(y);",
			"int r0; r0 = READ_ONCE(*x); barrier(); atomic_add(1, y);"), false},
		// A store after the if, not in its arms, runs ahead of the load
		// the if reads (the if ran on a guess); the store in the arms
		// waits for it (a control dependency).
		{"LB+ctrl-after-if", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; int r1; r0 = READ_ONCE(*x); if (r0 == 1) { r1 = 2; } else { r1 = 3; } WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0);"), true},
		{"LB+ctrl-in-if", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); if (r0 == 1) { WRITE_ONCE(*y, 1); }",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0);"), false},
		{"LB+datas", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, r0);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0);"), false},
		// Found by the differential test: a store that depends on one
		// load and not on another went after only what its thread had
		// seen, not after what the load it depends on saw.
		{"dep-placement", `C dep-placement
{}
P0(int *x, int *y, int *z) { int r1; int r2; r1 = READ_ONCE(*x); r2 = READ_ONCE(*y); WRITE_ONCE(*z, r2 + 1); }
P1(int *x, int *y, int *z) { WRITE_ONCE(*z, 1); smp_wmb(); WRITE_ONCE(*y, 1); }
exists (0:r2=1 /\ z=1)
`, false},
		// A store after a release RMW runs ahead of its read: the RMW is
		// left pending on a fork of its thread (deferRelease), so what
		// ran ahead is not ordered before its store. Refused before
		// releases were left pending that way; found by the
		// differential test when they were left pending in the thread
		// itself (the outcome was missed).
		{"release-ahead", `C release-ahead
{}
P0(int *x, int *y) { int r0; r0 = atomic_fetch_add_release(1, y); WRITE_ONCE(*x, 1); }
P1(int *x, int *y) { int r0; int r1; int r2; r0 = READ_ONCE(*x); if (r0 != 0) { r1 = cmpxchg_relaxed(y, 0, 1); } if (r0 != 0) { r2 = READ_ONCE(*x); } }
P2(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(y); r1 = READ_ONCE(*x); }
exists (0:r0=1 /\ 1:r0=1 /\ 1:r1=0 /\ 2:r0=2 /\ 2:r1=0)
`, true},
		// A store after a spin_unlock runs ahead of a load before it: the
		// unlock is left pending with the load, on the fork.
		{"LB+unlock", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; spin_lock(l); r0 = READ_ONCE(*x); spin_unlock(l); WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, r0);"), true},
		{"LB+release", `C LB+release
{}
P0(int *x, int *y, int *z) { int r0; r0 = READ_ONCE(*x); smp_store_release(z, 1); WRITE_ONCE(*y, 1); }
P1(int *x, int *y, int *z) { int r0; int r1; r0 = READ_ONCE(*y); r1 = smp_load_acquire(z); WRITE_ONCE(*x, r0); }
exists (0:r0=1 /\ 1:r0=1 /\ 1:r1=0)
`, true},
		// Found by the differential test: a release RMW left pending let
		// a later RMW be satisfied first, and what ran ahead of it went
		// before its store.
		{"release-rmw", `C release-rmw
{}
P0(int *x) { int r0; r0 = READ_ONCE(*x); }
P1(int *x, int *y) { int r0; int r1; r0 = atomic_add_return_relaxed(1, y); r1 = xchg_release(x, 1); }
P2(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(x); if (r0 != 0) { r1 = READ_ONCE(*y); } }
exists (2:r0=1 /\ 2:r1=0)
`, false},
		// An acquire after a release of its location reads the
		// release's store (rfi) while both are left pending (forward):
		// the store after it is seen before the release's read.
		{"forward-rmw", `C forward-rmw
{}
P0(atomic_t *c, int *y) { int r0; int r1; r0 = atomic_fetch_add_release(1, c); r1 = atomic_xchg_acquire(c, 30); WRITE_ONCE(*y, 1); }
P1(atomic_t *c, int *y) { int r2; r2 = READ_ONCE(*y); if (r2 == 1) atomic_set(c, 10); }
exists (0:r0=10 /\ 0:r1=11 /\ 1:r2=1)
`, true},
		{"forward-load", `C forward-load
{}
P0(int *c, int *y, int *z) { int r0; int r1; r0 = READ_ONCE(*z); smp_store_release(c, 1); r1 = smp_load_acquire(c); WRITE_ONCE(*y, 1); }
P1(int *c, int *y, int *z) { int r2; r2 = READ_ONCE(*y); WRITE_ONCE(*z, r2); }
exists (0:r0=1 /\ 0:r1=1 /\ 1:r2=1)
`, true},
		// Reading another thread's store co-after the release's instead
		// orders the release before the acquire ((coe ; rfe) & int is in
		// hb), and so its read before the store: never reached.
		{"forward-coe", `C forward-coe
{}
P0(atomic_t *c, int *y) { int r0; int r1; r0 = atomic_fetch_add_release(1, c); r1 = atomic_xchg_acquire(c, 30); WRITE_ONCE(*y, 1); }
P1(atomic_t *c, int *y) { int r2; r2 = READ_ONCE(*y); if (r2 == 1) atomic_set(c, 10); }
P2(atomic_t *c) { atomic_set(c, 20); }
exists (0:r0=10 /\ 0:r1=20 /\ 1:r2=1)
`, false},
		// A plain load then an acquire of its location: the load reads
		// what the acquire reads, or an older store and is then ordered
		// before it ((fre ; rfe) & int): no store after the acquire is
		// seen before the load (refused before).
		{"load-then-acquire", `C load-then-acquire
{}
P0(atomic_t *x, int *y) { int r0; int r1; r0 = atomic_read(x); r1 = atomic_fetch_add_acquire(1, x); WRITE_ONCE(*y, 1); }
P1(atomic_t *x, int *y) { int r2; r2 = READ_ONCE(*y); atomic_set(x, r2); }
P2(atomic_t *x) { atomic_set(x, 5); }
exists (0:r0=1)
`, false},
		// Found by TestMemoryLKMMReleaseAcquire: a release RMW in the
		// arm of an if on a pending load of its location forced the
		// load, and the store after the if, which nothing orders after
		// it, could not run first (the outcome was missed, not refused).
		// The release is now left pending after the load.
		{"release-in-guessed-arm", `C release-in-guessed-arm
{}
P0(int *x, int *y) { int r0; int r1; r0 = READ_ONCE(*y); if (r0 != 0) { r1 = READ_ONCE(*x); } if (r0 != 0) { WRITE_ONCE(*x, 1); } }
P1(atomic_t *x, int *y) { int r0; int r1; r0 = atomic_read(x); if (r0 != 0) { r1 = atomic_fetch_add_release(1, x); } WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 0:r1=0 /\ 1:r0=1 /\ 1:r1=1)
`, true},
	} {
		test := litmustest.MustParse(t, tc.src)
		got := outcomeSet(t, op, test)
		want := outcomeSet(t, lkmm.Reference{}, test)
		assert.Equal(t, want, got, tc.name)
		w, _, err := op.Witness(test, test.Cond)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.lb, w != nil, "%s: the exists clause reachable", tc.name)
	}
}

// TestRunAheadRefuses: where a load cannot be left pending past a store
// that LKMM lets go first, the model refuses rather than answer without
// that run: smp_rmb satisfies the load and orders nothing before the
// store.
func TestRunAheadRefuses(t *testing.T) {
	// Found by the differential test: P2's READ_ONCE(y) reads its own
	// relaxed RMW's store (rfi, which orders nothing), so the store after
	// it may go before the RMW reads; the RMW, satisfied first for the
	// load, must not be covered (it was: the outcome was missed).
	rfi := litmustest.MustParse(t, `C rmw-rfi
{}
P0(int *x) { int r0; WRITE_ONCE(*x, 1); r0 = READ_ONCE(*x); }
P1(int *x, int *y) { int r0; int r1; r0 = atomic_add_return(1, x); if (r0 != 0) { r1 = smp_load_acquire(y); } WRITE_ONCE(*y, r0 + 1); }
P2(int *x, int *y) { int r0; int r1; r0 = atomic_fetch_add_relaxed(2, y); r1 = READ_ONCE(*y); if (r1 != 0) { WRITE_ONCE(*x, 2); } }
exists (1:r0=3 /\ 2:r0=4 /\ 2:r1=6)
`)
	refusedAllowed(t, rfi)

	// Found by TestMemoryLKMMReleaseThenAcquire: a store in the arm of an
	// if on an acquire that reads its pending release's store (forward)
	// was taken as ordered after the load before the release, which the
	// rfi does not order (a missed outcome: it is now refused).
	fwd := litmustest.MustParse(t, `C forward-ctrl
{}
P0(atomic_t *x, atomic_t *y) { int r1; int r3; r3 = atomic_read(x); smp_store_release(x, 1); r1 = smp_load_acquire(x); if (r1 == 1) WRITE_ONCE(*y, 1); }
P1(atomic_t *x, atomic_t *y) { int r2; r2 = atomic_read(y); if (r2 == 1) atomic_set(x, 3); }
exists (0:r1=1 /\ 0:r3=3 /\ 1:r2=1)
`)
	refusedAllowed(t, fwd)

	// Found by TestMemoryLKMMReleaseAcquire (seed 62): P1's second
	// release RMW forces the first, pending (one release per thread is
	// left pending at a time), covered for that step only; but the
	// second was then left pending with a fresh run-ahead state, which
	// dropped the cover's end, so the store to y counted as covered
	// after the first RMW's read. LKMM lets it be seen before both RMWs
	// read (nothing orders a release's read before what follows), which
	// needs both left pending: refused, not missed.
	twoRel := litmustest.MustParse(t, `C two-release-rmws
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*y); smp_store_release(x, 1); }
P1(int *x, int *y) { int r0; int r1; r0 = atomic_fetch_add_release(1, x); r1 = atomic_fetch_add_release(1, x); WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 1:r0=1 /\ 1:r1=2)
`)
	refusedAllowed(t, twoRel)

	// Found by TestMemoryLKMMGuarded (CI, seed 10428134700764359553):
	// P1's store to z, in the arm of an if on the value of y, forces the
	// load when the thread runs the arm on its guess; there y reads 0,
	// the guess fails and the run ends. The guess that skips the arm
	// runs the store to x ahead, and then y reads 1, failing that guess.
	// So no run had y read 1 with the store to x seen first, which LKMM
	// allows (nothing orders the store to x after the load): the
	// outcome was missed. It needs the store to z left pending past the
	// store to x: refused.
	for _, arm := range []string{
		"WRITE_ONCE(*z, 1);",                    // a control dependency
		"r1 = cmpxchg_relaxed(x, 1, 1);",        // an RMW that may fail
		"smp_rmb();",                            // a barrier that orders loads only
		"r1 = atomic_add_return_relaxed(1, z);", // a pending RMW of its own
	} {
		ctrl := litmustest.MustParse(t, `C ctrl-arm
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); if (r0 != 0) atomic_add(1, y); }
P1(int *x, int *y, int *z) { int r0; int r1; r0 = READ_ONCE(*y); if (r0 != 0) { `+arm+` } WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1)
`)
		ctrl.Name = arm
		refusedAllowed(t, ctrl)
	}
	// Where nothing else stores to y, the forced load reads all it ever
	// could: the same shape is answered, and exactly.
	alone := litmustest.MustParse(t, `C ctrl-arm-alone
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); }
P1(int *x, int *y, int *z) { int r0; r0 = READ_ONCE(*y); if (r0 != 0) { WRITE_ONCE(*z, 1); } WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1)
`)
	assert.Equal(t, outcomeSet(t, lkmm.Reference{}, alone), outcomeSet(t, Operational{Model: memory.LKMM}, alone))
	// An unlock and then a lock in the arm (po-unlock-lock-po) order the
	// store after the if after the load on that way too: answered, and
	// exactly (the corpus's C-ManfredSpraul-L1G1locknr has the shape).
	relock := litmustest.MustParse(t, `C relock-arm
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); if (r0 != 0) atomic_add(1, y); }
P1(int *x, int *y, spinlock_t *l) { int r0; spin_lock(l); r0 = READ_ONCE(*y); if (r0 != 0) { spin_unlock(l); spin_lock(l); } WRITE_ONCE(*x, 1); spin_unlock(l); }
exists (0:r0=1 /\ 1:r0=1)
`)
	assert.Equal(t, outcomeSet(t, lkmm.Reference{}, relock), outcomeSet(t, Operational{Model: memory.LKMM}, relock))

	// smp_mb in the arm orders the store after the if after the load
	// (on the way that runs it): nothing is missed, and nothing refused.
	mb := litmustest.MustParse(t, `C mb-arm
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); if (r0 != 0) atomic_add(1, y); }
P1(int *x, int *y, int *z) { int r0; r0 = READ_ONCE(*y); if (r0 != 0) { smp_mb(); } WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1)
`)
	assert.Equal(t, outcomeSet(t, lkmm.Reference{}, mb), outcomeSet(t, Operational{Model: memory.LKMM}, mb))

	// A device call in the arm: the durability checker said SAFE under
	// LKMM (the run with P0 reading flag=1 after its store to done was
	// missed); it is refused at the store, with the run that reached it.
	const path = "testdata/refused/flush-in-arm.litmus"
	tt, perr := litmus.ParseFile(path)
	require.NoError(t, perr)
	d, derr := Read(path, tt)
	require.NoError(t, derr)
	for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
		r, err := d.Search(Config{Model: m, Device: d.Devices[0], Crash: d.Crash}, explore.Options{})
		if m == memory.LKMM {
			require.Error(t, err)
			assert.ErrorContains(t, err, "22:2: P0: LKMM lets this store be seen before its load of flag is satisfied (load buffering) while line 20")
			continue
		}
		require.NoError(t, err, m)
		assert.Nil(t, r.Violation, "%v: the two loads cannot both read 1", m)
	}

	test := litmustest.MustParse(t, litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
		"int r0; r0 = READ_ONCE(*x); smp_rmb(); WRITE_ONCE(*y, 1);",
		"int r0; r0 = READ_ONCE(*y); smp_rmb(); WRITE_ONCE(*x, 1);"))
	_, err := Operational{Model: memory.LKMM}.Outcomes(test)
	require.ErrorIs(t, err, litmus.ErrUnsupported)
	assert.ErrorContains(t, err, "LKMM lets this store be seen before its load of")
	// In order (no running ahead, no refusal), load buffering is missed.
	got := outcomeSet(t, Operational{Model: memory.LKMM, InOrder: true}, test)
	want := outcomeSet(t, lkmm.Reference{}, test)
	assert.NotEqual(t, want, got)
}

// refusedAllowed requires the explorer's LKMM to refuse test (a shape
// it cannot run ahead into) whose condition the reference allows: the
// outcome is refused, not missed.
func refusedAllowed(t *testing.T, test *litmus.Test) {
	t.Helper()
	_, err := Operational{Model: memory.LKMM}.Outcomes(test)
	require.ErrorIs(t, err, litmus.ErrUnsupported, test.Name)
	w, err := lkmm.Reference{}.Decide(test)
	require.NoError(t, err)
	assert.NotNil(t, w.Sat, "LKMM allows %s's outcome", test.Name)
}

// TestToldDeps: memory.LKMM is told what a store depends on only where it
// reads it: a plain store or an unordered RMW that depends on a load of
// another location. A fully ordered or a release access is ordered after
// every earlier load anyway, and a load of the store's own location by
// coherence, so their dependencies are not told, and a file whose only
// dependencies are those runs without UseOrderings (fewer states: the
// flush sequence at 3 tasks x 2 fsyncs went from 1,624,353 to 471,581
// under LKMM). The outcomes stay the reference's.
func TestToldDeps(t *testing.T) {
	for _, tc := range []struct {
		name, p0 string
		told     memory.LocSet // what the store in P0 is told (bit 0: x)
	}{
		{"plain store after a load of x", "int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, r0);", 1},
		{"unordered RMW after a load of x", "int r0; r0 = READ_ONCE(*x); atomic_add(r0, y);", 1},
		{"fully ordered RMW after a load of x", "int r0; int r1; r0 = READ_ONCE(*x); r1 = atomic_add_return(r0, y);", 0},
		{"release store after a load of x", "int r0; r0 = READ_ONCE(*x); smp_store_release(y, r0);", 0},
		{"release RMW after a load of x", "int r0; int r1; r0 = READ_ONCE(*x); r1 = atomic_add_return_release(r0, y);", 0},
		{"plain store after a load of its own location", "int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*y, r0);", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)", tc.p0,
				"int r0; r0 = READ_ONCE(*y); smp_mb(); WRITE_ONCE(*x, 1);")
			test, err := litmus.Parse("told.litmus", []byte(src))
			require.NoError(t, err)
			op, err := compile(memory.LKMM, test)
			require.NoError(t, err)
			var told []memory.LocSet
			for _, in := range op.code[0] {
				if in.kind == iAccess && in.access.Op.Info().Writes {
					told = append(told, in.deps)
				}
			}
			require.Len(t, told, 1)
			assert.Equal(t, tc.told, told[0])
			want := outcomeSet(t, lkmm.Reference{}, test)
			assert.Equal(t, want, outcomeSet(t, Operational{Model: memory.LKMM}, test))
		})
	}
}

// TestRunAheadPastReturn: a store after an if whose arm returned is not
// ordered after the load the if reads (LKMM's control dependency reaches
// the arms only: tools/memory-model "Weaken ctrl dependency definition in
// explanation.txt"), so it runs ahead on a guess of the if's way, and
// what it writes rests on that guess: nothing is judged (a failed check,
// a crash image, the final condition) until the stores already made bear
// the guess out, and a run whose guess no value bears out ends unjudged.
func TestRunAheadPastReturn(t *testing.T) {
	file := func(name, init, p0, p1, cond, crash string) *litmus.Test {
		src := fmt.Sprintf(`C %s
(*
 * Crash: %s
 * Device: cache+fua
 *)
{ %s }
P0(int *x, int *y) { int r0; %s }
P1(int *x, int *y) { int r1; int e; %s }
%s
`, name, crash, init, p0, p1, cond)
		tt, err := litmus.Parse(name+".litmus", []byte(src))
		require.NoError(t, err)
		return tt
	}
	const p0 = "r0 = READ_ONCE(*x); if (r0 == 2) return; WRITE_ONCE(*y, 1);"
	// Load buffering through the store after the return: LKMM reaches
	// it (P0's store runs ahead of its load, on the guess that the if
	// is not taken, which P1's store of 1 bears out); SC does not.
	lb := file("lb-after-return", "", p0, "r1 = READ_ONCE(*y); WRITE_ONCE(*x, r1);", "~exists (0:r0=1 /\\ 1:r1=1)", "none")
	for _, m := range []memory.Model{memory.SC, memory.LKMM} {
		r, err := searchFile(t, lb, m)
		require.NoError(t, err, m.String())
		if m == memory.LKMM {
			require.NotNil(t, r.Violation, "LKMM reaches load buffering past the return")
			assert.Contains(t, r.Violation.Timeline(), "not taken (a guess")
		} else {
			assert.Nil(t, r.Violation, "%v", r.Violation)
		}
	}
	// x is 2 and nothing stores to it, so P0 always returns and never
	// stores y: P1's check and its write are never reached, although a
	// run where P0 guessed the if not taken makes them (and ends when
	// the load reads 2). Each must be SAFE, and the search must have
	// met the guessed run's failure or crash image, unjudged.
	for _, tc := range []struct {
		name, p1, cond, crash string
	}{
		{"check-on-a-guess", "r1 = READ_ONCE(*y); assert(r1 == 0);", "", "none"},
		{"crash-on-a-guess", "r1 = READ_ONCE(*y); if (r1 == 1) { e = submit_bio_wait(0, 1, REQ_FUA); }", "~exists (blk0=1)", "any"},
	} {
		tt := file(tc.name, "x=2;", p0, tc.p1, tc.cond, tc.crash)
		d, err := Read(tt.File, tt)
		require.NoError(t, err, tc.name)
		dev, err := spec.ParseConfig("cache+fua")
		require.NoError(t, err)
		sys, err := d.system(Config{Model: memory.LKMM, Device: dev, Failures: d.Failures, Crash: d.Crash})
		require.NoError(t, err, tc.name)
		r := explore.Explore[State](sys, explore.Options{Liveness: true})
		assert.Nil(t, r.Violation, "%s: %v", tc.name, r.Violation)
		met := false
		for i := 0; i < r.Len(); i++ {
			st := r.State(i)
			if sys.op.speculating(st.op) && (st.bad.kind != 0 || st.dev.Writes() > 0) {
				met = true
			}
		}
		assert.True(t, met, "%s: no run on a guess reached the check or the write", tc.name)
	}
}

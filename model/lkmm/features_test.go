package lkmm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
)

// featureCase is a small test of a construct of the LKMM language past
// the marked accesses, with LKMM's answer and the flags it raises. Each
// guarded case has a negative control beside it: the same shape without
// the ordering, which LKMM allows.
type featureCase struct {
	name, src string
	result    string
	flags     []string
}

// The answers follow from linux-kernel.cat by hand (the comment on each
// says which relation decides), and agree with the corpus and the
// kernel's own litmus tests of the same shapes.
var featureCases = []featureCase{
	// Pointers: publish through rcu_assign_pointer, read through
	// rcu_dereference and an addr dependency: the reader never sees the
	// pointer and the old value (addr ; [R] in to-r, po-rel).
	{"publish-deref", `
{ int *p = &z; }
P0(int *x, int **p) { WRITE_ONCE(*x, 1); rcu_assign_pointer(*p, x); }
P1(int *x, int **p) { int *r0; int r1; r0 = rcu_dereference(*p); r1 = READ_ONCE(*r0); }
exists (1:r0=x /\ 1:r1=0)`, "Never", nil},
	// Without the release, the store and the publication may be seen in
	// either order.
	{"publish-deref-once", `
{ int *p = &z; }
P0(int *x, int **p) { WRITE_ONCE(*x, 1); WRITE_ONCE(*p, x); }
P1(int *x, int **p) { int *r0; int r1; r0 = rcu_dereference(*p); r1 = READ_ONCE(*r0); }
exists (1:r0=x /\ 1:r1=0)`, "Sometimes", nil},
	// RCU: a reader inside rcu_read_lock() cannot see the new y and the
	// old x around a grace period (rcu-order, rb).
	{"rcu-gp", `
{}
P0(int *x, int *y) { int r0; int r1; rcu_read_lock(); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); rcu_read_unlock(); }
P1(int *x, int *y) { WRITE_ONCE(*x, 1); synchronize_rcu(); WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 0:r1=0)`, "Never", nil},
	{"rcu-gp-no-sync", `
{}
P0(int *x, int *y) { int r0; int r1; rcu_read_lock(); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); rcu_read_unlock(); }
P1(int *x, int *y) { WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 0:r1=0)`, "Sometimes", nil},
	// Two readers against one grace period: one grace period does not
	// cover two critical sections chained by rfe (fewer gps than rscs).
	{"rcu-two-readers-one-gp", `
{}
P0(int *x, int *y) { int r0; rcu_read_lock(); r0 = READ_ONCE(*x); WRITE_ONCE(*y, 1); rcu_read_unlock(); }
P1(int *y, int *z) { int r0; rcu_read_lock(); r0 = READ_ONCE(*y); WRITE_ONCE(*z, 1); rcu_read_unlock(); }
P2(int *x, int *z) { int r0; r0 = READ_ONCE(*z); synchronize_rcu(); WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1 /\ 2:r0=1)`, "Sometimes", nil},
	// A critical section left open is a flag, not a refusal.
	{"rcu-unmatched", `
{}
P0(int *x) { rcu_read_lock(); WRITE_ONCE(*x, 1); }
exists (x=1)`, "Always", []string{"unmatched-rcu-lock"}},
	// SRCU: the same as RCU when the grace period and the critical
	// section use one srcu_struct (srcu-rscs matched through data)...
	{"srcu-gp", `
{}
P0(int *x, int *y, struct srcu_struct *s) { int r0; int r1; int r2; r2 = srcu_read_lock(s); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); srcu_read_unlock(s, r2); }
P1(int *x, int *y, struct srcu_struct *s) { WRITE_ONCE(*x, 1); synchronize_srcu(s); WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 0:r1=0)`, "Never", nil},
	// ...and nothing when they use two ("& loc").
	{"srcu-gp-other-struct", `
{}
P0(int *x, int *y, struct srcu_struct *s) { int r0; int r1; int r2; r2 = srcu_read_lock(s); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); srcu_read_unlock(s, r2); }
P1(int *x, int *y, struct srcu_struct *t) { WRITE_ONCE(*x, 1); synchronize_srcu(t); WRITE_ONCE(*y, 1); }
exists (0:r0=1 /\ 0:r1=0)`, "Sometimes", nil},
	// Plain accesses: message passing with release and acquire around a
	// plain store and load orders them and races with nothing
	// (plain-coherence, ww-vis/wr-vis through the fences).
	{"plain-mp", `
{}
P0(int *x, int *y) { *x = 1; smp_store_release(y, 1); }
P1(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(y); if (r0 == 1) { r1 = *x; } }
exists (1:r0=1 /\ 1:r1=0)`, "Never", nil},
	// Without the release the plain store races with the plain load.
	{"plain-mp-once", `
{}
P0(int *x, int *y) { *x = 1; WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(y); if (r0 == 1) { r1 = *x; } }
exists (1:r0=1 /\ 1:r1=0)`, "Sometimes", []string{"data-race"}},
	// A control dependency does not order a plain store after a marked
	// load (w-pre-bounded has addr and fence only): load buffering through
	// it is allowed, and a race.
	{"plain-lb-ctrl", `
{}
P0(int *u, int *x) { int r1; r1 = *u; smp_store_release(x, 1); }
P1(int *u, int *x) { int r1; r1 = READ_ONCE(*x); if (r1 == 1) { *u = 1; } }
exists (0:r1=1 /\ 1:r1=1)`, "Sometimes", []string{"data-race"}},
	// An acquire does (acq-po is a fence): Never, though a race remains
	// in the executions where P1 runs first.
	{"plain-lb-acquire", `
{}
P0(int *u, int *x) { int r1; r1 = *u; smp_store_release(x, 1); }
P1(int *u, int *x) { int r1; r1 = smp_load_acquire(x); *u = 1; }
exists (0:r1=1 /\ 1:r1=1)`, "Never", []string{"data-race"}},
	// atomic_add_unless adds unless it finds the value given, and is
	// fully ordered only when it adds.
	{"add-unless", `
{ x = 1; }
P0(atomic_t *x) { int r0; r0 = atomic_add_unless(x, 1, 1); }
P1(atomic_t *x) { int r0; r0 = atomic_add_unless(x, 5, 2); }
exists (x=1 /\ 0:r0=0 /\ 1:r0=1)`, "Never", nil},
	// smp_mb__after_unlock_lock: the unlock of P0 and the lock of P1 act
	// as a full barrier for a third thread (the After-unlock-lock case of
	// mb), which the lock handover alone is not.
	{"z6-after-unlock-lock", `
{}
P0(int *x, int *y, spinlock_t *l) { spin_lock(l); WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1); spin_unlock(l); }
P1(int *y, int *z, spinlock_t *l) { int r0; spin_lock(l); smp_mb__after_unlock_lock(); r0 = READ_ONCE(*y); WRITE_ONCE(*z, 1); spin_unlock(l); }
P2(int *x, int *z) { int r1; WRITE_ONCE(*z, 2); smp_mb(); r1 = READ_ONCE(*x); }
exists (1:r0=1 /\ z=2 /\ 2:r1=0)`, "Never", nil},
	{"z6-locks-only", `
{}
P0(int *x, int *y, spinlock_t *l) { spin_lock(l); WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1); spin_unlock(l); }
P1(int *y, int *z, spinlock_t *l) { int r0; spin_lock(l); r0 = READ_ONCE(*y); WRITE_ONCE(*z, 1); spin_unlock(l); }
P2(int *x, int *z) { int r1; WRITE_ONCE(*z, 2); smp_mb(); r1 = READ_ONCE(*x); }
exists (1:r0=1 /\ z=2 /\ 2:r1=0)`, "Sometimes", nil},
	// spin_trylock: of two, exactly one takes the lock (the other's LF
	// reads the winner's LKW)...
	{"trylock-one-wins", `
{}
P0(spinlock_t *l) { int r0; r0 = spin_trylock(l); }
P1(spinlock_t *l) { int r1; r1 = spin_trylock(l); }
exists (0:r0=1 /\ 1:r1=1 \/ 0:r0=0 /\ 1:r1=0)`, "Never", nil},
	// ...and inside the thread's own critical section it fails, as
	// spin_is_locked finds the lock held there (rfi-lf, rfi-rl).
	{"trylock-own-section", `
{}
P0(spinlock_t *l) { int r0; int r1; spin_lock(l); r0 = spin_trylock(l); r1 = spin_is_locked(l); spin_unlock(l); }
exists (0:r0=1 \/ 0:r1=0)`, "Never", nil},
	// A successful spin_trylock excludes as spin_lock does: two
	// increments under the lock are never lost...
	{"trylock-counter", `
{}
P0(int *x, spinlock_t *l) { int r; spin_lock(l); r = READ_ONCE(*x); WRITE_ONCE(*x, r + 1); spin_unlock(l); }
P1(int *x, spinlock_t *l) { int r0; int r1; r0 = spin_trylock(l); if (r0) { r1 = READ_ONCE(*x); WRITE_ONCE(*x, r1 + 1); spin_unlock(l); } }
exists (1:r0=1 /\ x=1)`, "Never", nil},
	// ...and are without it.
	{"counter-unlocked", `
{}
P0(int *x, spinlock_t *l) { int r; spin_lock(l); r = READ_ONCE(*x); WRITE_ONCE(*x, r + 1); spin_unlock(l); }
P1(int *x) { int r1; r1 = READ_ONCE(*x); WRITE_ONCE(*x, r1 + 1); }
exists (x=1)`, "Sometimes", nil},
	// Registers the initial state sets, a pointer among them.
	{"register-init", `
{ 0:r1=5; 1:r2=x; }
P0(int *x) { int r1; WRITE_ONCE(*x, r1); }
P1(int *x) { int *r2; int r3; r3 = READ_ONCE(*r2); }
exists (1:r3=5 /\ 1:r2=x)`, "Sometimes", nil},
}

// TestFeatures runs each case through Judge (every outcome) and Decide
// (witnesses), which must agree on the answer and the flags.
func TestFeatures(t *testing.T) {
	for _, tc := range featureCases {
		t.Run(tc.name, func(t *testing.T) {
			test := parseCase(t, tc)
			judged, err := litmus.Judge(Reference{}, test)
			require.NoError(t, err)
			assert.Equal(t, tc.result, judged.Result, "Judge")
			assert.Equal(t, tc.flags, judged.Flags, "Judge's flags")
			decided, err := litmus.Decide(Reference{}, test)
			require.NoError(t, err)
			assert.Equal(t, tc.result, decided.Result, "Decide")
			assert.Equal(t, tc.flags, decided.Flags, "Decide's flags")
		})
	}
}

// parseCase makes a test of a case's source, one thread a line.
func parseCase(t *testing.T, tc featureCase) *litmus.Test {
	t.Helper()
	src := fmt.Sprintf("C %s\n%s\n", tc.name, strings.TrimSpace(tc.src))
	test, err := litmus.Parse(tc.name+".litmus", []byte(src))
	require.NoError(t, err)
	return test
}

// TestFault: an access through a value that is no address, in an
// execution LKMM allows, is an error, not an outcome; in executions it
// forbids, nothing.
func TestFault(t *testing.T) {
	bad := featureCase{name: "null-deref", src: `
{ int *p = &x; }
P0(int **p) { WRITE_ONCE(*p, 0); }
P1(int **p) { int *r0; int r1; r0 = READ_ONCE(*p); r1 = READ_ONCE(*r0); }
exists (1:r1=0)`}
	_, err := Reference{}.Outcomes(parseCase(t, bad))
	require.ErrorIs(t, err, ErrFault)
	assert.Contains(t, err.Error(), "P1")
	// Guarded by the pointer's value, the same read never faults.
	good := featureCase{name: "null-checked", src: `
{ int *p = &x; }
P0(int **p) { WRITE_ONCE(*p, 0); }
P1(int **p) { int *r0; int r1; r0 = READ_ONCE(*p); if (r0 != 0) { r1 = READ_ONCE(*r0); } }
exists (1:r1=0)`}
	a, err := litmus.Judge(Reference{}, parseCase(t, good))
	require.NoError(t, err)
	assert.Equal(t, "Always", a.Result)
}

package lkmm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
)

// kernel marks a result stated in the header of the kernel's
// tools/memory-model/litmus-tests file of that name; reasoned marks a
// result argued in the case's comment from linux-kernel.cat.
const (
	kernel   = "kernel header"
	reasoned = "reasoned"
)

type refCase struct {
	test   *litmus.Test
	want   string // herd7's Observation: Always, Sometimes or Never
	source string
}

// classicCases are the classic shapes, with LKMM's answer.
func classicCases() []refCase {
	return []refCase{
		// Coherence: CoRR+poonceonce+Once, CoRW+poonceonce+Once,
		// CoWR+poonceonce+Once, CoWW+poonceonce: "Result: Never".
		{exists("CoRR+poonceonce+Once", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), rd("r1", "x"))), "Never", kernel},
		{exists("CoRW+poonceonce+Once", and(mem("x", 2), reg(0, "r0", 2)),
			th(rd("r0", "x"), wr("x", 1)),
			th(wr("x", 2))), "Never", kernel},
		{exists("CoWR+poonceonce+Once", and(reg(0, "r0", 2), mem("x", 1)),
			th(wr("x", 1), rd("r0", "x")),
			th(wr("x", 2))), "Never", kernel},
		{exists("CoWW+poonceonce", mem("x", 1),
			th(wr("x", 1), wr("x", 2))), "Never", kernel},
		// A read then a store to the same location: the store may come
		// after another thread's in co while the read saw the initial
		// value (fr then co, no cycle with po-loc). A plain store is in
		// no rmw pair, so the atomic axiom does not apply.
		{exists("CoRW+poonceonce-storelast", and(reg(0, "r0", 0), mem("x", 1)),
			th(rd("r0", "x"), wr("x", 1)),
			th(wr("x", 2))), "Sometimes", reasoned},

		// Message passing.
		{exists("MP+poonceonces", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), wr("y", 1)),
			th(rd("r0", "y"), rd("r1", "x"))), "Sometimes", kernel},
		{exists("MP+pooncerelease+poacquireonce", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), stRel("y", 1)),
			th(ldAcq("r0", "y"), rd("r1", "x"))), "Never", kernel},
		{exists("MP+fencewmbonceonce+fencermbonceonce", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), barrier(litmus.OpWmb), wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpRmb), rd("r1", "x"))), "Never", kernel},
		// MP with smp_mb() in the reader only: nothing orders the
		// writer's two stores (no ppo between writes to different
		// locations, no cumul-fence without a fence or release), so the
		// reader may see y=1 before x=1 propagates: no hb or pb cycle.
		{exists("MP+poonceonce+fencembonceonce", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), rd("r1", "x"))), "Sometimes", reasoned},
		// And in the writer only: the reader's loads are unordered.
		{exists("MP+fencembonceonce+poonceonce", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), barrier(litmus.OpMb), wr("y", 1)),
			th(rd("r0", "y"), rd("r1", "x"))), "Sometimes", reasoned},

		// Store buffering.
		{exists("SB+poonceonces", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(wr("x", 1), rd("r0", "y")),
			th(wr("y", 1), rd("r0", "x"))), "Sometimes", kernel},
		{exists("SB+fencembonceonces", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(wr("x", 1), barrier(litmus.OpMb), rd("r0", "y")),
			th(wr("y", 1), barrier(litmus.OpMb), rd("r0", "x"))), "Never", kernel},

		// Load buffering.
		{exists("LB+poonceonces", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), wr("y", 1)),
			th(rd("r0", "y"), wr("x", 1))), "Sometimes", kernel},
		{exists("LB+poacquireonce+pooncerelease", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), stRel("y", 1)),
			th(ldAcq("r0", "y"), wr("x", 1))), "Never", kernel},
		{exists("LB+fencembonceonce+ctrlonceonce", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), when(litmus.R("r0"), wr("y", 1))),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("x", 1))), "Never", kernel},
		// The store after the if, not inside it, has no control
		// dependency (explanation.txt: the store must lie within an arm),
		// so P0's read and store are unordered as in LB+poonceonces.
		{exists("LB+ctrl-after-if+fencembonceonce", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), when(litmus.R("r0"), assign("r1", litmus.C(1))), wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("x", 1))), "Sometimes", reasoned},
		// A data dependency (through an Assign) orders P0's read before
		// its store (rwdep in to-w), the smp_mb orders P1: an hb cycle
		// rfe ; ppo ; rfe ; ppo.
		{exists("LB+dataonceonce+fencembonceonce", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), assign("r1", litmus.Bin("&", litmus.R("r0"), litmus.C(1))), wrE("y", litmus.R("r1"))),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("x", 1))), "Never", reasoned},

		// S.
		{exists("S+poonceonces", and(mem("x", 2), reg(1, "r0", 1)),
			th(wr("x", 2), wr("y", 1)),
			th(rd("r0", "y"), wr("x", 1))), "Sometimes", kernel},
		{exists("S+fencewmbonceonce+poacquireonce", and(mem("x", 2), reg(1, "r0", 1)),
			th(wr("x", 2), barrier(litmus.OpWmb), wr("y", 1)),
			th(ldAcq("r0", "y"), wr("x", 1))), "Never", kernel},

		// 2+2W: two unordered stores per thread may be seen in either
		// order (no ppo between writes to different locations).
		{exists("2+2W+poonceonces", and(mem("x", 1), mem("y", 1)),
			th(wr("x", 1), wr("y", 2)),
			th(wr("y", 1), wr("x", 2))), "Sometimes", reasoned},
		// With smp_mb: prop(Wx2,Wx1) is coe, strong-fence(Wx1,Wy2), so
		// pb(Wx2,Wy2); symmetrically pb(Wy2,Wx2): a pb cycle.
		{exists("2+2W+fencembonceonces", and(mem("x", 1), mem("y", 1)),
			th(wr("x", 1), barrier(litmus.OpMb), wr("y", 2)),
			th(wr("y", 1), barrier(litmus.OpMb), wr("x", 2))), "Never", reasoned},

		// WRC.
		{exists("WRC+poonceonces+Once", and(reg(1, "r0", 1), reg(2, "r0", 1), reg(2, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), wr("y", 1)),
			th(rd("r0", "y"), rd("r1", "x"))), "Sometimes", kernel},
		{exists("WRC+pooncerelease+fencermbonceonce+Once", and(reg(1, "r0", 1), reg(2, "r0", 1), reg(2, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), stRel("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpRmb), rd("r1", "x"))), "Never", kernel},

		// IRIW.
		{exists("IRIW+poonceonces+OnceOnce", and(reg(1, "r0", 1), reg(1, "r1", 0), reg(3, "r0", 1), reg(3, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), rd("r1", "y")),
			th(wr("y", 1)),
			th(rd("r0", "y"), rd("r1", "x"))), "Sometimes", kernel},
		{exists("IRIW+fencembonceonces+OnceOnce", and(reg(1, "r0", 1), reg(1, "r1", 0), reg(3, "r0", 1), reg(3, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), barrier(litmus.OpMb), rd("r1", "y")),
			th(wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), rd("r1", "x"))), "Never", kernel},
		// With smp_rmb instead: rmb orders each reader's loads (ppo), but
		// the cycle has two fre links and no strong fence, so no pb edge;
		// LKMM is not multicopy-atomic for such readers.
		{exists("IRIW+fencermbonceonces+OnceOnce", and(reg(1, "r0", 1), reg(1, "r1", 0), reg(3, "r0", 1), reg(3, "r1", 0)),
			th(wr("x", 1)),
			th(rd("r0", "x"), barrier(litmus.OpRmb), rd("r1", "y")),
			th(wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpRmb), rd("r1", "x"))), "Sometimes", reasoned},

		// ISA2.
		{exists("ISA2+poonceonces", and(reg(1, "r0", 1), reg(2, "r0", 1), reg(2, "r1", 0)),
			th(wr("x", 1), wr("y", 1)),
			th(rd("r0", "y"), wr("z", 1)),
			th(rd("r0", "z"), rd("r1", "x"))), "Sometimes", kernel},
		{exists("ISA2+pooncerelease+poacquirerelease+poacquireonce", and(reg(1, "r0", 1), reg(2, "r0", 1), reg(2, "r1", 0)),
			th(wr("x", 1), stRel("y", 1)),
			th(ldAcq("r0", "y"), stRel("z", 1)),
			th(ldAcq("r0", "z"), rd("r1", "x"))), "Never", kernel},

		// Z6.0.
		{exists("Z6.0+pooncerelease+poacquirerelease+fencembonceonce", and(reg(1, "r0", 1), mem("z", 2), reg(2, "r1", 0)),
			th(wr("x", 1), stRel("y", 1)),
			th(ldAcq("r0", "y"), stRel("z", 1)),
			th(wr("z", 2), barrier(litmus.OpMb), rd("r1", "x"))), "Sometimes", kernel},
		// A full fence on every thread: prop(Rx,Ry) = fre ; cumul-fence ;
		// rfe then mb(Ry,Wz1) give pb(Rx,Wz1); coe(Wz1,Wz2) then
		// mb(Wz2,Rx) give pb(Wz1,Rx): a pb cycle.
		{exists("Z6.0+fencembonceonces", and(reg(1, "r0", 1), mem("z", 2), reg(2, "r1", 0)),
			th(wr("x", 1), barrier(litmus.OpMb), wr("y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("z", 1)),
			th(wr("z", 2), barrier(litmus.OpMb), rd("r1", "x"))), "Never", reasoned},

		// R.
		{exists("R+poonceonces", and(mem("y", 2), reg(1, "r0", 0)),
			th(wr("x", 1), wr("y", 1)),
			th(wr("y", 2), rd("r0", "x"))), "Sometimes", kernel},
		{exists("R+fencembonceonces", and(mem("y", 2), reg(1, "r0", 0)),
			th(wr("x", 1), barrier(litmus.OpMb), wr("y", 1)),
			th(wr("y", 2), barrier(litmus.OpMb), rd("r0", "x"))), "Never", kernel},
	}
}

// rmwCases are the atomic read-modify-writes.
func rmwCases() []refCase {
	both := and(reg(0, "r0", 1), reg(1, "r0", 1))
	sbRegs := and(reg(0, "r1", 0), reg(1, "r1", 0))
	return []refCase{
		// Two atomic_inc_return racing on x never both return 1: the
		// atomic axiom (no fre ; coe between an RMW's read and write)
		// puts one increment after the other.
		{exists("atomic_inc_return-race", both,
			th(rmwOp(litmus.OpAddReturn, "r0", "x", 1)),
			th(rmwOp(litmus.OpAddReturn, "r0", "x", 1))), "Never", reasoned},
		{exists("atomic_inc_return_relaxed-race", both,
			th(rmwOp(litmus.OpAddReturnRlx, "r0", "x", 1)),
			th(rmwOp(litmus.OpAddReturnRlx, "r0", "x", 1))), "Never", reasoned},
		// Two atomic_inc always leave 2.
		{exists("atomic_inc-race-lost-update", mem("x", 1),
			th(rmwOp(litmus.OpAdd, "", "x", 1)),
			th(rmwOp(litmus.OpAdd, "", "x", 1))), "Never", reasoned},
		// Two cmpxchg(x, 0, v): only one succeeds (both returning 0
		// would need both to read the initial write: atomic forbids it).
		{exists("cmpxchg-both-succeed", and(reg(0, "r0", 0), reg(1, "r0", 0)),
			th(cas(litmus.OpCmpxchg, "r0", "x", 0, 1)),
			th(cas(litmus.OpCmpxchg, "r0", "x", 0, 2))), "Never", reasoned},
		// The loser fails, returns the winner's value, writes nothing.
		{exists("cmpxchg-one-fails", and(reg(0, "r0", 0), reg(1, "r0", 1), mem("x", 1)),
			th(cas(litmus.OpCmpxchg, "r0", "x", 0, 1)),
			th(cas(litmus.OpCmpxchg, "r0", "x", 0, 2))), "Sometimes", reasoned},
		// SB with xchg: a fully ordered RMW acts as if enclosed by
		// smp_mb ([Mb & W] ; po ; [M] is in mb), as SB+fencembonceonces.
		{exists("SB+xchgonces", sbRegs,
			th(rmwOp(litmus.OpXchg, "r0", "x", 1), rd("r1", "y")),
			th(rmwOp(litmus.OpXchg, "r0", "y", 1), rd("r1", "x"))), "Never", reasoned},
		// xchg_relaxed carries no Mb: SB+poonceonces again.
		{exists("SB+xchgrelaxedonces", sbRegs,
			th(rmwOp(litmus.OpXchgRlx, "r0", "x", 1), rd("r1", "y")),
			th(rmwOp(litmus.OpXchgRlx, "r0", "y", 1), rd("r1", "x"))), "Sometimes", reasoned},
		// atomic_inc is unordered...
		{exists("SB+atomicinconces", sbRegs,
			th(rmwOp(litmus.OpAdd, "", "x", 1), rd("r1", "y")),
			th(rmwOp(litmus.OpAdd, "", "y", 1), rd("r1", "x"))), "Sometimes", reasoned},
		// ...until smp_mb__after_atomic: [M] ; po? ; [RMW] ;
		// fencerel(After-atomic) ; [M] orders the increment's write before
		// the read, a strong fence as in SB+fencembonceonces.
		{exists("SB+atomicinc-mbafteratomic", sbRegs,
			th(rmwOp(litmus.OpAdd, "", "x", 1), barrier(litmus.OpMbAfterAtomic), rd("r1", "y")),
			th(rmwOp(litmus.OpAdd, "", "y", 1), barrier(litmus.OpMbAfterAtomic), rd("r1", "x"))), "Never", reasoned},
		// smp_mb__before_atomic orders the store before the atomic_inc
		// (and everything after it) as smp_mb would: MP with it in the
		// writer and smp_rmb in the reader is Never.
		{exists("MP+mbbeforeatomic-inc+fencermbonceonce", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), barrier(litmus.OpMbBeforeAtomic), rmwOp(litmus.OpAdd, "", "y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpRmb), rd("r1", "x"))), "Never", reasoned},
		// A successful cmpxchg_acquire is an acquire: MP+release+acquire
		// shape, Never.
		{exists("MP+pooncerelease+cmpxchgacquire-succeeds", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), stRel("y", 1)),
			th(cas(litmus.OpCmpxchgAcq, "r0", "y", 1, 2), rd("r1", "x"))), "Never", reasoned},
		// A failed cmpxchg_acquire (expecting 5, reading 1) is a bare
		// read: the bell strips Acquire from a FailedRMW, so the reader's
		// accesses are unordered: Sometimes.
		{exists("MP+pooncerelease+cmpxchgacquire-fails", and(reg(1, "r0", 1), reg(1, "r1", 0)),
			th(wr("x", 1), stRel("y", 1)),
			th(cas(litmus.OpCmpxchgAcq, "r0", "y", 5, 6), rd("r1", "x"))), "Sometimes", reasoned},
		// The read of a fully ordered RMW carries Mb: [M] ; po ; [Mb & R]
		// orders P0's load before the xchg's read, which reads the
		// initial y and so precedes the xchg's write (fr & int, to-w);
		// with P1's smp_mb that is an hb cycle through the two rfe.
		{exists("LB+xchgonce+fencembonceonce", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), rmwOp(litmus.OpXchg, "r1", "y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("x", 1))), "Never", reasoned},
		{exists("LB+xchgrelaxedonce+fencembonceonce", and(reg(0, "r0", 1), reg(1, "r0", 1)),
			th(rd("r0", "x"), rmwOp(litmus.OpXchgRlx, "r1", "y", 1)),
			th(rd("r0", "y"), barrier(litmus.OpMb), wr("x", 1))), "Sometimes", reasoned},
		// A non-returning atomic's read is Noreturn and smp_rmb does not
		// order it (R4rmb = R \ Noreturn): the rmb gives nothing here, so
		// the writer's increment may be read (y=1 afterwards shows the
		// reader's inc came second) while x is still 0.
		{exists("MP+fencewmbonceonce+atomicinc-rmb", and(mem("y", 2), reg(1, "r1", 0)),
			th(wr("x", 1), barrier(litmus.OpWmb), wr("y", 1)),
			th(rmwOp(litmus.OpAdd, "", "y", 1), barrier(litmus.OpRmb), rd("r1", "x"))), "Sometimes", reasoned},
	}
}

func TestReference(t *testing.T) {
	for _, tc := range append(classicCases(), rmwCases()...) {
		t.Run(tc.test.Name, func(t *testing.T) {
			a, err := litmus.Judge(Reference{}, tc.test)
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Result, "%s (%s): %d of %d outcomes match", tc.test.Name, tc.source, a.Matches, len(a.Outcomes))
		})
	}
}

// smp_mb__after_spinlock orders nothing without a lock (its mb case needs
// an LKW event), so SB with it is SB+poonceonces.
func TestAfterSpinlockWithoutLockOrdersNothing(t *testing.T) {
	tc := exists("SB+mbafterspinlock", and(reg(0, "r0", 0), reg(1, "r0", 0)),
		th(wr("x", 1), barrier(litmus.OpMbAfterSpinlock), rd("r0", "y")),
		th(wr("y", 1), barrier(litmus.OpMbAfterSpinlock), rd("r0", "x")))
	a, err := litmus.Judge(Reference{}, tc)
	require.NoError(t, err)
	assert.Equal(t, "Sometimes", a.Result)
}

// Outcomes lists each final state once, with every register a thread
// assigns (0 when the path taken never sets it) and every location.
func TestOutcomesShape(t *testing.T) {
	sb := exists("SB+poonceonces", and(reg(0, "r0", 0), reg(1, "r0", 0)),
		th(wr("x", 1), rd("r0", "y")),
		th(wr("y", 1), rd("r0", "x")))
	outs, err := Reference{}.Outcomes(sb)
	require.NoError(t, err)
	var keys []string
	for _, o := range outs {
		keys = append(keys, o.Key())
	}
	assert.Equal(t, []string{
		"0:r0=0; 1:r0=0; x=1; y=1;",
		"0:r0=0; 1:r0=1; x=1; y=1;",
		"0:r0=1; 1:r0=0; x=1; y=1;",
		"0:r0=1; 1:r0=1; x=1; y=1;",
	}, keys)

	// The initial state, a branch not taken, and a register set only there.
	br := exists("init+branch", reg(0, "r1", 1),
		th(rd("r0", "x"), when(litmus.Bin("==", litmus.R("r0"), litmus.C(7)), assign("r1", litmus.C(1)), wr("y", 2))))
	br.Init = map[string]int64{"x": 5}
	outs, err = Reference{}.Outcomes(br)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, "0:r0=5; 0:r1=0; x=5; y=0;", outs[0].Key())
}

// The former bounds of the reference (4 threads, 4 locations, 12 events
// a thread, 32 values a location) are gone: each of these tests, once
// refused, is answered.
func TestFormerBoundsAnswered(t *testing.T) {
	var five []litmus.Thread
	for i := 0; i < 5; i++ {
		five = append(five, th(wr("x", int64(i))))
	}
	judge := func(test *litmus.Test) string {
		a, err := litmus.Judge(Reference{}, test)
		require.NoError(t, err, test.Name)
		return a.Result
	}
	// Any of the five stores may be co-last, the initial value never.
	assert.Equal(t, "Sometimes", judge(exists("5 threads", mem("x", 4), five...)))
	assert.Equal(t, "Never", judge(exists("5 threads, initial value", mem("x", -1), five...)))

	assert.Equal(t, "Always", judge(exists("5 locations", and(mem("a", 1), mem("e", 1)),
		th(wr("a", 1), wr("b", 1), wr("c", 1), wr("d", 1), wr("e", 1)))))

	var long []litmus.Stmt
	for i := 0; i <= 12; i++ {
		long = append(long, barrier(litmus.OpMb))
	}
	assert.Equal(t, "Always", judge(exists("long", mem("x", 0), th(long...))))

	// Counters whose reads may return 64 values (the sums of subsets of
	// 1, 2, 4, ... 32): no bound refuses them, but choosing each read's
	// value before its write multiplies the runs, and the budget ends
	// the search.
	var adds [3][]litmus.Stmt
	for i := 0; i < 6; i++ {
		adds[i%3] = append(adds[i%3], rmwOp(litmus.OpAdd, "", "x", int64(1)<<i))
	}
	_, err := Reference{Candidates: 200_000}.Outcomes(exists("counters", mem("x", 63), th(adds[0]...), th(adds[1]...), th(adds[2]...)))
	require.ErrorIs(t, err, litmus.ErrCutShort)
	assert.Contains(t, err.Error(), "200000 steps")
}

// A search that spends its budget fails with the counts, wrapping
// litmus.ErrCutShort (and ErrTooLarge), never with an answer.
func TestBudget(t *testing.T) {
	sb := exists("SB+poonceonces", and(reg(0, "r0", 0), reg(1, "r0", 0)),
		th(wr("x", 1), rd("r0", "y")),
		th(wr("y", 1), rd("r0", "x")))
	for _, r := range []Reference{{Candidates: 3}, {Timeout: time.Nanosecond}} {
		_, err := r.Outcomes(sb)
		require.ErrorIs(t, err, litmus.ErrCutShort)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Regexp(t, `SB\+poonceonces: .*search cut short.* after \d+ candidate executions checked .* in .*: 2 threads`, err.Error())
		_, err = r.Decide(sb)
		require.ErrorIs(t, err, litmus.ErrCutShort)
	}
}

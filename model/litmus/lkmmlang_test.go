package litmus

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test of the public LKMM corpus's RCU family, as written there:
// intptr_t, a pointer in the initial state, addresses in registers,
// casts, rcu_assign_pointer and rcu_dereference, a store through a
// pointer, and an address in the final condition.
const rcuPointerSrc = `C C-RW-G+RW-Rs+RW-RCD
(*
 * Result: Never
 *)
{
	x1=y0;
}

P0(intptr_t *x0, intptr_t *x1, intptr_t *x2)
{
	intptr_t r1 = READ_ONCE(*x0);
	synchronize_rcu();
	intptr_t r3=x2;
	rcu_assign_pointer(*(intptr_t **)x1, (intptr_t *)r3);
}

P1(intptr_t *y0, intptr_t *x1)
{
	intptr_t r4=y0;

	rcu_read_lock();
	intptr_t r1 = (intptr_t)rcu_dereference(*(intptr_t **)x1);
	r4 = (r1 != r4);
	if (r4) {
		WRITE_ONCE(*(intptr_t *)r1, 1);
	}
	rcu_read_unlock();
}

exists
(0:r1=1 /\ 1:r1=x2)
`

func TestParsePointersAndRCU(t *testing.T) {
	tc, err := Parse("rcu.litmus", []byte(rcuPointerSrc))
	require.NoError(t, err)
	assert.Equal(t, []string{"x1", "x0", "x2", "y0"}, tc.Locs)
	y0, ok := tc.AddrValue("y0")
	require.True(t, ok)
	assert.Equal(t, y0, tc.Init["x1"], "x1 starts pointing at y0")
	assert.Equal(t, "y0", tc.FormatValue(y0))
	assert.Equal(t, "7", tc.FormatValue(7))

	p0 := tc.Threads[0].Body
	require.Len(t, p0, 4)
	assert.Equal(t, OpSyncRcu, p0[1].Access.Op)
	x2, _ := tc.AddrValue("x2")
	assert.Equal(t, Expr{IsConst: true, Const: x2, Addr: "x2"}, p0[2].Assign.Val, "intptr_t r3=x2 takes x2's address")
	assert.Equal(t, &Access{Op: OpStoreRelease, Loc: "x1", Val: R("r3"), Call: "rcu_assign_pointer"}, p0[3].Access)

	p1 := tc.Threads[1].Body
	require.Len(t, p1, 6)
	assert.Equal(t, OpRcuLock, p1[1].Access.Op)
	assert.Equal(t, &Access{Op: OpReadOnce, Loc: "x1", Reg: "r1", Call: "rcu_dereference"}, p1[2].Access)
	store := p1[4].If.Then[0].Access
	require.NotNil(t, store.Addr, "a store through the pointer in r1")
	assert.Equal(t, R("r1"), *store.Addr)
	assert.Empty(t, store.Loc)
	assert.Equal(t, OpRcuUnlock, p1[5].Access.Op)
	assert.Equal(t, "((0:r1 = 1) /\\ (1:r1 = x2))", tc.Cond.String())

	assert.Equal(t, FeatPointer|FeatRCU, tc.Features())
	err = tc.Refuse("SC", 0)
	var pe *Error
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.True(t, errors.Is(err, ErrNotInModel))
	assert.Equal(t, 6, pe.Line, "the first use is the initial state's pointer: %v", err)
	assert.Contains(t, err.Error(), "x1=y0")
	assert.NoError(t, tc.Refuse("LKMM-ref", AllFeatures))
	err = tc.Refuse("X", FeatPointer)
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 12, pe.Line, "synchronize_rcu: %v", err)
}

func TestParsePlainSRCUAndDefPrimitives(t *testing.T) {
	src := `C T
{
	int *p = &y;
}

P0(int *x, int **p, struct srcu_struct *s, atomic_t *v, spinlock_t *l)
{
	int r0;
	int *r1;
	long r2;

	*x = 1;
	r0 = *x;
	r1 = READ_ONCE(*p);
	r2 = *(int *)r1;
	*r1 = 2;
	r0 = srcu_read_lock(s);
	srcu_read_unlock(s, r0);
	smp_mb__after_srcu_read_unlock();
	synchronize_srcu(s);
	smp_store_mb(*x, 3);
	r0 = atomic_dec_and_test(v);
	r0 = atomic_add_unless(v, 1, 0);
	r0 = spin_trylock(l);
	r0 = spin_is_locked(l);
	smp_mb__after_unlock_lock();
}

P1(int *y) { WRITE_ONCE(*y, 1); }

locations [0:r2; y]
filter (y=1)
exists (0:r0=1)
`
	tc, err := Parse("t.litmus", []byte(src))
	require.NoError(t, err)
	yv, _ := tc.AddrValue("y")
	assert.Equal(t, yv, tc.Init["p"])
	b := tc.Threads[0].Body
	ops := []Op{}
	for _, s := range b {
		if s.Access != nil {
			ops = append(ops, s.Access.Op)
		} else {
			ops = append(ops, 0)
		}
	}
	assert.Equal(t, []Op{OpPlainWrite, OpPlainRead, OpReadOnce, OpPlainRead, OpPlainWrite, OpSrcuLock, OpSrcuUnlock, OpMbAfterSrcuUnlock, OpSyncSrcu,
		OpWriteOnce, OpMb, OpAddReturn, 0, OpAddUnless, OpSpinTrylock, OpSpinIsLocked, OpMbAfterUnlockLock}, ops)
	assert.Equal(t, "x", b[0].Access.Loc)
	assert.Equal(t, R("r1"), *b[3].Access.Addr)
	assert.Equal(t, R("r1"), *b[4].Access.Addr)
	assert.Equal(t, &Access{Op: OpSrcuUnlock, Loc: "s", Val: R("r0"), Call: "srcu_read_unlock"}, b[6].Access)
	assert.Equal(t, &Assign{Reg: "r0", Val: Bin("==", R("r0"), C(0))}, b[12].Assign, "atomic_dec_and_test compares the new value with 0")
	assert.Equal(t, &Access{Op: OpAddUnless, Loc: "v", Val: C(1), Expect: C(0), Reg: "r0", Call: "atomic_add_unless"}, b[13].Access)
	assert.Equal(t, []string{"0:r2", "y"}, tc.Show)
	require.NotNil(t, tc.Filter)
	assert.Equal(t, "(y = 1)", tc.Filter.String())
	assert.Equal(t, FeatPointer|FeatPlain|FeatSRCU|FeatTrylock|FeatAddUnless|FeatUnlockLock, tc.Features())
}

// The filter keeps only the outcomes that satisfy it: under any model,
// Judge never counts an outcome the filter drops.
func TestJudgeAppliesFilter(t *testing.T) {
	tc := &Test{Name: "f", Locs: []string{"x"}, Init: map[string]int64{},
		Threads: []Thread{{}}, Quant: Exists, Cond: Bin("==", L("x"), C(1))}
	two := fixedModel{{Mem: map[string]int64{"x": 0}}, {Mem: map[string]int64{"x": 1}}}
	a, err := Judge(two, tc)
	require.NoError(t, err)
	assert.Equal(t, "Sometimes", a.Result)
	f := Bin("==", L("x"), C(1))
	tc.Filter = &f
	a, err = Judge(two, tc)
	require.NoError(t, err)
	assert.Equal(t, "Always", a.Result)
	assert.Len(t, a.Outcomes, 1)
}

// fixedModel gives the same outcomes to every test.
type fixedModel []Outcome

func (fixedModel) Name() string                        { return "fixed" }
func (m fixedModel) Outcomes(*Test) ([]Outcome, error) { return m, nil }

// herd7 declares a register by its first assignment; a thread that
// declares its registers (int r0;) must declare them all, so that a
// misspelt register there is still an error at its place.
func TestImplicitRegisters(t *testing.T) {
	ok := "C T\n{}\nP0(int *x) {\n\tr0 = READ_ONCE(*x);\n\tr1 = (r0 != 0);\n}\nexists (0:r1=1)\n"
	tc, err := Parse("t.litmus", []byte(ok))
	require.NoError(t, err)
	assert.Len(t, tc.Threads[0].Body, 2)

	mixed := "C T\n{}\nP0(int *x) {\n\tint r0;\n\tr0 = READ_ONCE(*x);\n\trq = (r0 != 0);\n}\nexists (0:r0=1)\n"
	_, err = Parse("t.litmus", []byte(mixed))
	var pe *Error
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 6, pe.Line)
	assert.Contains(t, err.Error(), "undeclared name rq (did you mean r0?)")

	readFirst := "C T\n{}\nP0(int *x) {\n\tr1 = r0;\n}\nexists (0:r1=1)\n"
	_, err = Parse("t.litmus", []byte(readFirst))
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Contains(t, err.Error(), "undeclared name r0")
}

// A load called inside an expression that runs once runs first, into a
// hidden register, in the order the expression reads them.
func TestHoistedLoads(t *testing.T) {
	src := "C T\n{}\nP0(int *x, int *y, int *z) {\n\tint r0;\n\tWRITE_ONCE(*x, READ_ONCE(*y) + 1);\n\tr0 = READ_ONCE(*y) + READ_ONCE(*z);\n\tif (READ_ONCE(*z)) *x = *y;\n}\nexists (0:r0=1)\n"
	tc, err := Parse("t.litmus", []byte(src))
	require.NoError(t, err)
	b := tc.Threads[0].Body
	require.Len(t, b, 7)
	assert.Equal(t, &Access{Op: OpReadOnce, Loc: "y", Reg: "__e1", Call: "READ_ONCE"}, b[0].Access)
	assert.Equal(t, &Access{Op: OpWriteOnce, Loc: "x", Val: Bin("+", R("__e1"), C(1)), Call: "WRITE_ONCE"}, b[1].Access)
	assert.Equal(t, "y", b[2].Access.Loc)
	assert.Equal(t, "z", b[3].Access.Loc)
	assert.Equal(t, &Assign{Reg: "r0", Val: Bin("+", R("__e2"), R("__e3"))}, b[4].Assign)
	assert.Equal(t, "z", b[5].Access.Loc, "the if's own load runs before it")
	require.NotNil(t, b[6].If)
	then := b[6].If.Then
	require.Len(t, then, 2, "*x = *y: the plain load, then the plain store")
	assert.Equal(t, OpPlainRead, then[0].Access.Op)
	assert.Equal(t, &Access{Op: OpPlainWrite, Loc: "x", Val: R("__e5"), Call: "plain store"}, then[1].Access)
}

// A register the initial state points at a location ("0:r2=a", as the
// corpus's out-of-thin-air tests write it) holds that location's
// address, even one named only later; it is a use of pointers.
func TestParseRegisterPointerInit(t *testing.T) {
	src := "C regptr\n{\n\t0:r2=b;\n}\nP0(int *a, int *b)\n{\n\tint *r2;\n\tWRITE_ONCE(*r2, 1);\n}\nexists (b=1)\n"
	tc, err := Parse("regptr.litmus", []byte(src))
	require.NoError(t, err)
	b, ok := tc.AddrValue("b")
	require.True(t, ok)
	assert.Equal(t, b, tc.RegInit[0]["r2"])
	uses := tc.Uses()
	require.NotEmpty(t, uses)
	assert.Equal(t, FeatPointer, uses[0].Feature)
	assert.Contains(t, uses[0].What, "0:r2=b")
}

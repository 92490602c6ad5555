package litmus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// litmusSrc wraps thread bodies into a test with locations x, y (int),
// v (atomic_t) and l (spinlock_t), and the condition cond.
func litmusSrc(cond string, bodies ...string) string {
	var b strings.Builder
	b.WriteString("C T\n\n(*\n * Result: Sometimes\n *)\n\n{ x=1; }\n\n")
	for i, body := range bodies {
		fmt.Fprintf(&b, "P%d(int *x, int *y, atomic_t *v, spinlock_t *l)\n{\n%s\n}\n\n", i, body)
	}
	b.WriteString(cond + "\n")
	return b.String()
}

// firstAccess is the access of the first statement of thread 0.
func firstStmt(t *testing.T, src string) Stmt {
	t.Helper()
	tt, err := Parse("t.litmus", []byte(src))
	require.NoError(t, err, src)
	require.NotEmpty(t, tt.Threads[0].Body, src)
	return tt.Threads[0].Body[0]
}

func TestParseTest(t *testing.T) {
	src := `
C MP+test
(* a comment
 * Result: Never
 *)
{
	x = 1;
	int y = 2;
	atomic_t v = ATOMIC_INIT(-3);
	spinlock_t l;
	1:r0 = 0;
}

P0(int *x, int *y)
{
	WRITE_ONCE(*x, 1); /* a C comment */
	smp_store_release(y, 1); // another
}

P1(int *x, int *y, atomic_t *v, spinlock_t *l)
{
	int r0;
	int r1 = 0, r2;

	r0 = smp_load_acquire(y);
	r1 = READ_ONCE(*x);
}

locations [x; 1:r2] (* ignored *)
exists (1:r0=1 /\ ~(1:r1=1 \/ x=-2))
`
	tt, err := Parse("mp.litmus", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "MP+test", tt.Name)
	assert.Equal(t, "Never", tt.Result)
	assert.Equal(t, map[string]int64{"x": 1, "y": 2, "v": -3}, tt.Init)
	assert.Equal(t, []string{"x", "y", "v", "l"}, tt.Locs)
	require.Len(t, tt.Threads, 2)
	assert.Equal(t, []Stmt{
		{Access: &Access{Op: OpWriteOnce, Loc: "x", Val: C(1)}, Line: 16},
		{Access: &Access{Op: OpStoreRelease, Loc: "y", Val: C(1)}, Line: 17},
	}, noCols(tt.Threads[0].Body))
	assert.Equal(t, []Stmt{
		{Assign: &Assign{Reg: "r1", Val: C(0)}, Line: 23},
		{Access: &Access{Op: OpLoadAcquire, Loc: "y", Reg: "r0"}, Line: 25},
		{Access: &Access{Op: OpReadOnce, Loc: "x", Reg: "r1"}, Line: 26},
	}, noCols(tt.Threads[1].Body))
	assert.Equal(t, Exists, tt.Quant)
	want := Bin("&&", Bin("==", TR(1, "r0"), C(1)), Not(Bin("||", Bin("==", TR(1, "r1"), C(1)), Bin("==", L("x"), C(-2)))))
	assert.Equal(t, want, tt.Cond)
}

func TestParseQuantifiers(t *testing.T) {
	for _, tc := range []struct {
		cond string
		q    Quantifier
	}{
		{"exists (x=1)", Exists},
		{"~exists (x=1)", NotExists},
		{"~ exists x=1", NotExists},
		{"forall (x=1 \\/ 0:r0=0)", Forall},
	} {
		tt, err := Parse("q", []byte(litmusSrc(tc.cond, "int r0;")))
		require.NoError(t, err, tc.cond)
		assert.Equal(t, tc.q, tt.Quant, tc.cond)
	}
}

func TestParseStatements(t *testing.T) {
	acc := func(op Op, loc string, val Expr, reg string) *Access {
		return &Access{Op: op, Loc: loc, Val: val, Reg: reg}
	}
	neg := func(e Expr) Expr { return Expr{Op: "-", Args: []Expr{e}} }
	for _, tc := range []struct {
		stmt string
		want Stmt
	}{
		{"r0 = READ_ONCE(*x);", Stmt{Access: acc(OpReadOnce, "x", Expr{}, "r0")}},
		{"WRITE_ONCE(*x, r0 + 1);", Stmt{Access: acc(OpWriteOnce, "x", Bin("+", R("r0"), C(1)), "")}},
		{"r0 = smp_load_acquire(x);", Stmt{Access: acc(OpLoadAcquire, "x", Expr{}, "r0")}},
		{"smp_store_release(x, 2);", Stmt{Access: acc(OpStoreRelease, "x", C(2), "")}},
		{"smp_mb();", Stmt{Access: acc(OpMb, "", Expr{}, "")}},
		{"smp_rmb();", Stmt{Access: acc(OpRmb, "", Expr{}, "")}},
		{"smp_wmb();", Stmt{Access: acc(OpWmb, "", Expr{}, "")}},
		{"smp_mb__before_atomic();", Stmt{Access: acc(OpMbBeforeAtomic, "", Expr{}, "")}},
		{"smp_mb__after_atomic();", Stmt{Access: acc(OpMbAfterAtomic, "", Expr{}, "")}},
		{"smp_mb__after_spinlock();", Stmt{Access: acc(OpMbAfterSpinlock, "", Expr{}, "")}},
		{"barrier();", Stmt{Access: acc(OpBarrier, "", Expr{}, "")}},
		{"r0 = atomic_read(v);", Stmt{Access: acc(OpReadOnce, "v", Expr{}, "r0")}},
		{"atomic_set(v, 3);", Stmt{Access: acc(OpWriteOnce, "v", C(3), "")}},
		{"r0 = atomic_read_acquire(v);", Stmt{Access: acc(OpLoadAcquire, "v", Expr{}, "r0")}},
		{"atomic_set_release(v, 3);", Stmt{Access: acc(OpStoreRelease, "v", C(3), "")}},
		{"atomic_inc(v);", Stmt{Access: acc(OpAdd, "v", C(1), "")}},
		{"atomic_dec(v);", Stmt{Access: acc(OpAdd, "v", C(-1), "")}},
		{"atomic_add(2, v);", Stmt{Access: acc(OpAdd, "v", C(2), "")}},
		{"atomic_sub(r0, v);", Stmt{Access: acc(OpAdd, "v", neg(R("r0")), "")}},
		{"r0 = atomic_inc_return(v);", Stmt{Access: acc(OpAddReturn, "v", C(1), "r0")}},
		{"r0 = atomic_dec_return_relaxed(v);", Stmt{Access: acc(OpAddReturnRlx, "v", C(-1), "r0")}},
		{"r0 = atomic_add_return_acquire(2, v);", Stmt{Access: acc(OpAddReturnAcq, "v", C(2), "r0")}},
		{"r0 = atomic_sub_return_release(2, v);", Stmt{Access: acc(OpAddReturnRel, "v", neg(C(2)), "r0")}},
		{"r0 = atomic_fetch_add(2, v);", Stmt{Access: acc(OpFetchAdd, "v", C(2), "r0")}},
		{"r0 = atomic_fetch_inc_relaxed(v);", Stmt{Access: acc(OpFetchAddRlx, "v", C(1), "r0")}},
		{"r0 = atomic_fetch_dec_acquire(v);", Stmt{Access: acc(OpFetchAddAcq, "v", C(-1), "r0")}},
		{"r0 = atomic_fetch_sub_release(1, v);", Stmt{Access: acc(OpFetchAddRel, "v", neg(C(1)), "r0")}},
		{"r0 = xchg(x, 2);", Stmt{Access: acc(OpXchg, "x", C(2), "r0")}},
		{"r0 = xchg_relaxed(x, 2);", Stmt{Access: acc(OpXchgRlx, "x", C(2), "r0")}},
		{"r0 = atomic_xchg_acquire(v, 2);", Stmt{Access: acc(OpXchgAcq, "v", C(2), "r0")}},
		{"r0 = atomic_xchg_release(v, 2);", Stmt{Access: acc(OpXchgRel, "v", C(2), "r0")}},
		{"r0 = cmpxchg(x, 1, 2);", Stmt{Access: &Access{Op: OpCmpxchg, Loc: "x", Expect: C(1), Val: C(2), Reg: "r0"}}},
		{"r0 = cmpxchg_relaxed(x, 1, 2);", Stmt{Access: &Access{Op: OpCmpxchgRlx, Loc: "x", Expect: C(1), Val: C(2), Reg: "r0"}}},
		{"r0 = atomic_cmpxchg_acquire(v, r0, 2);", Stmt{Access: &Access{Op: OpCmpxchgAcq, Loc: "v", Expect: R("r0"), Val: C(2), Reg: "r0"}}},
		{"r0 = atomic_cmpxchg_release(v, 0, 1);", Stmt{Access: &Access{Op: OpCmpxchgRel, Loc: "v", Expect: C(0), Val: C(1), Reg: "r0"}}},
		{"(void)xchg(x, 2);", Stmt{Access: acc(OpXchg, "x", C(2), "")}},
		{"atomic_inc_return(v);", Stmt{Access: acc(OpAddReturn, "v", C(1), "")}},
		{"spin_lock(l);", Stmt{Access: acc(OpSpinLock, "l", Expr{}, "")}},
		{"spin_unlock(l);", Stmt{Access: acc(OpSpinUnlock, "l", Expr{}, "")}},
		{"r0 = r1 * 2 + 1;", Stmt{Assign: &Assign{Reg: "r0", Val: Bin("+", Bin("*", R("r1"), C(2)), C(1))}}},
		{"r0 = !(r1 == 1) || r1 != 2 && r1 < 3;", Stmt{Assign: &Assign{Reg: "r0", Val: Bin("||", Not(Bin("==", R("r1"), C(1))), Bin("&&", Bin("!=", R("r1"), C(2)), Bin("<", R("r1"), C(3))))}}},
		{"r0 = r1 & 1 | r1 ^ 2;", Stmt{Assign: &Assign{Reg: "r0", Val: Bin("|", Bin("&", R("r1"), C(1)), Bin("^", R("r1"), C(2)))}}},
		{"r0 = -r1 >= 0x10;", Stmt{Assign: &Assign{Reg: "r0", Val: Bin(">=", Expr{Op: "-", Args: []Expr{R("r1")}}, C(16))}}},
		{"int a = READ_ONCE(*x);", Stmt{Access: acc(OpReadOnce, "x", Expr{}, "a")}},
		{"if (r0) WRITE_ONCE(*y, 1);", Stmt{If: &If{Cond: R("r0"), Then: []Stmt{{Access: acc(OpWriteOnce, "y", C(1), ""), Line: 11}}}}},
		{"if (r0 == 0) { smp_mb(); } else { r1 = 2; }", Stmt{If: &If{Cond: Bin("==", R("r0"), C(0)),
			Then: []Stmt{{Access: acc(OpMb, "", Expr{}, ""), Line: 11}}, Else: []Stmt{{Assign: &Assign{Reg: "r1", Val: C(2)}, Line: 11}}}}},
	} {
		got := noCols([]Stmt{firstStmt(t, litmusSrc("exists (x=1)", "int r0, r1; "+tc.stmt))})[0]
		tc.want.Line = 11
		assert.Equal(t, tc.want, got, tc.stmt)
	}
}

// TestParseErrors: every construct the parser refuses is an *Error that
// names the construct and the line it is on.
func TestParseErrors(t *testing.T) {
	body := func(stmt string) string { return litmusSrc("exists (x=1)", "int r0;\nint r1;\n"+stmt) } // stmt on line 13
	for _, tc := range []struct {
		name, src string
		line      int
		want      string
	}{
		{"not C", "X86 T\n{}\n", 1, "C NAME"},
		{"array", body("int a[2];"), 13, "array a"},
		{"unknown function", body("frob(x);"), 13, "frob()"},
		{"call in a loop's condition", body("while (READ_ONCE(*x)) r0 = 1;"), 13, "READ_ONCE() inside a loop's condition"},
		{"plain load in a loop's condition", body("while (*x) r0 = 1;"), 13, "a plain load inside a loop's condition"},
		{"store in an expression", body("r0 = 1 + smp_mb();"), 13, "smp_mb() returns no value to use in an expression"},
		{"void primitive assigned", body("r0 = smp_mb();"), 13, "returns no value"},
		{"address-of", body("r0 = smp_load_acquire(&x);"), 13, "&x"},
		{"deref in load_acquire", body("r0 = smp_load_acquire(*x);"), 13, "*x"},
		{"division", body("r0 = r1 / 2;"), 13, "operator /"},
		{"shift", body("r0 = r1 << 2;"), 13, "operator <<"},
		{"ternary", body("r0 = r1 ? 1 : 2;"), 13, "operator ?"},
		{"complement", body("r0 = ~r1;"), 13, "operator ~"},
		{"assignment to a pointer", body("x = 1;"), 13, "assignment to the pointer x"},
		{"goto", body("goto out;"), 13, "goto"},
		{"do", body("do r0 = 1; while (r0);"), 13, "do"},
		{"declaration in for", body("for (int i = 0; i < 2; i++) ;"), 13, "declaration in for"},
		{"call in for", body("for (r0 = READ_ONCE(*x); r0; ) ;"), 13, "READ_ONCE() in a for clause"},
		{"wait without load", body("wait_event(wq, r0 == 1);"), 13, "reads no memory"},
		{"wait with two loads", body("wait_event(wq, READ_ONCE(*x) == READ_ONCE(*x));"), 13, "a second load"},
		{"wait with a store", body("wait_event(wq, xchg(x, 1));"), 13, "xchg() in the condition"},
		{"wait without a queue", body("wait_event(READ_ONCE(*x));"), 13, "wait queue"},
		{"flush of a location", body("r0 = blkdev_issue_flush(x);"), 13, "not the location x"},
		{"assert assigned", body("r0 = assert(r1);"), 13, "returns no value"},
		{"write with two arguments", body("r0 = submit_bio_wait(0, 1);"), 13, `want ","`},
		{"header key twice", "C T\n(*\n * Expect: safe\n * expect: unsafe\n *)\n{}\nP0(int *x) { }\nexists (x=0)\n", 4, "a second expect"},
		{"registers of a missing thread", "C T\n{\n1:r0=1;\n}\nP0(int *x) { }\nexists (x=0)\n", 6, "gives 1:r0=1, but the test has 1 threads"},
		{"pointer to a number's name", "C T\n{\ny=ATOMIC_INIT;\n}\nP0(int *y) { }\nexists (y=0)\n", 3, `want "("`},
		{"access through an unknown name", body("r0 = READ_ONCE(*q);"), 13, "q, which is neither a location parameter of this thread nor one of its registers"},
		{"address of no location", body("r0 = &q;"), 13, "q is no location"},
		{"second filter", litmusSrc("filter (x=1)\nfilter (x=0)\nexists (x=1)", "smp_mb();"), 15, "a second filter"},
		{"parameter type", "C T\n{}\nP0(struct foo *y) { }\nexists (0:r0=0)\n", 3, "struct foo (struct completion and struct srcu_struct are the only structs)"},
		{"parameter type word", "C T\n{}\nP0(char *y) { }\nexists (0:r0=0)\n", 3, "parameter type char"},
		{"completion address", "C T\n{}\nP0(struct completion *c) {\ncomplete(&c);\n}\nforall (0:r0=0)\n", 4, "takes the completion's pointer parameter itself: complete(c)"},
		{"completion not a parameter", "C T\n{}\nP0(struct completion *c) {\nwait_for_completion(d);\n}\nforall (0:r0=0)\n", 4, "d, which is not a location parameter"},
		{"completion result", "C T\n{}\nP0(struct completion *c) {\nint r;\nr = complete(c);\n}\nforall (0:r0=0)\n", 5, "returns no value"},
		{"submit_bio flags missing", "C T\n{}\nP0() {\nint h;\nh = submit_bio(0, 1);\n}\nforall (0:h=0)\n", 5, "between the arguments of submit_bio"},
		{"thread out of order", "C T\n{}\nP1(int *x) { }\nexists (x=0)\n", 3, "out of order"},
		{"no condition", "C T\n{}\nP0(int *x) { }\n", 4, "no final condition"},
		{"== in condition", "C T\n{}\nP0(int *x) { }\nexists (x==1)\n", 4, `"=="`},
		{"unknown location in condition", "C T\n{}\nP0(int *x) { }\nexists (z=1)\n", 4, "z, which is no location"},
		{"unknown thread in condition", "C T\n{}\nP0(int *x) { }\nexists (3:r0=1)\n", 4, "thread 3"},
		{"unclosed comment", "C T\n(* oops\n{}\n", 2, "not closed"},
		{"undeclared register", body("r2 = 1;"), 13, "undeclared name r2 (did you mean r0?)"},
		{"undeclared in a condition", body("if (r3 == 1) r0 = 1;"), 13, "undeclared name r3 (did you mean r0?)"},
		{"misspelt flag", body("r0 = submit_bio_wait(0, 1, REQ_PREFLUHS);"), 13, "undeclared name REQ_PREFLUHS (did you mean REQ_PREFLUSH?)"},
		{"misspelt function", body("smp_mbb();"), 13, "unknown function smp_mbb() (did you mean smp_mb?)"},
		{"misspelt location", body("r0 = READ_ONCE(*xx);"), 13, "xx, which is neither a location parameter of this thread nor one of its registers (did you mean x?)"},
		{"second declaration", body("int r0;"), 13, "a second declaration of r0 (the first is on line 11)"},
		{"register of the condition", "C T\n{}\nP0(int *x) { int r0; r0 = READ_ONCE(*x); }\nexists (0:r1=0)\n", 4, "P0 has no register r1 (did you mean r0?)"},
		{"location of the condition", "C T\n{}\nP0(int *xy) { WRITE_ONCE(*xy, 1); }\nexists (yx=1)\n", 4, "(did you mean xy?)"},
		{"initial register unused", "C T\n{ 0:b=1; }\nP0(int *x) { int bb; bb = READ_ONCE(*x); }\nexists (x=0)\n", 2, "the initial state sets 0:b, a register P0 never names (did you mean bb?)"},
		{"initial location unused", "C T\n{ xy=1; }\nP0(int *x) { WRITE_ONCE(*x, 1); }\nexists (x=0)\n", 2, "the initial state sets xy, which no thread takes as a parameter and no condition reads (did you mean x?)"},
		{"misspelt header key", "C T\n(*\n * Expcet: unsafe\n *)\n{}\nP0(int *x) { }\nexists (x=0)\n", 3, "unknown header key Expcet: (did you mean expect?)"},
		{"header key plural", "C T\n(*\n * Devices: no-cache\n *)\n{}\nP0(int *x) { }\nexists (x=0)\n", 3, "(did you mean device?)"},
		{"locations typo", "C T\n{}\nP0(int *x) { int r0; r0 = READ_ONCE(*x); }\nlocations [y]\nexists (0:r0=0)\n", 4, "locations names y, which is no location"},
		{"two device names", "C T\n{}\nP0() { int e; e = blkdev_issue_flush(bdev); e = blkdev_issue_flush(bdev); e = blkdev_issue_flush(bdeb); }\nforall (blk0=0)\n", 3, "blkdev_issue_flush(bdeb), but line 3 flushes bdev"},
		{"wait queue typo", "C T\n{}\nP0(int *x) { wait_event(wq, READ_ONCE(*x) == 1); }\nP1(int *x) { WRITE_ONCE(*x, 1); wake_up(wqq); }\nforall (x=1)\n", 4, "wake_up(wqq): the only use of the wait queue wqq (did you mean wq?)"},
	} {
		_, err := Parse("f.litmus", []byte(tc.src))
		var pe *Error
		require.True(t, errors.As(err, &pe), "%s: want *Error, got %v", tc.name, err)
		assert.Equal(t, tc.line, pe.Line, "%s: %v", tc.name, err)
		assert.GreaterOrEqual(t, pe.Col, 1, "%s: %v", tc.name, err)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("f.litmus:%d:%d: ", tc.line, pe.Col)), "%s: %v", tc.name, err)
	}
}

// TestParseErrorColumns: an error's column is where the refused construct
// starts on its line (bytes from 1).
func TestParseErrorColumns(t *testing.T) {
	body := func(stmt string) string { return litmusSrc("exists (x=1)", "int r0;\nint r1;\n"+stmt) } // stmt on line 13
	for _, tc := range []struct {
		src       string
		line, col int
	}{
		{body("r0 = r1 / 2;"), 13, 9},
		{body("  frob(x);"), 13, 3},
		{body("while (r1 + READ_ONCE(*x)) ;"), 13, 13},
		{body("r0 = ~r1;"), 13, 6},
		{"C T\n{}\nP0(int *x) { }\nexists (z=1)\n", 4, 9},
		{"C T\n{}\nP0(int *x) { @ }\nexists (x=1)\n", 3, 14},
		{"C T\n/* a\ncomment */ {}\nP0(int *x) { ! }\nexists (x=1)\n", 4, 14},
	} {
		_, err := Parse("f.litmus", []byte(tc.src))
		var pe *Error
		require.True(t, errors.As(err, &pe), "%q: want *Error, got %v", tc.src, err)
		assert.Equal(t, []int{tc.line, tc.col}, []int{pe.Line, pe.Col}, "%q: %v", tc.src, err)
	}
}

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.litmus")
	require.NoError(t, os.WriteFile(path, []byte(litmusSrc("exists (x=1)", "WRITE_ONCE(*x, 1);")), 0o644))
	tt, err := ParseFile(path)
	require.NoError(t, err)
	assert.Equal(t, "T", tt.Name)
	_, err = ParseFile(filepath.Join(t.TempDir(), "missing.litmus"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestParseHerdHeaders: what diy7-generated and hand-written tests put
// around the program: a quoted description and Key=value lines after the
// name, "(* *)" comments in the initial state, typed register declarations,
// volatile parameters.
func TestParseHerdHeaders(t *testing.T) {
	src := `C gen
"PodWW Rfe PodRR Fre"
Cycle=Rfe PodRR Fre PodWW
Prefetch=0:x=F,0:y=W

{
	x=0; (* initially zero *)
	int 0:r1;
	int 0:r2 = 0;
}

P0(volatile int* x, volatile int* y) {
	int r1;
	WRITE_ONCE(*x, 1);
	r1 = READ_ONCE(*y);
}

exists (0:r1=0 /\ 0:r2=0)
`
	tt, err := Parse("gen.litmus", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "gen", tt.Name)
	assert.Equal(t, []string{"x", "y"}, tt.Locs)
	require.Len(t, tt.Threads[0].Body, 2)
	assert.Equal(t, 14, tt.Threads[0].Body[0].Line, "header lines are counted")
}

// noCols returns ss with every statement's column zeroed, for comparisons
// that give lines only.
func noCols(ss []Stmt) []Stmt {
	if ss == nil {
		return nil
	}
	out := make([]Stmt, len(ss))
	for i, s := range ss {
		s.Col = 0
		if s.Access != nil {
			a := *s.Access
			a.Call = ""
			s.Access = &a
		}
		if s.If != nil {
			f := *s.If
			f.Then, f.Else = noCols(f.Then), noCols(f.Else)
			s.If = &f
		}
		if s.Loop != nil {
			l := *s.Loop
			l.Body, l.Post = noCols(l.Body), noCols(l.Post)
			s.Loop = &l
		}
		out[i] = s
	}
	return out
}

// TestParseResultLine: Test.ResultLine is the whole Result: line of the
// header, in each form the LKMM corpus writes it, and Test.Result its
// first word.
func TestParseResultLine(t *testing.T) {
	body := "\n\n{}\n\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\n\nexists (x=1)\n"
	for _, tc := range []struct {
		header       string
		result, line string
	}{
		{"(* Result: Sometimes *)", "Sometimes", "Sometimes"},
		{"(* Result: Never *)", "Never", "Never"},
		{"(* Result: Never DATARACE *)", "Never", "Never DATARACE"},
		{"(*Result:Always*)", "Always", "Always"},
		// A comment that goes on after the Result: line.
		{"(* Result: Never\n *)", "Never", "Never"},
		{"(* Result: Sometimes\n * Why: see above.\n *)", "Sometimes", "Sometimes"},
		{"(*\n * Result: Never DATARACE\n *)", "Never", "Never DATARACE"},
		{"(*\n * Result: Sometimes DATARACE  \r\n *)", "Sometimes", "Sometimes DATARACE"},
		{"(*\n * Result: Maybe\n *)", "Maybe", "Maybe"},
		{"(*\n * Result: DEADLOCK\n *)", "DEADLOCK", "DEADLOCK"},
		{"(*\n * Result: Flag srcu-bad-nesting\n *)", "Flag", "Flag srcu-bad-nesting"},
		{"(*\n * Result: Never\n *\n * Result: Sometimes\n *)", "Never", "Never"},
		{"(* no result here *)", "", ""},
	} {
		tt, err := Parse("r.litmus", []byte("C R\n\n"+tc.header+body))
		require.NoError(t, err, tc.header)
		assert.Equal(t, tc.result, tt.Result, tc.header)
		assert.Equal(t, tc.line, tt.ResultLine, tc.header)
	}
	// Only the header counts: a Result: line in a comment after the
	// threads is not the test's.
	tt, err := Parse("r.litmus", []byte("C R\n\n{}\n\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\n\n(* Result: Never *)\nexists (x=1)\n"))
	require.NoError(t, err)
	assert.Empty(t, tt.Result)
	assert.Empty(t, tt.ResultLine)
}

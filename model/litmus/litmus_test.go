package litmus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixed is a model with given outcomes, to test Judge.
type fixed []Outcome

func (fixed) Name() string                        { return "fixed" }
func (f fixed) Outcomes(*Test) ([]Outcome, error) { return f, nil }

func TestJudge(t *testing.T) {
	out := func(r0, r1 int64) Outcome {
		return Outcome{Regs: []map[string]int64{{"r0": r0}, {"r0": r1}}, Mem: map[string]int64{"x": 1}}
	}
	both0 := Bin("&&", Bin("==", TR(0, "r0"), C(0)), Bin("==", TR(1, "r0"), C(0)))
	for _, tc := range []struct {
		name     string
		outs     fixed
		q        Quantifier
		result   string
		positive bool
	}{
		{"sometimes", fixed{out(0, 0), out(1, 0)}, Exists, "Sometimes", true},
		{"never", fixed{out(1, 0), out(1, 1)}, Exists, "Never", false},
		{"never, ~exists", fixed{out(1, 0)}, NotExists, "Never", true},
		{"always, forall", fixed{out(0, 0)}, Forall, "Always", true},
		{"sometimes, forall", fixed{out(0, 0), out(0, 1)}, Forall, "Sometimes", false},
	} {
		a, err := Judge(tc.outs, &Test{Name: tc.name, Quant: tc.q, Cond: both0})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.result, a.Result, tc.name)
		assert.Equal(t, tc.positive, a.Positive, tc.name)
	}
	_, err := Judge(fixed{}, &Test{Name: "none", Quant: Exists, Cond: both0})
	assert.Error(t, err, "a model with no outcome")
}

func TestExprEval(t *testing.T) {
	regs := func(t int, n string) int64 { return map[string]int64{"r0": 3, "r1": 4}[n] + int64(10*t) }
	for _, tc := range []struct {
		e    Expr
		want int64
	}{
		{Bin("+", R("r0"), R("r1")), 7},
		{Bin("==", R("r0"), C(3)), 1},
		{Not(Bin("!=", R("r0"), C(3))), 1},
		{Bin("&&", C(1), C(0)), 0},
		{Bin("||", C(1), C(0)), 1},
		{Bin("^", R("r0"), C(1)), 2},
		{TR(1, "r0"), 13},
	} {
		v, err := tc.e.Eval(regs, nil)
		require.NoError(t, err, tc.e.String())
		assert.Equal(t, tc.want, v, tc.e.String())
	}
	_, err := L("x").Eval(regs, nil)
	assert.Error(t, err, "a location in thread code")
}

func TestOpsHaveNames(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Ops() {
		i := op.Info()
		require.NotEmpty(t, i.Name, "%d", op)
		assert.False(t, seen[i.Name], "%s twice", i.Name)
		seen[i.Name] = true
		assert.NotZero(t, i.Order, i.Name)
		if op.IsRMW() {
			assert.True(t, i.Reads && i.Writes, i.Name)
		}
	}
}

// TestMemoryOnlyGotoAndLabel: a goto and a label, at the top of a thread
// or in an arm of an if, are durability statements the memory models
// refuse, named as such.
func TestMemoryOnlyGotoAndLabel(t *testing.T) {
	store := Stmt{Access: &Access{Op: OpWriteOnce, Loc: "x", Val: C(1)}, Line: 1}
	for _, tc := range []struct {
		name string
		s    Stmt
		kind string
	}{
		{"goto", Stmt{Goto: "out", Line: 2}, "goto"},
		{"label", Stmt{Label: "out", Line: 2}, "a label"},
	} {
		for _, nested := range []bool{false, true} {
			s := tc.s
			if nested {
				s = Stmt{If: &If{Cond: R("r"), Then: []Stmt{tc.s}}, Line: 2}
			}
			tt := &Test{Name: tc.name, Locs: []string{"x"}, Threads: []Thread{{Body: []Stmt{store, s}}}, Quant: Exists, Cond: C(1)}
			require.NotNil(t, FirstDurable(tt.Threads[0].Body))
			err := MemoryOnly(tt)
			require.ErrorIs(t, err, ErrUnsupported, "%s nested %v", tc.name, nested)
			assert.Contains(t, err.Error(), "P0 has "+tc.kind+", a durability statement", "%s nested %v", tc.name, nested)
			assert.Equal(t, tc.kind, StmtKind(&tc.s))
		}
	}
}

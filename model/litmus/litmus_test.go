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

// TestJudgeFlags: Answer.Flags is the sorted union, each flag once, of
// the flags of the outcomes the filter keeps; nil when none has one.
// Flags are not part of an outcome's key.
func TestJudgeFlags(t *testing.T) {
	out := func(r0 int64, flags ...string) Outcome {
		return Outcome{Regs: []map[string]int64{{"r0": r0}}, Mem: map[string]int64{"x": 1}, Flags: flags}
	}
	cond := Bin("==", TR(0, "r0"), C(1))
	tt := &Test{Name: "flags", Quant: Exists, Cond: cond}
	a, err := Judge(fixed{out(0, "unmatched-rcu-lock"), out(1, "data-race"), out(2, "data-race", "unmatched-rcu-lock")}, tt)
	require.NoError(t, err)
	assert.Equal(t, []string{"data-race", "unmatched-rcu-lock"}, a.Flags)

	a, err = Judge(fixed{out(0), out(1)}, tt)
	require.NoError(t, err)
	assert.Nil(t, a.Flags, "no flag raised")

	// The filter drops the outcome with r0=2, and its flag with it.
	filter := Bin("!=", TR(0, "r0"), C(2))
	filtered := &Test{Name: "filtered", Quant: Exists, Cond: cond, Filter: &filter}
	a, err = Judge(fixed{out(0), out(1, "data-race"), out(2, "srcu-bad-nesting")}, filtered)
	require.NoError(t, err)
	assert.Equal(t, []string{"data-race"}, a.Flags)
	a, err = Judge(fixed{out(1), out(2, "data-race")}, filtered)
	require.NoError(t, err)
	assert.Nil(t, a.Flags, "the only flagged outcome is filtered out")

	assert.Equal(t, out(1).Key(), out(1, "data-race").Key(), "Key ignores the flags")
	assert.Equal(t, "0:r0=1; x=1;", out(1, "data-race").Key())
}

// decider is a Decider with a fixed decision, to test Decide.
type decider struct {
	fixed
	d Decision
}

func (d decider) Decide(*Test) (Decision, error) { return d.d, nil }

// TestDecideFlags: Decide answers with the Decision's flags, and those
// of its witnesses, sorted, each once.
func TestDecideFlags(t *testing.T) {
	sat := Outcome{Regs: []map[string]int64{{"r0": 1}}}
	unsat := Outcome{Regs: []map[string]int64{{"r0": 0}}}
	tt := &Test{Name: "decide", Quant: Exists, Cond: Bin("==", TR(0, "r0"), C(1))}
	a, err := Decide(decider{d: Decision{Sat: &sat, Unsat: &unsat, Flags: []string{"unmatched-rcu-lock", "data-race", "data-race"}}}, tt)
	require.NoError(t, err)
	assert.True(t, a.Decided)
	assert.Equal(t, "Sometimes", a.Result)
	assert.Equal(t, []string{"data-race", "unmatched-rcu-lock"}, a.Flags)

	a, err = Decide(decider{d: Decision{Unsat: &unsat}}, tt)
	require.NoError(t, err)
	assert.Equal(t, "Never", a.Result)
	assert.Nil(t, a.Flags)

	flagged := sat
	flagged.Flags = []string{"srcu-bad-nesting"}
	a, err = Decide(decider{d: Decision{Sat: &flagged, Flags: []string{"data-race"}}}, tt)
	require.NoError(t, err)
	assert.Equal(t, "Always", a.Result)
	assert.Equal(t, []string{"data-race", "srcu-bad-nesting"}, a.Flags)
	assert.Equal(t, []string{"srcu-bad-nesting"}, flagged.Flags, "the witness's flags are not changed")
}

// TestErrNoOutcome: Judge and Decide wrap ErrNoOutcome when the model
// gives no outcome (or the filter keeps none), with the message they
// always had; other errors do not wrap it.
func TestErrNoOutcome(t *testing.T) {
	cond := Bin("==", TR(0, "r0"), C(1))
	tt := &Test{Name: "T", Quant: Exists, Cond: cond}
	_, err := Judge(fixed{}, tt)
	require.ErrorIs(t, err, ErrNoOutcome)
	assert.EqualError(t, err, "T: fixed gives no outcome")

	never := C(0)
	filtered := &Test{Name: "T", Quant: Exists, Cond: cond, Filter: &never}
	_, err = Judge(fixed{{Regs: []map[string]int64{{"r0": 1}}}}, filtered)
	assert.ErrorIs(t, err, ErrNoOutcome, "the filter keeps no outcome")

	_, err = Decide(decider{}, tt)
	require.ErrorIs(t, err, ErrNoOutcome)
	assert.EqualError(t, err, "T: fixed gives no outcome")

	_, err = Judge(fixed{{Regs: []map[string]int64{{"r0": 1}}}}, &Test{Name: "T", Cond: cond})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoOutcome, "no quantifier")
	assert.NotErrorIs(t, ErrCutShort, ErrNoOutcome)
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

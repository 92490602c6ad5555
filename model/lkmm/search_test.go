package lkmm_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
)

// oldCandidates bounds the old enumeration on random programs: beyond
// it the program is only decided, not compared with the oracle.
const oldCandidates = 20_000

// newCandidates bounds the search on random programs: those whose reads
// may return many values (data-dependent RMW chains) take long, and the
// old enumeration refuses them too.
const newCandidates = 40_000

// keys returns the keys of outs, sorted.
func keys(outs []litmus.Outcome) []string {
	var out []string
	for _, o := range outs {
		out = append(out, o.Key())
	}
	sort.Strings(out)
	return out
}

// randomOptions are random programs of every primitive the reference
// models, locks included half the time, with few values so that reads
// have several writes to choose from.
func randomOptions(t *rapid.T) litmustest.Options {
	o := litmustest.Default()
	o.MaxThreads = 4
	o.MaxLocs = 3
	o.MaxStmts = 3
	if rapid.Bool().Draw(t, "few values") {
		o.Values = 2
	}
	o.Data = rapid.Bool().Draw(t, "data dependencies")
	if rapid.Bool().Draw(t, "locks") {
		o.Locks = 1
	}
	return o
}

// registers lists the registers each thread's code assigns.
func registers(test *litmus.Test) [][]string {
	out := make([][]string, len(test.Threads))
	var walk func(th int, body []litmus.Stmt)
	walk = func(th int, body []litmus.Stmt) {
		for _, s := range body {
			switch {
			case s.Access != nil && s.Access.Reg != "":
				out[th] = append(out[th], s.Access.Reg)
			case s.Assign != nil:
				out[th] = append(out[th], s.Assign.Reg)
			case s.If != nil:
				walk(th, s.If.Then)
				walk(th, s.If.Else)
			}
		}
	}
	for th, thread := range test.Threads {
		walk(th, thread.Body)
	}
	return out
}

// drawCond draws a condition over the test's registers and ordinary
// locations: atoms "reg = v" and "loc = v" (v from 0 to 3) joined by
// /\, \/ and negation.
func drawCond(t *rapid.T, test *litmus.Test, label string) litmus.Expr {
	regs := registers(test)
	var atoms []func(v int64) litmus.Expr
	for th, rs := range regs {
		for _, r := range rs {
			th, r := th, r
			atoms = append(atoms, func(v int64) litmus.Expr { return litmus.Bin("==", litmus.TR(th, r), litmus.C(v)) })
		}
	}
	for _, l := range test.Locs {
		if l == "s" || l == "t" {
			continue // spin locks: a condition may not read them
		}
		l := l
		atoms = append(atoms, func(v int64) litmus.Expr { return litmus.Bin("==", litmus.L(l), litmus.C(v)) })
	}
	var draw func(depth int) litmus.Expr
	draw = func(depth int) litmus.Expr {
		k := rapid.IntRange(0, 3).Draw(t, label+" form")
		if depth >= 2 || k == 0 {
			a := rapid.IntRange(0, len(atoms)-1).Draw(t, label+" atom")
			return atoms[a](rapid.Int64Range(0, 3).Draw(t, label+" value"))
		}
		switch k {
		case 1:
			return litmus.Bin("&&", draw(depth+1), draw(depth+1))
		case 2:
			return litmus.Bin("||", draw(depth+1), draw(depth+1))
		}
		return litmus.Not(draw(depth + 1))
	}
	return draw(0)
}

// TestSearchMatchesOldEnumeration: on random programs (locks included),
// Outcomes gives exactly the outcomes of the old cross-product
// enumeration wherever that answered (in order too), and Decide gives
// Judge's Result for a random condition and filter, with witnesses that
// are outcomes on the side they stand for.
func TestSearchMatchesOldEnumeration(t *testing.T) {
	var compared, decided, cut int
	rapid.Check(t, func(rt *rapid.T) {
		test := litmustest.Draw(rt, randomOptions(rt))
		inOrder := rapid.Bool().Draw(rt, "in order")
		test.Cond = drawCond(rt, test, "cond")
		test.Quant = []litmus.Quantifier{litmus.Exists, litmus.NotExists, litmus.Forall}[rapid.IntRange(0, 2).Draw(rt, "quantifier")]
		if rapid.IntRange(0, 3).Draw(rt, "filter?") == 0 {
			f := drawCond(rt, test, "filter")
			test.Filter = &f
		}
		// The old enumeration first: where it answers, the search must
		// too, within a larger budget.
		old, oldErr := oldReference{Candidates: oldCandidates, InOrder: inOrder}.Outcomes(test)
		ref := lkmm.Reference{InOrder: inOrder, Candidates: newCandidates}
		if !errors.Is(oldErr, errOldTooLarge) {
			require.NoError(rt, oldErr)
			ref.Candidates = 50 * newCandidates
		}
		got, err := ref.Outcomes(test)
		if errors.Is(err, litmus.ErrCutShort) {
			require.ErrorIs(rt, oldErr, errOldTooLarge, "the old enumeration answers what the search does not: %s", render(test))
			cut++
			return
		}
		require.NoError(rt, err)
		if oldErr == nil {
			require.Equal(rt, keys(old), keys(got), "outcomes, old then new, of %s", render(test))
			compared++
		}

		judged, jerr := litmus.Judge(ref, test)
		dec, err := ref.Decide(test)
		require.NoError(rt, err)
		answer, derr := litmus.Decide(ref, test)
		if jerr != nil {
			// Judge fails when the filter keeps no outcome: so does
			// Decide.
			require.Error(rt, derr)
			require.Nil(rt, dec.Sat)
			require.Nil(rt, dec.Unsat)
			return
		}
		require.NoError(rt, derr, render(test))
		require.Equal(rt, judged.Result, answer.Result, render(test))
		require.Equal(rt, judged.Positive, answer.Positive)
		all := map[string]bool{}
		for _, o := range judged.Outcomes {
			all[o.Key()] = true
		}
		for i, w := range []*litmus.Outcome{dec.Sat, dec.Unsat} {
			if w == nil {
				continue
			}
			require.True(rt, all[w.Key()], "witness %s is not an outcome", w.Key())
			sat, err := w.Satisfies(test.Cond)
			require.NoError(rt, err)
			require.Equal(rt, i == 0, sat, "witness %s on the wrong side", w.Key())
		}
		decided++
	})
	t.Logf("%d random programs decided, %d of them compared with the old enumeration; %d over the budget of both", decided, compared, cut)
}

// render writes a test's threads and condition, for failure messages.
func render(t *litmus.Test) string {
	var b strings.Builder
	var body func(stmts []litmus.Stmt, indent string)
	body = func(stmts []litmus.Stmt, indent string) {
		for _, s := range stmts {
			switch {
			case s.Access != nil:
				fmt.Fprintf(&b, "%s%s;\n", indent, litmus.AccessText(s.Access))
			case s.Assign != nil:
				fmt.Fprintf(&b, "%s%s = %s;\n", indent, s.Assign.Reg, litmus.CExpr(s.Assign.Val))
			case s.If != nil:
				fmt.Fprintf(&b, "%sif (%s) {\n", indent, litmus.CExpr(s.If.Cond))
				body(s.If.Then, indent+"\t")
				fmt.Fprintf(&b, "%s} else {\n", indent)
				body(s.If.Else, indent+"\t")
				fmt.Fprintf(&b, "%s}\n", indent)
			}
		}
	}
	for i, th := range t.Threads {
		fmt.Fprintf(&b, "P%d:\n", i)
		body(th.Body, "\t")
	}
	fmt.Fprintf(&b, "%s %s", t.Quant, t.Cond)
	if t.Filter != nil {
		fmt.Fprintf(&b, " filter %s", *t.Filter)
	}
	return b.String()
}

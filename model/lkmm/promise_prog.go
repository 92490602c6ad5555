package lkmm

import (
	"fmt"
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// A test compiled for Promise: each thread's statements as flat
// instructions, its registers, and the values its runs may take.

// instruction kinds.
const (
	lkAccess uint8 = iota + 1
	lkAssign
	lkBranch // push ctrl; if cond is 0 jump to target
	lkJump
	lkEndIf // pop ctrl
)

type lkIns struct {
	kind   uint8
	line   int
	acc    *litmus.Access
	loc    int
	assign *litmus.Assign
	cond   litmus.Expr
	target int
}

type lkProg struct {
	universe []int64 // every value an expression may take (universe)
	code     [][]lkIns
	regs     []map[string]int
	written  [][]string
	locs     map[string]int
}

func (p *lkProg) flatten(t int, body []litmus.Stmt) error {
	for _, s := range body {
		switch {
		case s.Assign != nil:
			if err := p.reg(t, s.Assign.Reg, s.Line, true); err != nil {
				return err
			}
			p.code[t] = append(p.code[t], lkIns{kind: lkAssign, line: s.Line, assign: s.Assign})
		case s.If != nil:
			br := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkBranch, line: s.Line, cond: s.If.Cond})
			if err := p.flatten(t, s.If.Then); err != nil {
				return err
			}
			jmp := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkJump, line: s.Line})
			p.code[t][br].target = len(p.code[t])
			if err := p.flatten(t, s.If.Else); err != nil {
				return err
			}
			p.code[t][jmp].target = len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkEndIf, line: s.Line})
		case s.Access != nil:
			a := s.Access
			loc := -1
			if a.Loc != "" {
				l, ok := p.locs[a.Loc]
				if !ok {
					if len(p.locs) == lkL {
						return fmt.Errorf("%w: more than %d locations", litmus.ErrUnsupported, lkL)
					}
					l = len(p.locs)
					p.locs[a.Loc] = l
				}
				loc = l
			}
			if a.Reg != "" && a.Op.Info().Returns {
				if err := p.reg(t, a.Reg, s.Line, true); err != nil {
					return err
				}
			}
			p.code[t] = append(p.code[t], lkIns{kind: lkAccess, line: s.Line, acc: a, loc: loc})
		}
	}
	return nil
}

func (p *lkProg) reg(t int, name string, line int, write bool) error {
	if _, ok := p.regs[t][name]; ok {
		return nil
	}
	if len(p.regs[t]) == lkR {
		return fmt.Errorf("line %d: %w: P%d uses more than %d registers", line, litmus.ErrUnsupported, t, lkR)
	}
	p.regs[t][name] = len(p.regs[t])
	if write {
		p.written[t] = append(p.written[t], name)
	}
	return nil
}

// bounds checks that every run of the test fits the state: nodes for its
// events and strong fences, room for its stores in each location's co.
func (p *lkProg) bounds() error {
	stores := make([]int, lkL)
	for t, code := range p.code {
		nodes, before := 0, false
		for _, in := range code {
			if in.kind != lkAccess {
				continue
			}
			op := in.acc.Op
			info := op.Info()
			switch {
			case op.IsRMW():
				nodes += 2 // its read and its write
				if info.Order == litmus.Mb {
					nodes += 2 // the strong fences into its read and out of its write
				}
				if before {
					nodes++ // a pending smp_mb__before_atomic
				}
			case op == litmus.OpSpinLock:
				nodes += 2
			case op == litmus.OpMbBeforeAtomic:
				before = true
			case op == litmus.OpMb || op == litmus.OpMbAfterAtomic || op == litmus.OpMbAfterSpinlock:
				nodes++
			case info.Fence:
			default:
				nodes++
			}
			if info.Writes {
				stores[in.loc]++
			}
		}
		if nodes > lkNT {
			return fmt.Errorf("%w: P%d makes up to %d events and strong fences, more than the %d LKMM holds per thread", litmus.ErrUnsupported, t, nodes, lkNT)
		}
	}
	for l, n := range stores {
		if n+1 > lkS {
			return fmt.Errorf("%w: %d stores to location %d, more than the %d LKMM holds", litmus.ErrUnsupported, n, l, lkS-1)
		}
	}
	return nil
}

func walkRegs(body []litmus.Stmt, f func(string)) {
	expr := func(e litmus.Expr) { e.Regs(f) }
	for _, s := range body {
		switch {
		case s.Assign != nil:
			expr(s.Assign.Val)
		case s.If != nil:
			expr(s.If.Cond)
			walkRegs(s.If.Then, f)
			walkRegs(s.If.Else, f)
		case s.Access != nil:
			expr(s.Access.Val)
			expr(s.Access.Expect)
		}
	}
}

// ordered reports whether the store of instruction i is, whatever the
// run, ppo-after the read of instruction pc of thread t: then promising
// it before that read is of no use (what reads the promise would happen
// after the read anyway, and a run without the promise gives it). Only
// orders that hold on every path count: an acquire or fully ordered read
// (a cmpxchg may fail, so not one), a release store, the same location,
// a value computed from the read's register, an smp_mb or a fully
// ordered RMW (not a cmpxchg) in between with no if around it.
func (p *lkProg) ordered(t, pc, i int) bool {
	r, w := p.code[t][pc].acc, p.code[t][i].acc
	ri, wi := r.Op.Info(), w.Op.Info()
	switch {
	case p.code[t][pc].loc == p.code[t][i].loc:
		return true
	case !r.Op.IsCmpxchg() && (ri.Order == litmus.Acquire || ri.Order == litmus.Mb):
		return true
	case !w.Op.IsCmpxchg() && wi.Order == litmus.Release:
		return true
	}
	if r.Reg != "" && ri.Returns {
		dep := false
		w.Val.Regs(func(n string) { dep = dep || n == r.Reg })
		if dep {
			return true
		}
	}
	for j := pc + 1; j < i; j++ {
		in := p.code[t][j]
		if in.kind != lkAccess && in.kind != lkAssign {
			return false // an if: the fence may lie on another path
		}
		if in.kind == lkAccess && (in.acc.Op == litmus.OpMb || (in.acc.Op.IsRMW() && !in.acc.Op.IsCmpxchg() && in.acc.Op.Info().Order == litmus.Mb)) {
			return true
		}
	}
	return false
}

func containsVal(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// maxUniverse bounds the values a test's expressions may take.
const maxUniverse = 64

// universe returns every value the test's expressions may take, a
// superset: starting from the initial values and the constants, each
// round evaluates every expression (stored values, RMW operands,
// assignments) with its registers set to values found so far, and adds
// each RMW operand to every value found so far. A value an execution
// computes comes from a chain of at most one evaluation per statement
// (there are no loops), so that many rounds reach all.
func universe(t *litmus.Test) ([]int64, error) {
	set := map[int64]bool{0: true}
	for _, v := range t.Init {
		set[v] = true
	}
	var exprs, adds []litmus.Expr
	stmts := 0
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, st := range body {
			stmts++
			switch {
			case st.Assign != nil:
				exprs = append(exprs, st.Assign.Val)
			case st.If != nil:
				walk(st.If.Then)
				walk(st.If.Else)
			case st.Access != nil:
				a := st.Access
				exprs = append(exprs, a.Val, a.Expect)
				if a.Op.IsRMW() && !a.Op.IsXchg() && !a.Op.IsCmpxchg() {
					adds = append(adds, a.Val)
				}
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	list := func() []int64 {
		out := make([]int64, 0, len(set))
		for v := range set {
			out = append(out, v)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	evalAll := func(e litmus.Expr, cur []int64, f func(int64)) error {
		var names []string
		e.Regs(func(n string) {
			for _, m := range names {
				if m == n {
					return
				}
			}
			names = append(names, n)
		})
		if len(names) > 3 {
			return fmt.Errorf("%w: an expression of more than 3 registers", litmus.ErrUnsupported)
		}
		vals := map[string]int64{}
		var rec func(k int) error
		rec = func(k int) error {
			if k == len(names) {
				v, err := e.Eval(func(_ int, n string) int64 { return vals[n] }, nil)
				if err != nil {
					return nil // a value no execution computes (division by zero)
				}
				f(v)
				return nil
			}
			for _, v := range cur {
				vals[names[k]] = v
				if err := rec(k + 1); err != nil {
					return err
				}
			}
			return nil
		}
		return rec(0)
	}
	for round := 0; round <= stmts; round++ {
		cur := list()
		for _, e := range exprs {
			if err := evalAll(e, cur, func(v int64) { set[v] = true }); err != nil {
				return nil, err
			}
		}
		for _, e := range adds {
			if err := evalAll(e, cur, func(d int64) {
				for _, old := range cur {
					set[old+d] = true
				}
			}); err != nil {
				return nil, err
			}
		}
		if len(set) > maxUniverse {
			return nil, fmt.Errorf("%w: its values may take more than %d values", litmus.ErrUnsupported, maxUniverse)
		}
		if len(set) == len(cur) {
			break
		}
	}
	return list(), nil
}

package lkmm

import (
	"maps"
	"slices"

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
	// local: the step reads and writes only its thread's own state
	// (registers, control dependencies, the knowledge smp_rmb, smp_wmb
	// and smp_mb__before_atomic set aside; barrier() changes nothing
	// here), which other threads' steps
	// change only by shifting views, and makes no node.
	local bool
}

type lkProg struct {
	// vals and expects: for each access, a superset of the values its
	// Val and Expect expressions may take in any run (valueSets).
	vals, expects map[*litmus.Access][]int64
	code          [][]lkIns
	regs          []map[string]int
	written       [][]string
	locs          map[string]int
	depth         []int // per thread: the deepest nesting of ifs
}

func (p *lkProg) flatten(t int, body []litmus.Stmt, depth int) error {
	p.depth[t] = max(p.depth[t], depth)
	for _, s := range body {
		switch {
		case s.Assign != nil:
			p.reg(t, s.Assign.Reg, true)
			p.code[t] = append(p.code[t], lkIns{kind: lkAssign, line: s.Line, assign: s.Assign, local: true})
		case s.If != nil:
			br := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkBranch, line: s.Line, cond: s.If.Cond, local: true})
			if err := p.flatten(t, s.If.Then, depth+1); err != nil {
				return err
			}
			jmp := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkJump, line: s.Line, local: true})
			p.code[t][br].target = len(p.code[t])
			if err := p.flatten(t, s.If.Else, depth+1); err != nil {
				return err
			}
			p.code[t][jmp].target = len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkEndIf, line: s.Line, local: true})
		case s.Access != nil:
			a := s.Access
			loc := -1
			if a.Loc != "" {
				l, ok := p.locs[a.Loc]
				if !ok {
					l = len(p.locs)
					p.locs[a.Loc] = l
				}
				loc = l
			}
			if a.Reg != "" && a.Op.Info().Returns {
				p.reg(t, a.Reg, true)
			}
			switch a.Op {
			case litmus.OpRmb, litmus.OpWmb, litmus.OpMbBeforeAtomic, litmus.OpBarrier:
				p.code[t] = append(p.code[t], lkIns{kind: lkAccess, line: s.Line, acc: a, loc: loc, local: true})
			default:
				p.code[t] = append(p.code[t], lkIns{kind: lkAccess, line: s.Line, acc: a, loc: loc})
			}
		}
	}
	return nil
}

// reg gives thread t's register name a slot, if it has none yet.
func (p *lkProg) reg(t int, name string, write bool) {
	if _, ok := p.regs[t][name]; ok {
		return
	}
	p.regs[t][name] = len(p.regs[t])
	if write {
		p.written[t] = append(p.written[t], name)
	}
}

// layout sizes the state for the test: nodes for every event and strong
// fence each thread's run can make, room in each location's co for every
// store the test can make to it, a slot per register, per nested if and
// per store a thread may promise, and the knowledge each thread's code
// can set (lkUses).
func (p *lkProg) layout() *lkLayout {
	stores := make([]int, len(p.locs))
	for x := range stores {
		stores[x] = 1 // the initial store
	}
	var nodes, regs, proms []int
	var uses []lkUses
	for _, code := range p.code {
		n, np, before := 0, 0, false
		u := lkUses{locs: make([]bool, len(p.locs))}
		for _, in := range code {
			if in.kind != lkAccess {
				continue
			}
			op := in.acc.Op
			info := op.Info()
			switch {
			case op.IsRMW():
				n += 2 // its read and its write
				if info.Order == litmus.Mb {
					n += 2 // the strong fences into its read and out of its write
				}
				if before {
					n++ // a pending smp_mb__before_atomic
				}
			case op == litmus.OpSpinLock:
				n += 2
			case op == litmus.OpMbBeforeAtomic:
				before = true
			case op == litmus.OpMb || op == litmus.OpMbAfterAtomic || op == litmus.OpMbAfterSpinlock:
				n++
			case info.Fence:
			default:
				n++
			}
			if info.Writes {
				stores[in.loc]++
			}
			if in.loc >= 0 {
				u.locs[in.loc] = true
			}
			u.ul = u.ul || op == litmus.OpSpinUnlock
			u.ba = u.ba || op == litmus.OpMbBeforeAtomic
			u.rmw = u.rmw || op.IsRMW()
			u.lkw = u.lkw || op == litmus.OpSpinLock
			if op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op.IsRMW() {
				np++
			}
		}
		nodes = append(nodes, n)
		proms = append(proms, np)
		uses = append(uses, u)
	}
	for t := range p.code {
		regs = append(regs, len(p.regs[t]))
	}
	return newLayout(nodes, stores, regs, p.depth, proms, uses, len(p.locs))
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

// valueSets computes, for each access of the test, a superset of the
// values its Val and Expect expressions may take in any run: what a
// promise of its store may have to promise. It follows each thread's code
// in order with a set of values per register (both sides of an if,
// joined after it): a load gives any value stored to its location, the
// initial one included; an assignment, any value of its expression over
// its registers' sets; an RMW stores its operand (xchg, cmpxchg) or the
// old value plus it, and returns the old or new value. One round follows
// every thread; a value a run computes comes from a chain of at most one
// evaluation per statement (there are no loops), each link found in a
// round at the latest, so rounds stop after as many as there are
// statements, or once one adds nothing. Each evaluation is charged to
// spend, which returns an error once the run's budget is spent.
func (p *lkProg) valueSets(t *litmus.Test, spend func(int) error) error {
	type set = map[int64]struct{}
	add := func(dst set, src set) bool {
		grew := false
		for v := range src {
			if _, ok := dst[v]; !ok {
				dst[v] = struct{}{}
				grew = true
			}
		}
		return grew
	}
	stored := map[string]set{}
	for _, l := range t.Locs {
		stored[l] = set{t.Init[l]: {}}
	}
	at := func(loc string) set {
		if stored[loc] == nil {
			stored[loc] = set{t.Init[loc]: {}}
		}
		return stored[loc]
	}
	p.vals, p.expects = map[*litmus.Access][]int64{}, map[*litmus.Access][]int64{}
	vals, expects := map[*litmus.Access]set{}, map[*litmus.Access]set{}
	record := func(m map[*litmus.Access]set, a *litmus.Access, vs set) bool {
		if m[a] == nil {
			m[a] = set{}
		}
		return add(m[a], vs)
	}
	// eval is every value e takes with its registers in env's sets (a
	// register not set yet is 0).
	eval := func(e litmus.Expr, env map[string]set) (set, error) {
		out := set{}
		if e.IsConst {
			out[e.Const] = struct{}{}
			return out, nil
		}
		var names []string
		e.Regs(func(n string) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		})
		cur := map[string]int64{}
		var rec func(k int) error
		rec = func(k int) error {
			if k == len(names) {
				if err := spend(1); err != nil {
					return err
				}
				if v, err := e.Eval(func(_ int, n string) int64 { return cur[n] }, nil); err == nil {
					out[v] = struct{}{} // an error is a value no run computes (division by zero)
				}
				return nil
			}
			vs, ok := env[names[k]]
			if !ok {
				vs = set{0: {}}
			}
			for v := range vs {
				cur[names[k]] = v
				if err := rec(k + 1); err != nil {
					return err
				}
			}
			return nil
		}
		return out, rec(0)
	}
	stmts := 0
	var grew bool
	var walk func(body []litmus.Stmt, env map[string]set) (map[string]set, error)
	walk = func(body []litmus.Stmt, env map[string]set) (map[string]set, error) {
		for _, st := range body {
			stmts++
			switch {
			case st.Assign != nil:
				vs, err := eval(st.Assign.Val, env)
				if err != nil {
					return nil, err
				}
				env[st.Assign.Reg] = vs
			case st.If != nil:
				a, err := walk(st.If.Then, maps.Clone(env))
				if err != nil {
					return nil, err
				}
				b, err := walk(st.If.Else, maps.Clone(env))
				if err != nil {
					return nil, err
				}
				// After the if, a register has a value of either
				// side; one a side does not set (nor the code before
				// the if) is 0 there.
				env = map[string]set{}
				for _, side := range []map[string]set{a, b} {
					for r := range side {
						if env[r] != nil {
							continue
						}
						both := set{}
						for _, from := range []map[string]set{a, b} {
							if vs, ok := from[r]; ok {
								add(both, vs)
							} else {
								both[0] = struct{}{}
							}
						}
						env[r] = both
					}
				}
			case st.Access != nil:
				a := st.Access
				op := a.Op
				info := op.Info()
				vs, err := eval(a.Val, env)
				if err != nil {
					return nil, err
				}
				grew = record(vals, a, vs) || grew
				var exp set
				if op.IsCmpxchg() {
					if exp, err = eval(a.Expect, env); err != nil {
						return nil, err
					}
					grew = record(expects, a, exp) || grew
				}
				var ret set
				switch {
				case op == litmus.OpReadOnce || op == litmus.OpLoadAcquire:
					ret = maps.Clone(at(a.Loc))
				case op == litmus.OpWriteOnce || op == litmus.OpStoreRelease:
					grew = add(at(a.Loc), vs) || grew
				case op == litmus.OpSpinLock:
					grew = add(at(a.Loc), set{1: {}}) || grew
				case op == litmus.OpSpinUnlock:
					grew = add(at(a.Loc), set{0: {}}) || grew
				case op.IsRMW():
					olds := maps.Clone(at(a.Loc))
					news := vs
					if !op.IsXchg() && !op.IsCmpxchg() {
						news = set{}
						for o := range olds {
							for d := range vs {
								news[o+d] = struct{}{}
							}
						}
						if err := spend(len(olds) * len(vs)); err != nil {
							return nil, err
						}
					}
					grew = add(at(a.Loc), news) || grew
					ret = olds
					if op.ReturnsNew() {
						ret = news
					}
				}
				if a.Reg != "" && info.Returns {
					env[a.Reg] = ret
				}
			}
		}
		return env, nil
	}
	for round := 0; ; round++ {
		grew, stmts = false, 0
		for _, th := range t.Threads {
			if _, err := walk(th.Body, map[string]set{}); err != nil {
				return err
			}
		}
		if !grew || round >= stmts {
			break
		}
	}
	sorted := func(vs set) []int64 {
		out := slices.Collect(maps.Keys(vs))
		slices.Sort(out)
		return out
	}
	for a, vs := range vals {
		p.vals[a] = sorted(vs)
	}
	for a, vs := range expects {
		p.expects[a] = sorted(vs)
	}
	return nil
}

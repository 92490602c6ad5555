package lkmm

import "github.com/flushproof/flushproof/model/litmus"

// The condition and the filter on a partial execution, for Decide: a
// register is known once its thread's run is placed, or once the read
// that sets it for good is (event.reg); a location's final value once no
// thread left to place uses it (its co is complete). An expression is
// known when the values it needs are, or when a known operand decides it
// (false && anything, true || anything). Whatever the search places
// next, a known value stays what it is, so a branch whose condition is
// known to be on a side already found, or whose filter is known false,
// can give nothing the search still wants.

// term is an expression compiled for eval3: a constant, a register, a
// location (by index; -1 for one no access uses, which ends at 0 as in
// an outcome) or an operator over args.
type term struct {
	isConst bool
	c       int64
	reg     string
	th      int
	loc     int
	isLoc   bool
	op      string
	args    []term
}

func (s *search) compile(e litmus.Expr) term {
	switch {
	case e.IsConst:
		return term{isConst: true, c: e.Const}
	case e.Reg != "":
		if e.Thread < 0 || e.Thread >= len(s.t.Threads) {
			return term{isConst: true} // as Outcome.Satisfies: no such thread reads 0
		}
		return term{reg: e.Reg, th: e.Thread}
	case e.Loc != "":
		l, ok := s.locIdx[e.Loc]
		if !ok {
			return term{isConst: true}
		}
		return term{isLoc: true, loc: l}
	}
	t := term{op: e.Op}
	for _, a := range e.Args {
		t.args = append(t.args, s.compile(a))
	}
	return t
}

// eval3 evaluates t on what is known: its value and whether it is known.
// An operation that fails (a division by zero) is left unknown here:
// the complete outcome's evaluation reports it.
func (s *search) eval3(t *term) (int64, bool) {
	switch {
	case t.isConst:
		return t.c, true
	case t.reg != "":
		regs := s.regs[t.th]
		if regs == nil {
			v, ok := s.known[threadReg{t.th, t.reg}]
			return v, ok
		}
		return regs[t.reg], true
	case t.isLoc:
		if !s.closed[t.loc] {
			return 0, false
		}
		return s.final(t.loc), true
	}
	if len(t.args) == 1 {
		a, ok := s.eval3(&t.args[0])
		if !ok {
			return 0, false
		}
		switch t.op {
		case "!":
			return boolVal(a == 0), true
		case "-":
			return -a, true
		case "~":
			return ^a, true
		}
		return 0, false
	}
	if len(t.args) != 2 {
		return 0, false
	}
	a, ak := s.eval3(&t.args[0])
	b, bk := s.eval3(&t.args[1])
	switch t.op {
	case "&&":
		if (ak && a == 0) || (bk && b == 0) {
			return 0, true
		}
		return 1, ak && bk
	case "||":
		if (ak && a != 0) || (bk && b != 0) {
			return 1, true
		}
		return 0, ak && bk
	}
	if !ak || !bk {
		return 0, false
	}
	return apply(t.op, a, b)
}

// apply computes a op b as litmus.Expr.Eval does; false where Eval fails.
func apply(op string, a, b int64) (int64, bool) {
	switch op {
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	case "&":
		return a & b, true
	case "|":
		return a | b, true
	case "^":
		return a ^ b, true
	case "/", "%":
		if b == 0 {
			return 0, false
		}
		if op == "/" {
			return a / b, true
		}
		return a % b, true
	case "<<", ">>":
		if b < 0 || b > 62 {
			return 0, false
		}
		if op == "<<" {
			return a << b, true
		}
		return a >> b, true
	case "==":
		return boolVal(a == b), true
	case "!=":
		return boolVal(a != b), true
	case "<":
		return boolVal(a < b), true
	case "<=":
		return boolVal(a <= b), true
	case ">":
		return boolVal(a > b), true
	case ">=":
		return boolVal(a >= b), true
	}
	return 0, false
}

func boolVal(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// mayWant reports whether the partial execution may still give an
// outcome the search wants: one the filter keeps, on a side of the
// condition with no witness yet.
func (s *search) mayWant() bool {
	if s.filter != nil {
		if f, ok := s.eval3(s.filter); ok && f == 0 {
			return false
		}
	}
	c, ok := s.eval3(&s.cond)
	if !ok {
		return true
	}
	side := 1
	if c != 0 {
		side = 0
	}
	return s.got[side] == nil
}

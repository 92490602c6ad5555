package litmus

import (
	"regexp"
	"strconv"
)

// Expressions of thread code and final conditions (Parse).

// binary operators of thread code, by C precedence (higher binds tighter).
var precedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
	"+": 8, "-": 8, "*": 9,
}

// unsupportedOps are C operators Expr does not have.
var unsupportedOps = map[string]bool{"/": true, "%": true, "<<": true, ">>": true, "?": true, "~": true, "->": true, ".": true, "++": true, "--": true}

func (p *parser) expr() (Expr, error) { return p.binary(1) }

func (p *parser) binary(min int) (Expr, error) {
	left, err := p.unary()
	if err != nil {
		return Expr{}, err
	}
	for {
		t := p.peek()
		if t.kind == tokPunct && unsupportedOps[t.text] {
			return Expr{}, p.errf(t.at(), "unsupported construct: operator %s", t.text)
		}
		prec, ok := precedence[t.text]
		if t.kind != tokPunct || !ok || prec < min {
			return left, nil
		}
		p.next()
		right, err := p.binary(prec + 1)
		if err != nil {
			return Expr{}, err
		}
		left = Bin(t.text, left, right)
	}
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	switch {
	case p.is("!") || p.is("-"):
		p.next()
		a, err := p.unary()
		if err != nil {
			return Expr{}, err
		}
		if t.text == "-" && a.IsConst {
			return C(-a.Const), nil
		}
		return Expr{Op: t.text, Args: []Expr{a}}, nil
	case p.castAhead():
		p.skipCast()
		return p.unary()
	case p.is("("):
		p.next()
		e, err := p.expr()
		if err != nil {
			return Expr{}, err
		}
		_, err = p.expect(")", "closing (")
		return e, err
	case p.is("*") && p.hoist != nil:
		return p.hoistLoad(t, true)
	case p.is("*"):
		return Expr{}, p.errf(t.at(), "unsupported construct: a plain load inside a loop's condition (assign it to a register in the loop)")
	case p.is("&"):
		p.next()
		loc, err := p.ident("a location after &")
		if err != nil {
			return Expr{}, err
		}
		return p.addrOf(loc)
	case t.kind == tokPunct && unsupportedOps[t.text]:
		return Expr{}, p.errf(t.at(), "unsupported construct: operator %s", t.text)
	case t.kind == tokNum:
		v, err := p.number()
		return C(v), err
	case t.kind == tokIdent:
		p.next()
		if p.is("(") {
			if pr, ok := prims[t.text]; ok && p.waitLoad != nil {
				if info := pr.op.Info(); !info.Reads || info.Writes {
					return Expr{}, p.errf(t.at(), "unsupported construct: %s() in the condition of wait_event (a load only: READ_ONCE, smp_load_acquire, atomic_read...)", t.text)
				}
				if *p.waitLoad != nil {
					return Expr{}, p.errf(t.at(), "unsupported construct: a second load in the condition of wait_event (one load only)")
				}
				ss, err := p.call(t, WaitReg)
				if err != nil {
					return Expr{}, err
				}
				*p.waitLoad = ss[0].Access
				return R(WaitReg), nil
			}
			if pr, ok := prims[t.text]; ok && p.hoist != nil && pr.op.Info().Returns {
				return p.hoistLoad(t, false)
			}
			if pr, ok := prims[t.text]; ok && !pr.op.Info().Returns {
				return Expr{}, p.errf(t.at(), "%s() returns no value to use in an expression", t.text)
			}
			if _, ok := prims[t.text]; ok {
				return Expr{}, p.errf(t.at(), "unsupported construct: %s() inside a loop's condition (assign it to a register in the loop)", t.text)
			}
			return Expr{}, p.errf(t.at(), "unsupported construct: %s()", t.text)
		}
		if p.params[t.text] {
			return p.addrOf(t) // the parameter is the location's address
		}
		if v, ok := constants[t.text]; ok {
			if _, reg := p.regs[t.text]; !reg {
				return C(v), nil
			}
		}
		if t.text == WaitReg {
			return Expr{}, p.errf(t.at(), "%s is the name of wait_event's hidden register", t.text)
		}
		if p.is("[") {
			return Expr{}, p.errf(t.at(), "unsupported construct: array %s", t.text)
		}
		if err := p.useReg(t); err != nil {
			return Expr{}, err
		}
		return R(t.text), nil
	}
	return Expr{}, p.errf(t.at(), "want an expression, got %q", t.text)
}

// condOr reads a final condition: "\/" of "/\" of "~" of atoms and
// parenthesised conditions.
func (p *parser) condOr() (Expr, error) {
	left, err := p.condAnd()
	if err != nil {
		return Expr{}, err
	}
	for p.is(`\/`) {
		p.next()
		right, err := p.condAnd()
		if err != nil {
			return Expr{}, err
		}
		left = Bin("||", left, right)
	}
	return left, nil
}

func (p *parser) condAnd() (Expr, error) {
	left, err := p.condNot()
	if err != nil {
		return Expr{}, err
	}
	for p.is(`/\`) {
		p.next()
		right, err := p.condNot()
		if err != nil {
			return Expr{}, err
		}
		left = Bin("&&", left, right)
	}
	return left, nil
}

func (p *parser) condNot() (Expr, error) {
	t := p.peek()
	switch {
	case p.is("~"):
		p.next()
		a, err := p.condNot()
		return Not(a), err
	case p.is("("):
		p.next()
		e, err := p.condOr()
		if err != nil {
			return Expr{}, err
		}
		_, err = p.expect(")", "closing ( in the final condition")
		return e, err
	case t.kind == tokNum && p.peekAt(1).text == ":":
		left, err := p.condReg()
		if err != nil {
			return Expr{}, err
		}
		return p.condValue(left)
	case t.kind == tokIdent:
		p.next()
		known := false
		for _, l := range p.test.Locs {
			known = known || l == t.text
		}
		for _, ip := range p.initPtrs {
			known = known || ip.to.text == t.text // made a location by the initial state's pointer
		}
		if !known && !blockName.MatchString(t.text) {
			return Expr{}, p.errf(t.at(), "final condition names %s, which is no location (nor a block: blk0 to blk%d)%s", t.text, maxBlockName, DidYouMean(t.text, p.test.Locs))
		}
		p.condLocs[t.text] = true
		return p.condValue(L(t.text))
	}
	return Expr{}, p.errf(t.at(), "want a final condition atom (0:r0=1, x=1), got %q", t.text)
}

// condReg reads "0:r1", a register of a thread, in a final condition.
func (p *parser) condReg() (Expr, error) {
	t := p.next()
	p.next() // :
	th, _ := strconv.Atoi(t.text)
	if th >= len(p.test.Threads) {
		return Expr{}, p.errf(t.at(), "final condition names thread %d of %d", th, len(p.test.Threads))
	}
	reg, err := p.ident("a register")
	if err != nil {
		return Expr{}, err
	}
	if _, ok := p.threadRegs[th][reg.text]; !ok {
		return Expr{}, p.errf(reg.at(), "final condition names %d:%s, but P%d has no register %s%s", th, reg.text, th, reg.text, DidYouMean(reg.text, keys(p.threadRegs[th])))
	}
	p.threadUsed[th][reg.text] = true
	return TR(th, reg.text), nil
}

// condValue reads "=value" after the left side of an atom.
func (p *parser) condValue(left Expr) (Expr, error) {
	t := p.next()
	if t.text != "=" {
		return Expr{}, p.errf(t.at(), "unsupported construct: %q in a final condition atom (want =)", t.text)
	}
	if v := p.peek(); v.kind == tokNum && p.peekAt(1).text == ":" {
		// 0:r1=1:r2: two registers, equal
		right, err := p.condReg()
		if err != nil {
			return Expr{}, err
		}
		return Bin("==", left, right), nil
	}
	if v := p.peek(); v.kind == tokIdent || p.is("&") && p.peekAt(1).kind == tokIdent {
		if p.is("&") {
			p.next()
		}
		a, err := p.addrOf(p.next()) // 0:r1=x: r1 points at x
		if err != nil {
			return Expr{}, err
		}
		return Bin("==", left, a), nil
	}
	v, err := p.number()
	if err != nil {
		return Expr{}, err
	}
	return Bin("==", left, C(v)), nil
}

// constants are the kernel constants thread code may name.
var constants = map[string]int64{"REQ_FUA": ReqFUA, "REQ_PREFLUSH": ReqPreflush, "REQ_SYNC": ReqSync, "EIO": EIO}

// blockName is a block's content in a final condition: blk0 is block 0
// (a location of that name, if there is one, is the location).
var blockName = regexp.MustCompile(`^blk[0-7]$`)

const maxBlockName = 7

// BlockOf returns the block a final condition's Loc names (blk0...), or
// -1 if it names a location of t.
func (t *Test) BlockOf(loc string) int {
	for _, l := range t.Locs {
		if l == loc {
			return -1
		}
	}
	if blockName.MatchString(loc) {
		return int(loc[3] - '0')
	}
	return -1
}

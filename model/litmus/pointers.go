package litmus

import "strconv"

// Pointers and plain accesses in thread code (Parse): herd7's LKMM tests
// pass pointers in intptr_t registers and locations ("x7=y0;",
// "intptr_t r3=x0;", "rcu_assign_pointer(*(intptr_t **)x7, (intptr_t
// *)r3)", "WRITE_ONCE(*(intptr_t *)r1, 1)") and access memory without a
// primitive ("*x = 1;", "r1 = *x;").

// castWords are the words a cast may start with.
var castWords = map[string]bool{"unsigned": true, "void": true, "char": true, "struct": true}

// castLen returns how many tokens the cast at the next token takes ("(",
// a type, any "*", ")"), or 0 if no cast is next. A cast changes nothing
// here: every value is an integer, an address included.
func (p *parser) castLen() int {
	if !p.is("(") {
		return 0
	}
	k := 1
	w := p.peekAt(k)
	if w.kind != tokIdent || !locTypes[w.text] && !castWords[w.text] {
		return 0
	}
	k++
	switch w.text {
	case "struct":
		if p.peekAt(k).kind != tokIdent {
			return 0
		}
		k++
	case "unsigned":
		if t := p.peekAt(k).text; t == "long" || t == "int" {
			k++
		}
	}
	stars := 0
	for p.peekAt(k).text == "*" {
		k++
		stars++
	}
	if w.text == "void" && stars == 0 {
		return 0 // (void)f(x): the caller's
	}
	if p.peekAt(k).text != ")" {
		return 0
	}
	return k + 1
}

// castAhead reports whether a cast is next.
func (p *parser) castAhead() bool { return p.castLen() > 0 }

// skipCast reads the casts next, if any.
func (p *parser) skipCast() {
	for n := p.castLen(); n > 0; n = p.castLen() {
		for range n {
			p.next()
		}
	}
}

// addrOf returns the address of location loc as a constant expression.
func (p *parser) addrOf(loc token) (Expr, error) {
	v, ok := p.test.AddrValue(loc.text)
	if !ok {
		return Expr{}, p.errf(loc.at(), "%s is no location%s", loc.text, DidYouMean(loc.text, p.test.Locs))
	}
	p.addrLocs[loc.text] = true
	return Expr{IsConst: true, Const: v, Addr: loc.text}, nil
}

// locOperand reads where a primitive or a plain access goes: "*x" when
// deref (the "*" not yet read), else "x", each with casts anywhere
// ("*(intptr_t **)x"). The name is a location parameter of the thread,
// accessed where it is (loc), or a register holding a pointer, accessed
// where the pointer points at run time (addr).
func (p *parser) locOperand(call string, deref bool) (string, *Expr, error) {
	p.skipCast()
	if deref {
		if _, err := p.expect("*", "in "+call+"(*x...)"); err != nil {
			return "", nil, err
		}
		p.skipCast()
	} else if p.is("*") || p.is("&") {
		t := p.peek()
		return "", nil, p.errf(t.at(), "unsupported construct: %s%s in %s() (it takes the pointer itself)", t.text, p.peekAt(1).text, call)
	}
	paren := false
	if p.is("(") {
		paren = true // *(r1): a parenthesised name
		p.next()
		p.skipCast()
	}
	name, err := p.ident("a location")
	if err != nil {
		return "", nil, err
	}
	if paren {
		if _, err := p.expect(")", "closing ("); err != nil {
			return "", nil, err
		}
	}
	if p.params[name.text] {
		return name.text, nil, nil
	}
	if _, ok := p.regs[name.text]; ok {
		if err := p.useReg(name); err != nil {
			return "", nil, err
		}
		r := R(name.text)
		return "", &r, nil
	}
	return "", nil, p.errf(name.at(), "%s() on %s, which is neither a location parameter of this thread nor one of its registers%s", call, name.text, DidYouMean(name.text, keys(p.params), keys(p.regs)))
}

// plainStore reads "*x = e;" (the "*" next): a plain store.
func (p *parser) plainStore() ([]Stmt, error) {
	t := p.peek()
	loc, addr, err := p.locOperand("a plain store", true)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect("=", "in a plain store (*x = v;)"); err != nil {
		return nil, err
	}
	var v Expr
	pre, err := p.hoisting(func() (err error) {
		v, err = p.expr()
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";", "ending the statement"); err != nil {
		return nil, err
	}
	a := &Access{Op: OpPlainWrite, Loc: loc, Addr: addr, Val: v, Call: "plain store"}
	return append(pre, Stmt{Access: a, Line: t.line, Col: t.col}), nil
}

// plainLoad reads "*x" (the "*" next) assigned to reg: a plain load.
func (p *parser) plainLoad(reg token) ([]Stmt, error) {
	t := p.peek()
	loc, addr, err := p.locOperand("a plain load", true)
	if err != nil {
		return nil, err
	}
	a := &Access{Op: OpPlainRead, Loc: loc, Addr: addr, Reg: reg.text, Call: "plain load"}
	return []Stmt{{Access: a, Line: t.line, Col: t.col}}, nil
}

// HiddenReg is the prefix of the registers that take the value of a load
// called inside an expression ("WRITE_ONCE(*x, READ_ONCE(*y) + 1)"):
// "__e1", "__e2", ... in each thread.
const HiddenReg = "__e"

// hoisting runs read, an expression reader, with the loads it calls
// hoisted: they are returned, to run before the statement the expression
// belongs to. Inside another hoisting reader, the loads go to that one's
// list (in the order they run) and none is returned.
func (p *parser) hoisting(read func() error) ([]Stmt, error) {
	if p.hoist != nil {
		return nil, read()
	}
	var list []Stmt
	p.hoist = &list
	err := read()
	p.hoist = nil
	return list, err
}

// hiddenReg declares the current thread's next hidden register.
func (p *parser) hiddenReg(at token) token {
	p.hidden++
	t := token{kind: tokIdent, text: HiddenReg + strconv.Itoa(p.hidden), line: at.line, col: at.col}
	p.regs[t.text] = at.at()
	p.used[t.text] = true
	return t
}

// hoistLoad reads the load at the next token (a call whose name is read,
// or "*"), inside an expression: it runs first, into a hidden register,
// which the expression reads.
func (p *parser) hoistLoad(name token, plain bool) (Expr, error) {
	reg := p.hiddenReg(name)
	var ss []Stmt
	var err error
	if plain {
		ss, err = p.plainLoad(reg)
	} else {
		ss, err = p.call(name, reg.text)
	}
	if err != nil {
		return Expr{}, err
	}
	*p.hoist = append(*p.hoist, ss...)
	return R(reg.text), nil
}

// callEnds reports whether the call whose "(" is the token k ahead is
// followed by ";" or ",": a call statement or a call assigned as a
// whole, not part of a larger expression.
func (p *parser) callEnds(k int) bool {
	depth := 0
	for ; ; k++ {
		t := p.peekAt(k)
		switch {
		case t.kind == tokEOF:
			return true
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
			if depth == 0 {
				n := p.peekAt(k + 1).text
				return n == ";" || n == ","
			}
		}
	}
}

package litmus

// Reading herd7's C litmus files (the format of tools/memory-model/litmus-tests
// and Documentation/litmus-tests in the kernel tree):
//
//	C NAME
//	(* Result: Never *)          header comment; its Result: line is Test.Result
//	{ x=1; int y = 2; }          initial state
//	P0(int *x, int *y) { ... }   threads, parameters are the shared locations
//	locations [...]              accepted and ignored
//	exists (0:r0=1 /\ x=2)       the final condition (also ~exists, forall)
//
// The parser accepts a subset of C: the primitives this package knows, local
// int registers, assignments and if/else. Everything else (plain accesses,
// pointers other than the parameters, loops, RCU, unknown functions...) is
// an *Error naming the construct and its line: a construct silently skipped
// would give an answer about another program.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// Error is a litmus file the parser cannot read: File:Line:Col: Msg, where
// Msg names the construct and what was expected. Col counts bytes from 1
// (0: unknown).
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Err       error // what it wraps, if anything (ErrUnsupported...)
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ParseFile reads and parses the litmus file at path.
func ParseFile(path string) (*Test, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("litmus: reading %s: %w", path, err)
	}
	return Parse(path, src)
}

// Parse parses a herd7 C litmus test; name is the file name errors give.
func Parse(name string, src []byte) (*Test, error) {
	p := &parser{file: name, test: &Test{File: name, Init: map[string]int64{}},
		initLocs: map[string]pos{}, condLocs: map[string]bool{}, paramLocs: map[string]bool{}, addrLocs: map[string]bool{}}
	if err := p.lex(string(src)); err != nil {
		return nil, err
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	if err := p.resolveInitPtrs(); err != nil {
		return nil, err
	}
	if err := p.checkNames(); err != nil {
		return nil, err
	}
	return p.test, nil
}

func (p *parser) addLoc(name token) {
	for _, l := range p.test.Locs {
		if l == name.text {
			return
		}
	}
	p.test.Locs = append(p.test.Locs, name.text)
	p.test.LocAt = append(p.test.LocAt, Pos{name.line, name.col})
}

var threadName = regexp.MustCompile(`^P([0-9]+)$`)

// ThreadNumber reads a thread's name, P0, P1, ...: its number, or false
// for a name of another form.
func ThreadNumber(name string) (int, bool) {
	m := threadName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

func (p *parser) parse() error {
	if err := p.parseInit(); err != nil {
		return err
	}
	for {
		t := p.peek()
		m := threadName.FindStringSubmatch(t.text)
		if t.kind != tokIdent || m == nil {
			break
		}
		if n, _ := strconv.Atoi(m[1]); n != len(p.test.Threads) {
			return p.errf(t.at(), "thread %s out of order: want P%d", t.text, len(p.test.Threads))
		}
		if err := p.parseThread(); err != nil {
			return err
		}
	}
	if len(p.test.Threads) == 0 {
		return p.errf(p.peek().at(), "want a thread P0(...), got %q", p.peek().text)
	}
	for th := len(p.test.Threads); th < len(p.test.RegInit); th++ {
		for r, v := range p.test.RegInit[th] {
			if v != 0 {
				return p.errf(p.peek().at(), "the initial state gives %d:%s=%d, but the test has %d threads", th, r, v, len(p.test.Threads))
			}
		}
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokIdent && t.text == "locations":
			p.next()
			if err := p.locationsList(t); err != nil {
				return err
			}
		case t.kind == tokIdent && t.text == "filter":
			if p.test.Filter != nil {
				return p.errf(t.at(), "a second filter")
			}
			p.next()
			f, err := p.condOr()
			if err != nil {
				return err
			}
			p.test.Filter = &f
			if p.is(";") {
				p.next()
			}
		case t.kind == tokIdent && (t.text == "exists" || t.text == "forall"),
			t.kind == tokPunct && t.text == "~" && p.peekAt(1).text == "exists":
			if p.test.Quant != 0 {
				return p.errf(t.at(), "a second final condition")
			}
			p.test.Quant = Exists
			p.test.CondLine, p.test.CondCol = t.line, t.col
			switch {
			case t.text == "forall":
				p.test.Quant = Forall
			case t.text == "~":
				p.test.Quant = NotExists
				p.next()
			}
			p.next()
			c, err := p.condOr()
			if err != nil {
				return err
			}
			p.test.Cond = c
			if p.is(";") {
				p.next()
			}
		case t.kind == tokEOF:
			if p.test.Quant == 0 && !p.durable() {
				return p.errf(t.at(), "no final condition (exists, ~exists or forall)")
			}
			return nil
		default:
			return p.errf(t.at(), "unexpected %q after the threads", t.text)
		}
	}
}

// locTypes are the types a shared location may have (a struct
// completion's value is its count of completions not yet waited for).
var locTypes = map[string]bool{"int": true, "intptr_t": true, "uintptr_t": true, "long": true, "atomic_t": true, "atomic64_t": true, "atomic_long_t": true, "spinlock_t": true, "struct completion": true, "struct srcu_struct": true}

// structType reads "struct completion" when t is "struct" (read, the
// tag next), as one type token; other tokens are returned as they are.
func (p *parser) structType(t token) (token, error) {
	if t.text != "struct" {
		return t, nil
	}
	tag, err := p.ident("a struct tag")
	if err != nil {
		return t, err
	}
	if tag.text != "completion" && tag.text != "srcu_struct" {
		return t, p.errf(tag.at(), "unsupported construct: struct %s (struct completion and struct srcu_struct are the only structs)", tag.text)
	}
	t.text = "struct " + tag.text
	return t, nil
}

// parseInit reads "{ x=1; int y = 2; atomic_t v = ATOMIC_INIT(1); spinlock_t l; 0:r0=0; }".
func (p *parser) parseInit() error {
	if _, err := p.expect("{", "opening the initial state"); err != nil {
		return err
	}
	for {
		t := p.peek()
		switch {
		case p.is("}"):
			p.next()
			return nil
		case p.is(";"):
			p.next()
			continue
		case t.kind == tokEOF:
			return p.errf(t.at(), "initial state not closed")
		case t.kind == tokNum && p.peekAt(1).text == ":":
			// A register initialiser: "0:r1=2" (a register not named
			// starts at 0).
			p.next()
			p.next()
			reg, err := p.ident("a register")
			if err != nil {
				return err
			}
			th, err := strconv.Atoi(t.text)
			if err != nil || th > 63 {
				return p.errf(t.at(), "bad thread number %s in a register initialiser", t.text)
			}
			for len(p.initRegs) <= th {
				p.initRegs = append(p.initRegs, nil)
			}
			if p.initRegs[th] == nil {
				p.initRegs[th] = map[string]pos{}
			}
			if _, dup := p.initRegs[th][reg.text]; !dup {
				p.initRegs[th][reg.text] = reg.at()
			}
			if !p.is("=") {
				continue // "int 0:r1;": a declaration, the register starts at 0
			}
			p.next()
			var v int64
			to, isPtr := p.initPointer()
			if !isPtr {
				if v, err = p.initValue(); err != nil {
					return err
				}
			}
			for len(p.test.RegInit) <= th {
				p.test.RegInit = append(p.test.RegInit, nil)
				p.test.RegInitAt = append(p.test.RegInitAt, nil)
			}
			if p.test.RegInit[th] == nil {
				p.test.RegInit[th] = map[string]int64{}
				p.test.RegInitAt[th] = map[string]Pos{}
			}
			if _, dup := p.test.RegInit[th][reg.text]; dup {
				return p.errf(reg.at(), "%s:%s initialised twice", t.text, reg.text)
			}
			p.test.RegInit[th][reg.text] = v
			p.test.RegInitAt[th][reg.text] = Pos{reg.line, reg.col}
			if isPtr {
				// "0:r2=a": the register holds a's address, set once every
				// location is known.
				p.initPtrs = append(p.initPtrs, initPtr{th: th, reg: reg.text, to: to})
			}
			continue
		}
		name, err := p.ident("a location")
		if err != nil {
			return err
		}
		if name, err = p.structType(name); err != nil {
			return err
		}
		if locTypes[name.text] && p.peek().kind == tokNum && p.peekAt(1).text == ":" {
			continue // "int 0:r1;": a register's type, read as a register initialiser above
		}
		if locTypes[name.text] {
			for p.is("*") {
				p.next() // a location holding a pointer: "int *p = &x;"
			}
			name, err = p.ident("a location name")
			if err != nil {
				return err
			}
		} else if p.peek().kind == tokIdent {
			return p.errf(name.at(), "unsupported construct: location type %s", name.text)
		}
		if p.is("[") {
			return p.errf(name.at(), "unsupported construct: array %s", name.text)
		}
		p.addLoc(name)
		if _, dup := p.initLocs[name.text]; !dup {
			p.initLocs[name.text] = name.at()
		}
		if p.is("=") {
			p.next()
			if to, ok := p.initPointer(); ok {
				p.initPtrs = append(p.initPtrs, initPtr{loc: name.text, to: to})
			} else {
				v, err := p.initValue()
				if err != nil {
					return err
				}
				p.test.Init[name.text] = v
			}
		}
		if !p.is(";") && !p.is("}") {
			return p.errf(p.peek().at(), "want ; after location %s, got %q", name.text, p.peek().text)
		}
	}
}

// initPointer reads a pointer as an initial value, "y" or "&y" (a
// location, which may be named later, as a thread's parameter): ok is
// false, and nothing read, if the value is a number.
func (p *parser) initPointer() (token, bool) {
	t := p.peek()
	if t.kind == tokIdent && t.text != "ATOMIC_INIT" {
		return p.next(), true
	}
	if p.is("&") && p.peekAt(1).kind == tokIdent {
		p.next()
		return p.next(), true
	}
	return token{}, false
}

// initPtr is a location (or, with reg set, thread th's register) the
// initial state points at a location.
type initPtr struct {
	loc string
	th  int
	reg string
	to  token
}

// resolveInitPtrs gives the locations the initial state points at others
// their values, once every location is known.
func (p *parser) resolveInitPtrs() error {
	for _, ip := range p.initPtrs {
		v, ok := p.test.AddrValue(ip.to.text)
		if !ok {
			// herd7 makes a location of a name the initial state points
			// at and nothing else declares (a distinct address, holding
			// 0): "x1=y1;" where no thread has y1.
			p.addLoc(ip.to)
			v, _ = p.test.AddrValue(ip.to.text)
		}
		if ip.reg != "" {
			p.test.RegInit[ip.th][ip.reg] = v
		} else {
			p.test.Init[ip.loc] = v
		}
		p.addrLocs[ip.to.text] = true
	}
	return nil
}

// initValue reads an initial value: N, -N or ATOMIC_INIT(N).
func (p *parser) initValue() (int64, error) {
	t := p.peek()
	if t.kind == tokIdent && t.text == "ATOMIC_INIT" {
		p.next()
		if _, err := p.expect("(", "after ATOMIC_INIT"); err != nil {
			return 0, err
		}
		v, err := p.number()
		if err != nil {
			return 0, err
		}
		_, err = p.expect(")", "closing ATOMIC_INIT")
		return v, err
	}
	if t.kind == tokIdent || p.is("&") {
		return 0, p.errf(t.at(), "unsupported construct: pointer value %s", t.text)
	}
	return p.number()
}

// number reads an integer constant, optionally negative.
func (p *parser) number() (int64, error) {
	neg := false
	if p.is("-") {
		p.next()
		neg = true
	}
	t := p.next()
	if t.kind != tokNum {
		return 0, p.errf(t.at(), "want a number, got %q", t.text)
	}
	v, err := strconv.ParseInt(t.text, 0, 64)
	if err != nil {
		return 0, p.errf(t.at(), "bad number %q", t.text)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// parseThread reads "Pn(int *x, spinlock_t *l) { body }".
func (p *parser) parseThread() error {
	name := p.next()
	th := len(p.test.Threads)
	p.params, p.regs, p.used = map[string]bool{}, map[string]pos{}, map[string]bool{}
	if th < len(p.initRegs) {
		for r := range p.initRegs[th] {
			p.regs[r] = pos{}
		}
	}
	if _, err := p.expect("(", "after "+name.text); err != nil {
		return err
	}
	for !p.is(")") {
		ty, err := p.ident("a parameter type")
		if err != nil {
			return err
		}
		if ty.text == "volatile" {
			// The generated tests (diy7) write "volatile int* x": the
			// parameter is accessed through marked primitives only, which
			// volatile does not change.
			if ty, err = p.ident("a parameter type"); err != nil {
				return err
			}
		}
		if ty.text == "const" {
			return p.errf(ty.at(), "unsupported construct: qualifier %s", ty.text)
		}
		if ty, err = p.structType(ty); err != nil {
			return err
		}
		if !locTypes[ty.text] {
			return p.errf(ty.at(), "unsupported construct: parameter type %s (int *, intptr_t *, atomic_t *, spinlock_t *, struct completion *, struct srcu_struct * only)", ty.text)
		}
		if _, err := p.expect("*", "(a parameter is a pointer to a location)"); err != nil {
			return err
		}
		for p.is("*") {
			p.next() // int **p: the location p holds a pointer
		}
		loc, err := p.ident("a parameter name")
		if err != nil {
			return err
		}
		if p.params[loc.text] {
			return p.errf(loc.at(), "a second parameter %s", loc.text)
		}
		p.params[loc.text] = true
		p.paramLocs[loc.text] = true
		p.addLoc(loc)
		if p.is(",") {
			p.next()
		} else if !p.is(")") {
			return p.errf(p.peek().at(), "want , or ) in the parameters of %s, got %q", name.text, p.peek().text)
		}
	}
	p.next()
	open, err := p.expect("{", "opening the body of "+name.text)
	if err != nil {
		return err
	}
	p.implicit, p.declares = nil, false
	body, err := p.block(open.at())
	if err != nil {
		return err
	}
	if p.declares && len(p.implicit) > 0 {
		r := p.implicit[0]
		return p.errf(r.at(), "undeclared name %s%s: %s declares its other registers, so this one must be declared too (int %s;)", r.text, DidYouMean(r.text, keys(p.regs)), name.text, r.text)
	}
	p.test.Threads = append(p.test.Threads, Thread{Body: body, Line: name.line, Col: name.col})
	p.threadRegs = append(p.threadRegs, p.regs)
	p.threadUsed = append(p.threadUsed, p.used)
	return nil
}

// block reads statements up to the closing brace (the opening one is read).
func (p *parser) block(open pos) ([]Stmt, error) {
	var out []Stmt
	for !p.is("}") {
		if p.peek().kind == tokEOF {
			return nil, p.errf(open, "{ not closed")
		}
		ss, err := p.stmt()
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	p.next()
	return out, nil
}

// regTypes are the types a register may be declared with.
var regTypes = map[string]bool{"int": true, "intptr_t": true, "uintptr_t": true, "long": true}

// stmt reads one statement; a declaration may give none or several.
func (p *parser) stmt() ([]Stmt, error) {
	t := p.peek()
	switch {
	case p.is(";"):
		p.next()
		return nil, nil
	case p.is("{"):
		p.next()
		return p.block(t.at())
	case p.is("*"):
		return p.plainStore()
	case p.is("(") && p.peekAt(1).text == "void" && p.peekAt(2).text == ")":
		// (void)f(...): a value-returning primitive whose value is dropped.
		p.next()
		p.next()
		p.next()
		name, err := p.ident("a function after (void)")
		if err != nil {
			return nil, err
		}
		return p.callStmt(name, "")
	case t.kind != tokIdent:
		return nil, p.errf(t.at(), "unexpected %q at the start of a statement", t.text)
	}
	switch t.text {
	case "if":
		return p.ifStmt()
	case "while":
		return p.whileStmt()
	case "for":
		return p.forStmt()
	case "break", "continue", "return":
		return p.jumpStmt()
	case "do", "goto", "switch", "else":
		return nil, p.errf(t.at(), "unsupported construct: %s", t.text)
	}
	if regTypes[t.text] {
		return p.decl()
	}
	if locTypes[t.text] || t.text == "unsigned" || t.text == "char" || t.text == "struct" || t.text == "bool" {
		return nil, p.errf(t.at(), "unsupported construct: local of type %s (int registers only)", t.text)
	}
	p.next()
	if p.is("(") {
		return p.callStmt(t, "")
	}
	if _, known := p.regs[t.text]; !known && !p.params[t.text] && p.is("=") {
		// herd7 declares a register by its first assignment ("r0 =
		// READ_ONCE(*x);" with no "int r0;"), in a thread that declares
		// none (parseThread refuses a thread that does both, where the
		// undeclared name is a typo). A name read before any assignment
		// is still an error (useReg): only a write declares.
		if err := p.declare(t); err != nil {
			return nil, err
		}
		p.implicit = append(p.implicit, t)
	}
	if err := p.assignable(t); err != nil {
		return nil, err
	}
	if ss, ok, err := p.update(t); ok || err != nil {
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(";", "ending the statement"); err != nil {
			return nil, err
		}
		return ss, nil
	}
	if n := p.peek(); n.text != "=" {
		if n.kind == tokPunct {
			return nil, p.errf(n.at(), "unsupported construct: %s%s", t.text, n.text)
		}
		return nil, p.errf(n.at(), "want = after %s, got %q", t.text, n.text)
	}
	p.next()
	return p.rhs(t)
}

// assignable checks that name can be assigned to: a register of the
// thread.
func (p *parser) assignable(name token) error {
	if p.params[name.text] {
		return p.errf(name.at(), "unsupported construct: assignment to the pointer %s", name.text)
	}
	return p.useReg(name)
}

// declare declares the register name (int name;) in the current thread.
func (p *parser) declare(name token) error {
	if p.params[name.text] {
		return p.errf(name.at(), "register %s has the name of a location parameter of this thread", name.text)
	}
	if name.text == WaitReg {
		return p.errf(name.at(), "%s is the name of wait_event's hidden register", name.text)
	}
	if at, dup := p.regs[name.text]; dup && at.line > 0 {
		return p.errf(name.at(), "a second declaration of %s (the first is on line %d)", name.text, at.line)
	}
	p.regs[name.text] = name.at()
	return nil
}

// decl reads "int r0;", "int r0 = 0;", "int a = READ_ONCE(*x);", "int r0, r1;".
func (p *parser) decl() ([]Stmt, error) {
	p.declares = true
	p.next()
	var out []Stmt
	for {
		for p.is("*") {
			p.next() // int *r: a register holding a pointer
		}
		name, err := p.ident("a register name")
		if err != nil {
			return nil, err
		}
		if p.is("[") {
			return nil, p.errf(name.at(), "unsupported construct: array %s", name.text)
		}
		if err := p.declare(name); err != nil {
			return nil, err
		}
		if p.is("=") {
			p.used[name.text] = true
			p.next()
			ss, err := p.rhsUntil(name)
			if err != nil {
				return nil, err
			}
			out = append(out, ss...)
		}
		switch {
		case p.is(";"):
			p.next()
			return out, nil
		case p.is(","):
			p.next()
		default:
			return nil, p.errf(p.peek().at(), "want ; or , in a declaration, got %q", p.peek().text)
		}
	}
}

// rhs reads what is assigned to reg, then ";".
func (p *parser) rhs(reg token) ([]Stmt, error) {
	ss, err := p.rhsUntil(reg)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";", "ending the statement"); err != nil {
		return nil, err
	}
	return ss, nil
}

// rhsUntil reads a primitive call or an expression assigned to reg, not the
// token that ends it.
func (p *parser) rhsUntil(reg token) ([]Stmt, error) {
	if p.castAhead() && (p.peekAt(p.castLen()).kind == tokIdent && p.peekAt(p.castLen()+1).text == "(" || p.peekAt(p.castLen()).text == "*") {
		p.skipCast() // (intptr_t)rcu_dereference(...), (int)*p
	}
	if p.is("*") {
		return p.plainLoad(reg)
	}
	if t := p.peek(); t.kind == tokIdent && p.peekAt(1).text == "(" && p.callEnds(1) {
		p.next()
		return p.call(t, reg.text)
	}
	var e Expr
	pre, err := p.hoisting(func() (err error) {
		e, err = p.expr()
		return err
	})
	if err != nil {
		return nil, err
	}
	return append(pre, Stmt{Assign: &Assign{Reg: reg.text, Val: e}, Line: reg.line, Col: reg.col}), nil
}

// callStmt reads a call used as a statement, then ";".
func (p *parser) callStmt(name token, reg string) ([]Stmt, error) {
	ss, err := p.call(name, reg)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";", "after "+name.text+"(...)"); err != nil {
		return nil, err
	}
	return ss, nil
}

// ifStmt reads "if (e) s [else s]".
func (p *parser) ifStmt() ([]Stmt, error) {
	t := p.next()
	if _, err := p.expect("(", "after if"); err != nil {
		return nil, err
	}
	var c Expr
	pre, err := p.hoisting(func() (err error) {
		c, err = p.expr()
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(")", "closing the condition of if"); err != nil {
		return nil, err
	}
	then, err := p.stmt()
	if err != nil {
		return nil, err
	}
	var els []Stmt
	if p.is("else") {
		p.next()
		if els, err = p.stmt(); err != nil {
			return nil, err
		}
	}
	return append(pre, Stmt{If: &If{Cond: c, Then: then, Else: els}, Line: t.line, Col: t.col}), nil
}

// update reads "r++", "r--", "r += e" or "r -= e" after the register r
// (read), not the token that ends it; ok is false if none is next.
func (p *parser) update(reg token) ([]Stmt, bool, error) {
	op := p.peek()
	var val Expr
	switch op.text {
	case "++", "--":
		p.next()
		val = C(1)
	case "+=", "-=":
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, true, err
		}
		val = e
	default:
		return nil, false, nil
	}
	bin := "+"
	if op.text == "--" || op.text == "-=" {
		bin = "-"
	}
	return []Stmt{{Assign: &Assign{Reg: reg.text, Val: Bin(bin, R(reg.text), val)}, Line: reg.line, Col: reg.col}}, true, nil
}

// whileStmt reads "while (e) s".
func (p *parser) whileStmt() ([]Stmt, error) {
	t := p.next()
	cond, err := p.parenCond("while")
	if err != nil {
		return nil, err
	}
	body, err := p.stmt()
	if err != nil {
		return nil, err
	}
	return []Stmt{{Loop: &Loop{Cond: cond, Body: body}, Line: t.line, Col: t.col}}, nil
}

// parenCond reads "(e)" after a keyword.
func (p *parser) parenCond(kw string) (Expr, error) {
	if _, err := p.expect("(", "after "+kw); err != nil {
		return Expr{}, err
	}
	c, err := p.expr()
	if err != nil {
		return Expr{}, err
	}
	_, err = p.expect(")", "closing the condition of "+kw)
	return c, err
}

// forStmt reads "for (init; cond; post) s": init and post are
// assignments (r = e, r++, r += e...) or empty, cond an expression or
// empty (always true).
func (p *parser) forStmt() ([]Stmt, error) {
	t := p.next()
	if _, err := p.expect("(", "after for"); err != nil {
		return nil, err
	}
	clause := func(end string) ([]Stmt, error) {
		if p.is(end) {
			return nil, nil
		}
		if regTypes[p.peek().text] {
			return nil, p.errf(p.peek().at(), "unsupported construct: a declaration in for (declare the register before the loop)")
		}
		r, err := p.ident("a register to assign")
		if err != nil {
			return nil, err
		}
		if err := p.assignable(r); err != nil {
			return nil, err
		}
		if ss, ok, err := p.update(r); ok || err != nil {
			return ss, err
		}
		if _, err := p.expect("=", "in a for clause (r = e, r++, r += e)"); err != nil {
			return nil, err
		}
		if n := p.peek(); n.kind == tokIdent && p.peekAt(1).text == "(" {
			return nil, p.errf(n.at(), "unsupported construct: %s() in a for clause (call it in the loop body)", n.text)
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return []Stmt{{Assign: &Assign{Reg: r.text, Val: e}, Line: r.line, Col: r.col}}, nil
	}
	init, err := clause(";")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(";", "after the initialisation of for"); err != nil {
		return nil, err
	}
	cond := C(1)
	if !p.is(";") {
		if cond, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(";", "after the condition of for"); err != nil {
		return nil, err
	}
	post, err := clause(")")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(")", "closing for (...)"); err != nil {
		return nil, err
	}
	body, err := p.stmt()
	if err != nil {
		return nil, err
	}
	return append(init, Stmt{Loop: &Loop{Cond: cond, Body: body, Post: post}, Line: t.line, Col: t.col}), nil
}

// jumpStmt reads "break;", "continue;", "return;" or "return e;" (the
// value is read and dropped: a thread's result is what it asserts).
func (p *parser) jumpStmt() ([]Stmt, error) {
	t := p.next()
	j := map[string]Jump{"break": Break, "continue": Continue, "return": Return}[t.text]
	if j == Return && !p.is(";") {
		if _, err := p.expr(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(";", "after "+t.text); err != nil {
		return nil, err
	}
	return []Stmt{{Jump: j, Line: t.line, Col: t.col}}, nil
}

// durable reports whether the test has a durability statement, which
// makes the final condition optional (the obligations may all be inline).
func (p *parser) durable() bool {
	for _, th := range p.test.Threads {
		if FirstDurable(th.Body) != nil {
			return true
		}
	}
	return false
}

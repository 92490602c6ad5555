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
// The parser accepts a subset of C: the primitives model/litmus knows, local
// int registers, assignments and if/else. Everything else (plain accesses,
// pointers other than the parameters, loops, RCU, unknown functions...) is
// an *Error naming the construct and its line: a construct silently skipped
// would give an answer about another program.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Error is a litmus file the parser cannot read: File:Line: Msg, where Msg
// names the construct.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

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
	p := &parser{file: name, test: &Test{Init: map[string]int64{}}}
	if err := p.lex(string(src)); err != nil {
		return nil, err
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.test, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNum
	tokPunct
)

type token struct {
	kind tokKind
	text string
	line int
}

type parser struct {
	file string
	toks []token
	pos  int
	test *Test

	params map[string]bool // the current thread's location parameters
	regs   map[string]bool // the current thread's registers
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// puncts are the multi-character tokens, longest first; every other
// punctuation character is a token of its own.
var puncts = []string{`/\`, `\/`, "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "->", "++", "--", "+=", "-=", "*=", "|=", "&=", "^="}

var (
	resultLine = regexp.MustCompile(`Result:\s*(\w+)`)
	infoLine   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*\s*=`)
)

// lex splits src into tokens. The first line is "C NAME". "(* ... *)" is a
// comment outside the threads' bodies (inside, "(*" is C: READ_ONCE(*x));
// "/* */" and "//" are comments everywhere.
func (p *parser) lex(src string) error {
	line := 1
	i := 0
	// Blank lines before the "C NAME" line.
	for i < len(src) && (src[i] == '\n' || src[i] == ' ' || src[i] == '\t' || src[i] == '\r') {
		if src[i] == '\n' {
			line++
		}
		i++
	}
	end := strings.IndexByte(src[i:], '\n')
	if end < 0 {
		end = len(src) - i
	}
	first := strings.TrimSpace(src[i : i+end])
	if !strings.HasPrefix(first, "C ") && !strings.HasPrefix(first, "C\t") {
		return p.errf(line, "want a C litmus test (a first line \"C NAME\"), got %q", first)
	}
	p.test.Name = strings.TrimSpace(first[1:])
	i += end
	// herd7's header lines between the name and the initial state: a
	// quoted description and "Key=value" lines (Cycle=, Relax=, Safe=,
	// Prefetch=, Com=, Orig=... as diy7 writes them) say nothing of the
	// program.
	for {
		j := i
		for j < len(src) && (src[j] == '\n' || src[j] == ' ' || src[j] == '\t' || src[j] == '\r') {
			j++
		}
		e := strings.IndexByte(src[j:], '\n')
		if e < 0 {
			e = len(src) - j
		}
		l := strings.TrimSpace(src[j : j+e])
		quoted := strings.HasPrefix(l, `"`) && strings.Count(l, `"`) >= 2
		if !quoted && !infoLine.MatchString(l) {
			break
		}
		line += strings.Count(src[i:j+e], "\n")
		i = j + e
	}
	depth := 0
	inThread := false // inside a thread's body, where "(*" is C: READ_ONCE(*x)
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case !inThread && strings.HasPrefix(src[i:], "(*"):
			j := strings.Index(src[i+2:], "*)")
			if j < 0 {
				return p.errf(line, "comment (* not closed")
			}
			body := src[i+2 : i+2+j]
			if m := resultLine.FindStringSubmatch(body); m != nil && p.test.Result == "" && len(p.toks) == 0 {
				p.test.Result = m[1]
			}
			line += strings.Count(body, "\n")
			i += j + 4
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return p.errf(line, "comment /* not closed")
			}
			line += strings.Count(src[i+2:i+2+j], "\n")
			i += j + 4
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			p.toks = append(p.toks, token{tokIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == 'x' || src[j] == 'X' || src[j] >= 'a' && src[j] <= 'f' || src[j] >= 'A' && src[j] <= 'F') {
				j++
			}
			p.toks = append(p.toks, token{tokNum, src[i:j], line})
			i = j
		default:
			text := string(c)
			for _, pu := range puncts {
				if strings.HasPrefix(src[i:], pu) {
					text = pu
					break
				}
			}
			if !strings.ContainsRune("(){}[];,*&=<>+-^|!~:./%?\\", rune(c)) && len(text) == 1 {
				return p.errf(line, "unexpected character %q", c)
			}
			switch text {
			case "{":
				if depth == 0 && len(p.toks) > 0 && p.toks[len(p.toks)-1].text == ")" {
					inThread = true
				}
				depth++
			case "}":
				depth--
				if depth == 0 {
					inThread = false
				}
			}
			p.toks = append(p.toks, token{tokPunct, text, line})
			i += len(text)
		}
	}
	p.toks = append(p.toks, token{tokEOF, "end of file", line})
	return nil
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) peekAt(k int) token {
	if p.pos+k >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.pos+k]
}
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// is reports whether the next token is text (a punctuation or a word).
func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.kind == tokPunct || t.kind == tokIdent) && t.text == text
}

func (p *parser) expect(text, what string) (token, error) {
	t := p.next()
	if (t.kind != tokPunct && t.kind != tokIdent) || t.text != text {
		return t, p.errf(t.line, "want %q %s, got %q", text, what, t.text)
	}
	return t, nil
}

func (p *parser) ident(what string) (token, error) {
	t := p.next()
	if t.kind != tokIdent {
		return t, p.errf(t.line, "want %s, got %q", what, t.text)
	}
	return t, nil
}

func (p *parser) addLoc(name string) {
	for _, l := range p.test.Locs {
		if l == name {
			return
		}
	}
	p.test.Locs = append(p.test.Locs, name)
}

var threadName = regexp.MustCompile(`^P([0-9]+)$`)

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
			return p.errf(t.line, "thread %s out of order: want P%d", t.text, len(p.test.Threads))
		}
		if err := p.parseThread(); err != nil {
			return err
		}
	}
	if len(p.test.Threads) == 0 {
		return p.errf(p.peek().line, "want a thread P0(...), got %q", p.peek().text)
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokIdent && t.text == "locations":
			p.next()
			if _, err := p.expect("[", "after locations"); err != nil {
				return err
			}
			for !p.is("]") {
				if p.peek().kind == tokEOF {
					return p.errf(t.line, "locations [ not closed")
				}
				p.next()
			}
			p.next()
		case t.kind == tokIdent && t.text == "filter":
			return p.errf(t.line, "unsupported construct: filter")
		case t.kind == tokIdent && (t.text == "exists" || t.text == "forall"),
			t.kind == tokPunct && t.text == "~" && p.peekAt(1).text == "exists":
			if p.test.Quant != 0 {
				return p.errf(t.line, "a second final condition")
			}
			p.test.Quant = Exists
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
			if p.test.Quant == 0 {
				return p.errf(t.line, "no final condition (exists, ~exists or forall)")
			}
			return nil
		default:
			return p.errf(t.line, "unexpected %q after the threads", t.text)
		}
	}
}

// locTypes are the types a shared location may have.
var locTypes = map[string]bool{"int": true, "atomic_t": true, "spinlock_t": true}

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
			return p.errf(t.line, "initial state not closed")
		case t.kind == tokNum && p.peekAt(1).text == ":":
			// A register initialiser: registers start at 0, so only 0 is one.
			p.next()
			p.next()
			reg, err := p.ident("a register")
			if err != nil {
				return err
			}
			if !p.is("=") {
				continue // "int 0:r1;": a declaration, the register starts at 0
			}
			p.next()
			v, err := p.initValue()
			if err != nil {
				return err
			}
			if v != 0 {
				return p.errf(t.line, "unsupported construct: register initialiser %s:%s=%d (registers start at 0)", t.text, reg.text, v)
			}
			continue
		}
		name, err := p.ident("a location")
		if err != nil {
			return err
		}
		if locTypes[name.text] && p.peek().kind == tokNum && p.peekAt(1).text == ":" {
			continue // "int 0:r1;": a register's type, read as a register initialiser above
		}
		if locTypes[name.text] {
			if p.is("*") {
				return p.errf(name.line, "unsupported construct: pointer location in the initial state")
			}
			name, err = p.ident("a location name")
			if err != nil {
				return err
			}
		} else if p.peek().kind == tokIdent {
			return p.errf(name.line, "unsupported construct: location type %s", name.text)
		}
		if p.is("[") {
			return p.errf(name.line, "unsupported construct: array %s", name.text)
		}
		p.addLoc(name.text)
		if p.is("=") {
			p.next()
			v, err := p.initValue()
			if err != nil {
				return err
			}
			p.test.Init[name.text] = v
		}
		if !p.is(";") && !p.is("}") {
			return p.errf(p.peek().line, "want ; after location %s, got %q", name.text, p.peek().text)
		}
	}
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
		return 0, p.errf(t.line, "unsupported construct: pointer value %s", t.text)
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
		return 0, p.errf(t.line, "want a number, got %q", t.text)
	}
	v, err := strconv.ParseInt(t.text, 0, 64)
	if err != nil {
		return 0, p.errf(t.line, "bad number %q", t.text)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// parseThread reads "Pn(int *x, spinlock_t *l) { body }".
func (p *parser) parseThread() error {
	name := p.next()
	p.params, p.regs = map[string]bool{}, map[string]bool{}
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
			return p.errf(ty.line, "unsupported construct: qualifier %s", ty.text)
		}
		if !locTypes[ty.text] {
			return p.errf(ty.line, "unsupported construct: parameter type %s (int *, atomic_t *, spinlock_t * only)", ty.text)
		}
		if _, err := p.expect("*", "(a parameter is a pointer to a location)"); err != nil {
			return err
		}
		if p.is("*") {
			return p.errf(ty.line, "unsupported construct: pointer to pointer parameter")
		}
		loc, err := p.ident("a parameter name")
		if err != nil {
			return err
		}
		p.params[loc.text] = true
		p.addLoc(loc.text)
		if p.is(",") {
			p.next()
		} else if !p.is(")") {
			return p.errf(p.peek().line, "want , or ) in the parameters of %s, got %q", name.text, p.peek().text)
		}
	}
	p.next()
	open, err := p.expect("{", "opening the body of "+name.text)
	if err != nil {
		return err
	}
	body, err := p.block(open.line)
	if err != nil {
		return err
	}
	p.test.Threads = append(p.test.Threads, Thread{Body: body})
	return nil
}

// block reads statements up to the closing brace (the opening one is read).
func (p *parser) block(open int) ([]Stmt, error) {
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
var regTypes = map[string]bool{"int": true}

// stmt reads one statement; a declaration may give none or several.
func (p *parser) stmt() ([]Stmt, error) {
	t := p.peek()
	switch {
	case p.is(";"):
		p.next()
		return nil, nil
	case p.is("{"):
		p.next()
		return p.block(t.line)
	case p.is("*"):
		if n := p.peekAt(1); n.kind == tokIdent && p.params[n.text] {
			return nil, p.errf(t.line, "unsupported construct: plain access *%s (use READ_ONCE/WRITE_ONCE)", n.text)
		}
		return nil, p.errf(t.line, "unsupported construct: dereference of a register")
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
		return nil, p.errf(t.line, "unexpected %q at the start of a statement", t.text)
	}
	switch t.text {
	case "if":
		return p.ifStmt()
	case "while", "for", "do", "goto", "switch", "return", "break", "continue", "else":
		return nil, p.errf(t.line, "unsupported construct: %s", t.text)
	}
	if regTypes[t.text] {
		return p.decl()
	}
	if locTypes[t.text] || t.text == "long" || t.text == "unsigned" || t.text == "char" || t.text == "struct" || t.text == "bool" {
		return nil, p.errf(t.line, "unsupported construct: local of type %s (int registers only)", t.text)
	}
	p.next()
	if p.is("(") {
		return p.callStmt(t, "")
	}
	if err := p.assignable(t); err != nil {
		return nil, err
	}
	if n := p.peek(); n.text != "=" {
		if n.kind == tokPunct {
			return nil, p.errf(n.line, "unsupported construct: %s%s", t.text, n.text)
		}
		return nil, p.errf(n.line, "want = after %s, got %q", t.text, n.text)
	}
	p.next()
	return p.rhs(t)
}

// assignable checks that name can be assigned to: a register.
func (p *parser) assignable(name token) error {
	if p.params[name.text] {
		return p.errf(name.line, "unsupported construct: assignment to the pointer %s", name.text)
	}
	p.regs[name.text] = true
	return nil
}

// decl reads "int r0;", "int r0 = 0;", "int a = READ_ONCE(*x);", "int r0, r1;".
func (p *parser) decl() ([]Stmt, error) {
	p.next()
	var out []Stmt
	for {
		if p.is("*") {
			return nil, p.errf(p.peek().line, "unsupported construct: pointer register")
		}
		name, err := p.ident("a register name")
		if err != nil {
			return nil, err
		}
		if p.is("[") {
			return nil, p.errf(name.line, "unsupported construct: array %s", name.text)
		}
		if err := p.assignable(name); err != nil {
			return nil, err
		}
		if p.is("=") {
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
			return nil, p.errf(p.peek().line, "want ; or , in a declaration, got %q", p.peek().text)
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
	if t := p.peek(); t.kind == tokIdent && p.peekAt(1).text == "(" {
		p.next()
		ss, err := p.call(t, reg.text)
		if err == nil && !p.is(";") && !p.is(",") {
			return nil, p.errf(t.line, "unsupported construct: %s() inside an expression (assign it to a register first)", t.text)
		}
		return ss, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	return []Stmt{{Assign: &Assign{Reg: reg.text, Val: e}, Line: reg.line}}, nil
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
	c, err := p.expr()
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
	return []Stmt{{If: &If{Cond: c, Then: then, Else: els}, Line: t.line}}, nil
}

// argKind is how a primitive takes an argument.
type argKind uint8

const (
	argDeref argKind = iota + 1 // *x
	argPtr                      // x
	argVal                      // an expression
)

// primitive is one spelling of a primitive: its op, its arguments, and how
// Access.Val is made (a constant for inc/dec, negated for sub).
type primitive struct {
	op    Op
	args  []argKind
	val   int64 // inc: 1, dec: -1, 0: from the argument
	neg   bool  // sub: the argument negated
	order []string
}

// prims maps every accepted spelling to its primitive, built by init below.
var prims = map[string]primitive{}

func init() {
	plain := map[string]primitive{
		"READ_ONCE":              {op: OpReadOnce, args: []argKind{argDeref}},
		"WRITE_ONCE":             {op: OpWriteOnce, args: []argKind{argDeref, argVal}},
		"smp_load_acquire":       {op: OpLoadAcquire, args: []argKind{argPtr}},
		"smp_store_release":      {op: OpStoreRelease, args: []argKind{argPtr, argVal}},
		"atomic_read":            {op: OpReadOnce, args: []argKind{argPtr}},
		"atomic_set":             {op: OpWriteOnce, args: []argKind{argPtr, argVal}},
		"atomic_read_acquire":    {op: OpLoadAcquire, args: []argKind{argPtr}},
		"atomic_set_release":     {op: OpStoreRelease, args: []argKind{argPtr, argVal}},
		"smp_mb":                 {op: OpMb},
		"smp_rmb":                {op: OpRmb},
		"smp_wmb":                {op: OpWmb},
		"smp_mb__before_atomic":  {op: OpMbBeforeAtomic},
		"smp_mb__after_atomic":   {op: OpMbAfterAtomic},
		"smp_mb__after_spinlock": {op: OpMbAfterSpinlock},
		"barrier":                {op: OpBarrier},
		"atomic_inc":             {op: OpAdd, args: []argKind{argPtr}, val: 1},
		"atomic_dec":             {op: OpAdd, args: []argKind{argPtr}, val: -1},
		"atomic_add":             {op: OpAdd, args: []argKind{argVal, argPtr}},
		"atomic_sub":             {op: OpAdd, args: []argKind{argVal, argPtr}, neg: true},
		"spin_lock":              {op: OpSpinLock, args: []argKind{argPtr}},
		"spin_unlock":            {op: OpSpinUnlock, args: []argKind{argPtr}},
	}
	for k, v := range plain {
		prims[k] = v
	}
	// The ordered families: name, then name_relaxed, _acquire, _release.
	family := func(base Op, names map[string]primitive) {
		for name, pr := range names {
			for i, sfx := range []string{"", "_relaxed", "_acquire", "_release"} {
				q := pr
				q.op = base + Op(i)
				prims[name+sfx] = q
			}
		}
	}
	family(OpAddReturn, map[string]primitive{
		"atomic_inc_return": {args: []argKind{argPtr}, val: 1},
		"atomic_dec_return": {args: []argKind{argPtr}, val: -1},
		"atomic_add_return": {args: []argKind{argVal, argPtr}},
		"atomic_sub_return": {args: []argKind{argVal, argPtr}, neg: true},
	})
	family(OpFetchAdd, map[string]primitive{
		"atomic_fetch_inc": {args: []argKind{argPtr}, val: 1},
		"atomic_fetch_dec": {args: []argKind{argPtr}, val: -1},
		"atomic_fetch_add": {args: []argKind{argVal, argPtr}},
		"atomic_fetch_sub": {args: []argKind{argVal, argPtr}, neg: true},
	})
	family(OpXchg, map[string]primitive{
		"xchg":        {args: []argKind{argPtr, argVal}},
		"atomic_xchg": {args: []argKind{argPtr, argVal}},
	})
	family(OpCmpxchg, map[string]primitive{
		"cmpxchg":        {args: []argKind{argPtr, argVal, argVal}},
		"atomic_cmpxchg": {args: []argKind{argPtr, argVal, argVal}},
	})
}

// call reads "name(args)" (name is read, "(" is next) into one access whose
// result, if any, goes to reg.
func (p *parser) call(name token, reg string) ([]Stmt, error) {
	pr, ok := prims[name.text]
	if !ok {
		return nil, p.errf(name.line, "unsupported construct: %s()", name.text)
	}
	info := pr.op.Info()
	if reg != "" && !info.Returns {
		return nil, p.errf(name.line, "%s() returns no value to assign to %s", name.text, reg)
	}
	p.next() // (
	a := &Access{Op: pr.op, Reg: reg}
	var vals []Expr
	for i, k := range pr.args {
		if i > 0 {
			if _, err := p.expect(",", "between the arguments of "+name.text); err != nil {
				return nil, err
			}
		}
		switch k {
		case argDeref, argPtr:
			t := p.peek()
			if k == argDeref {
				if _, err := p.expect("*", "in "+name.text+"(*x...)"); err != nil {
					return nil, err
				}
			} else if p.is("*") || p.is("&") {
				return nil, p.errf(t.line, "unsupported construct: %s%s in %s() (it takes the pointer parameter itself)", t.text, p.peekAt(1).text, name.text)
			}
			loc, err := p.ident("a location")
			if err != nil {
				return nil, err
			}
			if !p.params[loc.text] {
				return nil, p.errf(loc.line, "unsupported construct: %s() on %s, which is not a location parameter of this thread", name.text, loc.text)
			}
			a.Loc = loc.text
		case argVal:
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			vals = append(vals, e)
		}
	}
	if _, err := p.expect(")", "closing "+name.text+"("); err != nil {
		return nil, err
	}
	switch {
	case pr.val != 0:
		a.Val = C(pr.val)
	case len(vals) == 1 && pr.neg:
		a.Val = Expr{Op: "-", Args: []Expr{vals[0]}}
	case len(vals) == 1:
		a.Val = vals[0]
	case len(vals) == 2: // cmpxchg(x, old, new)
		a.Expect, a.Val = vals[0], vals[1]
	}
	return []Stmt{{Access: a, Line: name.line}}, nil
}

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
			return Expr{}, p.errf(t.line, "unsupported construct: operator %s", t.text)
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
	case p.is("("):
		p.next()
		e, err := p.expr()
		if err != nil {
			return Expr{}, err
		}
		_, err = p.expect(")", "closing (")
		return e, err
	case p.is("*"):
		if n := p.peekAt(1); p.params[n.text] {
			return Expr{}, p.errf(t.line, "unsupported construct: plain access *%s (use READ_ONCE)", n.text)
		}
		return Expr{}, p.errf(t.line, "unsupported construct: dereference of a register")
	case p.is("&"):
		return Expr{}, p.errf(t.line, "unsupported construct: address-of &")
	case t.kind == tokPunct && unsupportedOps[t.text]:
		return Expr{}, p.errf(t.line, "unsupported construct: operator %s", t.text)
	case t.kind == tokNum:
		v, err := p.number()
		return C(v), err
	case t.kind == tokIdent:
		p.next()
		if p.is("(") {
			if _, ok := prims[t.text]; ok {
				return Expr{}, p.errf(t.line, "unsupported construct: %s() inside an expression (assign it to a register first)", t.text)
			}
			return Expr{}, p.errf(t.line, "unsupported construct: %s()", t.text)
		}
		if p.params[t.text] {
			return Expr{}, p.errf(t.line, "unsupported construct: the pointer %s used as a value", t.text)
		}
		if p.is("[") {
			return Expr{}, p.errf(t.line, "unsupported construct: array %s", t.text)
		}
		return R(t.text), nil
	}
	return Expr{}, p.errf(t.line, "want an expression, got %q", t.text)
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
		p.next()
		p.next()
		th, _ := strconv.Atoi(t.text)
		if th >= len(p.test.Threads) {
			return Expr{}, p.errf(t.line, "final condition names thread %d of %d", th, len(p.test.Threads))
		}
		reg, err := p.ident("a register")
		if err != nil {
			return Expr{}, err
		}
		return p.condValue(TR(th, reg.text))
	case t.kind == tokIdent:
		p.next()
		known := false
		for _, l := range p.test.Locs {
			known = known || l == t.text
		}
		if !known {
			return Expr{}, p.errf(t.line, "final condition names %s, which is no location", t.text)
		}
		return p.condValue(L(t.text))
	}
	return Expr{}, p.errf(t.line, "want a final condition atom (0:r0=1, x=1), got %q", t.text)
}

// condValue reads "=value" after the left side of an atom.
func (p *parser) condValue(left Expr) (Expr, error) {
	t := p.next()
	if t.text != "=" {
		return Expr{}, p.errf(t.line, "unsupported construct: %q in a final condition atom (want =)", t.text)
	}
	if v := p.peek(); v.kind == tokIdent {
		return Expr{}, p.errf(v.line, "unsupported construct: pointer value %s in the final condition", v.text)
	}
	v, err := p.number()
	if err != nil {
		return Expr{}, err
	}
	return Bin("==", left, C(v)), nil
}

package litmus

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The lexer of herd7's C litmus files (Parse).

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNum
	tokPunct
)

type token struct {
	kind      tokKind
	text      string
	line, col int // where it starts; col counts bytes from 1
}

// pos is a place in the file: a line and a column, both from 1.
type pos struct{ line, col int }

func (t token) at() pos { return pos{t.line, t.col} }

type parser struct {
	file string
	toks []token
	pos  int
	test *Test

	params map[string]bool // the current thread's location parameters
	// regs are the current thread's registers: those the initial state
	// sets (pos{}) and those it declares (where); used, those it names.
	regs map[string]pos
	used map[string]bool
	// implicit are the registers the current thread declares by
	// assigning them, herd7's way; declares, whether it declares any
	// (int r;): a thread may not do both.
	implicit []token
	declares bool
	// threadRegs are each parsed thread's registers, for the final
	// condition; threadUsed what it named of them.
	threadRegs []map[string]pos
	threadUsed []map[string]bool
	// initRegs and initLocs are where the initial state names each
	// register (per thread) and location; a name it sets that nothing
	// uses is refused at the end (names.go).
	initRegs []map[string]pos
	initLocs map[string]pos
	// condLocs are the locations the final condition or locations [...]
	// names; paramLocs those some thread takes as a parameter.
	condLocs, paramLocs map[string]bool
	// addrLocs are the locations whose address the test takes (a
	// pointer to them): used, as a parameter is.
	addrLocs map[string]bool
	// initPtrs are the pointers of the initial state, resolved when
	// every location is known.
	initPtrs []initPtr
	// labels are the names given to wait_event, wake_up and
	// blkdev_issue_flush, checked against each other at the end.
	labels []label

	// waitLoad, while the condition of a wait_event is read, takes the
	// one read primitive it may call (into WaitReg).
	waitLoad **Access
	// hoist, while an expression that runs once is read (an
	// assignment's, an if's condition, a primitive's arguments), takes
	// the loads called inside it, each into a register of its own
	// (HiddenReg), to run before the statement; nil where loads may not
	// be called (a loop's condition, which runs again).
	hoist *[]Stmt
	// hidden counts the current thread's hidden registers.
	hidden int
}

func (p *parser) errf(at pos, format string, args ...any) error {
	return &Error{File: p.file, Line: at.line, Col: at.col, Msg: fmt.Sprintf(format, args...)}
}

// puncts are the multi-character tokens, longest first; every other
// punctuation character is a token of its own.
var puncts = []string{`/\`, `\/`, "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "->", "++", "--", "+=", "-=", "*=", "|=", "&=", "^="}

var (
	// headerKey is a "Key: value" line of the header comment that
	// flushproof check reads (Test.Header).
	headerKey  = regexp.MustCompile(`^(\s*\*?\s*)([A-Za-z][A-Za-z0-9_-]*)\s*:\s*`)
	resultLine = regexp.MustCompile(`Result:\s*(\w+)`)
	infoLine   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*\s*=`)
)

// lex splits src into tokens. The first line is "C NAME". "(* ... *)" is a
// comment outside the threads' bodies (inside, "(*" is C: READ_ONCE(*x));
// "/* */" and "//" are comments everywhere.
func (p *parser) lex(src string) error {
	line, lineStart := 1, 0 // lineStart: where line starts in src
	i := 0
	// skip moves i to to, counting the lines it passes.
	skip := func(to int) {
		seg := src[i:to]
		if n := strings.Count(seg, "\n"); n > 0 {
			line += n
			lineStart = i + strings.LastIndexByte(seg, '\n') + 1
		}
		i = to
	}
	here := func() pos { return pos{line, i - lineStart + 1} }
	// Blank lines before the "C NAME" line.
	j := i
	for j < len(src) && (src[j] == '\n' || src[j] == ' ' || src[j] == '\t' || src[j] == '\r') {
		j++
	}
	skip(j)
	end := strings.IndexByte(src[i:], '\n')
	if end < 0 {
		end = len(src) - i
	}
	first := strings.TrimSpace(src[i : i+end])
	if !strings.HasPrefix(first, "C ") && !strings.HasPrefix(first, "C\t") {
		return p.errf(here(), "want a C litmus test (a first line \"C NAME\"), got %q", first)
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
		skip(j + e)
	}
	depth := 0
	inThread := false // inside a thread's body, where "(*" is C: READ_ONCE(*x)
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			skip(i + 1)
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case !inThread && strings.HasPrefix(src[i:], "(*"):
			j := strings.Index(src[i+2:], "*)")
			if j < 0 {
				return p.errf(here(), "comment (* not closed")
			}
			body := src[i+2 : i+2+j]
			if m := resultLine.FindStringSubmatchIndex(body); m != nil && p.test.Result == "" && len(p.toks) == 0 {
				p.test.Result = body[m[2]:m[3]]
				p.test.ResultLine = resultRest(body[m[2]:])
			}
			if len(p.toks) == 0 {
				if err := p.headerKeys(body, line, i+2-lineStart+1); err != nil {
					return err
				}
			}
			skip(i + j + 4)
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return p.errf(here(), "comment /* not closed")
			}
			skip(i + j + 4)
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			p.toks = append(p.toks, token{tokIdent, src[i:j], line, i - lineStart + 1})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == 'x' || src[j] == 'X' || src[j] >= 'a' && src[j] <= 'f' || src[j] >= 'A' && src[j] <= 'F') {
				j++
			}
			p.toks = append(p.toks, token{tokNum, src[i:j], line, i - lineStart + 1})
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
				return p.errf(here(), "unexpected character %q", c)
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
			p.toks = append(p.toks, token{tokPunct, text, line, i - lineStart + 1})
			i += len(text)
		}
	}
	p.toks = append(p.toks, token{tokEOF, "end of file", line, i - lineStart + 1})
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
		return t, p.errf(t.at(), "want %q %s, got %q", text, what, t.text)
	}
	return t, nil
}

func (p *parser) ident(what string) (token, error) {
	t := p.next()
	if t.kind != tokIdent {
		return t, p.errf(t.at(), "want %s, got %q", what, t.text)
	}
	return t, nil
}

// resultRest is the Result: line from its first word (Test.ResultLine):
// up to the end of the line, trimmed, without a trailing "*)".
func resultRest(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimSpace(s)
	if t, ok := strings.CutSuffix(s, "*)"); ok {
		s = strings.TrimSpace(t)
	}
	return s
}

// HeaderKeys are the header lines flushproof check reads, in lower case
// (durable.go).
var HeaderKeys = []string{"crash", "daemons", "device", "expect", "failures", "models"}

// headerKeys records the "Key: value" lines of a header comment whose body
// starts at line, col.
func (p *parser) headerKeys(body string, line, col int) error {
	h, err := ReadHeader(p.file, body, line, col)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(h)) {
		f := h[key]
		if first, dup := p.test.Header[key]; dup {
			return p.errf(pos{f.Line, 1}, "a second %s: line in the header (the first is on line %d)", key, first.Line)
		}
		if p.test.Header == nil {
			p.test.Header = map[string]HeaderField{}
		}
		p.test.Header[key] = f
	}
	return nil
}

// ReadHeader reads the "Key: value" lines (HeaderKeys) of a header
// comment whose body (the text between its delimiters) starts at line,
// col of file, as Test.Header holds them. Prose lines are free; a key a
// typo away from one of HeaderKeys, and a key given twice, are errors at
// the key.
func ReadHeader(file, body string, line, col int) (map[string]HeaderField, error) {
	var h map[string]HeaderField
	errf := func(l, c int, format string, args ...any) error {
		return &Error{File: file, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
	}
	for k, l := range strings.Split(body, "\n") {
		m := headerKey.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		key := strings.ToLower(l[m[4]:m[5]])
		if !slices.Contains(HeaderKeys, key) {
			// Prose ("Why: ...", "Follows: ...") is free; a word a
			// typo away from a key is a header line that would be
			// ignored.
			if s := DidYouMean(key, HeaderKeys); s != "" {
				return nil, errf(line+k, m[4]+1, "unknown header key %s:%s; the keys are %s", l[m[4]:m[5]], s, strings.Join(HeaderKeys, ", "))
			}
			continue
		}
		if h == nil {
			h = map[string]HeaderField{}
		}
		c := m[1] + 1
		if k == 0 {
			c += col - 1
		}
		if first, dup := h[key]; dup {
			return nil, errf(line+k, m[4]+1, "a second %s: line in the header (the first is on line %d)", l[m[4]:m[5]], first.Line)
		}
		h[key] = HeaderField{Value: strings.TrimSpace(l[m[1]:]), Line: line + k, Col: c}
	}
	return h, nil
}

package litmus

// What the external tests (package litmus_test, which may import the
// checker built on this package) need of the lexer.

// Tok is a token: its text, where it starts, and whether it is an
// identifier.
type Tok struct {
	Text      string
	Line, Col int
	Ident     bool
}

// Lex returns src's tokens.
func Lex(src string) ([]Tok, error) {
	p := &parser{test: &Test{}}
	if err := p.lex(src); err != nil {
		return nil, err
	}
	out := make([]Tok, len(p.toks))
	for i, t := range p.toks {
		out[i] = Tok{Text: t.text, Line: t.line, Col: t.col, Ident: t.kind == tokIdent}
	}
	return out, nil
}

// FunctionNames are the language's function names.
var FunctionNames = functionNames

// Constants are the language's constants.
var Constants = constants

// HeaderKey matches a header line (its key is the second group).
var HeaderKey = headerKey

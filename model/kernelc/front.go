package kernelc

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// The kernel model header, as `#include <flushproof/kernel.h>` finds it.
//
//go:embed include
var includeFS embed.FS

// Header returns the text of flushproof/kernel.h.
func Header() string {
	b, err := fs.ReadFile(includeFS, "include/flushproof/kernel.h")
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// predefined are the macros a C compiler would define, as far as kernel
// code and cc's type checker need them: no host compiler is asked, so a
// file means the same on every machine.
const predefined = `#define __STDC__ 1
#define __STDC_VERSION__ 201112L
#define __FLUSHPROOF__ 1
#define __KERNEL__ 1
#define __CHAR_BIT__ 8
#define __SIZE_TYPE__ unsigned long
#define __PTRDIFF_TYPE__ long
#define __WCHAR_TYPE__ int
#define __INT8_TYPE__ signed char
#define __INT16_TYPE__ short
#define __INT32_TYPE__ int
#define __INT64_TYPE__ long
#define __UINT8_TYPE__ unsigned char
#define __UINT16_TYPE__ unsigned short
#define __UINT32_TYPE__ unsigned int
#define __UINT64_TYPE__ unsigned long
#define __x86_64__ 1
#define __LP64__ 1
#define __inline inline
#define __inline__ inline
#define __attribute(x)
#define __restrict restrict
#define __volatile__ volatile
int __predefined_declarator;
`

var abiOnce = sync.OnceValues(func() (*cc.ABI, error) { return cc.NewABI("linux", "amd64") })

// maxExpansion bounds the work of macro expansion in one file: a few
// hundred bytes of macros can otherwise grow exponentially (cc's
// Config.ExpansionLimit).
const maxExpansion = 1 << 22

// translate preprocesses, parses and type-checks src with the kernel
// model header on its include path. Nothing is read from the host's file
// system: a file includes flushproof/kernel.h or nothing.
func translate(file string, src []byte) (*cc.AST, error) {
	abi, err := abiOnce()
	if err != nil {
		return nil, fmt.Errorf("kernelc: %w", err)
	}
	sub, err := fs.Sub(includeFS, "include")
	if err != nil {
		return nil, err
	}
	cfg := &cc.Config{
		ABI:             abi,
		FS:              sub,
		FSOnly:          true,
		IncludePaths:    []string{""},
		SysIncludePaths: []string{""},
		ExpansionLimit:  maxExpansion,
	}
	ast, err := ccTranslate(cfg, file, src)
	if err != nil {
		err = ccError(file, err)
		if le, ok := err.(*litmus.Error); ok && strings.HasPrefix(le.Msg, "in <end>: ") {
			// The file ended inside a declaration or statement: say so
			// at its end.
			lines := strings.Split(string(src), "\n")
			le.Line, le.Col = len(lines), len(lines[len(lines)-1])+1
			le.Msg = "the file ends inside a declaration or statement (" + strings.TrimPrefix(le.Msg, "in <end>: ") + ")"
		}
		return nil, err
	}
	return ast, nil
}

// ccTranslate is cc.Translate, with a panic of the C front end on some
// input turned into an error: the checker never crashes on a file.
func ccTranslate(cfg *cc.Config, file string, src []byte) (ast *cc.AST, err error) {
	defer func() {
		if r := recover(); r != nil {
			ast, err = nil, fmt.Errorf("%s:1:1: the C front end (modernc.org/cc/v4) failed on this file: %v", file, r)
		}
	}()
	return cc.Translate(cfg, []cc.Source{
		{Name: "<predefined>", Value: predefined},
		{Name: "<kernel.h>", Value: "#include <flushproof/kernel.h>\n"},
		{Name: file, Value: src},
		{Name: "<end>", Value: endSentinel},
	})
}

// endSentinel ends every translation unit. cc's parser (v4.35) loops
// forever on a pointer declarator whose type qualifiers run to the end of
// the input ("int *;" last in a file): it stops at the next identifier,
// which this declaration gives it. In a file without that mistake it is a
// declaration of an unused object, which the lowering ignores.
const endSentinel = "\nint __flushproof_end;\n"

// ccPos matches cc's "file:line:col: message" error lines.
var ccPos = regexp.MustCompile(`^(.*?):(\d+):(\d+): (.*)$`)

// ccError turns cc's error (one line per problem) into a *litmus.Error at
// the first problem in the file itself; a problem in the header is named
// as the header's.
func ccError(file string, err error) error {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	var first *litmus.Error
	for _, l := range lines {
		m := ccPos.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		var line, col int
		fmt.Sscan(m[2], &line)
		fmt.Sscan(m[3], &col)
		msg := strings.TrimSpace(m[4])
		// cc appends "(file.go:line:func:)" to some messages: its own.
		if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ":)") {
			msg = msg[:i]
		}
		e := &litmus.Error{File: m[1], Line: line, Col: col, Msg: msg}
		if m[1] == file {
			return e
		}
		if first == nil {
			first = e
		}
	}
	if first != nil {
		first.Msg = fmt.Sprintf("in %s: %s", first.File, first.Msg)
		first.File = file
		first.Line, first.Col = 1, 1
		return first
	}
	return &litmus.Error{File: file, Line: 1, Col: 1, Msg: strings.Join(lines, "; ")}
}

// errorAt returns the *litmus.Error at n's place in the file.
func (l *lowerer) errorAt(n cc.Node, err error, format string, args ...any) error {
	p := l.pos(n)
	return &litmus.Error{File: l.file, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...), Err: err}
}

// errf is errorAt without a wrapped error.
func (l *lowerer) errf(n cc.Node, format string, args ...any) error {
	return l.errorAt(n, nil, format, args...)
}

// unsupported is a construct the checker cannot express: an error at n
// that wraps litmus.ErrUnsupported.
func (l *lowerer) unsupported(n cc.Node, format string, args ...any) error {
	e := l.errorAt(n, litmus.ErrUnsupported, format, args...).(*litmus.Error)
	e.Msg = "unsupported: " + e.Msg
	return e
}

// pos is where n stands in the file. A node that a macro of the header
// made (READ_ONCE(x)'s call) stands where the macro was used: the
// position of the first of its tokens that comes from the file.
func (l *lowerer) pos(n cc.Node) litmus.Pos {
	if n == nil {
		return l.at
	}
	p := n.Position()
	if p.Filename == l.file && p.Line > 0 {
		return litmus.Pos{Line: p.Line, Col: p.Column}
	}
	for _, t := range cc.NodeTokens(n) {
		if tp := t.Position(); tp.Filename == l.file && tp.Line > 0 {
			return litmus.Pos{Line: tp.Line, Col: tp.Column}
		}
	}
	return l.at
}

// headerComment finds the "Key: value" lines (Expect, Device, ...) of the
// file's first comment, as a litmus file's header has them.
func headerComment(file string, src []byte) (map[string]litmus.HeaderField, error) {
	s := string(src)
	start := strings.Index(s, "/*")
	if start < 0 {
		return nil, nil
	}
	// Only a comment before any code is the header.
	if strings.TrimSpace(stripLineComments(s[:start])) != "" {
		return nil, nil
	}
	end := strings.Index(s[start+2:], "*/")
	if end < 0 {
		return nil, nil
	}
	body := s[start+2 : start+2+end]
	line := 1 + strings.Count(s[:start], "\n")
	col := start - strings.LastIndex(s[:start], "\n") + 2
	return litmus.ReadHeader(file, body, line, col)
}

func stripLineComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// IsHarness reports whether a file named so is a kernel C harness (a .c
// file) rather than a durability litmus file.
func IsHarness(file string) bool { return strings.HasSuffix(file, ".c") }

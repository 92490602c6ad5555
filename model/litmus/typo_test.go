package litmus_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/litmusvariants"
	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/litmus"
)

// The typo test: in every litmus file of the project (the examples, the
// LKMM corpus, the durability test files, the command's test files), each
// identifier is misspelt in turn, one at a time, and the file must then be
// refused at that identifier's line and column. The identifiers are taken
// from the lexer, not from what the parser resolves, so that a name the
// parser let through unresolved would be mutated too and caught.
//
// Two kinds of identifier cannot be refused where they stand, and are
// held to a rule of their own:
//   - a declaration (a location parameter, int r, an initial register):
//     misspelling it leaves its uses undeclared, so the file must be
//     refused at a use of the original name, or the name has no use;
//   - a label (the wait queue of wait_event or wake_up, the device of
//     blkdev_issue_flush): the checker does not model these as data
//     (wake_up is a step that does nothing, there is one device), so a
//     misspelt label changes no verdict; it is refused where the name is
//     used elsewhere in the file, and otherwise counted as free.
//
// Keywords and type names (int, if, struct, atomic_t, exists...) are not
// mutated: a misspelt keyword is a syntax error, not a name that could
// resolve to something else.

// typoKeywords are the words the test does not mutate.
var typoKeywords = map[string]bool{
	"int": true, "if": true, "else": true, "while": true, "for": true, "break": true,
	"continue": true, "return": true, "void": true, "volatile": true, "struct": true,
	"completion": true, "atomic_t": true, "atomic64_t": true, "atomic_long_t": true,
	"spinlock_t": true, "exists": true, "forall": true, "locations": true,
	"ATOMIC_INIT": true,
}

var threadHeader = regexp.MustCompile(`^P[0-9]+$`)

// labelCalls are the calls whose first argument is a label.
var labelCalls = map[string]bool{"wait_event": true, "wake_up": true, "blkdev_issue_flush": true}

// typoFile is a litmus program the test mutates: a file, or an example
// variant's text (its base file with its patch applied).
type typoFile struct {
	name string // the file, or the variant's patch
	src  []byte
}

// typoFiles are the litmus programs the test mutates: every file and
// every example variant (examples/litmus keeps variants as patches).
func typoFiles(t *testing.T) []typoFile {
	examples, err := litmusvariants.Tree("../../examples/litmus")
	require.NoError(t, err)
	var files []typoFile
	for _, f := range examples {
		files = append(files, typoFile{f.Label(), f.Text})
	}
	for _, g := range []string{"../../props/testdata/litmus/*.litmus", "../durable/testdata/durable/*.litmus", "../../cmd/flushproof/testdata/litmus/*.litmus"} {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		for _, f := range m {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			files = append(files, typoFile{f, src})
		}
	}
	require.NotEmpty(t, files)
	return files
}

// readChecked parses src as flushproof check would: the file and, where it
// has a header or durability statements, its header.
func readChecked(name string, src []byte) error {
	tt, err := litmus.Parse(name, src)
	if err != nil {
		return err
	}
	checked := len(tt.Header) > 0
	for _, th := range tt.Threads {
		checked = checked || litmus.FirstDurable(th.Body) != nil
	}
	if !checked {
		return nil
	}
	_, err = durable.Read(name, tt)
	return err
}

// misspell returns name with its last letter changed so that it is no
// identifier of the file and no name of the language.
func misspell(name string, taken map[string]bool) string {
	for _, c := range "qzjkxw" {
		m := name[:len(name)-1] + string(c)
		if m != name && !taken[m] {
			return m
		}
	}
	panic("no misspelling of " + name)
}

// lineOffsets returns where each line (from 1) starts in src.
func lineOffsets(src string) []int {
	offs := []int{0, 0}
	for i, c := range src {
		if c == '\n' {
			offs = append(offs, i+1)
		}
	}
	return offs
}

type typoCounts struct {
	files, exact, viaDecl, freeLabel, unused, header int
}

func TestTypoRefusedAtItsPlace(t *testing.T) {
	var n typoCounts
	for _, tf := range typoFiles(t) {
		f, src := tf.name, tf.src
		if readChecked(f, src) != nil {
			continue // a file that is refused already (the bad-* test files)
		}
		n.files++
		toks, err := litmus.Lex(string(src))
		require.NoError(t, err, f)
		taken := map[string]bool{}
		for _, tok := range toks {
			if tok.Ident {
				taken[tok.Text] = true
			}
		}
		for _, name := range litmus.FunctionNames() {
			taken[name] = true
		}
		for name := range litmus.Constants {
			taken[name] = true
		}
		offs := lineOffsets(string(src))
		for i, tok := range toks {
			if !tok.Ident || typoKeywords[tok.Text] || threadHeader.MatchString(tok.Text) && toks[i+1].Text == "(" {
				continue
			}
			m := misspell(tok.Text, taken)
			at := offs[tok.Line] + tok.Col - 1
			mutated := string(src[:at]) + m + string(src[at+len(tok.Text):])
			err := readChecked(f, []byte(mutated))
			var pe *litmus.Error
			if err != nil {
				require.True(t, errors.As(err, &pe), "%s: %s -> %s: want *Error, got %v", f, tok.Text, m, err)
			}
			where := func() string { return fmt.Sprintf("%s:%d:%d: %s -> %s", f, tok.Line, tok.Col, tok.Text, m) }
			switch {
			case pe != nil && pe.Line == tok.Line && pe.Col == tok.Col:
				n.exact++
				continue
			case pe != nil && occursAt(toks, tok.Text, pe.Line, pe.Col):
				n.viaDecl++
				continue
			}
			// Accepted: the misspelling must have left the program as
			// it was (a label, a declaration nothing needed, a
			// parameter its thread never uses).
			if err == nil && sameProgram(t, f, src, []byte(mutated)) {
				switch {
				case i >= 2 && toks[i-1].Text == "(" && labelCalls[toks[i-2].Text]:
					n.freeLabel++
				default:
					n.unused++
				}
				continue
			}
			assert.Fail(t, "a misspelt name is not refused at its place", "%s: %v", where(), err)
		}
		n.header += typoHeader(t, f, string(src))
	}
	t.Logf("%d files; %d misspelt names refused at their line:col, %d declarations refused at a use, %d header words refused at their line; accepted, the program unchanged: %d labels, %d declarations or parameters nothing uses",
		n.files, n.exact, n.viaDecl, n.header, n.freeLabel, n.unused)
	assert.Greater(t, n.files, 150)
	assert.Greater(t, n.exact, 5000) // the example files give most of them
}

// sameProgram reports whether a and b parse to the same program: the
// same threads, initial state, final condition and header, over the same
// locations where any of it names them (a parameter no thread uses
// names a location nothing reads or writes).
func sameProgram(t *testing.T, f string, a, b []byte) bool {
	t.Helper()
	ta, err := litmus.Parse(f, a)
	require.NoError(t, err)
	tb, err := litmus.Parse(f, b)
	require.NoError(t, err)
	return assert.ObjectsAreEqual(programOf(ta), programOf(tb))
}

// programOf is what of t a run can tell apart: positions and unused
// locations dropped.
func programOf(t *litmus.Test) litmus.Test {
	used := map[string]bool{}
	for l := range t.Init {
		used[l] = true
	}
	t.Cond.Locs(func(l string) { used[l] = true })
	var walk func([]litmus.Stmt)
	walk = func(ss []litmus.Stmt) {
		for _, s := range ss {
			switch {
			case s.Access != nil:
				used[s.Access.Loc] = true
			case s.Dev != nil && s.Dev.Load != nil:
				used[s.Dev.Load.Loc] = true
			case s.If != nil:
				walk(s.If.Then)
				walk(s.If.Else)
			case s.Loop != nil:
				walk(s.Loop.Body)
				walk(s.Loop.Post)
			}
		}
	}
	out := *t
	out.Threads = nil
	for _, th := range t.Threads {
		walk(th.Body)
		out.Threads = append(out.Threads, litmus.Thread{Body: th.Body})
	}
	out.Locs = nil
	for _, l := range t.Locs {
		if used[l] {
			out.Locs = append(out.Locs, l)
		}
	}
	out.LocAt, out.RegInitAt = nil, nil
	return out
}

// occursAt reports whether an identifier text stands at line:col.
func occursAt(toks []litmus.Tok, text string, line, col int) bool {
	for _, o := range toks {
		if o.Ident && o.Text == text && o.Line == line && o.Col == col {
			return true
		}
	}
	return false
}

// headerWord is a word of a header line: a key, or a word of its value.
var headerWord = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_]*`)

// typoHeader misspells the key and each word of the value of every header
// line of f, one at a time, and requires a refusal on that line. It
// returns how many it mutated.
func typoHeader(t *testing.T, f, src string) int {
	t.Helper()
	lines := strings.Split(src, "\n")
	n := 0
	inHeader := false
	for i, l := range lines {
		if strings.Contains(l, "(*") && i < 3 {
			inHeader = true
		}
		if !inHeader {
			continue
		}
		if m := litmus.HeaderKey.FindStringSubmatchIndex(l); m != nil && slices.Contains(litmus.HeaderKeys, strings.ToLower(l[m[4]:m[5]])) {
			for _, w := range headerWord.FindAllStringIndex(l[m[4]:], -1) {
				a, b := m[4]+w[0], m[4]+w[1]
				if strings.ToLower(l[a:b]) == "on" && l[m[4]:m[5]] != l[a:b] {
					continue // "unsafe on LKMM": the joining word
				}
				mutated := slices.Clone(lines)
				mutated[i] = l[:a] + misspell(l[a:b], map[string]bool{}) + l[b:]
				err := readChecked(f, []byte(strings.Join(mutated, "\n")))
				var pe *litmus.Error
				if assert.True(t, errors.As(err, &pe), "%s:%d: %q misspelt in %q: want a refusal, got %v", f, i+1, l[a:b], l, err) {
					assert.Equal(t, i+1, pe.Line, "%s: %q misspelt in %q: %v", f, l[a:b], l, err)
				}
				n++
			}
		}
		if strings.Contains(l, "*)") {
			break
		}
	}
	return n
}

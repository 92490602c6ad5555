package litmus_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flushproof/flushproof/internal/litmusvariants"
	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// FuzzParse: no input makes the parser panic or hang. A file it refuses
// gives an *Error at a line and column inside the file; a file it reads
// is judged under SC with a small state budget, which may refuse it or
// run out, but never panics. The seeds are the litmus corpus (the
// kernel's tests and ours, props/testdata/litmus) and the command's test
// files. In CI: go test ./model/litmus -run '^$' -fuzz FuzzParse
// -fuzztime 400000x.
func FuzzParse(f *testing.F) {
	addSeeds(f, "../../props/testdata/litmus", "../../cmd/flushproof/testdata/litmus")
	f.Fuzz(func(t *testing.T, src []byte) {
		test, err := litmus.Parse("f.litmus", src)
		if err != nil {
			var pe *litmus.Error
			if !errors.As(err, &pe) {
				t.Fatalf("not an *Error: %v", err)
			}
			lines := strings.Count(string(src), "\n") + 1
			if pe.Line < 1 || pe.Line > lines || pe.Col < 1 {
				t.Fatalf("error outside the file (%d lines): %v", lines, err)
			}
			return
		}
		_, _ = litmus.Judge(durable.Operational{Model: memory.SC, MaxStates: 20_000}, test)
	})
}

// FuzzCheck: no input makes the durability checker panic or hang. A file
// the parser or the header reader refuses gives an *Error inside the
// file; a file it reads is checked under SC and LKMM with a small state
// budget: it may be SAFE, UNSAFE, cut short or an error row, never a
// panic. The seeds are the example files and their variants
// (examples/litmus), the litmus corpus, and the checker's own bad files
// (model/durable/testdata/durable). In CI: go test ./model/litmus -run
// '^$' -fuzz FuzzCheck -fuzztime 100000x.
func FuzzCheck(f *testing.F) {
	addExampleSeeds(f, "../../examples/litmus")
	addSeeds(f, "../durable/testdata/durable", "../../props/testdata/litmus")
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := strings.Count(string(src), "\n") + 1
		inFile := func(err error) {
			var pe *litmus.Error
			if !errors.As(err, &pe) {
				t.Fatalf("not an *Error: %v", err)
			}
			if pe.Line < 1 || pe.Line > lines || pe.Col < 1 {
				t.Fatalf("error outside the file (%d lines): %v", lines, err)
			}
		}
		test, err := litmus.Parse("f.litmus", src)
		if err != nil {
			inFile(err)
			return
		}
		d, err := durable.Read("f.litmus", test)
		if err != nil {
			inFile(err)
			return
		}
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			r, err := d.Search(durable.Config{Model: m, Device: d.Devices[0], Failures: d.Failures, Crash: d.Crash}, explore.Options{MaxStates: 3000, Workers: 1})
			if err != nil {
				if !strings.HasPrefix(err.Error(), "f.litmus") {
					t.Fatalf("an error that does not name the file: %v", err)
				}
				continue
			}
			if r.Violation != nil {
				_ = r.Violation.Timeline()
			}
		}
	})
}

// addSeeds adds every .litmus file of dirs to f's seed corpus; a
// directory without one is an error.
func addSeeds(f *testing.F, dirs ...string) {
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.litmus"))
		if err != nil || len(files) == 0 {
			f.Fatalf("no seed corpus in %s: %v", dir, err)
		}
		for _, p := range files {
			src, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			addSeed(f, src)
		}
	}
}

// addExampleSeeds adds every file of examples/litmus (root) and every
// variant kept there as a patch, its base file's text with the patch
// applied (litmusvariants.Tree), to f's seed corpus.
func addExampleSeeds(f *testing.F, root string) {
	files, err := litmusvariants.Tree(root)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed corpus in %s: %v", root, err)
	}
	for _, v := range files {
		addSeed(f, v.Text)
	}
}

// addSeed adds src and its typoSeeds to f's seed corpus.
func addSeed(f *testing.F, src []byte) {
	f.Add(src)
	for _, m := range typoSeeds(src) {
		f.Add(m)
	}
}

// typoSeeds returns up to four copies of src with one identifier
// misspelt each (as TestTypoRefusedAtItsPlace misspells them), so that
// the fuzzer starts from files the parser must refuse by name as well.
func typoSeeds(src []byte) [][]byte {
	toks, err := litmus.Lex(string(src))
	if err != nil {
		return nil
	}
	var idents []litmus.Tok
	taken := map[string]bool{}
	for _, t := range toks {
		if t.Ident {
			taken[t.Text] = true
			if !typoKeywords[t.Text] {
				idents = append(idents, t)
			}
		}
	}
	offs := lineOffsets(string(src))
	var out [][]byte
	for i := 0; i < len(idents) && len(out) < 4; i += max(1, len(idents)/4) {
		t := idents[i]
		at := offs[t.Line] + t.Col - 1
		m := string(src[:at]) + misspell(t.Text, taken) + string(src[at+len(t.Text):])
		out = append(out, []byte(m))
	}
	return out
}

// Package litmusvariants reads the durability litmus examples as
// examples/litmus keeps them (docs/durable-litmus.md): a directory per
// protocol family holds its base files (.litmus) and its variants as
// patches (.patch), each a diff -u of one base file of the same directory
// that also changes the base's "C NAME" line to the variant's name. It
// gives every base and every variant with its text, the patch applied,
// for the tests that read each example program (the typo and fuzz tests
// of model/litmus, model/durable's reductions, props).
//
// A variant's patch must apply where its hunks say (no offset, no fuzz):
// it is a diff of the file beside it, not of an older copy.
package litmusvariants

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flushproof/flushproof/internal/patchapply"
)

// File is a base file or a variant of one.
type File struct {
	Base  string // the .litmus file
	Patch string // the variant's .patch, "" for the base itself
	Text  []byte // Base's text with Patch applied
}

// Label names f in messages: its base file, or its patch.
func (f File) Label() string {
	if f.Patch != "" {
		return f.Patch
	}
	return f.Base
}

// Name is the test's name, from the text's "C NAME" line (its first line
// that is not blank), or "" if it has none.
func (f File) Name() string {
	for _, l := range strings.Split(string(f.Text), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if n, ok := strings.CutPrefix(l, "C"); ok && (strings.HasPrefix(n, " ") || strings.HasPrefix(n, "\t")) {
				return strings.TrimSpace(n)
			}
			return ""
		}
	}
	return ""
}

// Tree returns the files of root and of each directory in it (one level:
// a family's directory), as Dir gives them, directories in name order
// after root's own files.
func Tree(root string) ([]File, error) {
	out, err := Dir(root)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		fs, err := Dir(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// Dir returns the base files of dir in name order, each followed by the
// variants patched on it in the order of their patches' names. A patch
// that changes no base of dir, or more than one file, or whose hunks do
// not apply exactly where they say, is an error.
func Dir(dir string) ([]File, error) {
	bases, err := filepath.Glob(filepath.Join(dir, "*.litmus"))
	if err != nil {
		return nil, err
	}
	patches, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		return nil, err
	}
	sort.Strings(bases)
	sort.Strings(patches)
	text := map[string][]byte{}
	variants := map[string][]File{}
	for _, b := range bases {
		if text[b], err = os.ReadFile(b); err != nil {
			return nil, err
		}
	}
	for _, path := range patches {
		v, err := apply(path, bases, text)
		if err != nil {
			return nil, err
		}
		variants[v.Base] = append(variants[v.Base], v)
	}
	var out []File
	for _, b := range bases {
		out = append(out, File{Base: b, Text: text[b]})
		out = append(out, variants[b]...)
	}
	return out, nil
}

// apply reads the patch at path and applies it to the one of bases it
// changes.
func apply(path string, bases []string, text map[string][]byte) (File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	p, err := patchapply.Parse(path, src)
	if err != nil {
		return File{}, err
	}
	if len(p.Files) != 1 {
		return File{}, fmt.Errorf("%s: changes %d files (%s); a variant changes one base file", path, len(p.Files), strings.Join(p.Targets(), ", "))
	}
	var base string
	for _, b := range bases {
		fd, err := p.For(b)
		if err != nil {
			return File{}, err
		}
		if fd == nil {
			continue
		}
		if base != "" {
			return File{}, fmt.Errorf("%s: both %s and %s could be the file it changes", path, base, b)
		}
		base = b
	}
	if base == "" {
		return File{}, fmt.Errorf("%s: changes %s, which is no base file of %s", path, p.Targets()[0], filepath.Dir(path))
	}
	out, notes, err := p.Apply(p.Files[0], text[base])
	if err != nil {
		return File{}, err
	}
	for _, n := range notes {
		if n.Offset != 0 || n.Fuzz != 0 {
			return File{}, fmt.Errorf("%s: hunk #%d applies to %s at line %d only with an offset of %d lines and fuzz %d: not a diff of the file as it is", path, n.Hunk, base, n.Line, n.Offset, n.Fuzz)
		}
	}
	return File{Base: base, Patch: path, Text: out}, nil
}

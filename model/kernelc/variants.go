package kernelc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flushproof/flushproof/internal/patchapply"
	"github.com/flushproof/flushproof/model/litmus"
)

// Variants as patches: a durability litmus file or a kernel C harness,
// with unified diffs applied in memory before it is read (check -patch).
// A harness takes a kernel patch's hunks for fs/xfs/xfs_file.c in its
// sections marked as that file's (Sections), and a diff of the harness
// itself anywhere.

// ReadPatches reads patch files for the files to be checked. Each patch
// must change at least one of them (for a harness: one of the kernel
// files its sections hold, or the harness itself): a patch that changes
// none is an error, not a no-op; note is told of each file diff left out.
func ReadPatches(paths, files []string, note func(string)) ([]*patchapply.Patch, error) {
	var holds []string
	for _, f := range files {
		holds = append(holds, f)
		if !IsHarness(f) {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, s := range Sections(src) {
			if !slices.Contains(holds, s.Path) {
				holds = append(holds, s.Path)
			}
		}
	}
	var out []*patchapply.Patch
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		p, err := patchapply.Parse(path, src)
		if err != nil {
			return nil, err
		}
		taken, left, err := p.Split(holds)
		if err != nil {
			return nil, err
		}
		if len(taken) == 0 {
			return nil, fmt.Errorf("%s changes %s, none of the files checked (%s)", path, strings.Join(left, ", "), strings.Join(holds, ", "))
		}
		for _, l := range left {
			note(fmt.Sprintf("%s: its changes to %s are left out: not among the files checked", path, l))
		}
		out = append(out, p)
	}
	return out, nil
}

// ReadFile reads the litmus file or harness f with the patches that
// change it applied in order. A patched file is named "f (with p.patch)"
// in errors (their lines are the patched text's) and its test gains "+p"
// for each patch, so that its rows do not take the unpatched file's
// names; but a patch that changes a litmus file's "C NAME" line names
// the test itself (a variant kept as a patch, examples/litmus), so its
// test is the name that line gives, with "+p" only for the patches
// applied after the last such one. A hunk placed with fuzz (or, in a
// litmus file, at an offset) is told to note, as patch says it.
func ReadFile(f string, patches []*patchapply.Patch, note func(string)) (*litmus.Test, error) {
	src, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	var applied []string
	var suffix []string // the patches after the last that renamed the test
	for _, p := range patches {
		if IsHarness(f) {
			var notes []patchapply.Applied
			var done []string
			if src, notes, done, err = p.ApplyHarness(f, src, Sections); err != nil {
				return nil, err
			}
			for _, n := range notes {
				// A harness's lines are not the kernel file's: only
				// fuzz is worth a note.
				if n.Fuzz != 0 {
					note(fmt.Sprintf("%s: hunk #%d of %s applied to %s at line %d with fuzz %d", p.Name, n.Hunk, n.File, f, n.Line, n.Fuzz))
				}
			}
			if len(done) > 0 {
				applied = append(applied, p.Name)
				suffix = append(suffix, p.Name)
			}
			continue
		}
		fd, err := p.For(f)
		if err != nil {
			return nil, err
		}
		if fd == nil {
			continue
		}
		var notes []patchapply.Applied
		before := nameLine(src)
		if src, notes, err = p.Apply(fd, src); err != nil {
			return nil, err
		}
		for _, n := range notes {
			if n.Offset != 0 || n.Fuzz != 0 {
				note(fmt.Sprintf("%s: hunk #%d applied to %s at line %d (offset %d lines, fuzz %d)", p.Name, n.Hunk, f, n.Line, n.Offset, n.Fuzz))
			}
		}
		applied = append(applied, p.Name)
		if nameLine(src) != before {
			suffix = nil
		} else {
			suffix = append(suffix, p.Name)
		}
	}
	name := f
	if len(applied) > 0 {
		name = fmt.Sprintf("%s (with %s)", f, strings.Join(applied, ", "))
	}
	var t *litmus.Test
	if IsHarness(f) {
		t, err = parseAs(name, strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), src)
	} else {
		t, err = litmus.Parse(name, src)
	}
	if err != nil {
		return nil, err
	}
	for _, a := range suffix {
		t.Name += "+" + strings.TrimSuffix(filepath.Base(a), filepath.Ext(a))
	}
	return t, nil
}

// nameLine is a litmus file's "C NAME" line as litmus.Parse takes it:
// its first line that is not blank, trimmed.
func nameLine(src []byte) string {
	for _, l := range strings.Split(string(src), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

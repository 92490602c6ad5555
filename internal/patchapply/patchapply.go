// Package patchapply applies a unified diff (as diff -u, git diff or git
// format-patch write it, a mailing list's patch included) to a file's text
// in memory, placing each hunk as GNU patch does: where its line numbers
// say, or else at the nearest offset where its context and removed lines
// match, or else with up to MaxFuzz lines of context dropped at each end.
// Parsing is github.com/bluekeyes/go-gitdiff's; it applies only at the
// exact line numbers, so the placement is here.
//
// Only changes to an existing text file are applied: a patch that
// creates, deletes, renames, copies or binary-patches a file is refused,
// as is a hunk that applies nowhere, with the hunk's number and header.
package patchapply

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// MaxFuzz is how many context lines a hunk may lose at each end, as GNU
// patch's default.
const MaxFuzz = 2

// Patch is a parsed patch file.
type Patch struct {
	Name  string // the patch file's name, for messages
	Files []*gitdiff.File
}

// Parse reads a patch. A patch with no file in it is an error.
func Parse(name string, src []byte) (*Patch, error) {
	files, _, err := gitdiff.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no file diff in it (want a unified diff: lines starting ---, +++ and @@)", name)
	}
	for _, f := range files {
		switch {
		case f.IsBinary:
			return nil, fmt.Errorf("%s: %s: a binary patch", name, f.NewName)
		case f.IsNew || f.IsDelete || f.IsRename || f.IsCopy:
			return nil, fmt.Errorf("%s: %s: the patch creates, deletes, renames or copies a file; only changes to an existing file apply", name, target(f))
		}
	}
	return &Patch{Name: name, Files: files}, nil
}

// target is the path a file diff changes, without the a/ or b/ that git
// and diff -u a/x b/x put before it (patch -p1).
func target(f *gitdiff.File) string {
	n := f.OldName
	if n == "" {
		n = f.NewName
	}
	if strings.HasPrefix(n, "a/") || strings.HasPrefix(n, "b/") {
		n = n[2:]
	}
	return filepath.Clean(n)
}

// Targets are the paths the patch changes.
func (p *Patch) Targets() []string {
	var out []string
	for _, f := range p.Files {
		out = append(out, target(f))
	}
	return out
}

// For returns the file diff of p that changes path, or nil: the one whose
// target is path, or is a suffix of it at a directory boundary (a patch
// made at the top of a tree applies to the same file named from anywhere),
// or has path's base name when no target has more of it. Two equally good
// matches are an error.
func (p *Patch) For(path string) (*gitdiff.File, error) {
	clean := filepath.ToSlash(filepath.Clean(path))
	best, score, tie := (*gitdiff.File)(nil), 0, false
	for _, f := range p.Files {
		t := filepath.ToSlash(target(f))
		s := 0
		switch {
		case t == clean:
			s = 3
		case strings.HasSuffix(clean, "/"+t) || strings.HasSuffix(t, "/"+clean):
			s = 2
		case filepath.Base(t) == filepath.Base(clean):
			s = 1
		}
		switch {
		case s > score:
			best, score, tie = f, s, false
		case s == score && s > 0:
			tie = true
		}
	}
	if tie {
		return nil, fmt.Errorf("%s: more than one of its files could be %s", p.Name, path)
	}
	return best, nil
}

// Target is the path a file diff changes (patch -p1).
func Target(f *gitdiff.File) string { return target(f) }

// Split returns the targets of p's file diffs that one of files takes
// (For) and those that none does.
func (p *Patch) Split(files []string) (taken, left []string, err error) {
	matched := map[*gitdiff.File]bool{}
	for _, f := range files {
		fd, err := p.For(f)
		if err != nil {
			return nil, nil, err
		}
		matched[fd] = fd != nil
	}
	for _, fd := range p.Files {
		if matched[fd] {
			taken = append(taken, target(fd))
		} else {
			left = append(left, target(fd))
		}
	}
	return taken, left, nil
}

// Applied is what Apply did with one hunk: where it went and with how
// much offset and fuzz, for a note like patch's.
type Applied struct {
	File   string // the file diff's target (ApplyHarness)
	Hunk   int    // from 1
	Line   int    // the first line it replaced, from 1
	Offset int    // lines from where its header said (as patch reports it)
	Fuzz   int    // context lines dropped at each end
}

// ErrHunk is wrapped by a hunk that applies nowhere.
var ErrHunk = errors.New("hunk does not apply")

// Apply applies f's hunks to src, in order, each after the one before.
func (p *Patch) Apply(f *gitdiff.File, src []byte) ([]byte, []Applied, error) {
	return p.ApplyIn(f, src, nil)
}

// Range is a span of a file's lines, from 1, both ends included.
type Range struct{ First, Last int }

// ApplyIn is Apply with each hunk placed wholly inside one of ranges (all
// of src if there are none): the parts of a kernel C harness that hold
// the code of the file f changes.
func (p *Patch) ApplyIn(f *gitdiff.File, src []byte, ranges []Range) ([]byte, []Applied, error) {
	lines := splitLines(src)
	inside := func(pos, n int) bool {
		if len(ranges) == 0 {
			return true
		}
		for _, r := range ranges {
			if pos >= r.First-1 && pos+n <= r.Last {
				return true
			}
		}
		return false
	}
	var out []string
	var notes []Applied
	at, shift := 0, 0 // next unconsumed line of src; where hunks moved so far
	for i, frag := range f.TextFragments {
		old, repl, lead, trail := sides(frag)
		want := int(frag.OldPosition) - 1 + shift
		if len(old) == 0 { // a pure addition: after its position
			want = int(frag.OldPosition) + shift
		}
		pos, fuzz, ok := -1, 0, false
		for fuzz = 0; fuzz <= MaxFuzz && !ok; fuzz++ {
			dl, dt := min(fuzz, lead), min(fuzz, trail)
			if fuzz > 0 && dl == 0 && dt == 0 {
				continue
			}
			o := old[dl : len(old)-dt]
			if len(o) == 0 && len(old) > 0 {
				break // nothing left to place it by
			}
			if pos = find(lines, o, at, want+dl, inside); pos >= 0 {
				ok = true
				out = append(out, lines[at:pos]...)
				out = append(out, repl[dl:len(repl)-dt]...)
				at = pos + len(o)
				shift = pos - dl - (int(frag.OldPosition) - 1)
				if len(old) == 0 {
					shift = pos - int(frag.OldPosition)
				}
				notes = append(notes, Applied{Hunk: i + 1, Line: pos + 1, Offset: shift, Fuzz: max(dl, dt)})
				break
			}
		}
		if !ok {
			where := "in the file"
			if len(ranges) > 0 {
				var rs []string
				for _, r := range ranges {
					rs = append(rs, fmt.Sprintf("%d-%d", r.First, r.Last))
				}
				where = fmt.Sprintf("in the harness's code from %s (lines %s)", target(f), strings.Join(rs, ", "))
			}
			return nil, nil, fmt.Errorf("%s: hunk #%d (%s) of %s: %w: its %d context and removed lines are nowhere %s after the hunk before it, even with %d lines of context dropped at each end",
				p.Name, i+1, strings.TrimSpace(frag.Header()), target(f), ErrHunk, len(old), where, MaxFuzz)
		}
	}
	out = append(out, lines[at:]...)
	return []byte(strings.Join(out, "")), notes, nil
}

// sides returns a hunk's old lines (context and removed), its new lines
// (context and added), and how many context lines lead and trail it.
func sides(frag *gitdiff.TextFragment) (old, repl []string, lead, trail int) {
	for _, l := range frag.Lines {
		if l.Old() {
			old = append(old, l.Line)
		}
		if l.New() {
			repl = append(repl, l.Line)
		}
	}
	for _, l := range frag.Lines {
		if l.Op != gitdiff.OpContext {
			break
		}
		lead++
	}
	for i := len(frag.Lines) - 1; i >= 0 && frag.Lines[i].Op == gitdiff.OpContext; i-- {
		trail++
	}
	if lead == len(frag.Lines) { // all context: nothing to change
		trail = 0
	}
	return old, repl, lead, trail
}

// find returns the position at or after from where lines holds o, the
// nearest to want (before it first on a tie, as patch), or -1; inside
// says which positions may take it.
func find(lines, o []string, from, want int, inside func(pos, n int) bool) int {
	fits := func(p int) bool {
		if p < from || p+len(o) > len(lines) || !inside(p, len(o)) {
			return false
		}
		for i, l := range o {
			if lines[p+i] != l {
				return false
			}
		}
		return true
	}
	// A header's line number can be anything (a fuzzed or hand-edited
	// patch says -9000000000000000000): only from..len(lines) can hold
	// o, and clamping want into that range keeps the order of nearness
	// while bounding the walk by the file's length.
	want = max(from, min(want, len(lines)))
	for d := 0; want-d >= from || want+d <= len(lines); d++ {
		if fits(want - d) {
			return want - d
		}
		if d > 0 && fits(want+d) {
			return want + d
		}
	}
	return -1
}

// splitLines splits src after each newline; a last line without one is
// kept as it is.
func splitLines(src []byte) []string {
	var out []string
	s := string(src)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Section is a part of a kernel C harness that holds the code of one
// kernel file, by its path (fs/xfs/xfs_file.c).
type Section struct {
	Path string
	Range
}

// ApplyHarness applies to the harness named self the file diffs of p
// that change the files its sections come from, in the patch's order,
// each hunk within the sections of its file (ApplyIn), and a file diff
// of self itself (a mutant's change to the harness's Expect line, say)
// anywhere in it. sections reads them from the text, again after each
// file diff, since the lines moved. It returns the text, the notes, and
// the targets of the file diffs applied; a file diff of a file the
// harness does not hold is not applied (Split says which).
func (p *Patch) ApplyHarness(self string, src []byte, sections func([]byte) []Section) ([]byte, []Applied, []string, error) {
	var notes []Applied
	var done []string
	mine, err := p.For(self)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, fd := range p.Files {
		var ranges []Range
		for _, s := range sections(src) {
			if best, err := p.For(s.Path); err == nil && best == fd && fd != mine {
				ranges = append(ranges, s.Range)
			}
		}
		if len(ranges) == 0 && fd != mine {
			continue
		}
		out, n, err := p.ApplyIn(fd, src, ranges)
		if err != nil {
			return nil, nil, nil, err
		}
		for i := range n {
			n[i].File = target(fd)
		}
		src, notes, done = out, append(notes, n...), append(done, target(fd))
	}
	return src, notes, done, nil
}

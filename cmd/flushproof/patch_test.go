package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	examplesDir = "../../examples/litmus/"
	// flushseqBase is the flush sequence's base file, gePatch its mutant
	// >= as examples/litmus keeps it: a diff -u of the mutant's file
	// (that also gives the mutant its name).
	flushseqBase = examplesDir + "xfs-flushseq/xfs-flushseq-patched.litmus"
	gePatch      = examplesDir + "xfs-flushseq/mutant-ge.patch"
)

// TestCheckPatch: the >= mutant as a patch to the patched flush sequence
// gives, row for row, the rows of the mutant's own file (written here by
// applying the patch's hunks where they say, applyAt): the same names
// (the patch changes the C NAME line), verdicts, state counts and
// counterexamples. A patch that leaves the name line gives rows named
// after the file and the patch. The file on disk is not written.
func TestCheckPatch(t *testing.T) {
	before, err := os.ReadFile(flushseqBase)
	require.NoError(t, err)
	patch, err := os.ReadFile(gePatch)
	require.NoError(t, err)
	mutant := filepath.Join(t.TempDir(), "xfs-flushseq-mutant-ge.litmus")
	require.NoError(t, os.WriteFile(mutant, applyAt(t, string(patch), string(before)), 0o644))

	want, wantSum, code := checkJSON(t, mutant)
	require.Equal(t, exitOK, code)
	got, gotSum, code := checkJSON(t, "-patch", gePatch, flushseqBase)
	require.Equal(t, exitOK, code)
	require.Len(t, got, len(want))
	assert.Equal(t, wantSum.UnsafeExpected, gotSum.UnsafeExpected)
	assert.Positive(t, gotSum.UnsafeExpected, "the mutant is a negative control: caught")
	for i := range want {
		assert.Equal(t, "xfs-flushseq-mutant-ge", got[i].Model)
		assert.Equal(t, want[i].Row, got[i].Row)
		assert.Equal(t, want[i].Verdict, got[i].Verdict, want[i].Row)
		assert.Equal(t, want[i].States, got[i].States, want[i].Row)
		assert.Equal(t, want[i].Negative, got[i].Negative, want[i].Row)
		assert.Equal(t, want[i].Counterexample, got[i].Counterexample, want[i].Row)
	}

	// Without its first hunk (the name line) the rows are the patched
	// file's, +PATCH.
	hunks := strings.Split(string(patch), "\n@@ ")
	keep := filepath.Join(t.TempDir(), "ge-code.patch")
	require.NoError(t, os.WriteFile(keep, []byte(hunks[0]+"\n@@ "+strings.Join(hunks[2:], "\n@@ ")), 0o644))
	got, _, code = checkJSON(t, "-run", " SC ", "-patch", keep, flushseqBase)
	require.Equal(t, exitOK, code)
	require.NotEmpty(t, got)
	for _, r := range got {
		assert.Equal(t, "xfs-flushseq-patched+ge-code", r.Model)
		assert.Equal(t, "UNSAFE", r.Verdict, r.Row)
	}

	after, err := os.ReadFile(flushseqBase)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the file checked is not written")
}

// applyAt applies the hunks of a one-file unified diff to src at the
// lines their headers give, each context and removed line checked: an
// applier that places nothing, to hold check -patch's to.
func applyAt(t *testing.T, patch, src string) []byte {
	t.Helper()
	lines := strings.SplitAfter(src, "\n")
	var out []string
	at := 0 // lines of src consumed
	var hunk int
	for _, l := range strings.SplitAfter(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "@@ "):
			_, err := fmt.Sscanf(l, "@@ -%d,", &hunk)
			require.NoError(t, err, l)
			require.GreaterOrEqual(t, hunk-1, at, l)
			out = append(out, lines[at:hunk-1]...)
			at = hunk - 1
		case hunk == 0: // the header
		case strings.HasPrefix(l, " "), strings.HasPrefix(l, "-"):
			require.Equal(t, l[1:], lines[at], "hunk line %q", l)
			if l[0] == ' ' {
				out = append(out, lines[at])
			}
			at++
		case strings.HasPrefix(l, "+"):
			out = append(out, l[1:])
		}
	}
	return []byte(strings.Join(append(out, lines[at:]...), ""))
}

// TestCheckPatchPlacement: a hunk placed at an offset is said on stderr;
// one whose lines are nowhere in the file is refused with the hunk's
// number and header, exit 2; so is a patch that names none of the files,
// and -patch without a FILE.
func TestCheckPatchPlacement(t *testing.T) {
	src, err := os.ReadFile(flushseqBase)
	require.NoError(t, err)
	dir := t.TempDir()
	moved := filepath.Join(dir, "xfs-flushseq-patched.litmus")
	lines := strings.SplitAfterN(string(src), "\n", 5) // two comment lines after the fourth
	require.NoError(t, os.WriteFile(moved, []byte(strings.Join(lines[:4], "")+" * one\n * two\n"+lines[4]), 0o644))
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-run", "^xfs-flushseq-mutant-ge.* SC ", "-patch", gePatch, moved}, &out, &errb)
	assert.Equal(t, exitOK, code, errb.String())
	assert.NotContains(t, errb.String(), "hunk #1 applied", "the first hunk is where its header says")
	assert.Contains(t, errb.String(), "hunk #2 applied to "+moved+" at line 10 (offset 2 lines, fuzz 0)")
	assert.Contains(t, errb.String(), "hunk #4 applied to "+moved+" at line 73 (offset 2 lines, fuzz 0)")

	edited := filepath.Join(dir, "edited", "xfs-flushseq-patched.litmus")
	require.NoError(t, os.MkdirAll(filepath.Dir(edited), 0o755))
	require.NoError(t, os.WriteFile(edited, []byte(strings.ReplaceAll(string(src), "if (c > seq) {", "if (c > seq + 0) {")), 0o644))
	errb.Reset()
	code = run([]string{"check", "-q", "-patch", gePatch, edited}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), gePatch+": hunk #3 (@@ -32,7 +34,7 @@) of examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus: hunk does not apply")

	errb.Reset()
	code = run([]string{"check", "-q", "-patch", gePatch, examplesDir + "xfs-flushseq/xfs-flushseq-baseline.litmus"}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "changes examples/litmus/xfs-flushseq/xfs-flushseq-patched.litmus, none of the files checked")

	// A patch that also changes a file not checked: that part is left
	// out, and stderr says so.
	ge, err := os.ReadFile(gePatch)
	require.NoError(t, err)
	both := filepath.Join(dir, "both.patch")
	require.NoError(t, os.WriteFile(both, append(ge, "--- a/fs/xfs/xfs_file.c\n+++ b/fs/xfs/xfs_file.c\n@@ -1 +1 @@\n-x\n+y\n"...), 0o644))
	errb.Reset()
	code = run([]string{"check", "-q", "-run", "^xfs-flushseq-mutant-ge.* SC ", "-patch", both, flushseqBase}, &out, &errb)
	assert.Equal(t, exitOK, code, errb.String())
	assert.Contains(t, errb.String(), both+": its changes to fs/xfs/xfs_file.c are left out: not among the files checked")

	errb.Reset()
	code = run([]string{"check", "-q", "-patch", gePatch}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "-patch apply to FILEs, and none was given")
}

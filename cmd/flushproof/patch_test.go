package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	examplesDir = "../../examples/litmus/"
	gePatch     = "testdata/patches/xfs-flushseq-ge.patch"
)

// TestCheckPatch: the >= mutant as a patch to the patched flush sequence
// (testdata/patches/xfs-flushseq-ge.patch, diff -u of the two example
// files) gives, row for row, the verdicts, state counts and
// counterexamples of the mutant's own file; the rows' names say the patch.
// The file on disk is not written.
func TestCheckPatch(t *testing.T) {
	target := examplesDir + "xfs-flushseq-patched.litmus"
	before, err := os.ReadFile(target)
	require.NoError(t, err)

	want, wantSum, code := checkJSON(t, examplesDir+"xfs-flushseq-mutant-ge.litmus")
	require.Equal(t, exitOK, code)
	got, gotSum, code := checkJSON(t, "-patch", gePatch, target)
	require.Equal(t, exitOK, code)
	require.Len(t, got, len(want))
	assert.Equal(t, wantSum.UnsafeExpected, gotSum.UnsafeExpected)
	assert.Positive(t, gotSum.UnsafeExpected, "the mutant is a negative control: caught")
	for i := range want {
		assert.Equal(t, want[i].Model+"+xfs-flushseq-ge", got[i].Model)
		assert.Equal(t, want[i].Verdict, got[i].Verdict, want[i].Row)
		assert.Equal(t, want[i].States, got[i].States, want[i].Row)
		assert.Equal(t, want[i].Negative, got[i].Negative, want[i].Row)
		assert.Equal(t, want[i].Counterexample, got[i].Counterexample, want[i].Row)
	}

	after, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the file checked is not written")
}

// TestCheckPatchPlacement: a hunk placed at an offset is said on stderr;
// one whose lines are nowhere in the file is refused with the hunk's
// number and header, exit 2; so is a patch that names none of the files,
// and -patch without a FILE.
func TestCheckPatchPlacement(t *testing.T) {
	src, err := os.ReadFile(examplesDir + "xfs-flushseq-patched.litmus")
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
	assert.Contains(t, errb.String(), gePatch+": hunk #3 (@@ -32,7 +34,7 @@) of examples/litmus/xfs-flushseq-patched.litmus: hunk does not apply")

	errb.Reset()
	code = run([]string{"check", "-q", "-patch", gePatch, examplesDir + "xfs-flushseq-baseline.litmus"}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "changes examples/litmus/xfs-flushseq-patched.litmus, none of the files checked")

	// A patch that also changes a file not checked: that part is left
	// out, and stderr says so.
	ge, err := os.ReadFile(gePatch)
	require.NoError(t, err)
	both := filepath.Join(dir, "both.patch")
	require.NoError(t, os.WriteFile(both, append(ge, "--- a/fs/xfs/xfs_file.c\n+++ b/fs/xfs/xfs_file.c\n@@ -1 +1 @@\n-x\n+y\n"...), 0o644))
	errb.Reset()
	code = run([]string{"check", "-q", "-run", "^xfs-flushseq-mutant-ge.* SC ", "-patch", both, examplesDir + "xfs-flushseq-patched.litmus"}, &out, &errb)
	assert.Equal(t, exitOK, code, errb.String())
	assert.Contains(t, errb.String(), both+": its changes to fs/xfs/xfs_file.c are left out: not among the files checked")

	errb.Reset()
	code = run([]string{"check", "-q", "-patch", gePatch}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "-patch apply to FILEs, and none was given")
}

package patchapply

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numbered is lines "l1\n" .. "ln\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

const twoHunks = `--- a/dir/f.txt
+++ b/dir/f.txt
@@ -2,5 +2,5 @@
 l2
 l3
-l4
+L4
 l5
 l6
@@ -10,3 +10,4 @@
 l10
 l11
+new
 l12
`

func apply(t *testing.T, patch, src string) (string, []Applied, error) {
	t.Helper()
	p, err := Parse("p.patch", []byte(patch))
	require.NoError(t, err)
	f, err := p.For("dir/f.txt")
	require.NoError(t, err)
	require.NotNil(t, f)
	out, notes, err := p.Apply(f, []byte(src))
	return string(out), notes, err
}

// TestApplyExact: hunks at their stated lines.
func TestApplyExact(t *testing.T) {
	out, notes, err := apply(t, twoHunks, numbered(14))
	require.NoError(t, err)
	want := strings.Replace(numbered(14), "l4\n", "L4\n", 1)
	want = strings.Replace(want, "l11\n", "l11\nnew\n", 1)
	assert.Equal(t, want, out)
	assert.Equal(t, []Applied{{Hunk: 1, Line: 2}, {Hunk: 2, Line: 10}}, notes)
}

// TestApplyOffset: the file has three more lines at the top; each hunk
// applies three lines later, as patch reports "offset 3 lines".
func TestApplyOffset(t *testing.T) {
	src := "x\ny\nz\n" + numbered(14)
	out, notes, err := apply(t, twoHunks, src)
	require.NoError(t, err)
	assert.Contains(t, out, "l3\nL4\nl5\n")
	assert.Contains(t, out, "l11\nnew\nl12\n")
	assert.Equal(t, []Applied{{Hunk: 1, Line: 5, Offset: 3}, {Hunk: 2, Line: 13, Offset: 3}}, notes,
		"each offset from the hunk's header, as patch reports it")
}

// TestApplyFuzz: a context line at the hunk's edge changed in the file:
// the hunk applies with fuzz 1; with both context lines of an end
// changed, fuzz 2; with a removed line changed, nowhere.
func TestApplyFuzz(t *testing.T) {
	src := strings.Replace(numbered(14), "l2\n", "L2 edited\n", 1)
	out, notes, err := apply(t, twoHunks, src)
	require.NoError(t, err)
	assert.Contains(t, out, "L2 edited\nl3\nL4\n")
	assert.Equal(t, 1, notes[0].Fuzz)

	src = strings.Replace(strings.Replace(numbered(14), "l2\n", "L2 edited\n", 1), "l3\n", "L3 edited\n", 1)
	out, notes, err = apply(t, twoHunks, src)
	require.NoError(t, err)
	assert.Contains(t, out, "L3 edited\nL4\nl5\n")
	assert.Equal(t, 2, notes[0].Fuzz)

	src = strings.Replace(numbered(14), "l4\n", "l4 edited\n", 1)
	_, _, err = apply(t, twoHunks, src)
	assert.ErrorIs(t, err, ErrHunk)
	assert.ErrorContains(t, err, "p.patch: hunk #1 (@@ -2,5 +2,5 @@) of dir/f.txt: hunk does not apply")
}

// TestApplyInOrder: a hunk does not apply before the one before it.
func TestApplyInOrder(t *testing.T) {
	patch := `--- f.txt
+++ f.txt
@@ -5,1 +5,1 @@
-l5
+L5
@@ -2,1 +2,1 @@
-l2
+L2
`
	p, err := Parse("p.patch", []byte(patch))
	require.NoError(t, err)
	f, err := p.For("dir/f.txt")
	require.NoError(t, err)
	_, _, err = p.Apply(f, []byte(numbered(6)))
	assert.ErrorContains(t, err, "hunk #2")
}

// TestApplyNoNewline: a last line without a newline, on both sides.
func TestApplyNoNewline(t *testing.T) {
	patch := "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
	p, err := Parse("p.patch", []byte(patch))
	require.NoError(t, err)
	f, _ := p.For("f.txt")
	out, _, err := p.Apply(f, []byte("a\nb"))
	require.NoError(t, err)
	assert.Equal(t, "a\nc", string(out))
}

// TestFor: a patch's file is found by its path, by a path it is a suffix
// of, or by its base name; a file the patch does not name gets nil.
func TestFor(t *testing.T) {
	p, err := Parse("p.patch", []byte(twoHunks))
	require.NoError(t, err)
	for _, path := range []string{"dir/f.txt", "/home/u/src/dir/f.txt", "other/f.txt", "./dir/f.txt"} {
		f, err := p.For(path)
		require.NoError(t, err)
		assert.NotNil(t, f, path)
	}
	f, err := p.For("g.txt")
	require.NoError(t, err)
	assert.Nil(t, f)
	assert.Equal(t, []string{"dir/f.txt"}, p.Targets())
}

// TestParseRefuses: no diff at all, and a patch that makes a new file.
func TestParseRefuses(t *testing.T) {
	_, err := Parse("p.patch", []byte("just words\n"))
	assert.ErrorContains(t, err, "p.patch: no file diff in it")
	_, err = Parse("p.patch", []byte("diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n"))
	assert.ErrorContains(t, err, "creates, deletes, renames or copies a file")
}

// FuzzApply: no patch and file make Parse or Apply panic or hang.
func FuzzApply(f *testing.F) {
	f.Add([]byte(twoHunks), []byte(numbered(14)))
	f.Add([]byte("--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n"), []byte("a\n"))
	f.Add([]byte("--- f\n+++ f\n@@ -3,0 +4,2 @@\n+x\n+y\n"), []byte(numbered(5)))
	f.Fuzz(func(t *testing.T, patch, src []byte) {
		p, err := Parse("p.patch", patch)
		if err != nil {
			return
		}
		for _, fd := range p.Files {
			_, _, _ = p.Apply(fd, src)
		}
	})
}

// TestSplit: of a patch of two files, the one checked is taken and the
// other left, by name.
func TestSplit(t *testing.T) {
	p, err := Parse("p.patch", []byte(twoHunks+"--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-x\n+y\n"))
	require.NoError(t, err)
	taken, left, err := p.Split([]string{"/src/dir/f.txt"})
	require.NoError(t, err)
	assert.Equal(t, []string{"dir/f.txt"}, taken)
	assert.Equal(t, []string{"other.txt"}, left)
}

// TestApplyFarPosition: a hunk header whose line number is far beyond the
// file (or beyond int's range) is placed by its lines, or refused, at
// once: the search for its place is bounded by the file's length.
func TestApplyFarPosition(t *testing.T) {
	for _, pos := range []string{"9000000000000000000", "4611686018427387904", "1000000000000"} {
		p, err := Parse("p.patch", []byte("--- f\n+++ f\n@@ -"+pos+" +1 @@\n-a\n+b\n"))
		require.NoError(t, err, pos)
		out, _, err := p.Apply(p.Files[0], []byte("x\na\n"))
		require.NoError(t, err, pos)
		assert.Equal(t, "x\nb\n", string(out), pos)
		_, _, err = p.Apply(p.Files[0], []byte("x\n"))
		assert.ErrorIs(t, err, ErrHunk, pos)
	}
}

package kernelc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/kernelc"
)

// variantBase is a litmus file the patches below change.
const variantBase = `C base

{}

P0(int *x)
{
	WRITE_ONCE(*x, 1);
}

exists (x=1)
`

// variantPatches are diffs of variantBase: of its name line, its initial
// state, the value stored.
var variantPatches = map[string]string{
	// A variant kept as a patch: its own name line.
	"rename.patch": `Subject: x starts at 0, as the variant named "variant"

--- a/t.litmus
+++ b/t.litmus
@@ -1,6 +1,6 @@
-C base
+C variant
 
-{}
+{ x=0; }
 
 P0(int *x)
 {
`,
	// A change to the code alone, on variantBase or on what the other
	// patches leave.
	"store3.patch": `--- a/t.litmus
+++ b/t.litmus
@@ -6,5 +6,5 @@
 {
-	WRITE_ONCE(*x, 1);
+	WRITE_ONCE(*x, 3);
 }
 
 exists (x=1)
`,
	// The name line alone.
	"name.patch": `--- a/t.litmus
+++ b/t.litmus
@@ -1,3 +1,3 @@
-C base
+C other
 
 {}
`,
	// A rename that leaves a program the parser refuses.
	"broken.patch": `--- a/t.litmus
+++ b/t.litmus
@@ -1,4 +1,4 @@
-C base
+C broken
 
 {}
 
@@ -5,5 +5,5 @@
 P0(int *x)
 {
-	WRITE_ONCE(*x, 1);
+	WRITE_ONCE(*y, 1);
 }
 
`,
}

// TestReadFileVariantName: a patch that changes a litmus file's "C NAME"
// line names the test itself, without "+PATCH"; a patch that leaves the
// line gains its "+PATCH" as before, also after a renaming one; a rename
// after other patches drops theirs. Errors still name the patches.
func TestReadFileVariantName(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "t.litmus")
	require.NoError(t, os.WriteFile(base, []byte(variantBase), 0o644))
	for name, text := range variantPatches {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	read := func(patches ...string) (string, []string, error) {
		var paths []string
		for _, p := range patches {
			paths = append(paths, filepath.Join(dir, p))
		}
		var notes []string
		note := func(s string) { notes = append(notes, s) }
		ps, err := kernelc.ReadPatches(paths, []string{base}, note)
		require.NoError(t, err)
		tt, err := kernelc.ReadFile(base, ps, note)
		if err != nil {
			return "", notes, err
		}
		return tt.Name, notes, nil
	}
	for _, c := range []struct {
		patches []string
		want    string
	}{
		{nil, "base"},
		{[]string{"rename.patch"}, "variant"},
		{[]string{"store3.patch"}, "base+store3"},
		{[]string{"name.patch"}, "other"},
		{[]string{"rename.patch", "store3.patch"}, "variant+store3"},
		{[]string{"store3.patch", "name.patch"}, "other"},
	} {
		got, notes, err := read(c.patches...)
		require.NoError(t, err, "%v", c.patches)
		assert.Equal(t, c.want, got, "%v", c.patches)
		assert.Empty(t, notes, "%v: every hunk where its header says", c.patches)
	}

	_, _, err := read("broken.patch")
	require.Error(t, err)
	assert.Contains(t, err.Error(), base+" (with "+filepath.Join(dir, "broken.patch")+")")
}

package litmusvariants

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const base = "C base\n\n{}\n\nP0(int *x)\n{\n\tWRITE_ONCE(*x, 1);\n}\n\nexists (x=1)\n"

// variant is a patch of base: its name line and the value stored.
const variant = `Subject: store 2

--- a/dir/base.litmus
+++ b/dir/base.litmus
@@ -1,3 +1,3 @@
-C base
+C variant
 
 {}
@@ -4,7 +4,7 @@
 
 P0(int *x)
 {
-	WRITE_ONCE(*x, 1);
+	WRITE_ONCE(*x, 2);
 }
 
 exists (x=1)
`

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

// TestTree: a directory's bases come each with its variants, the patch
// applied; root's own files first.
func TestTree(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"top.litmus":        strings.Replace(base, "C base", "C top", 1),
		"dir/base.litmus":   base,
		"dir/other.litmus":  strings.Replace(base, "C base", "C other", 1),
		"dir/variant.patch": variant,
	})
	fs, err := Tree(root)
	require.NoError(t, err)
	var got []string
	for _, f := range fs {
		got = append(got, f.Name()+" "+filepath.Base(f.Label()))
	}
	assert.Equal(t, []string{"top top.litmus", "base base.litmus", "variant variant.patch", "other other.litmus"}, got)
	assert.Equal(t, filepath.Join(root, "dir", "base.litmus"), fs[2].Base)
	assert.Equal(t, strings.NewReplacer("C base", "C variant", "*x, 1", "*x, 2").Replace(base), string(fs[2].Text))
}

// TestDirRefuses: a patch of no base of its directory, of two files, or
// whose hunks land elsewhere than they say.
func TestDirRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no base": {map[string]string{"dir/other.litmus": base, "dir/variant.patch": variant}, "which is no base file of"},
		"two files": {map[string]string{"dir/base.litmus": base, "dir/variant.patch": variant + strings.ReplaceAll(variant[len("Subject: store 2\n\n"):], "base.litmus", "more.litmus")},
			"changes 2 files"},
		"offset": {map[string]string{"dir/base.litmus": "\n" + base, "dir/variant.patch": variant}, "only with an offset of 1 lines"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, c.files)
			_, err := Dir(filepath.Join(root, "dir"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

package litmusvariants

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamples: every variant in examples/litmus is a patch with a
// Subject line, of a base file beside it, that applies exactly and gives
// the variant its own name; no two files or variants share a name.
func TestExamples(t *testing.T) {
	fs, err := Tree(filepath.Join("..", "..", "examples", "litmus"))
	require.NoError(t, err)
	names := map[string]string{}
	baseName := map[string]string{}
	variants := 0
	for _, f := range fs {
		name := f.Name()
		require.NotEmpty(t, name, f.Label())
		if prev, ok := names[name]; ok {
			t.Errorf("%s and %s are both named %s", prev, f.Label(), name)
		}
		names[name] = f.Label()
		if f.Patch == "" {
			baseName[f.Base] = name
			continue
		}
		variants++
		assert.NotEqual(t, baseName[f.Base], name, "%s: the patch changes the C NAME line", f.Patch)
		src, err := os.ReadFile(f.Patch)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(src), "\n")
		assert.Regexp(t, `^Subject: \S`, first, f.Patch)
	}
	assert.Positive(t, variants)
}

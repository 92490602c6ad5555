package device

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./model -update to create %s", path)
	assert.Equal(t, string(want), got)
}

// TestTimelineGolden pins the rendering of a counterexample: the negative
// control whose emulated FUA skips the post-flush, at the standard bound.
func TestTimelineGolden(t *testing.T) {
	v, err := Check(StandardWorkload(spec.Config{VolatileCache: true}, EmulatedFUANoPostFlush), explore.Options{})
	require.NoError(t, err)
	require.NotNil(t, v.Violation)
	golden(t, "timeline-emulated-fua-no-postflush.golden", v.Violation.Timeline())
}

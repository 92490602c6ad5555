// Package vistest gives a test binary a directory of its own for
// porcupine's HTML visualisations (linearize.VisualizationDir), so that a
// test run leaves nothing in $TMPDIR: the directory is removed when every
// test passed, and kept, with its path printed, when one failed, so that
// the visualisations a failure message names can still be opened.
package vistest

import (
	"fmt"
	"os"
	"testing"
)

// Main runs the tests of m after handing a new temporary directory to use
// (which sets linearize.VisualizationDir; a parameter, so that linearize's
// own tests can use this package without an import cycle) and returns the
// exit code for os.Exit. Call it from the package's TestMain.
func Main(m *testing.M, use func(dir string)) int {
	dir, err := os.MkdirTemp("", "flushproof-test-vis-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "vistest: make a directory for porcupine visualisations: %v\n", err)
		return 1
	}
	use(dir)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "porcupine visualisations of this run are kept in %s\n", dir)
		return code
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "vistest: remove %s: %v\n", dir, err)
		return 1
	}
	return code
}

package iowq_test

import (
	"os"
	"testing"

	"github.com/flushproof/flushproof/internal/vistest"
	"github.com/flushproof/flushproof/linearize"
)

// TestMain keeps porcupine's visualisations in a directory of the run's
// own, removed when every test passed.
func TestMain(m *testing.M) {
	os.Exit(vistest.Main(m, func(dir string) { linearize.VisualizationDir = dir }))
}

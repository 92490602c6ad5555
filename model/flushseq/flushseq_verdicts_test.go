package flushseq_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestFlushSeqVerdicts is the verdict table of the xfs flush-sequence
// protocol: every variant under SC, TSO and Relaxed, explored exhaustively.
// The real variants and the benign one must be SAFE (false-positive
// controls); every mutant must be UNSAFE (negative controls), except the
// missing smp_mb, which only Relaxed without a sleeping waiter exposes. Each
// counterexample must replay.
func TestFlushSeqVerdicts(t *testing.T) {
	for _, c := range flushseq.Checks() {
		t.Run(c.Variant.String()+"/"+c.Memory.String()+"/"+c.Describe(), func(t *testing.T) {
			v, err := flushseq.Check(c, explore.Options{Liveness: true})
			require.NoError(t, err)
			require.NotEqual(t, verdict.Unknown, v.Outcome)
			if !c.ExpectUnsafe() {
				assert.Equal(t, verdict.Safe, v.Outcome, "expected SAFE, got:\n%s", exploretest.Timeline(v))
				return
			}
			require.NotNil(t, v.Violation, "the negative control was not caught")
			assert.Equal(t, explore.Safety, v.Violation.Kind)
			assert.Contains(t, v.Violation.Err.Error(), "fsync returned 0 but its write")
			sys, err := flushseq.NewSystem(c)
			require.NoError(t, err)
			s, err := explore.Replay[flushseq.State](sys, v.Violation.Path)
			require.NoError(t, err, "the counterexample path must replay")
			assert.EqualError(t, sys.Check(s), v.Violation.Err.Error())
		})
	}
}

// TestFlushSeqNoMBTimelineGolden pins the counterexample a kernel developer
// reads for the missing smp_mb: one task's flush is handled before the other
// task's write completes, that task reads a stale `submitted`, skips its
// flush on the strength of the first flush, and a crash then loses its block.
func TestFlushSeqNoMBTimelineGolden(t *testing.T) {
	v, err := flushseq.Check(flushseq.StandardConfig(flushseq.MutantNoMB, memory.Relaxed), explore.Options{})
	require.NoError(t, err)
	require.NotNil(t, v.Violation)
	got := v.Violation.Timeline()
	path := filepath.Join("testdata", "flushseq-no-smp_mb-relaxed.golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./model/flushseq -run Golden -update to create it")
	assert.Equal(t, string(want), got)
	for _, step := range []string{"S = submitted -> 0", "flush (seq 1) completes, covers A", "B's write completes", "skip flush", "a crash now loses it"} {
		assert.Contains(t, got, step)
	}
}

package props

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// spinVariants are the flush sequence's variants the Promela model of
// examples/spin has, by its VARIANT number (the comment at its top).
var spinVariants = []struct {
	n int
	v flushseq.Variant
}{
	{0, flushseq.Baseline},
	{1, flushseq.Patched},
	{2, flushseq.MutantReadBeforeWriteback},
	{3, flushseq.MutantGreaterEqual},
	{4, flushseq.MutantAdvanceOnFailure},
	{5, flushseq.MutantNumberAfterSubmit},
	{6, flushseq.BenignPlainStore},
}

// spinResult is what SPIN's verifier (pan) reported.
type spinResult struct {
	errors int
	states int64
}

var (
	spinErrors = regexp.MustCompile(`(?m)State-vector .*errors: (\d+)$`)
	spinStates = regexp.MustCompile(`(?m)^\s*(\d+) states, stored`)
)

// runSpin verifies examples/spin/xfs-flushseq.pml with SPIN at a bound,
// exhaustively (no bitstate hashing, no depth cut: a run that reaches
// pan's depth limit fails the test rather than passing as SAFE).
func runSpin(t *testing.T, spin, cc string, variant, tasks, rounds int, failures bool) spinResult {
	t.Helper()
	model, err := filepath.Abs("../examples/spin/xfs-flushseq.pml")
	require.NoError(t, err)
	dir := t.TempDir()
	fail := 0
	if failures {
		fail = 1
	}
	run := func(name string, args ...string) string {
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}
	run(spin, fmt.Sprintf("-DTASKS=%d", tasks), fmt.Sprintf("-DROUNDS=%d", rounds),
		fmt.Sprintf("-DVARIANT=%d", variant), fmt.Sprintf("-DFAILURES=%d", fail), "-a", model)
	run(cc, "-O0", "-DSAFETY", "-DCOLLAPSE", "-o", "pan", "pan.c")
	out := run(filepath.Join(dir, "pan"), "-m1000000")
	require.NotContains(t, out, "max search depth too small", "pan cut its search short:\n%s", out)
	m := spinErrors.FindStringSubmatch(out)
	require.NotNil(t, m, "no error count in pan's output:\n%s", out)
	s := spinStates.FindStringSubmatch(out)
	require.NotNil(t, s, "no state count in pan's output:\n%s", out)
	var r spinResult
	r.errors, _ = strconv.Atoi(m[1])
	r.states, _ = strconv.ParseInt(s[1], 10, 64)
	return r
}

// TestSPINAgreesFlushSeq: the flush sequence's state machine under SC and
// the independent Promela model of examples/spin, verified by SPIN, give
// the same verdict for every variant both have, at 2 tasks x 2 fsyncs and
// 3 tasks x 1, with and without flush failures: UNSAFE for every negative
// control, SAFE for the rest (docs/spin.md). Skipped
// when spin or a C compiler is missing (README, "Optional tools"); CI
// installs both.
func TestSPINAgreesFlushSeq(t *testing.T) {
	spin, err := exec.LookPath("spin")
	if err != nil {
		t.Skip("spin is not installed (apt-get install spin)")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler for SPIN's verifier (apt-get install gcc)")
		}
	}
	if _, err := os.Stat("../examples/spin/xfs-flushseq.pml"); err != nil {
		t.Fatal(err)
	}
	type bound struct {
		tasks, rounds int
		failures      bool
	}
	bounds := []bound{{2, 2, false}, {2, 2, true}, {3, 1, false}, {3, 1, true}}
	t.Run("rows", func(t *testing.T) {
		for _, b := range bounds {
			for _, sv := range spinVariants {
				name := fmt.Sprintf("%v/%dx%d/failures=%v", sv.v, b.tasks, b.rounds, b.failures)
				cfg := flushseq.Config{Variant: sv.v, Memory: memory.SC, Tasks: b.tasks, Fsyncs: b.rounds, FlushFailures: b.failures}
				// Every mutant is a negative control both must catch, but
				// the failed-flush mutant without failures, which is the
				// patched code.
				want := cfg.ExpectUnsafe() && (b.failures || sv.v != flushseq.MutantAdvanceOnFailure)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					got, err := flushseq.Check(cfg, explore.Options{Workers: 1})
					require.NoError(t, err)
					require.Contains(t, []verdict.Outcome{verdict.Safe, verdict.Unsafe}, got.Outcome, "the state machine gave no answer: %s", got.Result())
					require.Equal(t, want, got.Outcome == verdict.Unsafe, "the state machine says %s", got.Word())
					sp := runSpin(t, spin, cc, sv.n, b.tasks, b.rounds, b.failures)
					require.Equal(t, want, sp.errors > 0,
						"the state machine says %s (%d states), SPIN %d errors (%d states)", got.Word(), got.Stats.States, sp.errors, sp.states)
					t.Logf("%s: state machine %d states, SPIN %d states", got.Word(), got.Stats.States, sp.states)
				})
			}
		}
	})
}

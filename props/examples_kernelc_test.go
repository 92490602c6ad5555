package props

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/verdict"
)

// harnessCase is a kernel C harness in examples/ with patches applied
// in order (none: the unpatched kernel code), and the built-in rows its
// rows must agree with, as exampleCase's.
type harnessCase struct {
	harness string   // under examples/
	patches []string // under the harness's directory
	rows    map[string]string
	// limits are rows (by configuration) the checker cannot judge, with
	// a piece of the error that says which of its limits they pass: an
	// ERROR row, never a verdict.
	limits map[string]string
}

// checkHarnesses runs each case's harness, patched, against the built-in
// rows: equal verdicts and expectations, state counts logged.
func checkHarnesses(t *testing.T, cases []harnessCase) {
	builtin := map[string]verdict.Row{}
	for _, r := range model.Rows(true, false) {
		builtin[r.Name()] = r
	}
	for _, c := range cases {
		rows := map[string]verdict.Row{}
		for k, name := range c.rows {
			br, ok := builtin[name]
			require.True(t, ok, "%s: no built-in row %q", c.harness, name)
			rows[k] = br
		}
		checkHarness(t, c.harness, c.patches, rows, c.limits)
	}
}

// checkHarness reads a harness under examples/ with patches (from its
// directory) applied, requires each row limits names to be that limit's
// ERROR, and holds the rows named by rows' keys to the rows they map to
// (checkRows).
func checkHarness(t *testing.T, harness string, patchNames []string, rows map[string]verdict.Row, limits map[string]string) {
	t.Helper()
	path := filepath.Join("..", "examples", harness)
	var patches []string
	for _, p := range patchNames {
		patches = append(patches, filepath.Join(filepath.Dir(path), p))
	}
	label := strings.Join(append([]string{harness}, patchNames...), " + ")
	ps, err := kernelc.ReadPatches(patches, []string{path}, func(s string) { t.Errorf("%s: %s", label, s) })
	require.NoError(t, err, label)
	tt, err := kernelc.ReadFile(path, ps, func(s string) { t.Logf("%s: %s", label, s) })
	require.NoError(t, err, label)
	d, err := durable.Read(path, tt)
	require.NoError(t, err, label)
	for _, r := range d.Rows(durable.AllModels(), false) {
		want, ok := limits[r.Config]
		if !ok {
			continue
		}
		_, err := r.Check(explore.Options{MaxStates: 20_000_000, Liveness: true})
		require.Error(t, err, "%s %s: the checker's limit", label, r.Config)
		assert.Contains(t, err.Error(), want, "%s %s", label, r.Config)
	}
	checkRows(t, label, d, rows)
}

// TestHarnessFlushSeq: the fsync of fs/xfs/xfs_file.c as the patch "xfs:
// skip the fsync flush when a later flush has completed" finds it, the
// patch itself applied to it, and each mutant as a patch after it,
// against the state machine's rows (2 tasks x 2 fsyncs, flush EIO) under
// every memory model.
func TestHarnessFlushSeq(t *testing.T) {
	rows := func(variant string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "Relaxed", "LKMM"} {
			out[m+" cache+fua"] = "xfs-flushseq " + variant + " " + m + " 2 tasks x 2 fsyncs, flush EIO"
		}
		return out
	}
	const seed = "0002-xfs-skip-the-fsync-flush.patch"
	h := "xfs-flushseq/xfs-flushseq.c"
	checkHarnesses(t, []harnessCase{
		{harness: h, rows: rows("baseline")},
		{harness: h, patches: []string{seed}, rows: rows("patched")},
		{harness: h, patches: []string{seed, "benign-plain-store-completed.patch"}, rows: rows("benign-plain-store-completed")},
		{harness: h, patches: []string{seed, "mutant-read-before-writeback.patch"}, rows: rows("mutant-read-before-writeback")},
		{harness: h, patches: []string{seed, "mutant-no-smp_mb.patch"}, rows: rows("mutant-no-smp_mb")},
		{harness: h, patches: []string{seed, "mutant-ge.patch"}, rows: rows("mutant->=")},
		{harness: h, patches: []string{seed, "mutant-advance-on-failed-flush.patch"}, rows: rows("mutant-advance-on-failed-flush")},
		// Relaxed has no unordered RMW. Under LKMM the relaxed increment
		// follows the read of bt_flush_completed with no barrier and no
		// control dependency (xfs_file_fsync returns early inside an
		// if; the increment is after it, not in an arm, and LKMM's
		// control dependencies reach only an arm's statements): the
		// increment runs ahead of the read, on a guess of the if's way.
		// The litmus file puts the increment in the else arm; both are
		// UNSAFE.
		{harness: h, patches: []string{seed, "mutant-inc_return_relaxed.patch"},
			rows: without(rows("mutant-inc_return_relaxed"), "Relaxed cache+fua")},
	})
}

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/verdict"
)

// boundRun runs check -json at -tasks/-ops with a -run, and indexes its
// rows by name.
func boundRun(t *testing.T, tasks, ops, sel string) (map[string]verdict.Record, checkSummary, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-json", "-tasks", tasks, "-ops", ops, "-run", sel}, &out, &errb)
	require.Equal(t, exitOK, code, "stderr: %s", errb.String())
	rows, sum := decodeCheck(t, out.Bytes())
	byName := map[string]verdict.Record{}
	for _, r := range rows {
		byName[r.Row] = r
	}
	return byName, sum, errb.String()
}

// -tasks and -ops explore the rows at the bound asked for, named after
// it: the state machine's and the model world's rows grow from 2 to 3
// tasks, and -run and -json select and report them as usual.
func TestCheckBoundGrows(t *testing.T) {
	const sel = `^(xfs-flushseq baseline|impl\.Syncer always) SC `
	small, sum, _ := boundRun(t, "2", "2", sel)
	large, _, _ := boundRun(t, "3", "2", sel)
	assert.Equal(t, 2, sum.Selected, "-run picks the rows at the bound")
	for _, c := range []struct{ at2, at3 string }{
		{"xfs-flushseq baseline SC 2 tasks x 2 fsyncs, flush EIO", "xfs-flushseq baseline SC 3 tasks x 2 fsyncs, flush EIO"},
		{"impl.Syncer always SC 2 tasks x 2 syncs, flush EIO, crash at every step", "impl.Syncer always SC 3 tasks x 2 syncs, flush EIO, crash at every step"},
	} {
		a, ok := small[c.at2]
		require.True(t, ok, "row %q in %v", c.at2, small)
		b, ok := large[c.at3]
		require.True(t, ok, "row %q in %v", c.at3, large)
		assert.Equal(t, "SAFE", a.Verdict, a.Row)
		assert.Equal(t, "SAFE", b.Verdict, b.Row)
		assert.Greater(t, b.States, 10*a.States, "a task more: %s %d states, %s %d", a.Row, a.States, b.Row, b.States)
		assert.Greater(t, b.Depth, a.Depth, b.Row)
	}
	// The default bound asked for is the default table's row, state for
	// state (xfs-flushseq's default rows are at 2 tasks x 2 fsyncs).
	rows, _, code := checkJSON(t, "-run", `^xfs-flushseq baseline SC 2 tasks x 2 fsyncs, flush EIO$`)
	require.Equal(t, exitOK, code)
	require.Len(t, rows, 1)
	assert.Equal(t, rows[0].States, small[rows[0].Row].States)
}

// A negative control is still caught at a bound larger than its row's:
// the state machine's and impl's misuse of the flush sequence, at 3 x 3.
func TestCheckBoundCatchesMutants(t *testing.T) {
	rows, sum, _ := boundRun(t, "3", "3", `^(xfs-flushseq|impl\.FlushSeq xfs-fsync) mutant-read-before-writeback SC |^impl\.Syncer join mutant-join-without-fallback SC `)
	require.Len(t, rows, 3)
	assert.Equal(t, 3, sum.UnsafeExpected)
	for name, bound := range map[string]string{
		"xfs-flushseq mutant-read-before-writeback SC 3 tasks x 3 fsyncs, flush EIO":                                 "3 tasks x 3 fsyncs, flush EIO",
		"impl.FlushSeq xfs-fsync mutant-read-before-writeback SC 3 tasks x 3 fsyncs, flush EIO, crash at every step": "3 tasks x 3 fsyncs, flush EIO, crash at every step",
		"impl.Syncer join mutant-join-without-fallback SC 3 tasks x 3 syncs, flush EIO, crash at every step":         "3 tasks x 3 syncs, flush EIO, crash at every step",
	} {
		r, ok := rows[name]
		require.True(t, ok, "row %q", name)
		assert.Equal(t, bound, r.Bound, name)
		assert.Equal(t, "UNSAFE", r.Verdict, name)
		assert.True(t, r.Negative && r.Expected, name)
		assert.NotNil(t, r.Counterexample, name)
	}
}

// The rows of protocols whose bounds are not tasks x operations are left
// out with a note, never run at a bound of their own.
func TestCheckBoundLeavesOut(t *testing.T) {
	rows, _, stderr := boundRun(t, "2", "1", `^(jbd2 barrier|impl\.Syncer always SC )`)
	require.Len(t, rows, 1)
	assert.Contains(t, rows, "impl.Syncer always SC 2 tasks x 1 sync, flush EIO, crash at every step")
	assert.Contains(t, stderr, "left out jbd2's 3 rows, whose bound is not tasks x operations")

	var out, errb bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"check", "-q", "-tasks", "2", "-ops", "2", "-run", "^jbd2"}, &out, &errb))
	assert.Contains(t, errb.String(), "left out jbd2's")
	assert.Contains(t, errb.String(), `no row matches -run "^jbd2" at -tasks 2 -ops 2`)
	assert.Empty(t, out.String())
}

// A value a selected row cannot take is refused before anything runs,
// with the flag and the range, or the row and its limit.
func TestCheckBoundRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-tasks", "3"}, []string{"-tasks and -ops go together"}},
		{[]string{"-ops", "2"}, []string{"-tasks and -ops go together"}},
		{[]string{"-tasks", "0", "-ops", "2"}, []string{"-tasks must be an integer from 1 to 62, got 0"}},
		{[]string{"-tasks", "63", "-ops", "1"}, []string{"-tasks must be an integer from 1 to 62, got 63"}},
		{[]string{"-tasks", "2", "-ops", "0"}, []string{"-ops must be an integer from 1 to 120, got 0"}},
		{[]string{"-tasks", "2", "-ops", "-1"}, []string{"-ops must be an integer from 1 to 120, got -1"}},
		{[]string{"-tasks", "x", "-ops", "1"}, []string{"-tasks"}},
		{[]string{"-tasks", "5", "-ops", "2"}, []string{"-tasks 5: xfs-flushseq takes 1 to 4 tasks, and -run selects 68 of its rows",
			"-tasks 5: odsync takes 1 to 4 tasks (each write() of 2 blocks)"}},
		{[]string{"-tasks", "5", "-ops", "2", "-run", "^xfs-flushseq patched SC 5 tasks x 2 fsyncs, flush EIO$"}, []string{"-tasks 5: xfs-flushseq takes 1 to 4 tasks, and -run selects 1 of its rows"}},
		{[]string{"-tasks", "9", "-ops", "1", "-run", "^impl.Submitter"}, []string{"-tasks 9: impl.Submitter takes 1 to 8 tasks"}},
		{[]string{"-tasks", "62", "-ops", "1", "-run", "^impl.DIOCounter"}, []string{"-tasks 62: impl.DIOCounter takes 1 to 61 writers (and a task that truncates)"}},
		{[]string{"-tasks", "2", "-ops", "101", "-run", "^impl.Syncer"}, []string{"-ops 101: impl.Syncer takes 1 to 100 syncs per task"}},
		{[]string{"-tasks", "4", "-ops", "4", "-run", "^xfs-flushseq patched"}, []string{
			`-tasks 4 -ops 4: row "xfs-flushseq patched Relaxed 4 tasks x 4 fsyncs, flush EIO" cannot take this bound`,
			"at most 15 flushes fit the memory bounds under Relaxed", "tasks x fsyncs at most 120, 15 under Relaxed and LKMM"}},
		{[]string{"-tasks", "3", "-ops", "6", "-run", "^odsync patched"}, []string{`-tasks 3 -ops 6: row "odsync patched cache+fua 3 tasks x 6 writes x 2 blocks, EIO" cannot take this bound`,
			"tasks x writes at most 16"}},
		{[]string{"-tasks", "2", "-ops", "2", "testdata/vacuous-negative.litmus"}, []string{"-tasks and -ops set the bound of built-in rows"}},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"check", "-q"}, tc.args...)
		assert.Equal(t, exitUsage, run(args, &out, &errb), "%q", args)
		for _, w := range tc.want {
			assert.Contains(t, errb.String(), w, "%q", args)
		}
		assert.Empty(t, out.String(), "%q: nothing runs", args)
	}
}

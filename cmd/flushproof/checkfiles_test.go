package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/verdict"
)

const durableDir = "../../model/durable/testdata/durable/"

// configs lists the rows' configurations ("SC no-cache").
func configs(t *testing.T, args ...string) []string {
	t.Helper()
	rows, sum, code := checkJSON(t, args...)
	require.Equal(t, exitOK, code)
	var out []string
	for _, r := range rows {
		out = append(out, r.Config)
	}
	assert.Equal(t, len(rows), sum.Rows)
	return out
}

// TestCheckFilesModels: a file's rows are its Models: line's memory
// models (SC, TSO and LKMM without one), and -model overrides them.
func TestCheckFilesModels(t *testing.T) {
	assert.Equal(t, []string{"SC no-cache", "LKMM no-cache"}, configs(t, durableDir+"models-sc.litmus"))
	assert.Equal(t, []string{"TSO no-cache"}, configs(t, "-model", "tso", durableDir+"models-sc.litmus"))
	assert.Equal(t, []string{"SC no-cache", "TSO no-cache", "LKMM no-cache"}, configs(t, durableDir+"completion-mp.litmus"))
	assert.Equal(t, []string{"SC cache+fua", "TSO cache+fua", "Relaxed cache+fua", "LKMM cache+fua"},
		configs(t, "-model", "all", "-device", "cache+fua", durableDir+"models-sc.litmus"))
}

// TestCheckFilesErrors: a bad flag value or file stops check with exit
// status 2 before any search, naming what is wrong.
func TestCheckFilesErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", "arm", durableDir + "models-sc.litmus"}, `-model: "arm": want a comma-separated list of sc, tso, relaxed, lkmm, or all`},
		{[]string{"-model", "sc,sc", durableDir + "models-sc.litmus"}, `SC named twice`},
		{[]string{"-device", "ssd", durableDir + "models-sc.litmus"}, "-device:"},
		{[]string{durableDir + "bad-models.litmus"}, `bad-models.litmus:5:12: Models: "SC, ARM"`},
		{[]string{"-model", "sc"}, "apply to FILEs, and none was given"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"check", "-q"}, c.args...), &out, &errb)
		assert.Equal(t, exitUsage, code, "%v", c.args)
		assert.Contains(t, errb.String(), c.want, "%v", c.args)
		assert.Empty(t, out.String(), "%v: no rows", c.args)
	}
}

// TestCheckFilesRefusedToLitmus: a file the explorer refuses is an error
// at its line and column; one without a device statement also names the
// command whose LKMM answers it, one with a device does not (only check
// runs those).
func TestCheckFilesRefusedToLitmus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	memOnly := write("mp-rcu.litmus", `C mp-rcu
{}
P0(int *x, int *y) { WRITE_ONCE(*x, 1); synchronize_rcu(); WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; int r1; rcu_read_lock(); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); rcu_read_unlock(); }
~exists (1:r0=1 /\ 1:r1=0)
`)
	withDev := write("dev-rcu.litmus", `C dev-rcu
{}
P0(int *x) { int r; synchronize_rcu(); r = submit_bio_wait(0, 1, REQ_FUA); }
forall (blk0=0 \/ blk0=1)
`)
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-model", "lkmm", memOnly}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), memOnly+":3:41: unsupported: synchronize_rcu (RCU)")
	assert.Contains(t, errb.String(), "has no device statement: `flushproof litmus -model lkmm "+memOnly+"` answers its final condition under LKMM")
	out.Reset()
	errb.Reset()
	code = run([]string{"check", "-q", "-model", "lkmm", withDev}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "unsupported: synchronize_rcu (RCU)")
	assert.NotContains(t, errb.String(), "flushproof litmus")
}

// TestCheckFilesNotApplicable: under -model all, a model that cannot
// express the file (Relaxed has no acquire and release, which a
// completion needs) gives an N/A row with the reason, which fails
// nothing; asked for by name, the same model is an ERROR row.
func TestCheckFilesNotApplicable(t *testing.T) {
	file := durableDir + "completion-mp.litmus"
	rows, sum, code := checkJSON(t, "-model", "all", "-device", "no-cache", file)
	assert.Equal(t, exitOK, code)
	require.Len(t, rows, 4)
	var na []string
	for _, r := range rows {
		if r.Verdict == "N/A" {
			na = append(na, r.Config)
			assert.True(t, r.Expected, r.Config)
			assert.Contains(t, r.NotApplicable, "Relaxed has no release or acquire, which complete() needs")
		}
	}
	assert.Equal(t, []string{"Relaxed no-cache"}, na)
	assert.Equal(t, 1, sum.NotApplicable)

	rows, sum, code = checkJSON(t, "-model", "relaxed", "-device", "no-cache", file)
	assert.Equal(t, exitFailed, code)
	require.Len(t, rows, 1)
	assert.Equal(t, "ERROR", rows[0].Verdict)
	assert.Equal(t, 1, sum.Errors)
}

// TestCheckVacuity: a SAFE row with an assertion no state judged keeps
// its verdict and exit status, and check says which obligation and what
// that means: after the table as a warning, in the JUDGED column, in the
// summary, and per obligation in the JSON record; a negative control
// whose failing assertion is never reached says it could not fire.
func TestCheckVacuity(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-model", "sc", durableDir + "vacuous-assert.litmus"}, &out, &errb)
	assert.Equal(t, exitOK, code, errb.String())
	text := out.String()
	assert.Contains(t, text, "JUDGED")
	assert.Regexp(t, `SAFE +yes +2/3 `, text)
	assert.Contains(t, text, "vacuous-assert SC no-cache 2 threads, crash at the end: warning: SAFE says nothing about these, never judged at this bound (no state reached it):\n    assert(r == 3) (P0 line 23)\n")
	assert.Contains(t, text, "1 SAFE, 0 UNSAFE as expected, 0 unexpected, 0 UNKNOWN, 0 errors; 1 row with an obligation never judged (listed above)")

	out.Reset()
	code = run([]string{"check", "-q", "-obligations", "-model", "sc", durableDir + "vacuous-assert.litmus"}, &out, &errb)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out.String(), "    assert(r == 3) (P0 line 23): 0 states\n")
	assert.Regexp(t, `    assert_durable\(0, 1\) \(P0 line 26\): [1-9][0-9]* states?\n`, out.String())

	rows, sum, code := checkJSON(t, "-model", "sc", durableDir+"vacuous-assert.litmus")
	assert.Equal(t, exitOK, code)
	require.Len(t, rows, 1)
	require.Len(t, rows[0].Obligations, 3)
	assert.Equal(t, verdict.ObligationRecord{Name: "assert(r == 3) (P0 line 23)", States: 0}, rows[0].Obligations[0])
	assert.Positive(t, rows[0].Obligations[1].States)
	assert.Equal(t, "the final condition (line 34)", rows[0].Obligations[2].Name)
	assert.Equal(t, 1, sum.Vacuous)

	out.Reset()
	code = run([]string{"check", "-q", "testdata/vacuous-negative.litmus"}, &out, &errb)
	assert.Equal(t, exitUnexpected, code)
	assert.Contains(t, out.String(), "vacuous-negative SC no-cache 2 threads: the negative control could not fire: never judged at this bound (no state reached it):\n    assert(r == 3) (P0 line 21)\n")
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestMain runs the command itself when a test starts this binary as a
// child (FLUSHPROOF_TEST_MAIN=1), so that signals and exit statuses are
// tested on a real process.
func TestMain(m *testing.M) {
	if os.Getenv("FLUSHPROOF_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCheckPrintsTheVerdictTable(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-run", `^(device|bug-|odsync ).*(cache\+fua|no-postflush)`}, &out, &errb)
	assert.Equal(t, exitOK, code, "stderr: %s", errb.String())
	for _, want := range []string{
		"MODEL CONFIG BOUND", "VERDICT", "EXPECTED", "STATES/S",
		"device cache+fua 2 writers, 4 writes, 1 flush, EIO, crash", "SAFE",
		"bug-flush-covers-in-flight", "bug-emulated-fua-no-postflush", "UNSAFE", "yes (negative control)",
		"shortest counterexample", "step | A",
		"done: 14 of 14 rows", "5 SAFE, 9 UNSAFE as expected, 0 unexpected, 0 UNKNOWN, 0 errors", "peak memory",
	} {
		assert.Contains(t, out.String(), want)
	}
	assert.NotContains(t, out.String(), "no-cache", "-run filters rows")
	assert.Empty(t, errb.String(), "-q: no progress")

	// The table is aligned: every row's verdict starts in the column of
	// the header's VERDICT.
	lines := strings.Split(out.String(), "\n")
	col := strings.Index(lines[0], "VERDICT")
	require.Positive(t, col)
	for _, l := range lines[1:15] {
		require.Greater(t, len(l), col, "%q", l)
		assert.Equal(t, byte(' '), l[col-1], "%q", l)
		assert.Contains(t, []string{"SAFE", "UNSAFE"}, strings.Fields(l[col:])[0], "%q", l)
	}
}

// checkJSON runs check with -json and decodes its lines.
func checkJSON(t *testing.T, args ...string) (rows []verdict.Record, sum checkSummary, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"check", "-q", "-json"}, args...), &out, &errb)
	rows, sum = decodeCheck(t, out.Bytes())
	return rows, sum, code
}

func decodeCheck(t *testing.T, out []byte) (rows []verdict.Record, sum checkSummary) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	require.NotEmpty(t, lines)
	for i, l := range lines {
		var kind struct{ Kind string }
		require.NoError(t, json.Unmarshal([]byte(l), &kind), "line %d is not JSON: %q", i+1, l)
		switch kind.Kind {
		case "check.row":
			var r verdict.Record
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&r))
			rows = append(rows, r)
		case "check.summary":
			require.Equal(t, len(lines)-1, i, "the summary is the last line")
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&sum))
		default:
			t.Fatalf("line %d: unknown kind %q", i+1, kind.Kind)
		}
	}
	return rows, sum
}

func TestCheckJSON(t *testing.T) {
	rows, sum, code := checkJSON(t, "-run", "^bug-emulated|^xfs-flushseq (baseline|mutant->=) SC 2 tasks x 2 fsyncs, flush EIO$")
	assert.Equal(t, exitOK, code)
	require.Len(t, rows, 3)

	safe := rows[1]
	assert.Equal(t, "xfs-flushseq baseline SC 2 tasks x 2 fsyncs, flush EIO", safe.Row)
	assert.Equal(t, "xfs-flushseq baseline", safe.Model)
	assert.Equal(t, "SC", safe.Config)
	assert.Equal(t, "2 tasks x 2 fsyncs, flush EIO", safe.Bound)
	assert.Equal(t, "SAFE", safe.Verdict)
	assert.True(t, safe.Expected)
	assert.False(t, safe.Negative)
	assert.Positive(t, safe.States)
	assert.Positive(t, safe.Transitions)
	assert.Positive(t, safe.Depth)
	assert.Positive(t, safe.ElapsedNS)
	assert.Nil(t, safe.Counterexample)

	for _, bad := range []verdict.Record{rows[0], rows[2]} {
		assert.Equal(t, "UNSAFE", bad.Verdict, bad.Row)
		assert.True(t, bad.Expected && bad.Negative, bad.Row)
		require.NotNil(t, bad.Counterexample, bad.Row)
		c := bad.Counterexample
		assert.Equal(t, "safety", c.Violation)
		assert.NotEmpty(t, c.Message)
		require.NotEmpty(t, c.Steps)
		for i, st := range c.Steps {
			assert.Equal(t, i+1, st.Step)
			assert.NotEmpty(t, st.Actor)
			assert.NotEmpty(t, st.Text)
		}
	}
	assert.Contains(t, rows[2].Model, "mutant->=", "no HTML escaping needed to read it, but it must survive")

	assert.Equal(t, checkSummary{Kind: "check.summary", Schema: 1, Rows: 3, Selected: 3, Safe: 1, UnsafeExpected: 2,
		ElapsedNS: sum.ElapsedNS, PeakMemoryBytes: sum.PeakMemoryBytes, MaxMemoryBytes: sum.MaxMemoryBytes}, sum)
	assert.Positive(t, sum.ElapsedNS)
	assert.Positive(t, sum.PeakMemoryBytes)
}

// Every row family reports a search that a budget cut short as UNKNOWN,
// never SAFE: the state budget through the command line, and the state
// budget, the memory limit and an interruption on every row directly
// (rows whose verdict combines two searches included).
func TestEveryFamilyStopsAsUnknown(t *testing.T) {
	const budget = 30
	recs, sum, code := checkJSON(t, "-proof", "-max-states", fmt.Sprint(budget))
	assert.Equal(t, exitIncomplete, code, "UNKNOWN rows and nothing else wrong")
	assert.Equal(t, len(recs), sum.Rows)
	unknown := map[string]int{}
	for _, r := range recs {
		family := strings.Fields(r.Row)[0]
		if strings.HasPrefix(family, "bug-") {
			family = "device"
		}
		switch r.Verdict {
		case "UNKNOWN":
			assert.Equal(t, explore.StopStates, r.UnknownReason, r.Row)
			assert.GreaterOrEqual(t, r.States, budget, r.Row)
			assert.False(t, r.Expected, r.Row)
			unknown[family]++
		case "UNSAFE":
			assert.True(t, r.Negative, "%s: a real model UNSAFE", r.Row)
			assert.NotNil(t, r.Counterexample, r.Row)
		case "SAFE":
			assert.Less(t, r.States, budget, "%s: SAFE although the budget stopped it", r.Row)
		default:
			t.Errorf("%s: %s", r.Row, r.Verdict)
		}
	}
	for _, p := range model.Protocols() {
		assert.Positive(t, unknown[p.Name], "family %s", p.Name)
	}

	for _, tc := range []struct {
		name string
		opt  explore.Options
		want string
	}{
		{"states", explore.Options{MaxStates: 5, Liveness: true}, explore.StopStates},
		{"memory", explore.Options{MaxMemory: 1, Liveness: true}, explore.StopMemory},
		{"interrupted", explore.Options{Liveness: true, Stop: func() string { return interruptReason }}, interruptReason},
	} {
		for _, r := range model.Rows(true, true) {
			v, err := r.Check(tc.opt)
			require.NoError(t, err, r.Name())
			if v.Violation != nil {
				assert.True(t, v.Negative, "%s, %s: a real model UNSAFE", tc.name, r.Name())
				continue
			}
			assert.NotEqual(t, verdict.Safe, v.Outcome, "%s, %s", tc.name, r.Name())
			assert.Equal(t, verdict.Unknown, v.Outcome, "%s, %s", tc.name, r.Name())
			assert.Equal(t, tc.want, v.Unknown, "%s, %s", tc.name, r.Name())
			assert.Equal(t, "UNKNOWN ("+tc.want+")", v.Result(), "%s, %s", tc.name, r.Name())
		}
	}
}

func TestCheckMemoryLimit(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-max-memory", "16MiB", "-run", "^device cache\\+emulated-fua"}, &out, &errb)
	assert.Equal(t, exitIncomplete, code, "stderr: %s", errb.String())
	assert.Contains(t, out.String(), "UNKNOWN (memory)")
	assert.Contains(t, out.String(), "max-memory 16MiB (-max-memory)")
	assert.Contains(t, out.String(), "1 UNKNOWN")

	prev := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(prev)
	out.Reset()
	errb.Reset()
	code = run([]string{"check", "-q", "-max-memory", "2GiB", "-run", "^xfs-flushseq baseline SC 2 tasks x 2 fsyncs, flush EIO$"}, &out, &errb)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, errb.String(), "-max-memory 2GiB is above GOMEMLIMIT (1GiB): using GOMEMLIMIT")
	assert.Contains(t, out.String(), "max-memory 1GiB (GOMEMLIMIT)")
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "the runtime's limit is restored")
}

func TestCheckErrorRow(t *testing.T) {
	ok := func(o explore.Options) (verdict.Verdict, error) {
		return verdict.Verdict{Model: "m", Config: "c", Bound: "b", Outcome: verdict.Safe}, nil
	}
	rs := []verdict.Row{
		{Model: "first", Check: ok},
		{Model: "panics", Check: func(explore.Options) (verdict.Verdict, error) { panic("index out of range [3]") }},
		{Model: "fails", Check: func(explore.Options) (verdict.Verdict, error) {
			return verdict.Verdict{}, errors.New("new fsync system: 9 tasks")
		}},
		{Model: "last", Check: ok},
	}
	for _, asJSON := range []bool{false, true} {
		in := &interrupts{done: make(chan struct{})}
		c := &checkRun{json: asJSON, intr: in}
		var out, errb bytes.Buffer
		code := c.run(rs, &out, &errb)
		assert.Equal(t, exitFailed, code)
		assert.Contains(t, errb.String(), "panics: panic: index out of range [3]", "the stack goes to stderr")
		if !asJSON {
			for _, want := range []string{"first", "ERROR", "last", "panics: ERROR: panic: index out of range [3]",
				"fails: ERROR: new fsync system: 9 tasks", "4 of 4 rows", "2 SAFE", "2 errors"} {
				assert.Contains(t, out.String(), want)
			}
			continue
		}
		rows, sum := decodeCheck(t, out.Bytes())
		require.Len(t, rows, 4)
		assert.Equal(t, []string{"SAFE", "ERROR", "ERROR", "SAFE"}, []string{rows[0].Verdict, rows[1].Verdict, rows[2].Verdict, rows[3].Verdict})
		assert.Equal(t, "panic: index out of range [3]", rows[1].Error)
		assert.Equal(t, "new fsync system: 9 tasks", rows[2].Error)
		assert.False(t, rows[1].Expected)
		assert.Equal(t, 2, sum.Errors)
		assert.Equal(t, exitFailed, sum.ExitCode)
	}
}

func TestExitCodePrecedence(t *testing.T) {
	for _, tc := range []struct {
		t    tally
		want int
	}{
		{tally{rows: 3, safe: 2, unsafeExpected: 1}, exitOK},
		{tally{rows: 2, safe: 1, unknown: 1}, exitIncomplete},
		{tally{rows: 2, errors: 1, unknown: 1}, exitFailed},
		{tally{rows: 3, unexpected: 1, errors: 1, unknown: 1}, exitUnexpected},
	} {
		assert.Equal(t, tc.want, tc.t.exitCode(), "%+v", tc.t)
	}
}

// The command stops promptly on SIGINT and SIGTERM, prints the rows it
// finished, the interrupted row as UNKNOWN (interrupted) and the summary,
// and exits 130 or 143. The second row is a proof-size search of several
// seconds; the signal comes as soon as the first row is printed.
func TestCheckInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct {
		sig    syscall.Signal
		name   string
		code   int
		asJSON bool
	}{{syscall.SIGINT, "SIGINT", exitSIGINT, false}, {syscall.SIGTERM, "SIGTERM", exitSIGTERM, true}} {
		args := []string{"check", "-q", "-proof", "-run", "^xfs-flushseq baseline SC 2 tasks x 2 fsyncs, flush EIO$|^xfs-flushseq group-commit Relaxed 3 tasks"}
		if tc.asJSON {
			args = append(args, "-json")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "FLUSHPROOF_TEST_MAIN=1")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		require.NoError(t, cmd.Start())
		var out bytes.Buffer
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "xfs-flushseq baseline") || strings.Contains(sc.Text(), `"row":"xfs-flushseq baseline`) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // well into the second row's search
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(tc.sig))
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
		err = cmd.Wait()
		elapsed := time.Since(sent)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "stderr: %s", errb.String())
		assert.Equal(t, tc.code, exit.ExitCode(), "%s: stderr: %s", tc.name, errb.String())
		assert.Less(t, elapsed, 3*time.Second, "%s: stopped promptly", tc.name)
		if tc.asJSON {
			rows, sum := decodeCheck(t, out.Bytes())
			require.Len(t, rows, 2)
			assert.Equal(t, "SAFE", rows[0].Verdict)
			assert.Equal(t, "UNKNOWN", rows[1].Verdict)
			assert.Equal(t, interruptReason, rows[1].UnknownReason)
			assert.True(t, sum.Interrupted)
			assert.Equal(t, tc.name, sum.Signal)
			assert.Equal(t, tc.code, sum.ExitCode)
			continue
		}
		assert.Contains(t, out.String(), "SAFE")
		assert.Contains(t, out.String(), "UNKNOWN (interrupted)")
		assert.Contains(t, out.String(), "INTERRUPTED by "+tc.name+": 2 of 2 rows")
	}
}

// skipshare and cost answer a signal at once, with what they finished and
// 130.
func TestSkipShareAndCostInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"skipshare", "-runs", "100000"}, "INTERRUPTED by SIGINT: 0 of 1 tables printed"},
		{[]string{"cost", "-xfs-flushseq.runs", "100000", "-json"}, `"interrupted":true`},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), "FLUSHPROOF_TEST_MAIN=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Start())
		// The signal goes once the child has run for 50ms of CPU time: by
		// then it has parsed its flags and caught signals, and is computing
		// (a fixed sleep was too short on a loaded machine).
		waitCPU(t, cmd.Process.Pid, 50*time.Millisecond)
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		err := cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%q: stdout %s stderr %s", tc.args, out.String(), errb.String())
		assert.Equal(t, exitSIGINT, exit.ExitCode(), "%q", tc.args)
		assert.Less(t, time.Since(sent), 2*time.Second, "%q", tc.args)
		assert.Contains(t, out.String(), tc.want, "%q", tc.args)
	}
}

// waitCPU waits until process pid has used d of CPU time in user mode
// (/proc/PID/stat, utime in clock ticks of 10ms), for at most 30 seconds.
func waitCPU(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		// The fields after the command name, which is in parentheses:
		// state is field 3, utime field 14.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		ticks, err := strconv.Atoi(f[11])
		require.NoError(t, err)
		if time.Duration(ticks)*10*time.Millisecond >= d {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not use %v of CPU time in 30s", pid, d)
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"check", "-h"}, {"check", "-help"}, {"cost", "-h"}, {"skipshare", "-h"}, {"crashlab", "-h"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitOK, run(args, &out, &errb), "%q", args)
		assert.Contains(t, out.String()+errb.String(), "usage: flushproof", "%q", args)
	}
	var out, errb bytes.Buffer
	run([]string{"check", "-h"}, &out, &errb)
	assert.Contains(t, errb.String(), `"model config bound"`, "-run says what it matches")
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"check", "extra"}, {"check", "-run", "nothing-matches"}, {"check", "-nope"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q must say what is wrong", args)
		assert.Empty(t, out.String(), "%q", args)
	}
}

// Every flag refuses a bad value with exit 2 and a message that names the
// flag and what it accepts.
func TestBadFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the message: the flag, and the allowed range
	}{
		{[]string{"check", "-max-states", "-1"}, "-max-states must be an integer from 0 to 2147483647"},
		{[]string{"check", "-max-states", "x"}, "-max-states"},
		{[]string{"check", "-run", "("}, "-run must be a regular expression"},
		{[]string{"check", "-max-memory", "2"}, "-max-memory: want 0 (no limit) or a size of at least 16MiB"},
		{[]string{"check", "-max-memory", "-1GiB"}, "-max-memory: want a size"},
		{[]string{"check", "-max-memory", "2 parsecs"}, "-max-memory: want a size"},
		{[]string{"check", "-max-memory", "NaN"}, "-max-memory: want a size"},
		{[]string{"check", "-max-memory", "Inf"}, "-max-memory: want a size"},
		{[]string{"check", "-max-memory", "2EiB"}, "-max-memory: want a size"},
		{[]string{"cost", "-odsync.write", "-50us"}, "-odsync.write must be a duration in (0s, 1h0m0s]"},
		{[]string{"cost", "-protocol", "odsync", "-write", "-50us"}, "-write must be a duration in (0s, 1h0m0s]"},
		{[]string{"cost", "-write", "1ms"}, "flag provided but not defined: -write"},
		{[]string{"cost", "-fua-write", "0"}, "-fua-write must be a duration in (0s, 1h0m0s]"},
		{[]string{"cost", "-media-write", "2h"}, "-media-write must be a duration in (0s, 1h0m0s]"},
		{[]string{"cost", "-odsync.flush", "0s"}, "-odsync.flush must be a duration in (0s, 1h0m0s]"},
		{[]string{"cost", "-iowq.runs", "0"}, "-iowq.runs must be an integer from 1 to 100000"},
		{[]string{"cost", "-protocol", "iowq", "-runs", "0"}, "-runs must be an integer from 1 to 100000"},
		{[]string{"cost", "-seed", "-1"}, "-seed"},
		{[]string{"cost", "-protocol", "nope"}, "-protocol must be one of xfs-flushseq, odsync, iowq, diocount"},
		{[]string{"cost", "extra"}, "unexpected arguments"},
		{[]string{"skipshare", "-flush", "-1ms"}, "-flush must be a duration in (0s, 1h0m0s]"},
		{[]string{"skipshare", "-flush", "0"}, "-flush must be a duration in (0s, 1h0m0s]"},
		{[]string{"skipshare", "-write", "-50us"}, "-write must be a duration in (0s, 1h0m0s]"},
		{[]string{"skipshare", "-think", "-1s"}, "-think must be a duration in [0s, 1h0m0s]"},
		{[]string{"skipshare", "-overwrite", "NaN"}, "-overwrite must be a number from 0 to 1, got NaN"},
		{[]string{"skipshare", "-overwrite", "1.5"}, "-overwrite must be a number from 0 to 1"},
		{[]string{"skipshare", "-jitter", "Inf"}, "-jitter must be a number from 0 to 1, got +Inf"},
		{[]string{"skipshare", "-jitter", "-0.1"}, "-jitter must be a number from 0 to 1"},
		{[]string{"skipshare", "-tasks", "0"}, "-tasks must be an integer from 1 to 1024"},
		{[]string{"skipshare", "-tasks", "5000"}, "-tasks must be an integer from 1 to 1024"},
		{[]string{"skipshare", "-fsyncs", "-1"}, "-fsyncs must be an integer from 1 to 100000"},
		{[]string{"skipshare", "-runs", "0"}, "-runs must be an integer from 1 to 100000"},
		{[]string{"skipshare", "-crashes", "-1"}, "-crashes must be an integer from 0 to 10000000"},
		{[]string{"skipshare", "extra"}, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, run(tc.args, &out, &errb), "%q", tc.args)
		assert.Contains(t, errb.String(), tc.want, "%q", tc.args)
		assert.Empty(t, out.String(), "%q: nothing on stdout", tc.args)
		assert.NotContains(t, errb.String(), "flushproof flushproof", "%q: no repeated prefix", tc.args)
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"0", 0}, {"2GiB", 2 << 30}, {"512MiB", 512 << 20}, {"1.5GiB", 3 << 29}, {"100MB", 100e6}, {"4096", 4096}, {"64KiB", 64 << 10}} {
		got, err := parseSize(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, in := range []string{"", "GiB", "1.2.3GiB", "2gb", "-5", "NaN", "Inf", "1e3"} {
		_, err := parseSize(in)
		assert.Error(t, err, in)
	}
}

func TestDefaultMaxMemory(t *testing.T) {
	m, what := machineMemory()
	require.Positive(t, m, "/proc/meminfo is readable here")
	assert.NotEmpty(t, what)
	if goMemLimit() == 0 {
		d, rule := defaultMaxMemory()
		assert.Equal(t, m/4*3, d)
		assert.Contains(t, rule, "3/4 of")
	}

	prev := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(prev)
	d, rule := defaultMaxMemory()
	assert.Equal(t, int64(1<<30), d, "never above GOMEMLIMIT")
	assert.Equal(t, "GOMEMLIMIT", rule)
}

func TestSkipShare(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"skipshare", "-runs", "2", "-fsyncs", "5"}, &out, &errb)
	assert.Equal(t, exitOK, code, "stderr: %s", errb.String())
	for _, want := range []string{"VARIANT", "baseline", "patched", "improved", "group-commit", "mutant-read-before-writeback",
		"impl.Syncer always", "impl.Syncer skip-if-flushed-since", "impl.Syncer join", "impl.Syncer group-commit",
		"NOT DURABLE AT RETURN", "10 of 10 variants"} {
		assert.Contains(t, out.String(), want)
	}

	// The same table as `cost -protocol xfs-flushseq`, in JSON.
	out.Reset()
	code = run([]string{"cost", "-protocol", "xfs-flushseq", "-runs", "2", "-fsyncs", "5", "-json"}, &out, &errb)
	assert.Equal(t, exitOK, code)
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 11)
	for _, l := range lines[:10] {
		r := decodeRecord(t, l, "skipshare.variant")
		assert.Equal(t, float64(2*8*5), r["fsyncs"], "runs x tasks x fsyncs")
		assert.InDelta(t, r["skipped"].(float64)/r["fsyncs"].(float64), r["skip_share"], 1e-9)
		assert.Equal(t, float64(528), r["crashes"])
		assert.Positive(t, r["mean_run_time_ns"])
	}
	sum := decodeRecord(t, lines[10], "cost.summary")
	assert.Equal(t, []any{"xfs-flushseq"}, sum["tables"])
	assert.Equal(t, float64(8), sum["flushseq_tasks"])
	assert.Equal(t, float64(5), sum["flushseq_fsyncs_per_task"])
	assert.Equal(t, float64(2), sum["flushseq_runs"])
	assert.Equal(t, float64(2e6), sum["flushseq_flush_ns"])
}

// recordFields are the fields of each JSON kind that docs/cli.md documents:
// a record has exactly these.
var recordFields = map[string][]string{
	"skipshare.variant": {"kind", "variant", "mutant", "fsyncs", "skipped", "skip_share", "flushes", "not_durable_at_return",
		"crashes_losing_a_block", "crashes", "mean_run_time_ns"},
	"cost.odsync": {"kind", "variant", "config", "path", "fua_writes", "plain_writes", "flushes", "post_flushes",
		"empty_flushes", "stripped_flushes", "round_trips", "latency_ns", "iops"},
	"cost.diocount": {"kind", "variant", "io", "begins", "ends", "rmws_per_io", "vs_baseline", "schedules"},
	"cost.iowq": {"kind", "workload", "submit", "fs", "runs", "writes", "lock_waits_per_write", "hash_waits_per_write",
		"dio_waits_per_write", "eagain_per_write", "waited_per_write_ns", "latency_ns", "writes_per_second"},
	"cost.summary": {"kind", "schema", "tables", "interrupted", "signal", "elapsed_ns", "exit_code"},
}

// decodeRecord decodes a JSON Lines object of the given kind and checks
// that it has the documented fields (a summary may have the settings of
// the tables it printed besides).
func decodeRecord(t *testing.T, line, kind string) map[string]any {
	t.Helper()
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &r), line)
	require.Equal(t, kind, r["kind"], line)
	want := recordFields[kind]
	require.NotNil(t, want, "kind %q is not documented", kind)
	for _, f := range want {
		assert.Contains(t, r, f, "%s: field %s", kind, f)
	}
	if kind != "cost.summary" {
		assert.Len(t, r, len(want), "%s: only the documented fields: %s", kind, line)
	}
	return r
}

func TestCost(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"cost", "-iowq.runs", "2", "-xfs-flushseq.runs", "2"}, &out, &errb)
	assert.Equal(t, exitOK, code, "stderr: %s", errb.String())
	for _, want := range []string{"O_DSYNC", "cache+emulated-fua", "inode_dio_begin", "io-wq", "HASH WAITS/W", "impl.Syncer group-commit"} {
		assert.Contains(t, out.String(), want)
	}
	out.Reset()
	assert.Equal(t, exitOK, run([]string{"cost", "-protocol", "odsync", "-random"}, &out, &errb))
	assert.Contains(t, out.String(), "random")
	assert.NotContains(t, out.String(), "inode_dio_begin")
}

func TestCostJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"cost", "-iowq.runs", "2", "-xfs-flushseq.runs", "2", "-json"}, &out, &errb)
	assert.Equal(t, exitOK, code, "stderr: %s", errb.String())
	kinds := map[string]int{}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for i, l := range lines {
		var k struct{ Kind string }
		require.NoError(t, json.Unmarshal([]byte(l), &k), l)
		kinds[k.Kind]++
		r := decodeRecord(t, l, k.Kind)
		switch k.Kind {
		case "cost.odsync":
			if r["round_trips"].(float64) > 0 {
				require.NotNil(t, r["iops"], l)
				assert.InDelta(t, 1e9/r["latency_ns"].(float64), r["iops"], 1e-6, l)
			}
			if r["variant"] == "patched" && r["config"] == "cache+fua" && r["path"] == "direct" {
				assert.Equal(t, float64(1), r["fua_writes"])
				assert.Equal(t, float64(0), r["flushes"], "the patched pure direct path sends no flush")
			}
		case "cost.diocount":
			assert.Equal(t, r["begins"].(float64)+r["ends"].(float64), r["rmws_per_io"], l)
		case "cost.iowq":
			assert.Equal(t, float64(2), r["runs"])
			assert.Positive(t, r["writes"])
			assert.Positive(t, r["writes_per_second"])
		case "cost.summary":
			require.Equal(t, len(lines)-1, i, "the summary is last")
			assert.True(t, strings.HasPrefix(l, `{"kind":"cost.summary","schema":1,`), "kind first: %s", l)
			assert.Equal(t, float64(1), r["schema"])
			assert.Equal(t, []any{"xfs-flushseq", "odsync", "iowq", "diocount"}, r["tables"])
			assert.Positive(t, r["odsync_flush_ns"])
			assert.Equal(t, float64(2), r["iowq_runs"])
		}
	}
	// One object per row of the text table.
	var text bytes.Buffer
	require.Equal(t, exitOK, run([]string{"cost", "-protocol", "odsync"}, &text, &errb))
	tableRows := 0
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "baseline ") || strings.HasPrefix(l, "patched ") || strings.HasPrefix(l, "mutant-") {
			tableRows++
		}
	}
	assert.Positive(t, tableRows)
	assert.Equal(t, tableRows, kinds["cost.odsync"], "one object per row of the table")
	assert.Equal(t, 10, kinds["skipshare.variant"])
	assert.Positive(t, kinds["cost.diocount"])
	assert.Positive(t, kinds["cost.iowq"])
	assert.Equal(t, 1, kinds["cost.summary"])
}

func TestCrashlabArgs(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"crashlab", "no-such-program-anywhere"}, {"crashlab", "-fs", "btrfs", "-q"}, {"crashlab", "-workload", "nope", "-q"}, {"crashlab", "-writers", "0", "-q"}} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, run(args, &out, &errb), "%q", args)
		assert.NotEmpty(t, errb.String(), "%q", args)
	}
}

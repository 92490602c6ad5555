package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/crashlab"
)

func TestCrashlabFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the one line on stderr
	}{
		{[]string{"-writers", "0"}, "-writers 0: want 1 to 256"},
		{[]string{"-writers", "257"}, "-writers 257: want 1 to 256"},
		{[]string{"-records", "0"}, "-records 0: want 1 to 100000"},
		{[]string{"-replays", "-1"}, "-replays -1: want 0 to 100000"},
		{[]string{"-parallel", "0"}, "-parallel 0: want 1 to 32"},
		{[]string{"-flush-delay", "-1ms"}, "-flush-delay -1ms: want 0 to 1s"},
		{[]string{"-flush-delay", "2s"}, "-flush-delay 2s: want 0 to 1s"},
		{[]string{"-image-size", "-1"}, "-image-size -1: want 0 (the default) or a positive multiple of 4096"},
		{[]string{"-image-size", "33554433"}, "-image-size 33554433: want a multiple of 4096 from 16777216"},
		{[]string{"-fs", "xfs", "-image-size", "134217728"}, "want a multiple of 4096 from 314572800 (300 MiB, the least xfs takes)"},
		{[]string{"-fs", "btrfs"}, "-fs btrfs: want ext4 or xfs"},
		{[]string{"-workload", "nope"}, "-workload nope: want fsync, early-ack, syncer or syncer-early-sample"},
		{[]string{"-writers", "200", "-records", "100", "-image-size", "16777216"}, "-image-size 16777216: want at least twice the records'"},
		{[]string{"-writers", "2", "--", "true"}, "-writers: does not apply with a command (true), which is the workload"},
		{[]string{"-workload", "fsync", "true"}, "-workload: does not apply with a command (true)"},
		{[]string{"-check", "true"}, "-check: applies to a command of yours (crashlab [flags] -- CMD [ARG...])"},
		{[]string{"-check", " ", "--", "true"}, `-check " ": want a command line for /bin/sh -c`},
		{[]string{"-check-timeout", "0s", "--", "true"}, "-check-timeout 0s: want more than 0, up to 1h0m0s"},
		{[]string{"-shard", "1/3"}, "-shard 1/3: applies with -load"},
		{[]string{"-load", "x.rec", "-shard", "4/3"}, "-shard 4/3: want I/N with 1 <= I <= N <= 10000"},
		{[]string{"-load", "x.rec", "-shard", "1"}, "-shard 1: want I/N"},
		{[]string{"-keep", "d"}, "-keep: applies with -replay FILE:STATE"},
		{[]string{"-replay", "f:1"}, "-replay f:1: give -keep DIR"},
		{[]string{"-save", "f", "-load", "g"}, "-save: records; -load and -replay replay a recording"},
		{[]string{"-load", "f", "--", "true"}, "no command (true) runs"},
		{[]string{"-load", "f", "-fs", "xfs"}, "-fs: comes from the recording with -load and -replay"},
		{[]string{"-replay", "f:1", "-keep", "d", "-parallel", "2"}, "-parallel: -replay rebuilds one state"},
		{[]string{"-load", "/nonexistent/run.rec"}, "-load: read the recording: open /nonexistent/run.rec: no such file or directory"},
		{[]string{"-replay", "f", "-keep", "/nonexistent/d"}, "-replay f: want FILE:STATE"},
	} {
		var out, errb bytes.Buffer
		code := crashlabMain(context.Background(), append([]string{"-q"}, tc.args...), &out, &errb)
		assert.Equal(t, crashlabExitUsage, code, "%q", tc.args)
		assert.Equal(t, "flushproof crashlab: ", errb.String()[:min(21, errb.Len())], "%q", tc.args)
		assert.Contains(t, errb.String(), tc.want, "%q", tc.args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "one line: %q", errb.String())
		assert.Empty(t, out.String())
	}
	// A flag the flag package cannot parse, and help.
	var out, errb bytes.Buffer
	assert.Equal(t, crashlabExitUsage, crashlabMain(context.Background(), []string{"-writers", "many"}, &out, &errb))
	errb.Reset()
	assert.Equal(t, crashlabExitPass, crashlabMain(context.Background(), []string{"-h"}, &out, &errb), "-h")
	assert.Contains(t, errb.String(), "exit status: 0")
}

// TestCrashlabPreflight: a machine without the tools is a failed run (3),
// said in one line that names every tool and its package, and nothing
// else goes to stdout but the summary.
func TestCrashlabPreflight(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	code := crashlabMain(context.Background(), []string{"-q", "-json", "-fs", "xfs"}, &out, &errb)
	assert.Equal(t, crashlabExitError, code)
	assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "one line: %q", errb.String())
	for _, want := range []string{"flushproof crashlab: cannot run the xfs crash lab here:", "mkfs.xfs (Debian package xfsprogs)", "xfs_repair (Debian package xfsprogs)", "apt-get install mount xfsprogs"} {
		assert.Contains(t, errb.String(), want)
	}
	assertNoRepeatedPrefix(t, errb.String())
	lines := crashlabParseJSON(t, out.Bytes())
	require.Len(t, lines, 1)
	assert.Equal(t, "crashlab.summary", lines[0]["kind"])
	assert.Equal(t, "error", lines[0]["result"])
	assert.EqualValues(t, 3, lines[0]["exit_code"])
	assert.Contains(t, lines[0]["error"], "mkfs.xfs")

	// The text says only the result; the error line says why.
	out.Reset()
	errb.Reset()
	assert.Equal(t, crashlabExitError, crashlabMain(context.Background(), []string{"-q"}, &out, &errb))
	assert.Equal(t, "result: ERROR (exit 3): the run failed (pre-flight, recording, or a replay that could not be set up); the error says why\n", out.String())
	assert.Contains(t, errb.String(), "mkfs.ext4 (Debian package e2fsprogs)")
}

// assertNoRepeatedPrefix fails on "x: x:" anywhere in msg (as in
// "crashlab: crashlab:" or "open /a: open /a:").
func assertNoRepeatedPrefix(t *testing.T, msg string) {
	t.Helper()
	for _, line := range strings.Split(msg, "\n") {
		parts := strings.Split(line, ": ")
		for i := 1; i < len(parts); i++ {
			assert.NotEqual(t, parts[i-1], parts[i], "repeated %q in %q", parts[i], line)
		}
		assert.NotContains(t, line, "crashlab: crashlab:")
	}
}

// crashlabCanned is a run with one state of each interesting outcome.
func crashlabCanned() crashlabRun {
	st := func(i int, k crashlab.StateKind, torn bool) crashlab.CrashState {
		return crashlab.CrashState{Index: i, Kind: k, Cut: uint64(40 + i), Flush: 40, Durable: 30, Unflushed: 3, Landed: 2, Keep: 0.5, Torn: torn, Seed: 0xfedcba9876543210}
	}
	lost := errors.New("writer 1's record 2, acknowledged at op 37, reads back wrong")
	results := []crashlab.StateResult{
		{State: st(0, crashlab.FlushPoint, false), Status: crashlab.StatusOK, BlockSize: 1024},
		{State: st(1, crashlab.EndOfLog, false), Status: crashlab.StatusOK, BlockSize: 1024},
		{State: st(2, crashlab.Random, false), Status: crashlab.StatusOK, BlockSize: 1024},
		{State: st(3, crashlab.Random, true), Status: crashlab.StatusMountError, BlockSize: 1024, TornWrites: []uint64{41, 42},
			Err:    errors.New("mount -t ext4 /dev/loop7 /tmp/m: exit status 32: cannot mount; probably corrupted filesystem on /dev/loop7. (kernel: EXT4-fs (loop7): VFS: Found ext4 filesystem with invalid superblock checksum.  Run e2fsck?)"),
			Output: "mount: /tmp/m: cannot mount\nkernel log:\nEXT4-fs (loop7): VFS: Found ext4 filesystem with invalid superblock checksum.\n"},
		{State: st(4, crashlab.Random, false), Status: crashlab.StatusFsckError, BlockSize: 1024, Err: errors.New("e2fsck -fn /dev/loop7: exit status 4: errors"), Output: strings.Repeat("fsck says\n", 1000)},
		{State: st(5, crashlab.FlushPoint, false), Status: crashlab.StatusCheckError, BlockSize: 1024, Err: lost, CheckErr: lost},
		{State: st(6, crashlab.Random, false), Status: crashlab.StatusSetupError, BlockSize: 1024, Err: errors.New("attach a loop device to /tmp/i: no free loop device")},
	}
	rep := crashlab.ReplayReport{FS: crashlab.Ext4, Results: results, Counts: map[crashlab.ReplayStatus]int{}, States: 9, BlockSize: 1024, Elapsed: 3 * time.Second, PerSecond: 2}
	for _, r := range results {
		rep.Counts[r.Status]++
	}
	res := crashlab.LabResult{
		Options: crashlab.LabOptions{FS: crashlab.Ext4, Workload: crashlab.FsyncWriters, Writers: 2, Records: 3, ImageSize: 16 << 20, Random: 6, Parallel: 4, Seed: 1},
		Ops:     60, Flushes: 20, Acked: 6, States: 9, Replay: rep, Lost: 1, Recorded: time.Second,
	}
	return crashlabRun{Result: res, Err: errors.New("replay 9 crash states: state 6 (random): attach a loop device to /tmp/i: no free loop device"), Elapsed: 5 * time.Second}
}

// crashlabParseJSON parses every line of out as a JSON object and checks
// the conventions: "kind" first, snake_case names at every depth.
func crashlabParseJSON(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var checkKeys func(v any)
	checkKeys = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				assert.Regexp(t, snake, k)
				checkKeys(e)
			}
		case []any:
			for _, e := range v {
				checkKeys(e)
			}
		}
	}
	var lines []map[string]any
	for _, line := range bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m), "line %q", line)
		assert.True(t, bytes.HasPrefix(line, []byte(`{"kind":"crashlab.`)), "kind first: %.60s", line)
		checkKeys(m)
		lines = append(lines, m)
	}
	return lines
}

func TestCrashlabJSONWriter(t *testing.T) {
	run := crashlabCanned()
	var out bytes.Buffer
	require.NoError(t, writeCrashlabJSON(&out, run))
	lines := crashlabParseJSON(t, out.Bytes())
	require.Len(t, lines, 5, "one line per state that did not pass (4), then the summary")
	for i, want := range []struct {
		index            float64
		stateKind        string
		status, verdict  string
		lost             bool
		tornWrites       float64
		errorHas, output string
	}{
		{3, "random", "mount_error", "allowed", false, 2, "invalid superblock checksum", "kernel log:"},
		{4, "random", "fsck_error", "fail", false, 0, "exit status 4", "fsck says"},
		{5, "flush_point", "check_error", "fail", true, 0, "reads back wrong", ""},
		{6, "random", "setup_error", "error", false, 0, "no free loop device", ""},
	} {
		l := lines[i]
		assert.Equal(t, "crashlab.state", l["kind"])
		assert.Equal(t, want.index, l["index"])
		assert.Equal(t, want.stateKind, l["state_kind"])
		assert.Equal(t, want.status, l["status"])
		assert.Equal(t, want.verdict, l["verdict"])
		assert.Equal(t, want.lost, l["lost"])
		assert.Equal(t, want.tornWrites, l["torn_writes"])
		assert.Contains(t, l["error"], want.errorHas)
		assert.Contains(t, l["output"], want.output)
		assert.LessOrEqual(t, len(l["output"].(string)), crashlabOutputMax)
		assert.Equal(t, "0xfedcba9876543210", l["state_seed"])
		assert.EqualValues(t, 1024, l["block_bytes"])
		assert.Contains(t, l["description"], fmt.Sprintf("state %d (", int(want.index)))
		for _, f := range []string{"cut", "flush", "durable", "unflushed", "landed", "keep", "torn", "shuffled", "torn_write_ops", "check_error", "elapsed_ns"} {
			assert.Contains(t, l, f)
		}
	}
	assert.Equal(t, []any{41.0, 42.0}, lines[0]["torn_write_ops"])
	assert.Empty(t, lines[2]["check_error"], "a check error is said once, in error")

	sum := lines[4]
	for k, want := range map[string]any{
		"kind": "crashlab.summary", "schema": 2.0, "fs": "ext4", "workload": "fsync", "negative_control": false,
		"writers": 2.0, "records": 3.0, "random_states": 6.0, "parallel": 4.0, "seed": 1.0, "flush_delay_ns": 0.0,
		"image_size_bytes": 16777216.0, "block_bytes": 1024.0, "ops": 60.0, "flushes": 20.0, "acked": 6.0,
		"states": 9.0, "replayed": 7.0, "lost": 1.0, "unmountable_torn": 1.0, "fsck_error_torn": 0.0,
		"interrupted": false, "signal": "", "recorded_ns": 1e9, "replay_ns": 3e9, "elapsed_ns": 5e9,
		"result": "fail", "exit_code": 1.0,
		"replays_by_status": map[string]any{"ok": 3.0, "check_error": 1.0, "fsck_error": 1.0, "mount_error": 1.0, "setup_error": 1.0},
		"verdicts":          map[string]any{"pass": 3.0, "allowed": 1.0, "fail": 2.0, "error": 1.0},
	} {
		assert.Equal(t, want, sum[k], k)
	}
	byKind := sum["replays_by_kind"].(map[string]any)
	assert.Equal(t, map[string]any{"ok": 1.0, "check_error": 0.0, "fsck_error": 1.0, "mount_error": 1.0, "setup_error": 1.0}, byKind["random"])
	assert.Equal(t, map[string]any{"ok": 1.0, "check_error": 1.0, "fsck_error": 0.0, "mount_error": 0.0, "setup_error": 0.0}, byKind["flush_point"])
	assert.Equal(t, 1.0, byKind["end_of_log"].(map[string]any)["ok"])
	assert.Contains(t, sum["error"], "no free loop device")
	assert.Contains(t, sum["exit_meaning"], "acknowledged record was lost")
}

func TestCrashlabExitCode(t *testing.T) {
	allowedOnly := crashlabCanned()
	var kept []crashlab.StateResult
	for _, r := range allowedOnly.Result.Replay.Results {
		if r.Verdict() == crashlab.VerdictPass || r.Verdict() == crashlab.VerdictAllowed {
			kept = append(kept, r)
		}
	}
	allowedOnly.Result.Replay.Results, allowedOnly.Result.Lost, allowedOnly.Err = kept, 0, nil

	setupOnly := allowedOnly
	setupOnly.Result.Replay.Results = append(append([]crashlab.StateResult(nil), kept...),
		crashlab.StateResult{State: crashlab.CrashState{Kind: crashlab.Random}, Status: crashlab.StatusSetupError})
	setupOnly.Err = errors.New("replay: no free loop device")

	interrupted := crashlabCanned()
	interrupted.Result.Interrupted = true
	interrupted.Cause = interruptCause{os.Interrupt}
	terminated := interrupted
	terminated.Cause = interruptCause{syscall.SIGTERM}

	for _, tc := range []struct {
		name string
		run  crashlabRun
		code int
	}{
		{"only torn states failed to mount", allowedOnly, 0},
		{"a record lost and a setup error: the finding wins", crashlabCanned(), 1},
		{"only a setup error", setupOnly, 3},
		{"SIGINT", interrupted, 130},
		{"SIGTERM", terminated, 143},
	} {
		assert.Equal(t, tc.code, tc.run.ExitCode(), tc.name)
		assert.NotEmpty(t, crashlabExitMeaning[tc.code], tc.name)
	}
	// The interruption itself is no error line; what else went wrong is.
	interrupted.Err = fmt.Errorf("stopped after replaying 7 of 9 crash states: %w",
		errors.Join(interruptCause{os.Interrupt}, errors.New("state 6 (random): no free loop device")))
	errs := interrupted.Errors()
	require.Len(t, errs, 1)
	assert.Equal(t, "state 6 (random): no free loop device", errs[0].Error())
	interrupted.Err = fmt.Errorf("stopped while recording: %w", interruptCause{os.Interrupt})
	assert.Empty(t, interrupted.Errors())
}

func TestCrashlabText(t *testing.T) {
	var out bytes.Buffer
	writeCrashlabText(&out, crashlabCanned())
	text := out.String()
	for _, want := range []string{
		"ext4, 2 writers x 3 records (fsync), image 16 MiB, seed 1: 60 ops logged (20 flushes), 6 records acknowledged",
		"replayed 7 of 9 crash states",
		"STATE KIND  STATES          OK CHECK-ERROR  FSCK-ERROR MOUNT-ERROR SETUP-ERROR\n",
		"flush-point      2           1           1           0           0           0\n",
		"random           4           1           0           1           1           1\n",
		"all              7           3           1           1           1           1\n",
		"acknowledged records lost: in 1 of 7 states",
		"crash-consistency failures (lost records; flush-point, end-of-log or untorn random states that failed): 2",
		"allowed by the contract (a write torn inside a 1024-byte block; 1 unmountable, 0 failing fsck): 1",
		"state 3 (random)", "invalid superblock checksum", "(torn inside a 1024-byte block: ops 41, 42)",
		"replays that could not be set up: 1",
		"result: FAIL (exit 1): an acknowledged record was lost",
	} {
		assert.Contains(t, text, want)
	}
	assertNoRepeatedPrefix(t, text)

	interrupted := crashlabCanned()
	interrupted.Result.Interrupted, interrupted.Cause = true, interruptCause{os.Interrupt}
	out.Reset()
	writeCrashlabText(&out, interrupted)
	assert.Contains(t, out.String(), "interrupted by SIGINT: 7 of 9 states replayed (exit 130)\n")
	assert.NotContains(t, out.String(), "result:")
}

// crashlabNeedsRoot skips unless a lab run can happen here.
func crashlabNeedsRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a crash lab run: skipped in -short mode")
	}
	if err := crashlab.Preflight(crashlab.Ext4); err != nil {
		t.Skip(err)
	}
}

// crashlabSmall are the flags of a small, quick lab run.
var crashlabSmall = []string{"-q", "-json", "-fs", "ext4", "-writers", "2", "-records", "3", "-image-size", "16777216"}

// TestCrashlabRunJSON runs the command's own code path on a real file
// system, small, and parses what it prints.
func TestCrashlabRunJSON(t *testing.T) {
	crashlabNeedsRoot(t)
	t.Setenv("TMPDIR", t.TempDir())
	var out, errb bytes.Buffer
	code := crashlabMain(context.Background(), append(crashlabSmall, "-replays", "6"), &out, &errb)
	lines := crashlabParseJSON(t, out.Bytes())
	require.NotEmpty(t, lines)
	sum := lines[len(lines)-1]
	require.Equal(t, "crashlab.summary", sum["kind"], "the summary comes last")
	t.Logf("exit %d; %d state lines; summary: %v; stderr: %s", code, len(lines)-1, sum, errb.String())
	assert.Equal(t, crashlabExitPass, code, "fsync writers on ext4 lose nothing, and only torn states may fail")
	assert.EqualValues(t, code, sum["exit_code"])
	assert.EqualValues(t, 6, sum["acked"])
	assert.Equal(t, sum["states"], sum["replayed"])
	assert.Greater(t, sum["states"], 6.0, "flush points, the end of the log and 6 random states")
	assert.EqualValues(t, 1024, sum["block_bytes"], "ext4 makes 1 KiB blocks on a 16 MiB image")
	for _, l := range lines[:len(lines)-1] {
		assert.Equal(t, "crashlab.state", l["kind"])
		assert.Equal(t, "allowed", l["verdict"], "%v", l)
	}
	assert.Empty(t, errb.String())
	crashlabNoLeftovers(t, os.Getenv("TMPDIR"))
}

// TestCrashlabCommand: the user's program as the workload, through the
// command's own code path: a program that syncs before it acknowledges
// passes, one that acknowledges first is caught (exit 1), and the summary
// names the command.
func TestCrashlabCommand(t *testing.T) {
	crashlabNeedsRoot(t)
	// A TMPDIR of its own, though another run of this process may have
	// started the supervisor with another (the directories are the
	// caller's: it failed with ENOENT once that one was removed).
	t.Setenv("TMPDIR", t.TempDir())
	small := []string{"-q", "-json", "-image-size", "16777216", "-replays", "10"}
	synced := `set -e; for i in 1 2 3; do echo v$i > k$i; sync k$i; sync .; echo "ack k$i v$i" >&3; done; echo done`
	var out, errb bytes.Buffer
	code := crashlabMain(context.Background(), append(small, "--", "/bin/sh", "-c", synced), &out, &errb)
	lines := crashlabParseJSON(t, out.Bytes())
	sum := lines[len(lines)-1]
	assert.Equal(t, crashlabExitPass, code, "%v; stderr: %s", sum, errb.String())
	assert.Equal(t, "command", sum["workload"])
	assert.Equal(t, []any{"/bin/sh", "-c", synced}, sum["command"])
	assert.Nil(t, sum["check"], "the default checker")
	assert.EqualValues(t, 3, sum["acked"])
	assert.Equal(t, "done\n", errb.String(), "the program's output goes to stderr")

	early := `for i in 1 2 3; do echo v$i > k$i; echo "ack k$i v$i" >&3; done; sleep 0.2`
	out.Reset()
	errb.Reset()
	code = crashlabMain(context.Background(), append(small, "-check", `while read k v; do test "$(cat $k)" = "$v" || exit 1; done`, "--", "/bin/sh", "-c", early), &out, &errb)
	lines = crashlabParseJSON(t, out.Bytes())
	sum = lines[len(lines)-1]
	assert.Equal(t, crashlabExitFail, code, "%v; stderr: %s", sum, errb.String())
	assert.Positive(t, sum["lost"])
	assert.Equal(t, []any{"/bin/sh", "-c", `while read k v; do test "$(cat $k)" = "$v" || exit 1; done`}, sum["check"])
	crashlabNoLeftovers(t, os.Getenv("TMPDIR"))
}

// TestCrashlabInterrupted sends SIGINT to a child running the command,
// once it replays: the child finishes the replays under way, prints what
// was done, cleans up and exits 130.
func TestCrashlabInterrupted(t *testing.T) {
	if os.Getenv("FLUSHPROOF_CRASHLAB_CHILD") != "" {
		os.Exit(runCrashlab(append(crashlabSmall[1:], "-replays", "400"), os.Stdout, os.Stderr))
	}
	crashlabNeedsRoot(t)
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashlabInterrupted$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FLUSHPROOF_CRASHLAB_CHILD=1", "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var progress []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		progress = append(progress, sc.Text())
		if strings.Contains(sc.Text(), "replaying") {
			time.Sleep(300 * time.Millisecond) // some replays done, some under way
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			break
		}
	}
	for sc.Scan() {
		progress = append(progress, sc.Text())
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stderr: %s", strings.Join(progress, "\n"))
	assert.Equal(t, 130, exit.ExitCode())
	for _, line := range progress {
		assert.NotContains(t, line, "context canceled")
		assert.NotContains(t, line, "not mounted")
		assert.NotContains(t, line, "flushproof crashlab:", "no error lines: %q", line)
	}
	var lines []map[string]any
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(l, []byte("{")) { // the test binary may print around them
			lines = append(lines, crashlabParseJSON(t, l)...)
		}
	}
	require.NotEmpty(t, lines, "stdout: %s", out.String())
	sum := lines[len(lines)-1]
	assert.Equal(t, "crashlab.summary", sum["kind"])
	assert.Equal(t, true, sum["interrupted"])
	assert.Equal(t, "SIGINT", sum["signal"])
	assert.EqualValues(t, 130, sum["exit_code"])
	assert.Equal(t, "interrupted", sum["result"])
	assert.Equal(t, "", sum["error"])
	assert.Less(t, sum["replayed"], sum["states"])
	assert.Positive(t, sum["replayed"])
	t.Logf("replayed %v of %v states before SIGINT", sum["replayed"], sum["states"])
	crashlabNoLeftovers(t, tmp)
}

// crashlabNoLeftovers fails if a loop device, mount or file of a run under
// dir survived it.
func crashlabNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("losetup", "-a").Output(); err == nil {
		assert.NotContains(t, string(out), dir, "loop devices left attached")
	}
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		assert.NotContains(t, string(b), dir, "mounts left behind")
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Join(dir, e.Name()))
	}
	assert.Empty(t, names, "files left behind")
}

// TestCrashlabMerge: the -json outputs of the shards of one recording sum
// into the unsharded run's summary; shards missing, doubled or of other
// runs are refused.
func TestCrashlabMerge(t *testing.T) {
	dir := t.TempDir()
	k := 1
	shard := func(name, part, rec string, lost, pass int, states ...int) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, i := range states {
			require.NoError(t, enc.Encode(crashlabStateJSON{Kind: "crashlab.state", Index: i, Status: "check_error", Verdict: "fail", Lost: true}))
		}
		byStatus := map[string]int{"ok": pass, "check_error": lost}
		require.NoError(t, enc.Encode(crashlabSummaryJSON{Kind: "crashlab.summary", Schema: crashlabJSONSchema, FS: "ext4", Workload: "command",
			K: &k, Recording: rec, Shard: part, Generated: 30, Duplicates: 10, States: lost + pass, Replayed: lost + pass, Lost: lost,
			ByStatus: byStatus, ByKind: map[string]map[string]int{"epoch": byStatus}, Verdicts: map[string]int{"pass": pass, "fail": lost},
			Result: "fail", ExitCode: 1}))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
		return p
	}
	a := shard("a", "1/3", "r1", 1, 5, 3)
	b := shard("b", "2/3", "r1", 0, 7)
	c := shard("c", "3/3", "r1", 2, 5, 2, 11)
	var out, errb bytes.Buffer
	code := crashlabMain(context.Background(), []string{"merge", c, a, b}, &out, &errb)
	assert.Equal(t, crashlabExitFail, code, errb.String())
	lines := crashlabParseJSON(t, out.Bytes())
	require.Len(t, lines, 4)
	var idx []float64
	for _, l := range lines[:3] {
		idx = append(idx, l["index"].(float64))
	}
	assert.Equal(t, []float64{2, 3, 11}, idx, "the states in index order")
	sum := lines[3]
	assert.EqualValues(t, 20, sum["states"])
	assert.EqualValues(t, 3, sum["lost"])
	assert.EqualValues(t, 30, sum["generated"], "the recording's, not summed")
	assert.Equal(t, map[string]any{"ok": 17.0, "check_error": 3.0}, sum["replays_by_status"])
	assert.Nil(t, sum["shard"])
	assert.Equal(t, "fail", sum["result"])

	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{a, b}, "2 shards of 3 given (1/3, 2/3): every part is needed"},
		{[]string{a, a, b}, "are both shard 1/3"},
		{[]string{a, b, shard("d", "3/3", "r2", 0, 1)}, "are not parts of one run"},
		{[]string{a, b, shard("e", "", "r1", 0, 1)}, "not a shard of a recording"},
		{nil, "no file given"},
	} {
		out.Reset()
		errb.Reset()
		code := crashlabMain(context.Background(), append([]string{"merge"}, tc.files...), &out, &errb)
		assert.Equal(t, crashlabExitUsage, code, tc.want)
		assert.Contains(t, errb.String(), tc.want)
	}
}

// TestCrashlabRecordingOfBuiltin: a checker applies to a program of the
// user's; with the recording of a built-in workload, -load and -replay
// refuse it rather than ignore it.
func TestCrashlabRecordingOfBuiltin(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "ops.log")
	w, err := crashlab.NewLogWriter(logPath, 1<<20)
	require.NoError(t, err)
	require.NoError(t, w.Append(crashlab.Op{Seq: 1, Kind: crashlab.OpFlush}))
	require.NoError(t, w.Close())
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	rec := filepath.Join(dir, "run.rec")
	require.NoError(t, os.WriteFile(rec, append([]byte("FPCLREC1\n"+`{"fs":"ext4","image_size":16777216,"ready":1,"workload":"fsync","writers":1,"records":1}`+"\n"), log...), 0o644))
	for _, args := range [][]string{
		{"-load", rec, "-check", "true"},
		{"-replay", rec + ":0", "-keep", filepath.Join(dir, "k"), "-check", "true"},
	} {
		var out, errb bytes.Buffer
		code := crashlabMain(context.Background(), append([]string{"-q"}, args...), &out, &errb)
		assert.Equal(t, crashlabExitUsage, code, "%q", args)
		assert.Contains(t, errb.String(), "-check: applies to a command of yours", "%q", args)
	}
	assert.NoDirExists(t, filepath.Join(dir, "k"), "nothing built")
}

package crashlab

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAck(t *testing.T) {
	a, err := ParseAck("ack k1", 1)
	require.NoError(t, err)
	assert.Equal(t, Ack{Key: "k1", Line: 1}, a)
	a, err = ParseAck("ack orders/42 paid in full", 7)
	require.NoError(t, err)
	assert.Equal(t, Ack{Key: "orders/42", Value: "paid in full", HasValue: true, Line: 7}, a)
	assert.Equal(t, "orders/42 paid in full", a.String())
	a, err = ParseAck("ack k ", 2)
	require.NoError(t, err)
	assert.Equal(t, Ack{Key: "k", Value: "", HasValue: true, Line: 2}, a, "an empty VALUE is a value")
	for _, c := range []struct{ line, want string }{
		{"", `acknowledgement line 3 "": want "ack KEY" or "ack KEY VALUE"`},
		{"ACK k", `want "ack KEY"`},
		{"ack", `want "ack KEY"`},
		{"ack ", `no KEY after "ack "`},
		{"ack  v", `no KEY after "ack "`},
		{"ack k\x01 v", `KEY "k\x01" has a space or control character`},
		{"ack k v\x00", `the VALUE of "k" has a control character`},
	} {
		_, err := ParseAck(c.line, 3)
		assert.ErrorContains(t, err, c.want, "%q", c.line)
	}
	assert.NoError(t, checkKeyPath("a/b"))
	assert.ErrorContains(t, checkKeyPath("../x"), `KEY "../x" is not a path inside the file system`)
	assert.Error(t, checkKeyPath("/etc/passwd"))
}

// commandLab runs script (sh -c) as the workload on ext4, with check (sh
// -c) as the checker if not empty.
func commandLab(t *testing.T, script, check string) (LabResult, error) {
	t.Helper()
	labPrereqs(t, Ext4)
	opt := LabOptions{FS: Ext4, Command: []string{"/bin/sh", "-c", script}, Random: 30, ImageSize: 32 << 20, Seed: 1,
		Progress: func(s string) { t.Log(s) }}
	if check != "" {
		opt.Check = []string{"/bin/sh", "-c", check}
	}
	return RunLab(context.Background(), opt)
}

// syncedScript writes 4 files, makes each durable (the file, then its
// directory entry), acknowledges it and waits for crashlab's answer;
// earlyScript acknowledges each before anything is synced.
const (
	syncedScript = `set -e; for i in 1 2 3 4; do echo "v$i" > k$i; sync k$i; sync .; echo "ack k$i v$i" >&3; read -r _ <&4; done`
	earlyScript  = `set -e; for i in 1 2 3 4; do echo "v$i" > k$i; echo "ack k$i v$i" >&$FLUSHPROOF_ACK_FD; done; sleep 0.2`
)

// TestLabCommandLosesNothing: a program that syncs before it acknowledges
// passes the default checker in every state.
func TestLabCommandLosesNothing(t *testing.T) {
	start := time.Now()
	res, err := commandLab(t, syncedScript, "")
	elapsed := time.Since(start)
	require.NoError(t, err)
	// Where the time went: phases that sum to the run's time.
	var sum time.Duration
	var names []string
	for _, p := range res.Phases {
		sum += p.Time
		names = append(names, p.Name)
	}
	assert.LessOrEqual(t, sum, elapsed)
	assert.Greater(t, sum, elapsed*9/10, "phases %v", res.Phases)
	for _, want := range []string{"mkfs", "workload", "compute the crash states", "find duplicate images", "replay (build, mount, check, fsck)"} {
		assert.Contains(t, names, want)
	}
	assert.Equal(t, CommandWorkload, res.Options.Workload)
	require.Len(t, res.Acks, 4)
	for i, a := range res.Acks {
		assert.Equal(t, Ack{Key: "k" + string(rune('1'+i)), Value: "v" + string(rune('1'+i)), HasValue: true, Seq: a.Seq, Line: i + 1}, a)
		if i > 0 {
			assert.Greater(t, a.Seq, res.Acks[i-1].Seq, "each sync logs a flush before the next acknowledgement")
		}
	}
	assert.Equal(t, 4, res.Acked)
	assert.Zero(t, res.Lost, "%v", res.Replay.Failures())
	assertOnlyAllowedFailures(t, res)
	assert.Greater(t, len(res.Replay.Results), 10)
}

// TestLabCommandEarlyAckLoses is the negative control: acknowledging what
// was never synced is caught by the default checker.
func TestLabCommandEarlyAckLoses(t *testing.T) {
	res, err := commandLab(t, earlyScript, "")
	require.NoError(t, err)
	require.Len(t, res.Acks, 4)
	assert.Positive(t, res.Lost, "acknowledging before sync was not caught")
	for _, f := range res.Replay.Failures() {
		if f.Status == StatusCheckError {
			assert.Regexp(t, `^k[1-4], acknowledged at op \d+ \(line [1-4]\)(, is missing| with "v[1-4]", holds )`, f.Err.Error())
		}
	}
}

// TestLabCommandChecker: the user's checker decides each state, reads the
// acknowledgements at or before the state's cut on its standard input,
// and runs in the mounted state with the environment documented.
func TestLabCommandChecker(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	// The checker: log what it got, then compare every file.
	check := `n=0; while read k v; do n=$((n+1)); test "$(cat "$k" 2>/dev/null)" = "$v" || { echo "lost $k"; exit 7; }; done;
		echo "$n $PWD $FLUSHPROOF_DIR $FLUSHPROOF_STATE" >> ` + seen
	res, err := commandLab(t, earlyScript, check)
	require.NoError(t, err)
	assert.Positive(t, res.Lost, "the checker's exit status is the verdict")
	var msgs []string
	for _, f := range res.Replay.Failures() {
		if f.Status == StatusCheckError {
			msgs = append(msgs, f.Err.Error())
		}
	}
	require.NotEmpty(t, msgs)
	assert.Regexp(t, `^the checker /bin/sh -c ".*": exit status 7: lost k[1-4]$`, msgs[0])

	// The passing states logged how many acknowledgements they were held
	// to: all 4 at the end of the log, none before the first.
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	counts := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 4, line)
		assert.Equal(t, f[1], f[2], "the working directory is $FLUSHPROOF_DIR")
		assert.True(t, strings.HasPrefix(f[1], os.TempDir()), "a state's own mount: %s", f[1])
		counts[f[0]] = true
		if strings.Contains(line, "(end-of-log)") {
			assert.Equal(t, "4", f[0], line)
		}
	}
	assert.True(t, counts["0"], "a state cut before the first acknowledgement is held to none: %v", counts)

	// A checker that passes everything passes the negative control: the
	// verdict is the checker's, not crashlab's own.
	res, err = commandLab(t, earlyScript, "cat > /dev/null")
	require.NoError(t, err)
	assert.Zero(t, res.Lost)
}

// TestLabCommandErrors: a line that is not the protocol's, a program that
// fails, and a KEY the default checker cannot read are the run's error,
// with nothing replayed.
func TestLabCommandErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`echo hello >&3`, `the workload /bin/sh -c "echo hello >&3": acknowledgement line 1 "hello": want "ack KEY" or "ack KEY VALUE"`},
		{`echo "ack ../k" >&3`, `KEY "../k" is not a path inside the file system`},
		{`exit 3`, `the workload /bin/sh -c "exit 3" failed: exit status 3`},
	} {
		res, err := commandLab(t, c.script, "")
		assert.ErrorContains(t, err, c.want, c.script)
		assert.Zero(t, res.States, c.script)
	}
}

func TestLabCommandOptions(t *testing.T) {
	require.NoError(t, LabOptions{FS: Ext4, Command: []string{"true"}}.Validate())
	assert.Equal(t, CommandWorkload, LabOptions{Command: []string{"true"}}.withDefaults().Workload)
	for _, c := range []struct {
		opt   LabOptions
		field string
	}{
		{LabOptions{FS: Ext4, Workload: CommandWorkload}, "Command"},
		{LabOptions{FS: Ext4, Command: []string{""}}, "Command"},
		{LabOptions{FS: Ext4, Workload: FsyncWriters, Command: []string{"true"}}, "Workload"},
		{LabOptions{FS: Ext4, Check: []string{"true"}}, "Check"},
		{LabOptions{FS: Ext4, Command: []string{"true"}, Check: []string{""}}, "Check"},
		{LabOptions{FS: Ext4, Command: []string{"true"}, CheckTimeout: -1}, "CheckTimeout"},
		{LabOptions{FS: Ext4, Command: []string{"true"}, K: 1}, "K"},
	} {
		var oe *OptionError
		require.ErrorAs(t, c.opt.Validate(), &oe, "%+v", c.opt)
		assert.Equal(t, c.field, oe.Field)
	}
}

// crashlabLong runs the client tests (SQLite, bbolt) at a larger bound.
var crashlabLong = flag.Bool("crashlab.long", false, "run the real-client crash tests (SQLite, bbolt) at a larger bound: more rows and keys, up to 2 changes an epoch state, more random states")

// clientBound is the client tests' size: rows or keys, K, random states.
func clientBound() (n, k, random int) {
	if *crashlabLong {
		return 40, 2, 200
	}
	return 8, 1, 20
}

// TestLabSQLiteWAL runs the SQLite example (examples/crashlab/sqlite-wal),
// 8 rows, every epoch state with up to one change and 20 random states: in
// WAL mode with synchronous=FULL no acknowledged row is lost and every
// state passes PRAGMA integrity_check; with synchronous=OFF (the negative
// control) acknowledged rows are lost.
func TestLabSQLiteWAL(t *testing.T) {
	labPrereqs(t, Ext4)
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 (Debian package sqlite3) is not installed")
	}
	dir, err := filepath.Abs("../examples/crashlab/sqlite-wal")
	require.NoError(t, err)
	rows, k, random := clientBound()
	run := func(mode string) LabResult {
		res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Command: []string{filepath.Join(dir, "workload.sh"), mode, fmt.Sprint(rows)},
			Check: []string{filepath.Join(dir, "check.sh")}, Random: random, Epoch: true, K: k, ImageSize: 32 << 20, Seed: 1})
		require.NoError(t, err, mode)
		require.Len(t, res.Acks, rows, mode)
		t.Logf("synchronous=%s: %d ops, %d flushes, %d states (%d duplicates not replayed), %d lost", mode, res.Ops, res.Flushes, len(res.Replay.Results), res.Duplicates, res.Lost)
		assert.Equal(t, res.Generated, res.States+res.Duplicates, mode)
		assert.Positive(t, res.Duplicates, "%s: prefixes at consecutive writes repeat flush points", mode)
		assert.Equal(t, res.States, len(res.Replay.Results), mode)
		return res
	}
	full := run("FULL")
	assert.Zero(t, full.Lost, "%v", full.Replay.Failures())
	assertOnlyAllowedFailures(t, full)
	off := run("OFF")
	assert.Positive(t, off.Lost, "synchronous=OFF was not caught losing an acknowledged row")
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("w.sh", []byte("#!/bin/sh\n"), 0o755))
	argv, err := ResolveCommand([]string{"./w.sh", "a b"})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "w.sh"), "a b"}, argv, "the caller's file, absolute")
	argv, err = ResolveCommand([]string{"sh", "-c", "x"})
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(argv[0]), "found on PATH: %s", argv[0])
	_, err = ResolveCommand([]string{"./missing.sh"})
	assert.Error(t, err)
	_, err = ResolveCommand(nil)
	assert.Error(t, err)

	assert.Equal(t, filepath.Join(dir, "w.sh")+" --rows 3", ResolveCheck("./w.sh --rows 3"))
	assert.Equal(t, "  "+filepath.Join(dir, "w.sh"), ResolveCheck("  ./w.sh"))
	for _, keep := range []string{"./missing.sh x", "sqlite3 db 'PRAGMA integrity_check'", "cat ./w.sh", "/bin/true", "$HOME/w.sh", "x=./w.sh"} {
		assert.Equal(t, keep, ResolveCheck(keep), "left as written")
	}
}

// TestLabBbolt runs the bbolt example (examples/crashlab/bbolt-kv), an
// embedded Go key-value store, built from the module: with its commits
// synced no acknowledged key is lost and every state passes bbolt's own
// consistency check; with NoSync (the negative control) keys are lost.
func TestLabBbolt(t *testing.T) {
	labPrereqs(t, Ext4)
	bin := filepath.Join(t.TempDir(), "bbolt-kv")
	build := exec.Command("go", "build", "-o", bin, "../examples/crashlab/bbolt-kv")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	keys, k, random := clientBound()
	run := func(extra ...string) LabResult {
		cmd := append([]string{bin, "put", "-keys", fmt.Sprint(keys)}, extra...)
		res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Command: cmd, Check: []string{bin, "check"},
			Random: random, Epoch: true, K: k, ImageSize: 32 << 20, Seed: 1})
		require.NoError(t, err, "%v", extra)
		require.Len(t, res.Acks, keys)
		t.Logf("%v: %d ops, %d flushes, %d states (%d duplicates not replayed), %d lost", extra, res.Ops, res.Flushes, len(res.Replay.Results), res.Duplicates, res.Lost)
		return res
	}
	synced := run()
	assert.Zero(t, synced.Lost, "%v", synced.Replay.Failures())
	assertOnlyAllowedFailures(t, synced)
	nosync := run("-nosync")
	assert.Positive(t, nosync.Lost, "NoSync was not caught losing an acknowledged key")
}

// TestLabCommandLeavesNothing: what the program leaves running in its
// process group is killed when it exits, so the recording ends then (a
// sleeper holding the acknowledgement descriptor does not hold the run),
// and nothing it would do later reaches the file system.
func TestLabCommandLeavesNothing(t *testing.T) {
	start := time.Now()
	res, err := commandLab(t, `echo v > k; sync k .; echo "ack k v" >&3; (sleep 2; echo late > late; sync late) & exit 0`, "test ! -e late")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second, "the run waited for the sleeper")
	assert.Len(t, res.Acks, 1)
	assert.Zero(t, res.Lost, "%v", res.Replay.Failures())
}

// TestLabCommandIgnoresAnswers: a program that never reads crashlab's
// answers is not held up by them, however many acknowledgements it makes
// (the answers past a full pipe are dropped).
func TestLabCommandIgnoresAnswers(t *testing.T) {
	labPrereqs(t, Ext4)
	res, err := RunLab(context.Background(), LabOptions{FS: Ext4, Command: []string{"/bin/sh", "-c", `yes "ack k" | head -n 30000 >&3`},
		Check: []string{"/bin/sh", "-c", "cat > /dev/null"}, ImageSize: 32 << 20})
	require.NoError(t, err)
	assert.Len(t, res.Acks, 30000)
}

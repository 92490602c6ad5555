//go:build linux

package crashlab

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// killChildEnv makes TestKill the worker it kills: a RunLab whose stages
// it prints on standard output. Its value is the lab's directory and the
// stage it is to be killed in ("replay" or another), as DIR:STAGE.
const killChildEnv = "CRASHLAB_KILL_CHILD"

// killGone bounds how long after a kill the run may still have leftovers.
const killGone = 10 * time.Second

// killChild is the worker: a lab run slow enough to be caught at each
// stage: for a kill while recording, flushes take 5 ms and there are many
// records; for a kill during replay, a short recording and many replays.
// It stops on SIGINT and SIGTERM as the command does.
func killChild(arg string) {
	dir, stage, _ := strings.Cut(arg, ":")
	opt := LabOptions{FS: Ext4, Writers: 4, Records: 300, Random: 30, Parallel: 2,
		ImageSize: 32 << 20, FlushDelay: 5 * time.Millisecond, Dir: dir, Seed: 1,
		Progress: func(s string) { fmt.Println("progress:", s) }}
	if stage == "replay" {
		opt.Records, opt.FlushDelay = 5, 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := RunLab(ctx, opt)
	fmt.Printf("finished: %v\n", err)
	os.Exit(0)
}

// killPoint says when TestKill kills the worker, and how.
type killPoint struct {
	name    string
	sig     syscall.Signal // what it sends
	target  string         // to the worker (""), its "supervisor" (SIGKILL), or "both" (SIGKILL)
	after   string         // the progress line that starts the wait
	want    string         // SIGINT: how the worker's RunLab error starts
	reached func(t *testing.T, pid int, dirs []string) bool
}

// TestKill starts a lab run in a child process and kills it at several
// points. However it dies, within a few seconds nothing of the run may be
// left (mount, loop device, FUSE connection, directory in the lab's
// directory, the temporary directory or /dev/shm, supervisor process) and
// no thread of it may be in D state. SIGINT must end the run quietly: one
// "interrupted" error, no "context canceled" per writer.
func TestKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
	}
	labPrereqs(t, Ext4)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skipf("needs mkfs.ext4: %v", err)
	}
	points := []killPoint{
		{name: "recording", sig: syscall.SIGKILL, after: "writers x", reached: writersInFsync},
		{name: "replay", sig: syscall.SIGKILL, after: "replaying", reached: replayMounted},
		{name: "interrupt-recording", sig: syscall.SIGINT, after: "writers x", reached: writersInFsync,
			want: "stopped while recording: interrupt signal received"},
		{name: "mkfs", sig: syscall.SIGKILL, after: "mkfs.ext4", reached: mkfsRunning},
		{name: "mount", sig: syscall.SIGKILL, after: "writers x"}, // the line comes right after the mount
		{name: "interrupt-replay", sig: syscall.SIGINT, after: "replaying", reached: replayMounted,
			want: "stopped after replaying"}, // the replays in flight finish, none starts
		// The worker carries on without its supervisor: its I/O fails (the
		// kernel aborted the FUSE connection), and it undoes its run itself.
		{name: "supervisor", sig: syscall.SIGKILL, target: "supervisor", after: "writers x", reached: writersInFsync},
		// Nobody undoes the run: nothing may wait in D state, and the next
		// run's sweep removes the rest.
		{name: "both", sig: syscall.SIGKILL, target: "both", after: "writers x", reached: writersInFsync},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			killAt(t, p)
		})
	}
}

func killAt(t *testing.T, p killPoint) {
	dir, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill$", "-test.count=1")
	stage := "record"
	if strings.Contains(p.name, "replay") {
		stage = "replay"
	}
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir+":"+stage, "TMPDIR="+tmp)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	cmd.Stderr = stderr // a file: the supervisor may hold it a little longer
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	dirs := []string{dir, tmp}

	// Wait for the stage, then for the moment within it.
	var out []string
	timeout := time.After(60 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the worker ended before %q:\n%s\n%s", p.after, strings.Join(out, "\n"), readAll(stderr))
			out = append(out, l)
			if strings.Contains(l, p.after) {
				break wait
			}
		case <-timeout:
			t.Fatalf("no %q from the worker in 60s:\n%s", p.after, strings.Join(out, "\n"))
		}
	}
	if p.reached != nil {
		require.Eventually(t, func() bool { return p.reached(t, pid, dirs) }, 10*time.Second, 5*time.Millisecond,
			"%s: the moment to kill never came", p.name)
	}
	if p.name == "recording" {
		// The check below must be able to fail: it sees these writers.
		require.Eventually(t, func() bool { return len(stuckTasks([]int{pid}, nil, nil)) > 0 }, 5*time.Second, time.Millisecond,
			"stuckTasks sees no writer of the worker in D state")
	}
	before := runRemains(pid, dirs...)
	require.NotEmpty(t, before.supervisors, "the run has a supervisor")
	t.Logf("sending %v to %s at %s: %d mounts, %d loop devices, %d directories",
		p.sig, cmp.Or(p.target, "the worker"), p.name, len(before.mounts), len(before.loops), len(before.dirs))
	killedAt := time.Now()
	if p.target == "supervisor" || p.target == "both" {
		for _, sp := range before.supervisors {
			require.NoError(t, syscall.Kill(sp, syscall.SIGKILL))
		}
	}
	if p.target != "supervisor" {
		require.NoError(t, cmd.Process.Signal(p.sig))
	}
	// A worker that does not end by itself is a failure, not a hang.
	stuck := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	for l := range lines {
		out = append(out, l)
	}
	werr := cmd.Wait()
	killed = true
	require.True(t, stuck.Stop(), "the worker did not end within 30s of the signal:\n%s", strings.Join(out, "\n"))
	switch {
	case p.target == "supervisor":
		require.NoError(t, werr, "the worker ends by itself")
		assert.Contains(t, strings.Join(out, "\n"), ": recorder (/dev/loop", "the worker says what failed")
		assert.Contains(t, strings.Join(out, "\n"), "crashlab supervisor (pid", "the worker says its supervisor is gone")
	case p.target == "both":
		var ee *exec.ExitError
		require.ErrorAs(t, werr, &ee)
		// No server, no clean-up: the kernel aborted the FUSE connection,
		// so nothing waits; the rest waits for the next run's sweep.
		var tasks []string
		require.Eventually(t, func() bool {
			tasks = stuckTasks(append([]int{pid}, before.supervisors...), []string{fmt.Sprintf("%s%d-", markerPrefix, pid)}, nil)
			return len(tasks) == 0
		}, killGone, 50*time.Millisecond, "tasks in D state with the run's server gone: %v", tasks)
		// (Another process's sweep may have come first.)
		t.Logf("left for the next run's sweep: %v", Leftovers(pid, dirs...))
		var swept []string
		require.NoError(t, sweep(sweepRoots(dirs...), func(s string) { swept = append(swept, s) }))
		t.Logf("the next run's sweep:\n%s", strings.Join(swept, "\n"))
	case p.sig == syscall.SIGKILL:
		var ee *exec.ExitError
		require.ErrorAs(t, werr, &ee)
	default:
		finished := strings.Join(out, "\n")
		require.NoError(t, werr, "the worker exits by itself on SIGINT")
		assert.Contains(t, finished, "finished: "+p.want)
		assert.Equal(t, 1, strings.Count(finished, "interrupt signal received"), "interrupted once:\n%s", finished)
		assert.NotContains(t, finished, "context canceled", "the interruption is named by its signal")
		assert.NotContains(t, readAll(stderr), "not mounted")
	}

	if assertRunGone(t, pid, dirs, before) {
		t.Logf("nothing left %v after the signal", time.Since(killedAt).Round(time.Millisecond))
	}
	t.Logf("the worker's output:\n%s\nits and its supervisor's standard error:\n%s", strings.Join(out, "\n"), readAll(stderr))
}

// assertRunGone waits until nothing of the worker pid's run is left and no
// task of it is in D state, and fails with what remains after killGone.
func assertRunGone(t *testing.T, pid int, dirs []string, before remains) bool {
	t.Helper()
	var loops, names []string
	for _, l := range before.loops {
		loops = append(loops, l.Dev)
	}
	names = append(names, fmt.Sprintf("%s%d-", markerPrefix, pid))
	pids := append([]int{pid}, before.supervisors...)
	var left remains
	var stuck, conns []string
	deadline := time.Now().Add(killGone)
	for {
		left = runRemains(pid, dirs...)
		stuck = stuckTasks(pids, names, loops)
		conns = fuseConnsLeft(before)
		if (left.empty() && len(stuck) == 0 && len(conns) == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	gone := assert.Empty(t, Leftovers(pid, dirs...), "left of the run %v after the kill", killGone)
	gone = assert.Empty(t, conns, "FUSE connections of the run") && gone
	return assert.Empty(t, stuck, "tasks of the run in D state") && gone
}

// fuseConnsLeft returns the FUSE connections of before's mounts that still
// exist (and are not another file system's that got the same number).
func fuseConnsLeft(before remains) []string {
	if !fusectlMounted() {
		return nil // the kernel lists no connection without fusectl; the mounts were checked
	}
	mounts, _ := mountinfo.Read()
	var out []string
	for _, m := range before.mounts {
		if !m.IsFUSE() {
			continue
		}
		if _, err := os.Stat(filepath.Join(fusectlDir, strconv.FormatUint(uint64(m.Minor), 10))); err != nil {
			continue
		}
		reused := false
		for _, now := range mounts {
			reused = reused || (now.IsFUSE() && now.Minor == m.Minor && now.Source != m.Source)
		}
		if !reused {
			out = append(out, fmt.Sprintf("FUSE connection %d (was %s)", m.Minor, m.MountPoint))
		}
	}
	return out
}

// stuckTasks returns the tasks in D state (uninterruptible sleep) that
// belong to a run: threads of pids, of processes whose command line holds
// one of names, and kernel threads named after one of loops (jbd2/loopN-8,
// a loop worker) while that loop device is detached, so it is not another
// user's since.
func stuckTasks(pids []int, names, loops []string) []string {
	isPid := map[int]bool{}
	for _, p := range pids {
		isPid[p] = true
	}
	var detached []string
	for _, l := range loops {
		if loopdev.BackingFile(l) == "" {
			detached = append(detached, filepath.Base(l))
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	var out []string
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		open, close := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || close < open || close+2 >= len(b) || b[close+2] != 'D' {
			continue
		}
		comm := string(b[open+1 : close])
		tgid, _ := strconv.Atoi(strings.Split(st, "/")[2])
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", tgid))
		ours := isPid[tgid]
		for _, n := range names {
			ours = ours || strings.Contains(string(cmdline), n)
		}
		for _, l := range detached {
			ours = ours || strings.Contains(comm, l+"-") || strings.HasSuffix(comm, l)
		}
		if ours {
			wchan, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "wchan"))
			out = append(out, fmt.Sprintf("%s (%s) in D state at %s", filepath.Dir(st), comm, wchan))
		}
	}
	return out
}

// writersInFsync: some thread of the worker sleeps in D state (a writer in
// fsync, waiting for the journal commit and so for the FUSE server).
func writersInFsync(t *testing.T, pid int, dirs []string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, st := range tasks {
		b, _ := os.ReadFile(st)
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'D' {
			return true
		}
	}
	return false
}

// replayMounted: a replay's image is mounted.
func replayMounted(t *testing.T, pid int, dirs []string) bool {
	mounts, _ := mountinfo.Read()
	for _, m := range mounts {
		for _, r := range markersIn(m.MountPoint) {
			if r.worker.pid == pid && !m.IsFUSE() {
				return true
			}
		}
	}
	return false
}

// mkfsRunning: the worker's mkfs.ext4 runs.
func mkfsRunning(t *testing.T, pid int, dirs []string) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, _ := os.ReadFile(st)
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(mkfs.ext4") {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

func readAll(f *os.File) string {
	b, err := os.ReadFile(f.Name())
	if err != nil && !errors.Is(err, io.EOF) {
		return err.Error()
	}
	return string(b)
}

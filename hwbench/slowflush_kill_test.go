//go:build linux

package hwbench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/crashlab"
	"github.com/flushproof/flushproof/impl"
)

// slowFlushChildEnv makes TestSlowFlushKill the process it kills: it holds
// a slowflush:8ms target and writes and flushes it from 4 goroutines until
// killed, without any signal handling of its own (like `go test ./hwbench
// -device=slowflush:8ms`). Its value is the target's TempDir.
const slowFlushChildEnv = "HWBENCH_SLOWFLUSH_CHILD"

func slowFlushChild(dir string) {
	tg, err := OpenTarget(TargetOptions{Path: "slowflush:8ms", Region: 16 << 20, TempDir: dir})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ready := make(chan struct{}, 4)
	for w := range 4 {
		go func() {
			buf := impl.AlignedBuffer(4096, tg.File.MemoryAlignment())
			for i := 0; ; i++ {
				if err := tg.File.WriteAt(buf, int64(w)<<20+int64(i%256)*4096, 0); err != nil {
					fmt.Println("error:", err)
					os.Exit(1)
				}
				if err := tg.File.Flush(); err != nil {
					fmt.Println("error:", err)
					os.Exit(1)
				}
				if i == 0 {
					ready <- struct{}{}
				}
			}
		}()
	}
	for range 4 {
		<-ready
	}
	fmt.Println("ready", tg.Path)
	select {}
}

// TestSlowFlushKill: a process writing and flushing a slowflush device is
// killed by SIGKILL, or interrupted by SIGINT it does not handle; within a
// few seconds nothing of its crashlab run is left (loop device, FUSE
// mount and connection, /dev/shm and temporary files, supervisor), and no
// task of it is in D state. Its FUSE server, in the run's supervisor
// process, answers the flushes its threads wait for, then undoes the run.
func TestSlowFlushKill(t *testing.T) {
	if dir := os.Getenv(slowFlushChildEnv); dir != "" {
		slowFlushChild(dir)
	}
	if os.Geteuid() != 0 {
		t.Skip("slowflush needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("slowflush needs loop devices: %v", err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSlowFlushKill$", "-test.count=1")
			cmd.Env = append(os.Environ(), slowFlushChildEnv+"="+dir, "TMPDIR="+dir)
			stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			require.NoError(t, err)
			defer stderr.Close()
			cmd.Stderr = stderr
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			waited := false
			t.Cleanup(func() {
				if !waited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			f := strings.Fields(line)
			require.True(t, len(f) == 2 && f[0] == "ready", "the child said %q", line)
			dev := f[1]
			pid := cmd.Process.Pid
			require.NotEmpty(t, crashlab.Leftovers(pid, dir), "the child's run is visible")
			require.Eventually(t, func() bool { return len(dStateTasks(pid, dev)) > 0 }, 5*time.Second, time.Millisecond,
				"no thread of the child waits in D state: the check below could not fail")

			sent := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			werr := cmd.Wait()
			waited = true
			var ee *exec.ExitError
			require.ErrorAs(t, werr, &ee, "the child dies of %v", sig)

			var left, stuck []string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				left, stuck = crashlab.Leftovers(pid, dir), dStateTasks(pid, dev)
				if len(left)+len(stuck) == 0 || time.Now().After(deadline) {
					break
				}
			}
			assert.Empty(t, left, "left of the child's run")
			assert.Empty(t, stuck, "tasks of the child's run in D state")
			out, _ := os.ReadFile(stderr.Name())
			t.Logf("nothing left %v after %v; standard error:\n%s", time.Since(sent).Round(time.Millisecond), sig, out)
		})
	}
}

// dStateTasks lists the tasks in D state of process pid, of processes whose
// command line names dev, and kernel threads named after dev's loop device
// (jbd2/loopN-8, loop workers) once it is detached.
func dStateTasks(pid int, dev string) []string {
	name := filepath.Base(dev)
	detached := true
	if b, err := os.ReadFile(filepath.Join("/sys/block", name, "loop", "backing_file")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		detached = false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	var out []string
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || close+2 >= len(s) || s[close+2] != 'D' {
			continue
		}
		comm := s[open+1 : close]
		tgid, _ := strconv.Atoi(strings.Split(st, "/")[2])
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", tgid))
		namesDev := false
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			namesDev = namesDev || arg == dev
		}
		if tgid == pid || namesDev ||
			(detached && (strings.Contains(comm, name+"-") || strings.HasSuffix(comm, name))) {
			wchan, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "wchan"))
			out = append(out, fmt.Sprintf("%s (%s) at %s", filepath.Dir(st), comm, wchan))
		}
	}
	return out
}

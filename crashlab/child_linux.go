//go:build linux

package crashlab

// The tools crashlab runs (mkfs, mount, umount, fsck) as child
// processes. Each child
//
//   - runs in a process group of its own, so a terminal's Ctrl-C (SIGINT
//     to the foreground process group) reaches only crashlab, which then
//     stops in order; before, it also killed a mount or umount half-way,
//     leaving a mount nobody knew of or a retry saying "not mounted";
//   - is killed (SIGKILL) when crashlab's process dies, so no mkfs or
//     fsck outlives a killed run and keeps its loop device busy. The
//     kernel sends that parent-death signal when the *thread* that forked
//     the child exits (prctl(2), PR_SET_PDEATHSIG), and Go ends a thread
//     whenever a goroutine locked to it returns; so every child is forked
//     from one goroutine locked to its thread for the life of the
//     process, whose thread therefore exits only with the process;
//   - inherits no /dev/fuse descriptor: the recorder opens it with
//     O_CLOEXEC, in the supervisor process (recorder_fuse.go).

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// command prepares name with args as a child (see the top of this file).
// ctx kills it, as exec.CommandContext does.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// combinedOutput runs cmd (from command) and returns its standard output
// and error together, as exec.Cmd.CombinedOutput does.
func combinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startChild(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	return out.Bytes(), err
}

// forker is the goroutine, locked to its thread for good, that starts
// every child.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startChild starts cmd from the forker's thread.
func startChild(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: see the top of this file
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkRequest{cmd, done}
	return <-done
}

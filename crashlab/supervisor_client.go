//go:build linux

package crashlab

// The worker's side of the supervisor (supervisor.go): starting it, and
// asking it for things over the socket pair.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisorClient is the worker's connection to its supervisor.
type supervisorClient struct {
	pid  int
	run  runID
	conn *os.File

	sendMu sync.Mutex
	enc    *json.Encoder

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan response
	gone    error // why the connection ended
}

// supervision holds this process's supervisor.
var supervision struct {
	mu sync.Mutex
	c  *supervisorClient
}

// stderrReport reports a line on standard error.
func stderrReport(s string) { fmt.Fprintf(os.Stderr, "crashlab: %s\n", s) }

// supervise sweeps the leftovers of dead runs (in the usual places and in
// dirs; a line each to report, or to standard error if report is nil), and
// returns this process's supervisor, started on first use or again if the
// last one died.
func supervise(report func(string), dirs ...string) (*supervisorClient, error) {
	if report == nil {
		report = stderrReport
	}
	// Runs leave mounts and loop devices only as root, and only root can
	// undo them.
	if os.Geteuid() == 0 {
		if err := sweep(sweepRoots(dirs...), report); err != nil {
			// Another run's leftovers are no reason to fail this one.
			report(err.Error())
		}
	}
	supervision.mu.Lock()
	defer supervision.mu.Unlock()
	if c := supervision.c; c != nil && c.err() == nil {
		return c, nil
	}
	c, err := startSupervisor()
	if err != nil {
		return nil, err
	}
	supervision.c = c
	return c, nil
}

// helloWait bounds the supervisor's start-up.
const helloWait = 30 * time.Second

func startSupervisor() (*supervisorClient, error) {
	me, err := self()
	if err != nil {
		return nil, fmt.Errorf("start the crashlab supervisor: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start the crashlab supervisor: socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "crashlab supervisor connection")
	theirs := os.NewFile(uintptr(fds[1]), "crashlab worker connection")
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{supervisorArg0, me.String()},
		Env:         append(os.Environ(), supervisorEnv+"="+me.String()),
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{theirs}, // its descriptor 3 (supervisorFD)
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("start the crashlab supervisor (/proc/self/exe): %w", err)
	}
	c := &supervisorClient{pid: cmd.Process.Pid, conn: ours, enc: json.NewEncoder(ours),
		pending: map[uint64]chan response{}}
	hello := make(chan response, 1)
	c.pending[0] = hello
	go func() { _ = cmd.Wait() }() // reap it whenever it ends
	go c.read()
	select {
	case r, ok := <-hello:
		if !ok {
			return nil, fmt.Errorf("start the crashlab supervisor: %w", c.err())
		}
		run, ok := parseMarker(r.Run)
		if !ok || run.worker != me || run.supervisor.pid != c.pid {
			c.fail(fmt.Errorf("it named its run %q", r.Run))
			return nil, fmt.Errorf("start the crashlab supervisor (pid %d): it named its run %q, not one of worker %v", c.pid, r.Run, me)
		}
		c.run = run
	case <-time.After(helloWait):
		_ = cmd.Process.Kill()
		ours.Close()
		return nil, fmt.Errorf("start the crashlab supervisor: no answer from pid %d in %v", c.pid, helloWait)
	}
	return c, nil
}

// read dispatches the supervisor's answers until the connection ends.
func (c *supervisorClient) read() {
	dec := json.NewDecoder(c.conn)
	for {
		var r response
		if err := dec.Decode(&r); err != nil {
			c.fail(fmt.Errorf("the crashlab supervisor (pid %d) is gone (%v): the recorder's FUSE connection is aborted", c.pid, err))
			return
		}
		c.mu.Lock()
		ch := c.pending[r.ID]
		delete(c.pending, r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

func (c *supervisorClient) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone == nil {
		c.gone = err
		c.conn.Close()
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// err is why the connection ended, or nil while it lasts.
func (c *supervisorClient) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// call sends req and waits for its answer. The error is the request's
// own, or the connection's end.
func (c *supervisorClient) call(req request) (response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.gone != nil {
		c.mu.Unlock()
		return response{}, c.gone
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = ch
	c.mu.Unlock()
	c.sendMu.Lock()
	err := c.enc.Encode(req)
	c.sendMu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("the crashlab supervisor (pid %d) is gone (%v)", c.pid, err))
	}
	r, ok := <-ch
	if !ok {
		return response{}, c.err()
	}
	return r, r.Err.err()
}

// mkdirTemp makes a new directory of the run in parent (os.TempDir() if
// empty), named by the run's marker, and returns its path with symbolic
// links resolved.
func (c *supervisorClient) mkdirTemp(parent string) (string, error) {
	if parent == "" {
		// This process's temporary directory, not the supervisor's: the
		// supervisor is started once a process, and TMPDIR may have
		// changed since (a test's t.Setenv).
		parent = os.TempDir()
	}
	if parent != "" {
		abs, err := filepath.Abs(parent)
		if err != nil {
			return "", fmt.Errorf("create a directory in %s: %w", parent, err)
		}
		parent = abs
	}
	r, err := c.call(request{Op: opMkdir, Path: parent})
	return r.Path, err
}

// release undoes whatever is still mounted or attached inside dir, a
// directory from mkdirTemp, and removes it. When the supervisor is gone
// (killed), the worker does it itself.
func (c *supervisorClient) release(dir string) error {
	_, err := c.call(request{Op: opRelease, Path: dir})
	if err != nil && c.err() != nil {
		return releaseHere(dir)
	}
	return err
}

// releaseHere undoes dirs in this process, lazily: their FUSE server (if
// any) is gone with the supervisor.
func releaseHere(dirs ...string) error {
	var ds []string
	for _, d := range dirs {
		if d != "" {
			ds = append(ds, d)
		}
	}
	return undo(scope{owns: func(p string) bool {
		for _, d := range ds {
			if within(p, d) {
				return true
			}
		}
		return false
	}, dirs: ds})
}

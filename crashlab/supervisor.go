//go:build linux

package crashlab

// The supervisor: a second process per run that serves the recorder's
// FUSE file system and undoes the run when the worker dies.
//
// Why. The kernel turns I/O on the recorder's loop device into requests
// to the FUSE server. When the server ran in the worker (the program that
// records: the crashlab command, a test binary, hwbench's slowflush
// device), killing the worker could wedge the machine: a process's
// /dev/fuse descriptor closes only when its last thread exits, and its
// writer threads sat in fsync (jbd2_log_wait_commit) waiting for replies
// that thread was never going to send. Nothing a process does for itself
// survives SIGKILL, so the server lives in a process of its own.
//
// How. The first call that needs it (StartRecorder, RunLab, Replay)
// re-executes the program's own binary (/proc/self/exe) with
// FLUSHPROOF_CRASHLAB_SUPERVISOR set; this package's init notices and
// runs the supervisor instead of the program, so any binary that imports
// crashlab works, test binaries included. The supervisor runs in a process
// group of its own (a terminal's Ctrl-C reaches only the worker) and
// ignores SIGINT, SIGTERM and SIGHUP: its job is to outlive the worker.
// The two talk over a socket pair (one JSON object per line): the
// supervisor makes the run's directories (so it knows every one of them
// before anything is created inside), serves each recorder (backing file,
// log, FUSE mount, loop device) and answers the few questions the worker
// has (the loop device's name, the number of operations logged, the
// recorder's failure).
//
// When the worker dies, however it dies, the socket reaches end of file
// once its last thread has exited (threads share one file table), and its
// threads can exit, since the server still answers. The supervisor then
// waits for the process to be gone (a zombie at most), and undoes
// everything inside the run's directories in reverse order (undo_linux.go:
// unmount the recorded file system and replay mounts, detach the loop
// devices, unmount FUSE, remove the directories), lazily and aborting the
// FUSE connection when something stays busy beyond a few seconds. Then it
// exits. It uses no parent-death signal: that fires when the thread that
// forked it exits, which may be before the worker's other threads are done
// with the FUSE mount; end of file on the socket is exact.
//
// If the supervisor is killed too, its /dev/fuse descriptor (opened
// close-on-exec, so no child holds a copy) closes with it and the kernel
// aborts the connection (fs/fuse/dev.c, fuse_dev_release): waiting I/O
// fails and nothing hangs. The mounts, loop devices and directories left
// are swept by the next run (sweep.go). If the worker finds its supervisor
// gone, it undoes its own directories the same way.

import (
	"errors"
	"os"
	"syscall"
)

const (
	// supervisorEnv, set to the worker's "pid-start", makes a process
	// that imports crashlab run as a supervisor.
	supervisorEnv = "FLUSHPROOF_CRASHLAB_SUPERVISOR"
	// supervisorArg0 is the supervisor's argv[0]; argv[1] is the
	// worker's "pid-start". ps shows them, and Leftovers finds it by them.
	supervisorArg0 = "flushproof-crashlab-supervisor"
	// supervisorFD is the supervisor's end of the socket pair.
	supervisorFD = 3
)

func init() {
	if w, ok := os.LookupEnv(supervisorEnv); ok {
		_ = os.Unsetenv(supervisorEnv)
		os.Exit(superviseMain(w))
	}
}

// The requests.
const (
	opMkdir     = "mkdir"           // Path: parent (empty: os.TempDir()); answer Path
	opRelease   = "release"         // Path: a directory opMkdir made
	opRecStart  = "recorder.start"  // Start; answer Rec
	opRecStatus = "recorder.status" // Rec; answer Ops, Failed
	opRecClose  = "recorder.close"  // Rec; answer Ops, Failed
)

type request struct {
	ID    uint64        `json:"id"`
	Op    string        `json:"op"`
	Path  string        `json:"path,omitempty"`
	Rec   int           `json:"rec,omitempty"`
	Start *recorderSpec `json:"start,omitempty"`
}

// response answers the request with the same ID; ID 0 is the hello that
// names the run.
type response struct {
	ID     uint64        `json:"id"`
	Run    string        `json:"run,omitempty"`
	Err    *wireError    `json:"err,omitempty"`
	Path   string        `json:"path,omitempty"`
	Rec    *recorderInfo `json:"rec,omitempty"`
	Ops    int64         `json:"ops,omitempty"`
	Failed *wireError    `json:"failed,omitempty"`
}

// wireError carries an error between the processes with what callers
// test it for: its errno and this package's sentinels.
type wireError struct {
	Msg   string   `json:"msg"`
	Errno int      `json:"errno,omitempty"`
	Is    []string `json:"is,omitempty"`
}

var wireSentinels = map[string]error{"log-full": ErrLogFull, "seq-gap": ErrSeqGap}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		w.Errno = int(errno)
	}
	for name, s := range wireSentinels {
		if errors.Is(err, s) {
			w.Is = append(w.Is, name)
		}
	}
	return w
}

// remoteError is an error of the other process: its message, and errors.Is
// matches its errno and sentinels.
type remoteError struct {
	msg     string
	wrapped []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.wrapped }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	e := &remoteError{msg: w.Msg}
	if w.Errno != 0 {
		e.wrapped = append(e.wrapped, syscall.Errno(w.Errno))
	}
	for _, name := range w.Is {
		if s := wireSentinels[name]; s != nil {
			e.wrapped = append(e.wrapped, s)
		}
	}
	return e
}

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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// ---- The worker's side ----

// supervisorClient is the worker's connection to its supervisor.
type supervisorClient struct {
	pid  int
	run  string // the run's marker
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
		c.run = r.Run
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

// ---- The supervisor's side ----

// supervisor is the state of the supervisor process.
type supervisor struct {
	run  runID
	conn *os.File

	sendMu sync.Mutex
	enc    *json.Encoder

	mu        sync.Mutex
	dirs      map[string]bool // the run's directories (resolved paths)
	recorders map[int]*recorderServer
	nextRec   int

	handlers sync.WaitGroup
	// workerGone: the worker died; flushes stop emulating a slow disk,
	// so the clean-up is quick.
	workerGone atomic.Bool
	report     func(string)
}

// superviseMain is the supervisor process's main; worker is the worker's
// "pid-start".
func superviseMain(worker string) int {
	// SIGINT, SIGTERM, SIGHUP: the supervisor ends when its worker has.
	// SIGTTOU: a background process group writing to a terminal with
	// tostop set would be stopped mid-clean-up; ignored, the write goes
	// through (drivers/tty/tty_jobctrl.c, __tty_check_change). SIGPIPE:
	// a closed standard error must not end the clean-up either.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGTTOU)
	report := func(s string) { fmt.Fprintf(os.Stderr, "crashlab supervisor (pid %d): %s\n", os.Getpid(), s) }
	w, ok := parseProc(worker)
	if !ok {
		report(fmt.Sprintf("%s=%q is not a worker's pid-start", supervisorEnv, worker))
		return 2
	}
	if os.Getppid() != w.pid {
		// The worker died before this process ran: it made nothing
		// through us, and nobody is listening.
		return 0
	}
	me, err := self()
	if err != nil {
		report(err.Error())
		return 1
	}
	unix.CloseOnExec(supervisorFD) // no child of ours keeps the worker's connection open
	conn := os.NewFile(supervisorFD, "crashlab worker connection")
	s := &supervisor{run: runID{w, me}, conn: conn, enc: json.NewEncoder(conn),
		dirs: map[string]bool{}, recorders: map[int]*recorderServer{}, report: report}
	s.send(response{ID: 0, Run: s.run.marker()})
	s.serve()
	s.handlers.Wait()
	s.finish()
	return 0
}

func (s *supervisor) send(r response) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	_ = s.enc.Encode(r) // the worker may be gone; serve sees the end
}

// serve answers requests until the worker's end of the socket closes.
func (s *supervisor) serve() {
	dec := json.NewDecoder(s.conn)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		s.handlers.Add(1)
		go func() {
			defer s.handlers.Done()
			s.send(s.handle(req))
		}()
	}
}

func (s *supervisor) handle(req request) response {
	r := response{ID: req.ID}
	var err error
	switch req.Op {
	case opMkdir:
		r.Path, err = s.mkdirTemp(req.Path)
	case opRelease:
		err = s.release(req.Path)
	case opRecStart:
		if req.Start == nil {
			err = errors.New("recorder.start without options")
			break
		}
		r.Rec, err = s.startRecorder(*req.Start)
	case opRecStatus:
		s.mu.Lock()
		rs := s.recorders[req.Rec]
		s.mu.Unlock()
		if rs == nil {
			err = fmt.Errorf("no recorder %d", req.Rec)
			break
		}
		r.Ops, r.Failed = rs.ops.Load(), toWire(rs.Err())
	case opRecClose:
		s.mu.Lock()
		rs := s.recorders[req.Rec]
		delete(s.recorders, req.Rec)
		s.mu.Unlock()
		if rs == nil {
			err = fmt.Errorf("no recorder %d", req.Rec)
			break
		}
		err = s.closeRecorder(rs)
		r.Ops, r.Failed = rs.ops.Load(), toWire(rs.Err())
	default:
		err = fmt.Errorf("unknown request %q", req.Op)
	}
	r.Err = toWire(err)
	return r
}

// mkdirTemp makes and registers a directory of the run in parent.
func (s *supervisor) mkdirTemp(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	d, err := os.MkdirTemp(parent, s.run.marker()+"-*")
	if err != nil {
		return "", fmt.Errorf("create a directory for the run: %w", err)
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	s.mu.Lock()
	s.dirs[d] = true
	s.mu.Unlock()
	return d, nil
}

// forget drops dirs, and the run's directories inside them, from the
// run's list.
func (s *supervisor) forget(dirs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d := range s.dirs {
		for _, gone := range dirs {
			if gone != "" && within(d, gone) {
				delete(s.dirs, d)
			}
		}
	}
}

// release undoes what is inside dir, a directory of the run, closing any
// recorder still running in it, and removes it.
func (s *supervisor) release(dir string) error {
	s.mu.Lock()
	if !s.dirs[dir] {
		s.mu.Unlock()
		return fmt.Errorf("release %s: not a directory of this run", dir)
	}
	dirs := []string{dir}
	var recs []*recorderServer
	for id, rs := range s.recorders {
		if within(rs.dir, dir) {
			recs = append(recs, rs)
			delete(s.recorders, id)
			dirs = append(dirs, rs.shmDir)
		}
	}
	s.mu.Unlock()
	err := s.undo(dirs, recs, nil)
	s.forget(dirs...)
	if err != nil {
		return fmt.Errorf("release %s: %w", dir, err)
	}
	return nil
}

// undo undoes dirs, the run's directories, serving the recorders among
// them until their FUSE mounts are down, then closes those recorders.
func (s *supervisor) undo(dirs []string, recs []*recorderServer, report func(string)) error {
	var ds []string
	for _, d := range dirs {
		if d != "" {
			ds = append(ds, d)
		}
	}
	serving := map[string]*fuseMount{}
	for _, rs := range recs {
		if rs.fuse != nil {
			serving[rs.fuse.point] = rs.fuse
		}
	}
	err := undo(scope{
		owns: func(p string) bool {
			for _, d := range ds {
				if within(p, d) {
					return true
				}
			}
			return false
		},
		dirs: ds, serving: serving, deadline: time.Now().Add(politeWait), report: report,
	})
	for _, rs := range recs {
		err = errors.Join(err, rs.finish())
	}
	return err
}

// finish undoes whatever the worker left when it ended.
func (s *supervisor) finish() {
	// End of file came once the worker's last thread closed its files;
	// let the process finish exiting (a zombie counts as gone).
	for deadline := time.Now().Add(politeWait); s.run.worker.alive() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	s.workerGone.Store(true)
	s.mu.Lock()
	var dirs []string
	for d := range s.dirs {
		dirs = append(dirs, d)
	}
	var recs []*recorderServer
	for _, rs := range s.recorders {
		recs = append(recs, rs)
	}
	s.mu.Unlock()
	if len(dirs) == 0 && len(recs) == 0 {
		return // the worker closed everything itself
	}
	s.report(fmt.Sprintf("worker %d ended with its run (%s) still set up; undoing it", s.run.worker.pid, s.run.marker()))
	if err := s.undo(dirs, recs, s.report); err != nil {
		s.report(err.Error())
	}
}

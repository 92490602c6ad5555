//go:build linux

package crashlab

// The supervisor process (supervisor.go): it answers the worker's
// requests until the worker is gone, then undoes what the worker left.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
	"golang.org/x/sys/unix"
)

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
		owns: ownedBy(ds), dirs: ds, serving: serving, deadline: time.Now().Add(politeWait), report: report,
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
	// A tool the worker ran (mount) is killed when the worker dies
	// (child_linux.go), but one caught inside its system call finishes it
	// first, as does the worker's own LOOP_CONFIGURE: a loop device can be attached, or a file system mounted, just
	// after the undo looked. Look again until a look settleWait after the
	// last undo finds nothing of the run.
	owns := ownedBy(dirs)
	for range settleRounds {
		time.Sleep(settleWait)
		if !leftOf(owns) {
			return
		}
		s.report("something of the run appeared after the undo; undoing it too")
		if err := s.undo(dirs, nil, s.report); err != nil {
			s.report(err.Error())
		}
	}
}

// How long, and how often, a supervisor looks again after undoing a dead
// worker's run (finish).
const (
	settleWait   = 200 * time.Millisecond
	settleRounds = 5
)

// ownedBy reports whether a path lies in one of dirs (the run's
// directories; a path in one since removed still does).
func ownedBy(dirs []string) func(string) bool {
	return func(p string) bool {
		for _, d := range dirs {
			if within(p, d) {
				return true
			}
		}
		return false
	}
}

// leftOf reports whether a mount or a loop device that owns claims is
// still there.
func leftOf(owns func(string) bool) bool {
	mounts, _ := mountinfo.Read()
	for _, m := range mounts {
		if owns(m.MountPoint) || owns(m.Source) {
			return true
		}
	}
	for _, l := range loopdev.List() {
		if owns(l.Backing) {
			return true
		}
	}
	return false
}

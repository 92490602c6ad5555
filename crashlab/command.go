package crashlab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"golang.org/x/sys/unix"
)

// A user's program as the workload (LabOptions.Command), and a user's
// checker on every crash state (LabOptions.Check): docs/crashlab.md, "Your
// program".
//
// The program runs with its working directory at the root of the freshly
// made file system, whose path is also in FLUSHPROOF_DIR. It says what it
// has made durable by writing lines to the file descriptor named by
// FLUSHPROOF_ACK_FD (3):
//
//	ack KEY
//	ack KEY VALUE
//
// KEY is one word (no space, no control character); VALUE, if any, is
// the rest of the line after the one space that follows KEY. crashlab
// stamps each line with the position the recorder's log has reached when
// it reads the line, then answers "ok" on FLUSHPROOF_ACK_REPLY_FD (4).
// That position is at or after the one the program wrote it at, never
// before, so a state is never held to a promise made after its cut. A
// program that waits for the answer is held to each promise from exactly
// where it made it; one that does not, from when crashlab read it (a
// state cut in between is checked for mount and fsck as every state is).
//
// The checker runs in each crash state with its working directory at the
// root of the recovered file system, mounted read-write on the state's own
// image copy (so the program's own recovery may run), FLUSHPROOF_DIR set
// to it and FLUSHPROOF_STATE to the state's description, and on its
// standard input the acknowledgements at or before the state's cut, one
// "KEY" or "KEY VALUE" line each, in the order they were made. Exit status
// 0 passes the state; any other, or a run past CheckTimeout, fails it,
// with the end of what it printed. Without a checker every acknowledged
// KEY is a path relative to the file system's root that must exist, and
// hold VALUE (with or without one trailing newline) where one was given.

// CommandWorkload is the workload of LabOptions.Command.
const CommandWorkload Workload = "command"

// The environment of the program and the checker.
const (
	EnvDir   = "FLUSHPROOF_DIR"    // the root of the file system: the working directory
	EnvAckFD = "FLUSHPROOF_ACK_FD" // the program's acknowledgement descriptor (3)
	// EnvReplyFD names the descriptor (4) on which crashlab answers each
	// acknowledgement line with "ok" once it has stamped it: a program
	// that waits for the answer before its next write is held to each
	// promise from exactly where it made it.
	EnvReplyFD = "FLUSHPROOF_ACK_REPLY_FD"
	EnvState   = "FLUSHPROOF_STATE" // the checker's crash state, described
)

// DefaultCheckTimeout bounds one run of the checker unless
// LabOptions.CheckTimeout says otherwise.
const DefaultCheckTimeout = time.Minute

// MaxCheckTimeout bounds LabOptions.CheckTimeout.
const MaxCheckTimeout = time.Hour

// ackFD is the program's acknowledgement descriptor, its first extra
// file; replyFD the second, crashlab's answers.
const (
	ackFD   = 3
	replyFD = 4
)

// Ack is one acknowledgement of the program: Key, with Value if
// HasValue, promised durable once the recorder's log held Seq ops. Line
// is its line on the acknowledgement descriptor, from 1.
type Ack struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	HasValue bool   `json:"has_value,omitempty"`
	Seq      uint64 `json:"seq"`
	Line     int    `json:"line"`
}

// String is the acknowledgement as the checker reads it: "KEY" or "KEY
// VALUE".
func (a Ack) String() string {
	if a.HasValue {
		return a.Key + " " + a.Value
	}
	return a.Key
}

// ParseAck reads one line of the acknowledgement protocol (without its
// newline); n is its line number, for the error.
func ParseAck(line string, n int) (Ack, error) {
	rest, ok := strings.CutPrefix(line, "ack ")
	if !ok {
		return Ack{}, fmt.Errorf("acknowledgement line %d %q: want \"ack KEY\" or \"ack KEY VALUE\"", n, clip(line, 80))
	}
	key, value, hasValue := strings.Cut(rest, " ")
	if key == "" {
		return Ack{}, fmt.Errorf("acknowledgement line %d %q: no KEY after \"ack \"", n, clip(line, 80))
	}
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return Ack{}, fmt.Errorf("acknowledgement line %d: KEY %q has a space or control character", n, clip(key, 80))
		}
	}
	for _, r := range value {
		if r != '\t' && unicode.IsControl(r) {
			return Ack{}, fmt.Errorf("acknowledgement line %d: the VALUE of %q has a control character", n, clip(key, 80))
		}
	}
	return Ack{Key: key, Value: value, HasValue: hasValue, Line: n}, nil
}

// clip cuts s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkKeyPath is the path of an acknowledged KEY for the default
// checker: a path inside the file system, relative to its root.
func checkKeyPath(key string) error {
	if !filepath.IsLocal(key) {
		return fmt.Errorf("KEY %q is not a path inside the file system (relative, no \"..\" out of it), which the default checker reads; give -check a checker of your own for other keys", clip(key, 80))
	}
	return nil
}

// runCommand runs opt.Command in mnt, the recorded file system's root,
// until it exits, and returns its acknowledgements, each stamped with the
// log's position when it was read (rec.Ops). Its output goes to opt.Output
// (discarded if nil). When it exits, whatever it left in its process
// group is killed, so that nothing of the workload writes after the
// recording ends; when ctx ends, the whole group is killed.
func runCommand(ctx context.Context, opt LabOptions, mnt string, rec *Recorder) (acks []Ack, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	rr, rw, err := os.Pipe() // the answers
	if err != nil {
		pw.Close()
		return nil, err
	}
	defer rw.Close()
	cmd := command(context.WithoutCancel(ctx), opt.Command[0], opt.Command[1:]...)
	cmd.Dir = mnt
	cmd.Env = append(os.Environ(), EnvDir+"="+mnt, fmt.Sprintf("%s=%d", EnvAckFD, ackFD), fmt.Sprintf("%s=%d", EnvReplyFD, replyFD))
	out := opt.Output
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{pw, rr} // fd 3, fd 4
	cmd.WaitDelay = time.Second
	err = startChild(cmd)
	pw.Close()
	rr.Close()
	if err != nil {
		return nil, fmt.Errorf("start the workload %s: %w", quoteCommand(opt.Command), err)
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()

	type read struct {
		acks []Ack
		err  error
	}
	src := &ackReader{f: pr}
	done := make(chan read, 1)
	go func() {
		var r read
		br := bufio.NewReaderSize(src, 64<<10)
		var seq uint64
		stamped := -1 // src.reads when seq was taken
		for n := 1; ; n++ {
			line, err := br.ReadString('\n')
			if line == "" && err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && r.err == nil {
					r.err = fmt.Errorf("read the acknowledgements: %w", err)
				}
				break
			}
			if err != nil && !errors.Is(err, io.EOF) {
				// Cut off: the program has exited, and something it left
				// holds the descriptor without finishing the line.
				if r.err == nil {
					r.err = fmt.Errorf("acknowledgement line %d %q was cut off: the program exited, and a process it left outside its group holds descriptor %d", n, clip(line, 80), ackFD)
				}
				break
			}
			if src.reads != stamped {
				// A line read by a new read(2) was written before it: the
				// position now is at or after the program's. The lines of
				// one read share it.
				seq, stamped = uint64(rec.Ops()), src.reads
			}
			answer(rw)
			if r.err != nil {
				continue // drain, so the program never blocks on a full pipe
			}
			a, perr := ParseAck(strings.TrimSuffix(line, "\n"), n)
			if perr == nil && len(opt.Check) == 0 {
				perr = checkKeyPath(a.Key)
			}
			if perr != nil {
				r.err = perr
				continue
			}
			a.Seq = seq
			r.acks = append(r.acks, a)
		}
		done <- r
	}()
	werr := waitKillGroup(cmd)
	// Whatever the program started outside its group may still hold the
	// descriptor: read on while lines come, and stop after a second
	// without one.
	src.exited.Store(true)
	pr.SetReadDeadline(time.Now().Add(time.Second))
	r := <-done
	switch {
	case ctx.Err() != nil:
		return r.acks, context.Cause(ctx)
	case werr != nil:
		return r.acks, fmt.Errorf("the workload %s failed: %w", quoteCommand(opt.Command), werr)
	case r.err != nil:
		return r.acks, fmt.Errorf("the workload %s: %w", quoteCommand(opt.Command), r.err)
	}
	return r.acks, nil
}

// ackReader reads the acknowledgement pipe, counting its reads; once the
// program has exited, each read may wait a second at most.
type ackReader struct {
	f      *os.File
	reads  int // the reader goroutine's alone
	exited atomic.Bool
}

func (r *ackReader) Read(p []byte) (int, error) {
	if r.exited.Load() {
		r.f.SetReadDeadline(time.Now().Add(time.Second))
	}
	r.reads++
	return r.f.Read(p)
}

// answer writes "ok" to the program's answer pipe without ever waiting: a
// program that does not read its answers fills the pipe, and the answers
// past that are dropped, never the acknowledgements.
func answer(w *os.File) {
	c, err := w.SyscallConn()
	if err != nil {
		return
	}
	c.Write(func(fd uintptr) bool {
		syscall.Write(int(fd), []byte("ok\n"))
		return true // done, whether it was written or the pipe was full
	})
}

// ResolveCommand returns argv with its program found as a shell finds it
// (a name without a slash on PATH, a path as it is) and made absolute, so
// that it runs the same from the file system's root, where the workload
// runs: `./workload.sh` is the caller's, not the new file system's.
func ResolveCommand(argv []string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no program to run")
	}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, err
	}
	if p, err = filepath.Abs(p); err != nil {
		return nil, err
	}
	return append([]string{p}, argv[1:]...), nil
}

// ResolveCheck returns the checker's shell text with its first word made
// absolute where that word is a relative path with a slash to a file that
// exists (`./check.sh`, `scripts/check.sh`): the caller's file, though the
// checker runs in the state's root. Every other word is left as written.
func ResolveCheck(text string) string {
	lead := len(text) - len(strings.TrimLeft(text, " \t"))
	first, _, _ := strings.Cut(text[lead:], " ")
	if !strings.Contains(first, "/") || filepath.IsAbs(first) || strings.ContainsAny(first, "$`'\"\\*?[~;&|<>(){}=") {
		return text
	}
	if _, err := os.Stat(first); err != nil {
		return text
	}
	abs, err := filepath.Abs(first)
	if err != nil {
		return text
	}
	return text[:lead] + abs + text[lead+len(first):]
}

// waitKillGroup waits for cmd (started by startChild, in a process group
// of its own) to exit, kills whatever is left in its group, then reaps it.
// The group is killed before the reaping, while the exited child still
// holds its process id, so that the id cannot have been given to another
// group. A descendant that left the group and holds cmd's output open
// delays the reaping by at most a second (WaitDelay).
func waitKillGroup(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	return cmd.Wait()
}

// quoteCommand writes a command line for a message.
func quoteCommand(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// ackedBy returns the acknowledgements a crash after op cut is held to.
func ackedBy(acks []Ack, cut uint64) []Ack {
	var out []Ack
	for _, a := range acks {
		if acknowledgedBy(a.Seq, cut) {
			out = append(out, a)
		}
	}
	return out
}

// commandCheck is the Check of a command workload: the user's checker
// (opt.Check), or the default one.
func commandCheck(opt LabOptions, acks []Ack) Check {
	if len(opt.Check) == 0 {
		return func(mnt string, st CrashState) error { return defaultCheck(mnt, ackedBy(acks, st.Cut)) }
	}
	timeout := opt.CheckTimeout
	if timeout == 0 {
		timeout = DefaultCheckTimeout
	}
	return func(mnt string, st CrashState) error {
		var in bytes.Buffer
		for _, a := range ackedBy(acks, st.Cut) {
			in.WriteString(a.String())
			in.WriteByte('\n')
		}
		return runCheck(opt.Check, mnt, st.Describe(), &in, timeout)
	}
}

// defaultCheck: every acknowledged KEY is a file under mnt that holds its
// VALUE, where one was given.
func defaultCheck(mnt string, acks []Ack) error {
	for _, a := range acks {
		b, err := os.ReadFile(filepath.Join(mnt, a.Key))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s, acknowledged at op %d (line %d), is missing", a.Key, a.Seq, a.Line)
		}
		if err != nil {
			return fmt.Errorf("%s, acknowledged at op %d (line %d): %w", a.Key, a.Seq, a.Line, errors.Unwrap(err))
		}
		if a.HasValue && string(b) != a.Value && string(b) != a.Value+"\n" {
			return fmt.Errorf("%s, acknowledged at op %d (line %d) with %q, holds %q", a.Key, a.Seq, a.Line, clip(a.Value, 80), clip(string(b), 80))
		}
	}
	return nil
}

// checkOutputTail is how much of the checker's output a failure keeps.
const checkOutputTail = 2048

// runCheck runs the checker argv in mnt with the acknowledgements on its
// standard input: nil if it exits 0.
func runCheck(argv []string, mnt, state string, in io.Reader, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := command(context.Background(), argv[0], argv[1:]...)
	cmd.Dir = mnt
	cmd.Env = append(os.Environ(), EnvDir+"="+mnt, EnvState+"="+state)
	cmd.Stdin = in
	cmd.WaitDelay = time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startChild(cmd); err != nil {
		return fmt.Errorf("start the checker %s: %w", quoteCommand(argv), err)
	}
	// The checker and whatever it started go at the timeout, and when it
	// exits: nothing of it may keep the mount busy.
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := waitKillGroup(cmd)
	timedOut := !stop()
	tail := strings.TrimSpace(out.String())
	if tail != "" {
		tail = ": " + tail
	}
	var ee *exec.ExitError
	switch {
	case timedOut:
		return fmt.Errorf("the checker %s ran past %v and was killed%s", quoteCommand(argv), timeout, tail)
	case errors.As(err, &ee):
		return fmt.Errorf("the checker %s: %v%s", quoteCommand(argv), ee.ProcessState, tail)
	case err != nil:
		return fmt.Errorf("the checker %s: %w%s", quoteCommand(argv), err, tail)
	}
	return nil
}

// tailBuffer keeps the last checkOutputTail bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*checkOutputTail {
		t.b = append(t.b[:0], t.b[len(t.b)-checkOutputTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.b) > checkOutputTail {
		return "..." + string(t.b[len(t.b)-checkOutputTail:])
	}
	return string(t.b)
}

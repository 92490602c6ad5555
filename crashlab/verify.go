package crashlab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
)

// FS names the file system a log was recorded under.
type FS string

// The supported file systems.
const (
	Ext4 FS = "ext4"
	XFS  FS = "xfs"
)

// Check inspects crash state st, mounted at mnt; a non-nil error is a
// failed check (for instance an fsync-acknowledged file missing or wrong:
// what must be there depends on where st cut the log).
type Check func(mnt string, st CrashState) error

// ReplayStatus is what happened when one crash state was replayed.
type ReplayStatus uint8

// The outcomes, worst last among the file system's own failures.
const (
	StatusOK         ReplayStatus = iota + 1
	StatusCheckError              // mounted and fsck-clean, but check failed
	StatusFsckError               // fsck -n found problems after journal recovery
	StatusMountError              // the kernel refused to mount the image
	StatusSetupError              // replay itself failed (image, loop, temp dir)
)

// Statuses lists every ReplayStatus, best first.
var Statuses = []ReplayStatus{StatusOK, StatusCheckError, StatusFsckError, StatusMountError, StatusSetupError}

func (s ReplayStatus) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusCheckError:
		return "check-error"
	case StatusFsckError:
		return "fsck-error"
	case StatusMountError:
		return "mount-error"
	case StatusSetupError:
		return "setup-error"
	}
	return fmt.Sprintf("ReplayStatus(%d)", uint8(s))
}

// MarshalText writes the status in snake case ("mount_error"), as JSON
// values and keys are written.
func (s ReplayStatus) MarshalText() ([]byte, error) { return snake(s.String()), nil }

func snake(s string) []byte { return []byte(strings.ReplaceAll(s, "-", "_")) }

// Verdict is what the outcome of one replayed state says about the file
// system's crash consistency (docs/crashlab.md, "Which failures count").
type Verdict uint8

// The verdicts.
const (
	// VerdictPass: mounted, checked and fsck-clean.
	VerdictPass Verdict = iota + 1
	// VerdictAllowed: the state failed to mount or fsck, but it tears a
	// write inside a file-system block. The device contract allows such a
	// state (a torn write at sector granularity), and a file system that
	// writes a block in place without a journal copy (ext4's superblock)
	// cannot recover it. It is counted and reported, not held against the
	// file system; a lost acknowledged record never is allowed.
	VerdictAllowed
	// VerdictFail: a crash-consistency failure: an acknowledged record
	// missing or wrong (check failed) in any state, or a flush-point,
	// end-of-log, or random state without a write torn inside a block
	// that failed to mount or fsck.
	VerdictFail
	// VerdictError: replay itself failed (setup error); the state says
	// nothing about the file system.
	VerdictError
)

// Verdicts lists every Verdict.
var Verdicts = []Verdict{VerdictPass, VerdictAllowed, VerdictFail, VerdictError}

func (v Verdict) String() string {
	switch v {
	case VerdictPass:
		return "pass"
	case VerdictAllowed:
		return "allowed"
	case VerdictFail:
		return "fail"
	case VerdictError:
		return "error"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the verdict as String does ("allowed").
func (v Verdict) MarshalText() ([]byte, error) { return snake(v.String()), nil }

// StateResult is the outcome of replaying one crash state.
type StateResult struct {
	State  CrashState
	Status ReplayStatus
	Err    error  // nil when Status is StatusOK
	Output string // fsck output when fsck failed, mount output when mount failed
	// CheckErr is check's error when it ran (it runs before fsck, so a state
	// can fail fsck and check both; Status then says fsck).
	CheckErr error
	// TornWrites are the writes (by Seq) the state tears inside a block of
	// BlockSize bytes (CrashState.TornWrites); BlockSize is the file
	// system's block size read from the log (SectorSize if unknown).
	TornWrites []uint64
	BlockSize  int64
	Elapsed    time.Duration
}

// Verdict says what the result means for the file system. It assumes the
// state was cut after the file system had been created and synced (as
// RunLab's states are): before that, there is nothing to mount.
func (r StateResult) Verdict() Verdict {
	switch {
	case r.Status == StatusOK:
		return VerdictPass
	case r.CheckErr != nil || r.Status == StatusCheckError:
		// What check found holds even if replay failed afterwards.
		return VerdictFail
	case r.Status == StatusSetupError:
		return VerdictError
	case (r.State.Kind == Random || r.State.Kind == Epoch) && len(r.TornWrites) > 0:
		return VerdictAllowed
	}
	return VerdictFail
}

// Reason is one line saying why the state did not pass, for reports: the
// error, and for an allowed failure which writes it tears. Empty for a
// state that passed.
func (r StateResult) Reason() string {
	if r.Status == StatusOK {
		return ""
	}
	var b strings.Builder
	b.WriteString(r.Status.String())
	if r.Err != nil {
		fmt.Fprintf(&b, ": %v", r.Err)
	}
	if r.CheckErr != nil && r.Status != StatusCheckError {
		fmt.Fprintf(&b, "; check: %v", r.CheckErr)
	}
	if len(r.TornWrites) > 0 {
		fmt.Fprintf(&b, " (torn inside a %d-byte block: %s)", r.BlockSize, seqList(r.TornWrites, 4))
	}
	return b.String()
}

// seqList names ops by Seq ("op 12", "ops 12, 15 and 3 more").
func seqList(seqs []uint64, most int) string {
	var b strings.Builder
	if len(seqs) == 1 {
		b.WriteString("op ")
	} else {
		b.WriteString("ops ")
	}
	for i, s := range seqs {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(seqs)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}

// ReplayReport sums up a Replay.
type ReplayReport struct {
	FS FS
	// Results holds the states replayed, in the order of the states given.
	// After an interruption, states not replayed are missing (see
	// Interrupted).
	Results []StateResult
	Counts  map[ReplayStatus]int
	// States is how many states Replay was given; Interrupted how many of
	// them it did not replay because its context ended.
	States, Interrupted int
	// BlockSize is the file system's block size read from the log
	// (SectorSize when the log holds no superblock Replay knows).
	BlockSize int64
	Elapsed   time.Duration
	// PerSecond is replays (any outcome but setup errors) per wall second.
	PerSecond float64
}

// Failures returns the results that are not OK.
func (r ReplayReport) Failures() []StateResult {
	var out []StateResult
	for _, res := range r.Results {
		if res.Status != StatusOK {
			out = append(out, res)
		}
	}
	return out
}

// WithVerdict returns the results whose Verdict is v.
func (r ReplayReport) WithVerdict(v Verdict) []StateResult {
	var out []StateResult
	for _, res := range r.Results {
		if res.Verdict() == v {
			out = append(out, res)
		}
	}
	return out
}

// Verdicts counts the results by Verdict.
func (r ReplayReport) Verdicts() map[Verdict]int {
	n := map[Verdict]int{}
	for _, res := range r.Results {
		n[res.Verdict()]++
	}
	return n
}

// ByKind counts the results by the kind of state and by status.
func (r ReplayReport) ByKind() map[StateKind]map[ReplayStatus]int {
	n := map[StateKind]map[ReplayStatus]int{}
	for _, res := range r.Results {
		if n[res.State.Kind] == nil {
			n[res.State.Kind] = map[ReplayStatus]int{}
		}
		n[res.State.Kind][res.Status]++
	}
	return n
}

// String is a one-line summary.
func (r ReplayReport) String() string {
	v := r.Verdicts()
	s := fmt.Sprintf("%s: %d replays in %v (%.1f/s): %d ok, %d check errors, %d fsck errors, %d mount errors, %d setup errors; %d failed, %d allowed (torn inside a block)",
		r.FS, len(r.Results), r.Elapsed.Round(time.Millisecond), r.PerSecond, r.Counts[StatusOK], r.Counts[StatusCheckError],
		r.Counts[StatusFsckError], r.Counts[StatusMountError], r.Counts[StatusSetupError], v[VerdictFail], v[VerdictAllowed])
	if r.Interrupted > 0 {
		s += fmt.Sprintf("; interrupted, %d of %d states not replayed", r.Interrupted, r.States)
	}
	return s
}

// Replay builds each state's image in a temp directory of its own, attaches
// a loop device to it, mounts it (which runs journal recovery; the image is a
// copy, so that is fine), runs check on the mount point, unmounts, runs fsck
// without repairing (e2fsck -fn, xfs_repair -n) and detaches the device. Up
// to parallel states run at once. Everything Replay creates is removed on
// every path, and it touches nothing else. When ctx ends, the replays under
// way finish, no new one starts, and the report holds the states replayed.
// The error is non-nil when ctx ended or replay itself failed on some state
// (the report says which); failures of the file system or of check are in
// the report only.
func Replay(ctx context.Context, ops []Op, size int64, states []CrashState, fs FS, check Check, parallel int) (rep ReplayReport, err error) {
	rep = ReplayReport{FS: fs, Counts: map[ReplayStatus]int{}, States: len(states)}
	if fs != Ext4 && fs != XFS {
		return rep, fmt.Errorf("replay: file system %q, want %s or %s", fs, Ext4, XFS)
	}
	if err := preflight(fs, false); err != nil {
		return rep, err
	}
	parallel = max(parallel, 1)
	ops = sortedBySeq(ops)
	rep.BlockSize = BlockSize(fs, ops)
	// The run's supervisor makes the directory, and undoes whatever is
	// left in it (mounts, loop devices, images) at the end, or when this
	// process dies, however it dies (supervisor.go).
	sup, err := supervise(nil)
	if err != nil {
		return rep, fmt.Errorf("replay: %w", err)
	}
	dir, err := sup.mkdirTemp("")
	if err != nil {
		return rep, fmt.Errorf("replay: %w", err)
	}
	defer func() {
		if rerr := sup.release(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("replay: clean up: %w", rerr))
		}
	}()

	start := time.Now()
	results := make([]StateResult, len(states))
	replayed := make([]bool, len(states))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(parallel, len(states)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res := replayOne(ctx, filepath.Join(dir, fmt.Sprint(i)), ops, size, states[i], fs, check)
				// A setup error once ctx ended is the interruption (the
				// replay did not start, or a tool it ran was signalled),
				// not a result.
				replayed[i] = res.Status != StatusSetupError || ctx.Err() == nil
				results[i] = res
			}
		}()
	}
feed:
	for i := range states {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	rep.Elapsed = time.Since(start)

	var errs []error
	done := 0
	for i, res := range results {
		if !replayed[i] {
			rep.Interrupted++
			continue
		}
		if res.State.Kind == Random || res.State.Kind == Epoch {
			res.TornWrites = res.State.TornWrites(ops, rep.BlockSize)
		}
		res.BlockSize = rep.BlockSize
		rep.Results = append(rep.Results, res)
		rep.Counts[res.Status]++
		if res.Status == StatusSetupError {
			if ctx.Err() != nil && errors.Is(res.Err, ctx.Err()) {
				continue // a state not started for it: said once below
			}
			errs = append(errs, fmt.Errorf("%s: %w", res.State.Describe(), res.Err))
		} else {
			done++
		}
	}
	if s := rep.Elapsed.Seconds(); s > 0 {
		rep.PerSecond = float64(done) / s
	}
	if ctx.Err() != nil && rep.Interrupted > 0 {
		errs = append([]error{context.Cause(ctx)}, errs...)
	}
	return rep, errors.Join(errs...)
}

// BlockSize returns the block size of the file system the log creates,
// from the newest superblock it writes (ext4: s_log_block_size of the
// superblock at byte 1024; xfs: sb_blocksize at byte 4 of the superblock at
// byte 0, big-endian). It returns SectorSize when the log holds no
// superblock it recognises, so that no write counts as torn inside a block
// and no failure is excused.
func BlockSize(fs FS, ops []Op) int64 {
	head := make([]byte, 4096)
	for _, op := range sortedBySeq(ops) {
		off, end := opRange(op)
		if op.Kind == OpFlush || off < 0 || off >= int64(len(head)) || end <= off {
			continue
		}
		end = min(end, int64(len(head)))
		if op.Kind == OpWrite {
			copy(head[off:end], op.Data[:end-off])
		} else {
			clear(head[off:end])
		}
	}
	switch fs {
	case Ext4:
		sb := head[1024:2048]
		// s_magic at 0x38, s_log_block_size at 0x18 (fs/ext4/ext4.h).
		if binary.LittleEndian.Uint16(sb[0x38:]) == 0xef53 {
			if lg := binary.LittleEndian.Uint32(sb[0x18:]); lg <= 6 {
				return 1024 << lg
			}
		}
	case XFS:
		// sb_magicnum "XFSB", then sb_blocksize (fs/xfs/libxfs/xfs_format.h).
		if string(head[:4]) == "XFSB" {
			if bs := int64(binary.BigEndian.Uint32(head[4:])); bs >= SectorSize && bs <= 65536 && bs&(bs-1) == 0 {
				return bs
			}
		}
	}
	return SectorSize
}

// replayOne replays one state in dir, which it creates and removes.
func replayOne(ctx context.Context, dir string, ops []Op, size int64, st CrashState, fs FS, check Check) (res StateResult) {
	start := time.Now()
	res = StateResult{State: st}
	defer func() { res.Elapsed = time.Since(start) }()
	setup := func(err error) StateResult {
		res.Status, res.Err = StatusSetupError, err
		return res
	}
	if err := ctx.Err(); err != nil {
		return setup(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return setup(err)
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "image")
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return setup(err)
	}
	if err := st.Build(img, size, ops); err != nil {
		return setup(fmt.Errorf("build image: %w", err))
	}
	dev, err := loopdev.Attach(img, loopdev.Options{})
	if err != nil {
		return setup(err)
	}
	defer loopdev.Detach(dev, img) // at its last close, if udev still holds it

	// Mount (journal recovery), check, unmount.
	mountArgs := []string{"-t", string(fs)}
	if fs == XFS {
		// Every state of one log carries the same UUID; XFS refuses a second
		// mount of a UUID unless told not to care.
		mountArgs = append(mountArgs, "-o", "nouuid")
	}
	mountArgs = append(mountArgs, dev, mnt)
	klog := followKernelLog()
	mountOut, err := runTool(context.WithoutCancel(ctx), "mount", mountArgs...)
	var kmsgs []string
	if err != nil {
		kmsgs = klog.about(dev)
	}
	klog.close()
	if err != nil {
		// mount(8) says only "wrong fs type, bad option, bad superblock";
		// the file system says why in the kernel log.
		if len(kmsgs) > 0 {
			err = fmt.Errorf("%w (kernel: %s)", err, strings.Join(kmsgs, "; "))
			mountOut += "kernel log:\n" + strings.Join(kmsgs, "\n") + "\n"
		}
		res.Status, res.Err, res.Output = StatusMountError, err, mountOut
		return res
	}
	mounted := true
	defer func() {
		if mounted {
			replayUnmount(mnt)
		}
	}()
	if check != nil {
		res.CheckErr = replayCheck(check, mnt, st)
	}
	mounted = false
	if err := replayUnmount(mnt); err != nil {
		return setup(err)
	}

	var out string
	switch fs {
	case Ext4:
		out, err = runTool(context.WithoutCancel(ctx), "e2fsck", "-fn", dev)
	case XFS:
		out, err = runTool(context.WithoutCancel(ctx), "xfs_repair", "-n", dev)
	}
	switch {
	case err != nil:
		res.Status, res.Err, res.Output = StatusFsckError, err, out
	case res.CheckErr != nil:
		res.Status, res.Err = StatusCheckError, res.CheckErr
	default:
		res.Status = StatusOK
	}
	return res
}

// replayCheck calls check, turning a panic into an error so the state is still
// cleaned up and reported.
func replayCheck(check Check, mnt string, st CrashState) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	return check(mnt, st)
}

// runTool runs a tool and returns its output; its error names the
// command line, the exit status and the output's last line.
func runTool(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := startChild(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, toolMessage(out.String(), name, args))
	}
	return out.String(), err
}

// toolMessage is the last line of a tool's output without the prefixes
// our error already carries: tools start their messages with their own
// name and often with the path they were given ("umount: /x: not
// mounted."), which the error names before it.
func toolMessage(out, name string, args []string) string {
	// The last line that is not a continuation (indented, like mount's
	// "dmesg(1) may have more information" under its error).
	var s string
	for _, line := range strings.Split(strings.TrimRight(out, " \t\n"), "\n") {
		if line != "" && line[0] != ' ' && line[0] != '\t' {
			s = line
		}
	}
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, name+": ")
	for _, a := range args {
		if strings.HasPrefix(a, "/") {
			s = strings.TrimPrefix(s, a+": ")
		}
	}
	return s
}

// replayUnmount unmounts mnt, retrying while busy and lazily as a last resort so
// the mount never outlives the replay.
func replayUnmount(mnt string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, err = runTool(context.Background(), "umount", mnt); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, lerr := runTool(context.Background(), "umount", "-l", mnt); lerr != nil {
		return errors.Join(err, lerr)
	}
	return fmt.Errorf("%w (unmounted lazily)", err)
}

// kernelLog reads the kernel log (/dev/kmsg) from the point it was opened
// on. A nil *kernelLog (no /dev/kmsg, or not readable) reads nothing.
type kernelLog struct{ fd int }

func followKernelLog() *kernelLog {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return nil
	}
	return &kernelLog{fd}
}

// about returns the messages logged since the log was opened that name
// dev the way file systems do ("EXT4-fs (loop3): ...", "XFS (loop3): ..."):
// the device is ours while attached, so they are about our mount.
func (k *kernelLog) about(dev string) []string {
	if k == nil {
		return nil
	}
	tag := "(" + filepath.Base(dev) + ")"
	var msgs []string
	buf := make([]byte, 8192)
	for len(msgs) < 8 {
		n, err := unix.Read(k.fd, buf)
		if err == unix.EPIPE {
			continue // records overwritten under us: read on
		}
		if err != nil || n <= 0 {
			break // EAGAIN: nothing more
		}
		// A record is "prio,seq,usec,flags;message\n" then continuation
		// lines (Documentation/ABI/testing/dev-kmsg).
		rec := string(buf[:n])
		if i := strings.IndexByte(rec, ';'); i >= 0 {
			rec = rec[i+1:]
		}
		if i := strings.IndexByte(rec, '\n'); i >= 0 {
			rec = rec[:i]
		}
		if strings.Contains(rec, tag) {
			msgs = append(msgs, strings.TrimSpace(rec))
		}
	}
	return msgs
}

func (k *kernelLog) close() {
	if k != nil {
		unix.Close(k.fd)
	}
}

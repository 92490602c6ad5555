package crashlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
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

// ReplayStatus is the outcome of one replay.
type ReplayStatus uint8

// The outcomes, worst last among the file system's own failures.
const (
	StatusOK         ReplayStatus = iota + 1
	StatusCheckError              // mounted and fsck-clean, but check failed
	StatusFsckError               // fsck -n found problems after journal recovery
	StatusMountError              // the kernel refused to mount the image
	StatusSetupError              // replay itself failed (image, loop, temp dir)
)

func (s ReplayStatus) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusCheckError:
		return "check error"
	case StatusFsckError:
		return "fsck error"
	case StatusMountError:
		return "mount error"
	case StatusSetupError:
		return "setup error"
	}
	return fmt.Sprintf("ReplayStatus(%d)", uint8(s))
}

// StateResult is the outcome of replaying one crash state.
type StateResult struct {
	State  CrashState
	Status ReplayStatus
	Err    error  // nil when Status is StatusOK
	Output string // fsck output when fsck failed, mount output when mount failed
	// CheckErr is check's error when it ran (it runs before fsck, so a state
	// can fail fsck and check both; Status then says fsck).
	CheckErr error
	Elapsed  time.Duration
}

// ReplayReport sums up a Replay.
type ReplayReport struct {
	FS      FS
	Results []StateResult // in the order of the states given
	Counts  map[ReplayStatus]int
	Elapsed time.Duration
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

// String is a one-line summary.
func (r ReplayReport) String() string {
	return fmt.Sprintf("%s: %d replays in %v (%.1f/s): %d ok, %d check errors, %d fsck errors, %d mount errors, %d setup errors",
		r.FS, len(r.Results), r.Elapsed.Round(time.Millisecond), r.PerSecond, r.Counts[StatusOK], r.Counts[StatusCheckError],
		r.Counts[StatusFsckError], r.Counts[StatusMountError], r.Counts[StatusSetupError])
}

// ReplayTools returns the commands replaying fs needs that are missing, empty
// when replay can run (apart from needing root).
func ReplayTools(fs FS) []string {
	need := []string{"losetup", "mount", "umount"}
	switch fs {
	case Ext4:
		need = append(need, "e2fsck")
	case XFS:
		need = append(need, "xfs_repair")
	}
	var missing []string
	for _, t := range need {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	return missing
}

// Replay builds each state's image in a temp directory of its own, attaches
// a loop device to it, mounts it (which runs journal recovery; the image is a
// copy, so that is fine), runs check on the mount point, unmounts, runs fsck
// without repairing (e2fsck -fn, xfs_repair -n) and detaches the device. Up
// to parallel states run at once. Everything Replay creates is removed on
// every path, and it touches nothing else. The error is non-nil when the
// context ended or replay itself failed on some state (the report says
// which); failures of the file system or of check are in the report only.
func Replay(ctx context.Context, ops []Op, size int64, states []CrashState, fs FS, check Check, parallel int) (rep ReplayReport, err error) {
	rep = ReplayReport{FS: fs, Counts: map[ReplayStatus]int{}}
	if fs != Ext4 && fs != XFS {
		return rep, fmt.Errorf("crashlab: unknown file system %q", fs)
	}
	if os.Geteuid() != 0 {
		return rep, errors.New("crashlab: replay needs root (losetup, mount)")
	}
	if m := ReplayTools(fs); len(m) > 0 {
		return rep, fmt.Errorf("crashlab: replay of %s needs %s", fs, strings.Join(m, ", "))
	}
	parallel = max(parallel, 1)
	ops = sortedBySeq(ops)
	// The run's supervisor makes the directory, and undoes whatever is
	// left in it (mounts, loop devices, images) at the end, or when this
	// process dies, however it dies (supervisor.go).
	sup, err := supervise(nil)
	if err != nil {
		return rep, fmt.Errorf("crashlab: replay: %w", err)
	}
	dir, err := sup.mkdirTemp("")
	if err != nil {
		return rep, fmt.Errorf("crashlab: replay: %w", err)
	}
	defer func() {
		if rerr := sup.release(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("crashlab: replay: %w", rerr))
		}
	}()

	start := time.Now()
	rep.Results = make([]StateResult, len(states))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(parallel, len(states)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rep.Results[i] = replayOne(ctx, filepath.Join(dir, fmt.Sprint(i)), ops, size, states[i], fs, check)
			}
		}()
	}
	n := 0
feed:
	for i := range states {
		select {
		case jobs <- i:
			n++
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	rep.Results = rep.Results[:n]
	rep.Elapsed = time.Since(start)

	var errs []error
	done := 0
	for _, res := range rep.Results {
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
	if err := ctx.Err(); err != nil {
		errs = append([]error{err}, errs...)
	}
	return rep, errors.Join(errs...)
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
	dev, err := attachLoop(img, false)
	if err != nil {
		return setup(err)
	}
	defer replayDetach(dev)

	// Mount (journal recovery), check, unmount.
	mountArgs := []string{"-t", string(fs)}
	if fs == XFS {
		// Every state of one log carries the same UUID; XFS refuses a second
		// mount of a UUID unless told not to care.
		mountArgs = append(mountArgs, "-o", "nouuid")
	}
	mountArgs = append(mountArgs, dev, mnt)
	if out, err := replayRun(context.WithoutCancel(ctx), "mount", mountArgs...); err != nil {
		res.Status, res.Err, res.Output = StatusMountError, fmt.Errorf("mount: %w", err), out
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
		out, err = replayRun(context.WithoutCancel(ctx), "e2fsck", "-fn", dev)
	case XFS:
		out, err = replayRun(context.WithoutCancel(ctx), "xfs_repair", "-n", dev)
	}
	switch {
	case err != nil:
		res.Status, res.Err, res.Output = StatusFsckError, fmt.Errorf("fsck: %w", err), out
	case res.CheckErr != nil:
		res.Status, res.Err = StatusCheckError, fmt.Errorf("check: %w", res.CheckErr)
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

func replayRun(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := startChild(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, replayLastLine(out.String()))
	}
	return out.String(), err
}

func replayLastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// replayDetach detaches dev, retrying while the kernel still holds it (a
// just-unmounted file system can keep it busy for a moment).
func replayDetach(dev string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, err = replayRun(context.Background(), "losetup", "-d", dev); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// replayUnmount unmounts mnt, retrying while busy and lazily as a last resort so
// the mount never outlives the replay.
func replayUnmount(mnt string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, err = replayRun(context.Background(), "umount", mnt); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, lerr := replayRun(context.Background(), "umount", "-l", mnt); lerr != nil {
		return errors.Join(err, lerr)
	}
	return fmt.Errorf("%w (unmounted lazily)", err)
}

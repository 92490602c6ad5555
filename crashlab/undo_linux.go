//go:build linux

package crashlab

// Undoing what a run made, from what the kernel says exists. Every
// resource crashlab creates is named by a path inside one of the run's
// directories: a mount point (the FUSE mount, the recorded file system,
// each replay's mount), a loop device's backing file (the FUSE image, each
// replay's image), or it is the directory itself. So the list of a run's
// directories is the list of its resources, and undo finds them in
// /proc/self/mountinfo and /sys/block/loop*/loop/backing_file rather than
// trusting a record of what was meant to exist: a resource whose creator
// died before saying so is found all the same.
//
// The order is the reverse of creation, so nothing waits on something
// already gone:
//
//  1. FUSE connections that no server of this process serves are aborted
//     first (/sys/fs/fuse/connections/N/abort), so no later step can wait
//     for a reply that will never come (fs/fuse/control.c).
//  2. File systems mounted in the directories, or from loop devices whose
//     backing file is in them, are unmounted, deepest first.
//  3. Loop devices whose backing file is in the directories are detached.
//     LOOP_CLR_FD on a device still open only marks it autoclear, and the
//     kernel detaches it at the last close (drivers/block/loop.c,
//     loop_clr_fd), so undo waits for that, within its deadline.
//  4. FUSE mounts are unmounted; a server of this process then ends.
//  5. The directories are removed, unless something is still mounted
//     below one of them.
//
// Until its deadline undo unmounts and detaches politely, retrying while
// busy; after it (and always for a sweep, which has no server to keep
// answering) it aborts the FUSE connection and unmounts lazily
// (MNT_DETACH): the kernel then drops the mount when its last user goes,
// and nothing waits.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// politeWait is how long an undo retries a busy unmount or a loop device
// that is still open before it detaches lazily and aborts.
const politeWait = 3 * time.Second

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// scope is what one undo may touch.
type scope struct {
	// owns reports whether a path (a mount point, a mount's source, a loop
	// device's backing file) belongs to the run being undone.
	owns func(path string) bool
	// dirs are the directories to remove at the end.
	dirs []string
	// serving are the FUSE mounts this process serves, by mount point:
	// they can be unmounted politely, since their server still answers.
	serving map[string]*fuseMount
	// deadline ends the polite phase; zero: lazy at once (a sweep).
	deadline time.Time
	// report, if set, is told of each thing undone: a sweep and a
	// supervisor cleaning up after a dead worker say what they did.
	report func(string)
}

func (sc scope) say(format string, args ...any) {
	if sc.report != nil {
		sc.report(fmt.Sprintf(format, args...))
	}
}

func (sc scope) polite() bool { return time.Now().Before(sc.deadline) }

// ownsMount reports whether m belongs to the run: mounted in its
// directories, named by its marker, or mounted from one of its loop
// devices.
func (sc scope) ownsMount(m mountinfo.Mount, loops []loopdev.Loop) bool {
	if sc.owns(m.MountPoint) || sc.owns(m.Source) {
		return true
	}
	for _, l := range loops {
		if l.Dev == m.Source && sc.owns(l.Backing) {
			return true
		}
	}
	return false
}

// undo takes down what the scope owns, in the order described at the top
// of this file. It returns what it could not undo, or had to undo lazily.
func undo(sc scope) error {
	var errs []error
	mounts, err := mountinfo.Read()
	if err != nil {
		return err
	}
	loops := loopdev.List()
	for _, m := range mounts {
		if m.IsFUSE() && sc.serving[m.MountPoint] == nil && sc.ownsMount(m, loops) {
			if err := abortFUSE(m.Minor); err != nil {
				errs = append(errs, err)
			} else {
				sc.say("aborted FUSE connection %d (%s)", m.Minor, m.MountPoint)
			}
		}
	}
	errs = append(errs, unmountOwned(sc, false)...)
	for _, l := range loopdev.List() {
		if sc.owns(l.Backing) {
			if err := clearLoop(l.Dev, l.Backing, sc); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, unmountOwned(sc, true)...)
	for _, fm := range sc.serving {
		if err := fm.wait(sc.deadline.Add(time.Second)); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeDirs(sc)...)
	return errors.Join(errs...)
}

// unmountOwned unmounts the owned FUSE mounts (fuse) or the owned others,
// deepest and newest first, until none is left.
func unmountOwned(sc scope, fuse bool) []error {
	var errs []error
	done := map[string]bool{} // mount points given up on
	tries := map[string]int{} // unmounts that did not fail, per mount point
	for {
		mounts, err := mountinfo.Read()
		if err != nil {
			return append(errs, err)
		}
		loops := loopdev.List()
		var todo []mountinfo.Mount
		for i := len(mounts) - 1; i >= 0; i-- { // newest last in mountinfo
			m := mounts[i]
			if m.IsFUSE() == fuse && !done[m.MountPoint] && sc.ownsMount(m, loops) {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			return errs
		}
		sort.SliceStable(todo, func(i, j int) bool {
			return strings.Count(todo[i].MountPoint, "/") > strings.Count(todo[j].MountPoint, "/")
		})
		busy := false
		for _, m := range todo {
			gone, err := unmountOne(m, sc)
			switch {
			case err != nil:
				errs = append(errs, err)
				done[m.MountPoint] = true
			case !gone:
				busy = true
			default:
				// Mounts stacked on one point go one per unmount; a
				// point that stays listed after several (its path
				// hidden by another mount) is given up on.
				if tries[m.MountPoint]++; tries[m.MountPoint] > 8 {
					errs = append(errs, fmt.Errorf("unmount %s: still listed in mountinfo", m.MountPoint))
					done[m.MountPoint] = true
				}
			}
		}
		if busy {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// unmountOne unmounts m: politely while the deadline allows (gone is false
// while it is busy), else lazily, aborting a FUSE connection first.
func unmountOne(m mountinfo.Mount, sc scope) (gone bool, err error) {
	served := sc.serving[m.MountPoint] != nil
	if sc.polite() && (!m.IsFUSE() || served) {
		err := unix.Unmount(m.MountPoint, 0)
		switch {
		case err == nil:
			sc.say("unmounted %s (%s)", m.MountPoint, m.FSType)
			return true, nil
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT):
			return true, nil // no longer a mount point
		case errors.Is(err, unix.EBUSY):
			return false, nil
		}
		// Anything else: go lazy at once.
	}
	var why []string
	if !sc.deadline.IsZero() {
		why = append(why, fmt.Sprintf("busy for %v", politeWait))
	}
	if m.IsFUSE() {
		if err := abortFUSE(m.Minor); err != nil {
			why = append(why, err.Error())
		} else {
			why = append(why, fmt.Sprintf("aborted FUSE connection %d", m.Minor))
		}
	}
	if err := unix.Unmount(m.MountPoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return false, fmt.Errorf("unmount %s lazily: %w", m.MountPoint, err)
	}
	sc.say("unmounted %s (%s) lazily", m.MountPoint, m.FSType)
	if sc.deadline.IsZero() {
		return true, nil // a sweep: lazy is the plan, not a failure
	}
	return true, fmt.Errorf("unmount %s: %s; detached lazily", m.MountPoint, strings.Join(why, ", "))
}

// clearLoop detaches dev if it is still attached to backing, and, while
// the deadline allows, waits until the kernel let go of it (it is still
// open somewhere). It never detaches a device attached to another file:
// the number may have been reused.
func clearLoop(dev, backing string, sc scope) error {
	asked, err := loopdev.Detach(dev, backing)
	if err != nil || !asked {
		return err
	}
	for loopdev.BackingFile(dev) == backing {
		if !sc.polite() {
			if sc.deadline.IsZero() {
				sc.say("detached %s (over %s) once its last user closes it", dev, backing)
				return nil
			}
			return fmt.Errorf("detach %s: still attached to %s after %v (open or mounted); it detaches at its last close",
				dev, backing, politeWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sc.say("detached %s (over %s)", dev, backing)
	return nil
}

// removeDirs removes the scope's directories, except one with something
// still mounted below it (removing through a mount would delete what the
// mounted file system holds).
func removeDirs(sc scope) []error {
	mounts, err := mountinfo.Read()
	if err != nil {
		return []error{err}
	}
	var errs []error
dirs:
	for _, d := range sc.dirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			continue
		}
		for _, m := range mounts {
			if within(m.MountPoint, d) {
				errs = append(errs, fmt.Errorf("left %s in place: %s is still mounted on %s", d, m.Source, m.MountPoint))
				continue dirs
			}
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		sc.say("removed %s", d)
	}
	return errs
}

// fusectlDir is where the kernel lists FUSE connections (fusectl).
const fusectlDir = "/sys/fs/fuse/connections"

// abortFUSE aborts FUSE connection n: every request waiting for the
// server fails at once with ENOTCONN, and every later one too. It mounts
// fusectl if nobody has. A connection that no longer exists is not an
// error.
func abortFUSE(n uint32) error {
	abort := filepath.Join(fusectlDir, strconv.FormatUint(uint64(n), 10), "abort")
	err := os.WriteFile(abort, []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) && !fusectlMounted() {
		if merr := unix.Mount("fusectl", fusectlDir, "fusectl", 0, ""); merr != nil && !errors.Is(merr, unix.EBUSY) {
			return fmt.Errorf("abort FUSE connection %d: mount fusectl on %s: %w", n, fusectlDir, merr)
		}
		err = os.WriteFile(abort, []byte("1"), 0)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("abort FUSE connection %d: %w", n, err)
	}
	return nil
}

func fusectlMounted() bool {
	mounts, _ := mountinfo.Read()
	for _, m := range mounts {
		if m.FSType == "fusectl" {
			return true
		}
	}
	return false
}

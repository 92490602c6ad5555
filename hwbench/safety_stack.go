// What a named block device is built on, layer by layer, so that writing
// to it never reaches, through a lower layer, data someone else uses.
//
// A block device is a window on something else: a loop device on its
// backing file or block device (at an offset, for a length), a partition
// on its disk, a device-mapper or md device on its components (sysfs's
// slaves/). resolveStack walks down from the named device to the bottom
// of each branch, and checkStack applies to every layer the checks a
// named target of its kind gets:
//
//   - a block layer: mounted, an active swap area, held by another block
//     layer (holders/, but not the one the walk came down from), the
//     backing device of another loop device (not the one the walk came
//     through), or open for writing by a process (compared by st_rdev);
//     for every layer but a partition's disk also any of that for one of
//     its partitions (they lie inside it). The disk a partition lies on is
//     checked for its own uses only: its other partitions do not overlap.
//   - a regular file (a loop device's backing file): everything
//     fileInUse looks for, the loop device the walk came through excepted:
//     another loop device over it (at any offset: two windows on one file
//     may overlap), an active swap file, the source of a mounted file
//     system, mapped or open for writing by a process.
//
// Any use refuses the target, -destructive or not. Every read here is of
// sysfs and /proc, stat(2) and the read-only LOOP_GET_STATUS64.

package hwbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// maxStackDepth bounds the walk; the kernel refuses loops of loop devices
// (loop_validate_file), so it only guards against a sysfs that changes
// under the walk.
const maxStackDepth = 16

// layer is one level of a named block device's stack.
type layer struct {
	// how the walk reached it, for messages: "" for the named device,
	// else e.g. "the backing file of /dev/loop3 (from byte 1048576)".
	how string

	// A block layer.
	bd *blockDev
	// partitions says whether its partitions count as part of it (not
	// for the disk a partition lies on).
	partitions bool
	// exceptHolder is the holder the walk came down from (a dm or md
	// device's name), not a user of this layer.
	exceptHolder string

	// A regular file, with its identity (from stat, or from the loop
	// device when its name leads nowhere).
	file string
	id   fileID

	// exceptLoop is the loop device the walk came through (loopN), not a
	// user of this layer.
	exceptLoop string
}

// name is how messages name the layer.
func (l layer) name() string {
	what := l.file
	if l.bd != nil {
		what = l.bd.path
	}
	if l.how == "" {
		return what
	}
	return what + ", " + l.how + ","
}

// resolveStack lists top and every layer below it, top first.
func resolveStack(top blockDev) ([]layer, error) {
	var out []layer
	seen := map[string]bool{}
	var walk func(l layer, depth int) error
	walk = func(l layer, depth int) error {
		key := l.file
		if l.bd != nil {
			key = "block:" + l.bd.name
		}
		if seen[key] {
			return nil
		}
		seen[key] = true
		if depth > maxStackDepth {
			return fmt.Errorf("%w: %s: more than %d layers below it; hwbench cannot see what it is built on", ErrRefused, top.path, maxStackDepth)
		}
		out = append(out, l)
		if l.bd == nil {
			return nil
		}
		d := *l.bd
		// A partition lies on its disk.
		if _, err := os.Stat(filepath.Join(d.sysfs, "partition")); err == nil {
			disk, err := blockDevAt(filepath.Dir(d.sysfs))
			if err != nil {
				return fmt.Errorf("%w: %s is a partition, but its disk cannot be found: %v", ErrRefused, d.path, err)
			}
			if err := walk(layer{bd: &disk, how: "the disk " + d.path + " is a partition of"}, depth+1); err != nil {
				return err
			}
		}
		// A loop device shows its backing file or device.
		if strings.HasPrefix(d.name, "loop") {
			if next, ok, err := loopBacking(d); err != nil {
				return err
			} else if ok {
				if err := walk(next, depth+1); err != nil {
					return err
				}
			}
		}
		// Device mapper, md, bcache: built on its slaves.
		slaves, _ := os.ReadDir(filepath.Join(d.sysfs, "slaves"))
		for _, s := range slaves {
			sd, err := blockDevAt(filepath.Join(d.sysfs, "slaves", s.Name()))
			if err != nil {
				return fmt.Errorf("%w: %s is built on %s, which cannot be found in sysfs: %v", ErrRefused, d.path, s.Name(), err)
			}
			if err := walk(layer{bd: &sd, partitions: true, exceptHolder: d.name, how: "a component of " + d.path}, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(layer{bd: &top, partitions: true}, 0)
	return out, err
}

// blockDevAt reads the block device whose sysfs directory is dir.
func blockDevAt(dir string) (blockDev, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return blockDev{}, err
	}
	devno, err := os.ReadFile(filepath.Join(real, "dev"))
	if err != nil {
		return blockDev{}, err
	}
	maj, mnr, ok := parseMajorMinor(strings.TrimSpace(string(devno)), 10)
	if !ok {
		return blockDev{}, fmt.Errorf("%s/dev: bad device number %q", real, devno)
	}
	name := filepath.Base(real)
	return blockDev{path: "/dev/" + name, rdev: unix.Mkdev(maj, mnr), name: name, sysfs: real}, nil
}

// loopBacking is the layer below the loop device d: its backing block
// device or regular file, or ok false if d is not attached. The backing
// file's identity comes from its name where that leads to it, else from
// the loop device itself (an unlinked file, another mount namespace);
// where neither can tell, the target is refused: what lies below is
// unknown.
func loopBacking(d blockDev) (layer, bool, error) {
	var l layer
	var backing string
	deleted := false
	for _, lp := range loopdev.List() {
		if lp.Name == d.name {
			backing, deleted = lp.Backing, lp.Deleted
		}
	}
	if backing == "" {
		return l, false, nil
	}
	l.exceptLoop = d.name
	l.how = "the backing file of " + d.path
	if off, limit, ok := loopdev.Window(d.name); ok && (off > 0 || limit > 0) {
		l.how += fmt.Sprintf(" (from byte %d", off)
		if limit > 0 {
			l.how += fmt.Sprintf(", %d bytes", limit)
		}
		l.how += ")"
	}
	var st unix.Stat_t
	if !deleted && unix.Stat(backing, &st) == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			bd, err := lookupBlockDev(backing)
			if err != nil {
				return l, false, fmt.Errorf("%w: %s is backed by the block device %s, which cannot be found in sysfs: %v", ErrRefused, d.path, backing, err)
			}
			l.bd, l.partitions = &bd, true
			l.how = "the backing device of " + strings.TrimPrefix(l.how, "the backing file of ")
			return l, true, nil
		}
		// The name still leads to the file the loop device holds, unless
		// it was replaced: the loop device says which it holds.
		if got, err := loopdev.BackingID(d.name); err == nil && (got.Ino != st.Ino || got.Major != unix.Major(st.Dev) || got.Minor != unix.Minor(st.Dev)) {
			return loopBackingByID(l, d, backing, got)
		}
		l.file, l.id = backing, idOf(&st)
		return l, true, nil
	}
	got, err := loopdev.BackingID(d.name)
	if err != nil {
		return l, false, fmt.Errorf("%w: %s is backed by %s, which this process cannot reach by its name, and the loop device cannot be asked (%v): hwbench cannot tell who else uses it",
			ErrRefused, d.path, backing, err)
	}
	return loopBackingByID(l, d, backing, got)
}

// loopBackingByID is the layer below d known only by the identity the
// loop device gives.
func loopBackingByID(l layer, d blockDev, backing string, got loopdev.FileID) (layer, bool, error) {
	if got.Rdev != 0 {
		bd, err := blockDevAt(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(got.Rdev), unix.Minor(got.Rdev)))
		if err != nil {
			return l, false, fmt.Errorf("%w: %s is backed by the block device %d:%d, which cannot be found in sysfs: %v",
				ErrRefused, d.path, unix.Major(got.Rdev), unix.Minor(got.Rdev), err)
		}
		l.bd, l.partitions = &bd, true
		l.how = "the backing device of " + strings.TrimPrefix(l.how, "the backing file of ")
		return l, true, nil
	}
	l.file, l.id = backing, fileID{Major: got.Major, Minor: got.Minor, Ino: got.Ino}
	return l, true, nil
}

// stackUse is what uses a named block device's stack.
type stackUse struct {
	why   []string
	notes []string
}

// checkStack looks for every use of every layer (see the file comment).
func checkStack(layers []layer, mounts []mountinfo.Mount) stackUse {
	var u stackUse
	loops := loopdev.List()
	for _, l := range layers {
		if l.bd == nil {
			fu := fileInUseExcept(l.file, l.id, mounts, l.exceptLoop)
			for _, w := range fu.why {
				u.why = append(u.why, l.name()+" is in use: "+w)
			}
			u.notes = append(u.notes, fu.notes...)
			continue
		}
		d := *l.bd
		devs := []blockDev{d}
		if l.partitions {
			devs = d.family()
		}
		for _, w := range inUseOf(d, devs, l.exceptHolder) {
			u.why = append(u.why, prefixLayer(l, w))
		}
		for _, w := range loopsOver(devs, loops, l.exceptLoop) {
			u.why = append(u.why, prefixLayer(l, w))
		}
		ws, note := blockWriters(devs, mounts)
		for _, w := range ws {
			u.why = append(u.why, prefixLayer(l, w))
		}
		if note != "" {
			u.notes = append(u.notes, note)
		}
	}
	return u
}

// prefixLayer says which lower layer a reason is about; the named
// device's own reasons name it already.
func prefixLayer(l layer, why string) string {
	if l.how == "" {
		return why
	}
	return "below it, " + l.how + ": " + why
}

// loopsOver lists the loop devices (but except) whose backing device is
// one of devs, and whether each is itself in use.
func loopsOver(devs []blockDev, loops []loopdev.Loop, except string) []string {
	byRdev := map[uint64]blockDev{}
	for _, m := range devs {
		byRdev[m.rdev] = m
	}
	var why []string
	for _, lp := range loops {
		if lp.Name == except {
			continue
		}
		var rdev uint64
		var st unix.Stat_t
		if !lp.Deleted && unix.Stat(lp.Backing, &st) == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFBLK {
				continue
			}
			rdev = st.Rdev
		} else if id, err := loopdev.BackingID(lp.Name); err == nil {
			rdev = id.Rdev
		}
		m, ok := byRdev[rdev]
		if !ok || rdev == 0 {
			continue
		}
		w := fmt.Sprintf("%s backs the loop device %s", m.path, lp.Dev)
		if bd, err := lookupBlockDev(lp.Dev); err == nil {
			if busy := inUse(bd); len(busy) > 0 {
				w += " (" + strings.Join(busy, "; ") + ")"
			}
		}
		why = append(why, w)
	}
	return why
}

// blockWriters lists the processes (this one excepted) that hold one of
// devs open for writing, and a note if some could not be checked. A
// descriptor on a FUSE mount is not stat'ed (a hung server would hang
// the stat; a device node there does not open anyway, FUSE mounts are
// nodev).
func blockWriters(devs []blockDev, mounts []mountinfo.Mount) ([]string, string) {
	byRdev := map[uint64]blockDev{}
	for _, m := range devs {
		byRdev[m.rdev] = m
	}
	fuse := map[int]bool{}
	for _, m := range mounts {
		if m.IsFUSE() {
			fuse[m.ID] = true
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Sprintf("could not list processes to see who writes to %s: %v", devs[0].path, err)
	}
	self := os.Getpid()
	var why []string
	hidden := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if os.IsPermission(err) {
			hidden++
		}
		if err != nil {
			continue
		}
		for _, fd := range fds {
			info, err := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name()))
			if err != nil {
				continue
			}
			fi, err := parseFdinfo(string(info))
			if err != nil || !fi.writable() || fi.HasMnt && fuse[fi.MntID] {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(filepath.Join(dir, "fd", fd.Name()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
				continue
			}
			if m, ok := byRdev[st.Rdev]; ok {
				why = append(why, fmt.Sprintf("%s is open for writing by %s", m.path, describeProcess(pid, self, fd.Name())))
			}
		}
	}
	note := ""
	if hidden > 0 {
		note = fmt.Sprintf("%d processes of other users could not be checked for writers to %s (their /proc fd is readable by root only)", hidden, devs[0].path)
	}
	return why, note
}

// refuseStack returns an ErrRefused error if any layer of the named
// device's stack is in use.
func refuseStack(path string, u stackUse) error {
	if len(u.why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is in use: %s; hwbench never writes to a device in use, or to one built on something in use, -destructive or not",
		ErrRefused, path, strings.Join(u.why, "; "))
}

//go:build linux

package loopdev

// The ioctls, as drivers/block/loop.c serves them:
//
//   - LOOP_CTL_GET_FREE on /dev/loop-control (loop_control_get_free)
//     returns the number of a device not bound to a file, creating one if
//     none is free. It reserves nothing: another process may bind it
//     first, and LOOP_CONFIGURE then fails with EBUSY, so Attach asks
//     again.
//   - LOOP_CONFIGURE (loop_configure; Linux 5.8 and later) binds the
//     device to an open file and sets its flags in one step, so no one
//     sees it bound with the wrong flags. The kernel keeps its own
//     reference to the file: the caller's descriptor may be closed.
//   - LOOP_CLR_FD (loop_clr_fd) unbinds the device; if the device is
//     open elsewhere it only sets LO_FLAGS_AUTOCLEAR, and the kernel
//     unbinds it at the last close (lo_release).
//   - LOOP_GET_STATUS64 (loop_get_status) gives the backing file's device
//     and inode number.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by Attach's error when loop devices cannot be
// had here: /dev/loop-control is missing (no loop driver) or may not be
// opened (not root).
var ErrUnavailable = errors.New("loop devices are unavailable (they need root and /dev/loop-control)")

// controlPath is the loop driver's control device.
const controlPath = "/dev/loop-control"

// attachTries bounds how often Attach asks for a free device that
// another process then takes before it.
const attachTries = 20

// Options are how Attach sets up the device.
type Options struct {
	// DirectIO asks for direct I/O to the backing file
	// (LO_FLAGS_DIRECT_IO): the device's writes then bypass the page
	// cache of the backing file's file system, and its flushes reach
	// that file system as fsync. The kernel turns it off where the
	// backing file cannot do direct I/O; DirectIO (the function) says
	// what it did.
	DirectIO bool
	// PartScan makes the kernel read the file's partition table and make
	// a device of each partition (/dev/loopNpM; LO_FLAGS_PARTSCAN).
	PartScan bool
	// Offset and SizeLimit make the device show the backing file from
	// byte Offset, SizeLimit bytes of it (0: to its end), as losetup
	// --offset and --sizelimit do (lo_offset, lo_sizelimit).
	Offset, SizeLimit uint64
	_                 struct{}
}

// Attach attaches a free loop device to the file at backing, read-write,
// and returns the device's path (/dev/loopN). The backing file is opened
// with O_DIRECT when opt.DirectIO is set and the file allows it, as
// losetup --direct-io=on does. The loop device's name for the file
// (lo_file_name, what losetup -a shows) is backing, cut to the kernel's
// 63 bytes; sysfs's backing_file, which BackingFile reads, is the file's
// path as the kernel resolves it.
func Attach(backing string, opt Options) (string, error) {
	ctl, err := unix.Open(controlPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("attach a loop device to %s: open %s: %w", backing, controlPath, unavailable(err))
	}
	defer unix.Close(ctl)
	file, err := openBacking(backing, opt.DirectIO)
	if err != nil {
		return "", fmt.Errorf("attach a loop device to %s: %w", backing, err)
	}
	defer unix.Close(file) // the kernel holds its own reference once bound

	var flags uint32
	if opt.DirectIO {
		flags |= unix.LO_FLAGS_DIRECT_IO
	}
	if opt.PartScan {
		flags |= unix.LO_FLAGS_PARTSCAN
	}
	for range attachTries {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("attach a loop device to %s: LOOP_CTL_GET_FREE: %w", backing, err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		err = configure(dev, file, backing, flags, opt)
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.ENOENT) {
			// Taken by another process since LOOP_CTL_GET_FREE, or its
			// node not made yet: ask again.
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("attach %s to %s: %w", dev, backing, err)
		}
		return dev, nil
	}
	return "", fmt.Errorf("attach a loop device to %s: every free device was taken by another process first, %d times", backing, attachTries)
}

// unavailable wraps ErrUnavailable around an error opening the control
// device that says loop devices cannot be had here.
func unavailable(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// openBacking opens the backing file read-write, with O_DIRECT if asked
// and the file system takes it.
func openBacking(path string, direct bool) (int, error) {
	const mode = unix.O_RDWR | unix.O_CLOEXEC
	if direct {
		fd, err := unix.Open(path, mode|unix.O_DIRECT, 0)
		if err == nil {
			return fd, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return -1, fmt.Errorf("open %s with O_DIRECT: %w", path, err)
		}
		// No O_DIRECT on this file system: the kernel decides on direct
		// I/O itself (and turns it off); DirectIO says.
	}
	fd, err := unix.Open(path, mode, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, nil
}

// configure binds the loop device dev to the open file fd with flags.
func configure(dev string, fd int, name string, flags uint32, opt Options) error {
	// Read-write: on a descriptor opened read-only, loop_configure makes
	// the device read-only.
	lfd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer unix.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = flags
	cfg.Info.Offset, cfg.Info.Sizelimit = opt.Offset, opt.SizeLimit
	copy(cfg.Info.File_name[:unix.LO_NAME_SIZE-1], name)
	if err := unix.IoctlLoopConfigure(lfd, &cfg); err != nil {
		return fmt.Errorf("LOOP_CONFIGURE: %w", err)
	}
	return nil
}

// Detach detaches dev if it is attached to the file named backing (the
// name BackingFile gives, or one that resolves to it), and reports whether it asked the kernel to. A
// device attached to another file, or to none, is left alone: its number
// may have been given to someone else since the caller attached it. If
// dev is still open (mounted, or held by its caller or by udev), the
// kernel detaches it only at its last close; BackingFile says when that
// happened.
func Detach(dev, backing string) (bool, error) {
	if _, ok := loopName(dev); !ok {
		return false, fmt.Errorf("detach %s: not a loop device", dev)
	}
	if !attachedTo(dev, backing) {
		return false, nil
	}
	// Read-only: closing a descriptor opened for writing makes udev probe
	// the device, and its probe holds it open for a moment.
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENXIO) {
			return false, nil // gone meanwhile
		}
		return false, fmt.Errorf("detach %s (over %s): %w", dev, backing, err)
	}
	defer unix.Close(fd)
	// Asked again with the device open: it may have been detached and
	// given to another file between the first look and the open. From
	// here on it cannot be: held open, a LOOP_CLR_FD from anyone else only
	// marks it to detach at the last close, which is at the earliest ours.
	if !attachedTo(dev, backing) {
		return false, nil
	}
	if err := unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0); err != nil {
		if errors.Is(err, unix.ENXIO) {
			return false, nil // detached meanwhile
		}
		return false, fmt.Errorf("detach %s (over %s): LOOP_CLR_FD: %w", dev, backing, err)
	}
	return true, nil
}

// attachedTo reports whether dev is attached to the file named backing:
// the name sysfs gives, or the name backing resolves to (sysfs gives the
// absolute path without symbolic links, and a caller may have attached by
// a relative path or through a link). Only the directory is resolved, so
// a backing file since removed still matches.
func attachedTo(dev, backing string) bool {
	shown := BackingFile(dev)
	if shown == "" {
		return false
	}
	if shown == backing {
		return true
	}
	abs, err := filepath.Abs(backing)
	if err != nil {
		return false
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return false
	}
	return shown == filepath.Join(dir, filepath.Base(abs))
}

// loopName returns NAME of /dev/NAME or NAME when it is loopN.
func loopName(dev string) (string, bool) {
	name := filepath.Base(dev)
	n, ok := strings.CutPrefix(name, "loop")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return "", false
	}
	return name, true
}

// sysfs is where the block devices' attributes are.
const sysfs = "/sys/block"

// deletedSuffix is what the kernel's d_path adds to the name of a file
// since unlinked.
const deletedSuffix = " (deleted)"

// BackingFile is the path of the file the loop device dev (/dev/loopN or
// loopN) is attached to, or "" if it is attached to none (or is not a loop
// device). A file since unlinked is named by the path it had: sysfs's
// " (deleted)" is dropped (drivers/block/loop.c,
// loop_attr_backing_file_show).
func BackingFile(dev string) string {
	b, _ := backing(dev)
	return b
}

// backing reads dev's sysfs backing_file: the path and whether the file
// was unlinked.
func backing(dev string) (string, bool) {
	name, ok := loopName(dev)
	if !ok {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(sysfs, name, "loop", "backing_file"))
	if err != nil {
		return "", false
	}
	return parseBackingFile(string(b))
}

// parseBackingFile reads the text of a backing_file attribute.
func parseBackingFile(s string) (path string, deleted bool) {
	s = strings.TrimSuffix(s, "\n")
	path, deleted = strings.CutSuffix(s, deletedSuffix)
	return path, deleted
}

// DirectIO is the loop device's loop/dio attribute: "1" if it does direct
// I/O to its backing file, "0" if not, "unknown" if it cannot be read.
func DirectIO(dev string) string {
	name, ok := loopName(dev)
	if !ok {
		return "unknown"
	}
	b, err := os.ReadFile(filepath.Join(sysfs, name, "loop", "dio"))
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Loop is an attached loop device.
type Loop struct {
	Dev     string // /dev/loopN
	Name    string // loopN
	Backing string // the backing file's path, as BackingFile gives it
	// Deleted says the backing file has been unlinked since it was
	// attached: Backing is the path it had.
	Deleted bool
}

// List lists the loop devices attached to a file, in sysfs's order. A
// device that cannot be read is left out (it was detached meanwhile).
func List() []Loop {
	entries, _ := os.ReadDir(sysfs)
	var out []Loop
	for _, e := range entries {
		name, ok := loopName(e.Name())
		if !ok {
			continue
		}
		if b, deleted := backing(name); b != "" {
			out = append(out, Loop{Dev: "/dev/" + name, Name: name, Backing: b, Deleted: deleted})
		}
	}
	return out
}

// FileID is a file's identity: the device it lies on and its inode
// number.
type FileID struct {
	Major, Minor uint32
	Ino          uint64
	// Rdev is the device number of a backing block device (stat(2)'s
	// st_rdev), 0 for a regular file.
	Rdev uint64
}

// BackingID asks the loop device dev for its backing file's identity
// (LOOP_GET_STATUS64), as losetup -j does. It needs read access to the
// device node (root), and refuses a node that is not the block device
// sysfs gives the name.
func BackingID(dev string) (FileID, error) {
	name, ok := loopName(dev)
	if !ok {
		return FileID{}, fmt.Errorf("%s: not a loop device", dev)
	}
	devno, err := os.ReadFile(filepath.Join(sysfs, name, "dev"))
	if err != nil {
		return FileID{}, err
	}
	var maj, mnr uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(devno)), "%d:%d", &maj, &mnr); err != nil {
		return FileID{}, fmt.Errorf("%s: bad device number %q: %w", name, devno, err)
	}
	node := "/dev/" + name
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Major(st.Rdev) != maj || unix.Minor(st.Rdev) != mnr {
		return FileID{}, fmt.Errorf("%s is not the block device %d:%d", node, maj, mnr)
	}
	// Read-only and not O_EXCL: the open claims nothing.
	fd, err := unix.Open(node, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return FileID{}, fmt.Errorf("open %s: %w", node, err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err != nil {
		return FileID{}, fmt.Errorf("LOOP_GET_STATUS64 on %s: %w", node, err)
	}
	// lo_device is huge_encode_dev(dev), the encoding stat(2) uses for
	// st_dev, so unix.Major and unix.Minor decode both.
	return FileID{Major: unix.Major(info.Device), Minor: unix.Minor(info.Device), Ino: info.Inode, Rdev: info.Rdevice}, nil
}

// Window is the part of its backing file a loop device shows: from byte
// Offset, SizeLimit bytes (0: to the end of the file), from sysfs's
// loop/offset and loop/sizelimit (drivers/block/loop.c,
// loop_attr_offset_show and loop_attr_sizelimit_show). ok is false if
// dev is not an attached loop device.
func Window(dev string) (offset, sizeLimit uint64, ok bool) {
	name, isLoop := loopName(dev)
	if !isLoop {
		return 0, 0, false
	}
	read := func(attr string) (uint64, bool) {
		b, err := os.ReadFile(filepath.Join(sysfs, name, "loop", attr))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	offset, ok1 := read("offset")
	sizeLimit, ok2 := read("sizelimit")
	return offset, sizeLimit, ok1 && ok2
}

// The device a run measures: a temporary file, a loop device of hwbench's
// own, or a file or block device the user named (safety.go says when a
// named one is refused).

package hwbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/crashlab"
	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
	"github.com/flushproof/flushproof/spec"
)

// ErrLoopUnavailable is wrapped by OpenTarget's error when -device=loop
// cannot be had here: not root, or no loop driver. Tests
// skip on it.
var ErrLoopUnavailable = errors.New("a loop device needs root and the loop driver")

// DefaultLoopSize is the size of the sparse file under -device=loop.
const DefaultLoopSize = 1 << 30

// TargetOptions says what to measure on.
type TargetOptions struct {
	// Path is "" for a temporary file, "loop" for a loop device over a
	// sparse temporary file (root only; name a file called loop as
	// ./loop), or the path of a regular file or block device.
	Path string
	// Destructive allows overwriting a named device or file that carries
	// a file system or partition table, or a named non-empty regular file.
	// It never allows a device or file in use (mounted, swap, held, a loop
	// device's backing file, mapped or open for writing elsewhere), nor a
	// file without write permission bits (see OverwriteReadOnly).
	Destructive bool
	// OverwriteReadOnly allows a named regular file whose mode has no
	// write permission bit (e.g. 0444), which root could otherwise open
	// for writing all the same. Someone made it read-only on purpose, so
	// Destructive alone does not allow it.
	OverwriteReadOnly bool
	// Region is how many bytes, from offset 0, the scenarios write
	// (Config.Region). A named block device smaller than this is refused.
	Region int64
	// TempDir is where temporary files go. Empty means os.TempDir(), or
	// /var/tmp if that refuses O_DIRECT.
	TempDir string
	// LoopSize is the size of the loop device's sparse backing file;
	// 0 means DefaultLoopSize. It is at least Region.
	LoopSize int64
	_        struct{}
}

// Target is an open device to measure on, and what is known about it.
// Close releases it and removes whatever OpenTarget created.
type Target struct {
	File *impl.File
	Path string // what was opened
	// Kind is "temporary file", "file", "block device" or "loop device".
	Kind string
	// Backing is the loop device's backing file (unlinked once attached).
	Backing string
	// Logical is the I/O unit (File.BlockSize); Physical the device's
	// physical block size where sysfs says (else Logical).
	Logical, Physical int
	Size              int64 // bytes
	Region            int64 // bytes hwbench may write, from offset 0
	// Queue is the block device's queue settings (for a file, those of the
	// device under its file system).
	Queue QueueInfo
	FS    string // the file system a file lives on
	// Notes say what was found or decided while opening (e.g. signatures
	// overwritten under -destructive, no O_DIRECT).
	Notes []string
	// NotDurable says why nothing written to the target survives a crash
	// or power loss, flushed or not: it lives in memory (a file on tmpfs
	// or ramfs, a loop device over one, a RAM disk) or the device is an
	// emulation (-device=slowflush). It is "" for a disk, or a file on a
	// disk's file system.
	NotDurable string
	// FlushFigures, set with NotDurable, says how the flush figures are to
	// be read: "meaningless on tmpfs", or "emulated (...)" for slowflush.
	FlushFigures string

	stats   string // /sys/class/block/NAME/stat of a block device, or ""
	closers []func() error
}

// QueueInfo is what sysfs says about a block device's queue.
type QueueInfo struct {
	Name       string // e.g. "loop0"
	WriteCache string // queue/write_cache: "write back" or "write through"
	FUA        bool   // queue/fua: the device takes REQ_FUA natively
	Rotational bool
	LoopDIO    string // loop/dio of a loop device: "1" is direct I/O
}

// Config is the device configuration of the model (spec.Config) that
// the queue settings describe.
func (q QueueInfo) Config() (spec.Config, bool) {
	switch q.WriteCache {
	case "write back":
		return spec.Config{VolatileCache: true, NativeFUA: q.FUA}, true
	case "write through":
		return spec.Config{}, true
	}
	return spec.Config{}, false
}

// Device returns the target as a spec.Device that refuses any write
// outside [0, Region): a second guard, after the scenarios' own layout,
// that nothing else on a named device is touched.
func (t *Target) Device() spec.Device { return regionDevice{File: t.File, limit: t.Region} }

// IsBlockDevice reports whether the target is a block device (named or
// loop).
func (t *Target) IsBlockDevice() bool { return t.File.IsBlockDevice() }

// String describes the target for reports: path, kind, block sizes, size
// and queue settings.
func (t *Target) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", t.Path, t.Kind)
	if t.Backing != "" {
		fmt.Fprintf(&b, " over %s", t.Backing)
		if t.Queue.LoopDIO == "1" {
			b.WriteString(", direct I/O")
		} else if t.Queue.LoopDIO != "" {
			b.WriteString(", buffered I/O (loop/dio=0)")
		}
	}
	if t.FS != "" {
		fmt.Fprintf(&b, " on %s", t.FS)
	}
	if !t.File.Direct() {
		b.WriteString(", page cache: O_DIRECT refused")
	}
	fmt.Fprintf(&b, "; %s; logical block %d, physical block %d", formatBytes(t.Size), t.Logical, t.Physical)
	if t.Queue.Name != "" {
		dev := ""
		if !t.IsBlockDevice() {
			dev = " of " + t.Queue.Name
		}
		fua := "emulated"
		if t.Queue.FUA {
			fua = "native"
		}
		fmt.Fprintf(&b, "; write cache%s: %s, FUA: %s", dev, t.Queue.WriteCache, fua)
	}
	if t.NotDurable != "" {
		fmt.Fprintf(&b, "; NOT DURABLE: %s", t.NotDurable)
	}
	b.WriteString(")")
	return b.String()
}

// markNotDurable records that nothing written to the target is durable,
// why, and how to read its flush figures, in the fields and the notes.
func (t *Target) markNotDurable(why, flushFigures string) {
	t.NotDurable, t.FlushFigures = why, flushFigures
	t.Notes = append(t.Notes, fmt.Sprintf("nothing written here is durable: %s. Its flush figures (flushes/op, and the latency of O_DSYNC writes, fdatasync and syncs) are %s", why, flushFigures))
}

// markVolatileDir marks the target not durable if dir, where what creates
// its storage (what says which file: "the temporary file"), keeps files
// in memory only.
func (t *Target) markVolatileDir(dir, what string) {
	fs, ok := volatileDir(dir)
	if !ok {
		return
	}
	t.markNotDurable(fmt.Sprintf("%s is in %s, on %s, which keeps files in memory only", what, dir, fs),
		"meaningless on "+fs.volatile())
}

// volatileDir returns the file system of dir if it is tmpfs or ramfs.
func volatileDir(dir string) (fsInfo, bool) {
	mounts, _ := mountinfo.Read() // without them, statfs's magic decides
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fsInfo{}, false
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	fs, err := fsOf(abs, mounts)
	return fs, err == nil && fs.volatile() != ""
}

// Close closes the device and undoes what OpenTarget did: removes a file
// it created, truncates an empty file it grew back to empty, detaches a
// loop device it attached. It runs every step and returns the errors.
func (t *Target) Close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	t.closers = nil
	return errors.Join(errs...)
}

func (t *Target) onClose(f func() error) { t.closers = append(t.closers, f) }

// OpenTarget opens the device opt.Path names (see TargetOptions). On error
// nothing is left behind.
func OpenTarget(opt TargetOptions) (_ *Target, err error) {
	if opt.Region <= 0 || opt.Region%(1<<20) != 0 {
		return nil, fmt.Errorf("hwbench: region %d must be a positive multiple of 1 MiB", opt.Region)
	}
	t := &Target{Region: opt.Region}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	switch opt.Path {
	case "":
		err = t.openTemp(opt)
	case "loop":
		err = t.openLoop(opt)
	default:
		if d, ok := strings.CutPrefix(opt.Path, "slowflush:"); ok {
			err = t.openSlowFlush(opt, d)
			break
		}
		err = t.openNamed(opt)
	}
	if err != nil {
		return nil, err
	}
	t.describe()
	return t, nil
}

// openSlowFlush serves a zeroed image through crashlab's FUSE recorder
// (without logging) under a loop device of its own, every flush taking the
// given duration: a disk whose cache flush costs milliseconds, the regime of
// the HDD the O_DSYNC patch measured. Root only; everything is removed at Close.
func (t *Target) openSlowFlush(opt TargetOptions, delay string) error {
	d, err := time.ParseDuration(delay)
	if err != nil || d < 0 {
		return fmt.Errorf("hwbench: -device=slowflush:DURATION, e.g. slowflush:8ms: bad duration %q", delay)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("hwbench: -device=slowflush: %w (running as uid %d)", ErrLoopUnavailable, os.Geteuid())
	}
	size := (max(opt.Region, 64<<20) + 4095) &^ 4095
	rec, err := crashlab.StartRecorder(crashlab.RecorderOptions{Dir: opt.TempDir, ImageSize: size, NoLog: true, FlushDelay: d})
	if err != nil {
		return fmt.Errorf("hwbench: -device=slowflush: %w", err)
	}
	t.onClose(rec.Close)
	if err := t.openFile(rec.Device(), impl.OpenOptions{}); err != nil {
		return err
	}
	t.Kind = fmt.Sprintf("loop device over a FUSE image whose flushes take %v", d)
	t.markNotDurable(fmt.Sprintf("an emulated device: a FUSE server of ours serves the image (from /dev/shm when it fits there, else from a temporary file), and a flush only waits %v, so its durability is emulated, not real", d),
		fmt.Sprintf("emulated (each flush waits %v; no disk is behind it)", d))
	return nil
}

// openTemp creates a temporary file of Region bytes, written once so that
// the measured writes overwrite allocated blocks, and removes it on Close.
func (t *Target) openTemp(opt TargetOptions) error {
	dir, direct, err := tempDir(opt.TempDir)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "hwbench-*.dev")
	if err != nil {
		return fmt.Errorf("hwbench: create a temporary file in %s: %w", dir, err)
	}
	path := f.Name()
	t.onClose(func() error { return removeFile(path) })
	err = prefill(f, opt.Region)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hwbench: write %s: %w", path, err)
	}
	if !direct {
		t.Notes = append(t.Notes, fmt.Sprintf("%s refuses O_DIRECT: the temporary file goes through the page cache, so writes measure memory copies and flushes measure write-back", dir))
	}
	t.Kind = "temporary file"
	t.markVolatileDir(dir, "the temporary file")
	return t.openFile(path, impl.OpenOptions{Buffered: !direct})
}

// tempDir returns a directory for temporary files and whether it takes
// O_DIRECT: dir if given, else os.TempDir() or, if that refuses O_DIRECT,
// /var/tmp.
func tempDir(dir string) (string, bool, error) {
	candidates := []string{dir}
	if dir == "" {
		candidates = []string{os.TempDir(), "/var/tmp"}
	}
	for _, d := range candidates {
		ok, err := acceptsDirectIO(d)
		if err != nil {
			return "", false, err
		}
		if ok {
			return d, true, nil
		}
	}
	return candidates[0], false, nil
}

// acceptsDirectIO probes dir with a file opened O_DIRECT.
func acceptsDirectIO(dir string) (bool, error) {
	probe, err := os.CreateTemp(dir, "hwbench-probe-*")
	if err != nil {
		return false, fmt.Errorf("hwbench: create a file in %s: %w", dir, err)
	}
	path := probe.Name()
	_ = probe.Close()
	defer os.Remove(path)
	f, err := impl.Open(path, impl.OpenOptions{})
	if errors.Is(err, impl.ErrNoDirectIO) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("hwbench: probe O_DIRECT in %s: %w", dir, err)
	}
	return true, f.Close()
}

// prefill writes n bytes of zeros to f from offset 0 and syncs, so that
// later O_DIRECT writes overwrite allocated blocks instead of allocating
// (which would add file-system journal commits to every fdatasync).
func prefill(f *os.File, n int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), n-off)], off); err != nil {
			return err
		}
	}
	return f.Sync()
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hwbench: remove %s: %w", path, err)
	}
	return nil
}

// targetOptions is opt with raw system calls, as every target is opened.
// The workers are locked to OS threads with GOMAXPROCS above their number
// (measure.go), so raw system calls are safe here, and they spare each
// I/O the scheduler's hand-off, as fio's threads are spared. (slowflush's
// FUSE server runs in crashlab's supervisor process, so a raw call blocked
// on it holds no P this process's server would need.) Measured on a loop
// device: a loop of File.WriteAt without them ran at 0.875 of a bare raw
// pwrite loop's rate (median of 20 alternated pairs of 200 ms).
func targetOptions(opt impl.OpenOptions) impl.OpenOptions {
	opt.RawSyscalls = true
	return opt
}

// openFile opens a regular file as the target.
func (t *Target) openFile(path string, opt impl.OpenOptions) error {
	opt = targetOptions(opt)
	f, err := impl.Open(path, opt)
	if errors.Is(err, impl.ErrNoDirectIO) && !opt.Buffered {
		t.Notes = append(t.Notes, fmt.Sprintf("%s refuses O_DIRECT: measured through the page cache", path))
		opt.Buffered = true
		f, err = impl.Open(path, opt)
	}
	if err != nil {
		return fmt.Errorf("hwbench: %w", err)
	}
	t.File, t.Path = f, path
	t.onClose(f.Close)
	return nil
}

// openLoop attaches a loop device with direct I/O over a sparse
// temporary file whose first Region bytes are written once, opens it
// O_EXCL, and arranges for it to be detached when the last opener closes
// it (LO_FLAGS_AUTOCLEAR, so even if the process dies) and for the file to
// be gone (unlinked once attached).
func (t *Target) openLoop(opt TargetOptions) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("hwbench: -device=loop: %w (running as uid %d)", ErrLoopUnavailable, os.Geteuid())
	}
	dir, _, err := tempDir(opt.TempDir)
	if err != nil {
		return err
	}
	size := opt.LoopSize
	if size == 0 {
		size = DefaultLoopSize
	}
	size = max(size, opt.Region)
	f, err := os.CreateTemp(dir, "hwbench-loop-*.img")
	if err != nil {
		return fmt.Errorf("hwbench: create the loop device's backing file in %s: %w", dir, err)
	}
	backing := f.Name()
	t.onClose(func() error { return removeFile(backing) })
	err = prefill(f, opt.Region)
	if err == nil {
		err = f.Truncate(size) // the rest stays sparse
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hwbench: write the loop device's backing file %s: %w", backing, err)
	}

	dev, err := loopdev.Attach(backing, loopdev.Options{DirectIO: true})
	if errors.Is(err, loopdev.ErrUnavailable) {
		return fmt.Errorf("hwbench: -device=loop: %w: %w", ErrLoopUnavailable, err)
	}
	if err != nil {
		return fmt.Errorf("hwbench: -device=loop: %w", err)
	}
	t.markVolatileDir(dir, "the loop device's backing file")
	t.onClose(func() error {
		// Normally detached already, at hwbench's close of it (below).
		_, err := loopdev.Detach(dev, backing)
		return err
	})
	t.Kind, t.Backing = "loop device", backing
	f2, err := impl.Open(dev, targetOptions(impl.OpenOptions{}))
	if err != nil {
		return fmt.Errorf("hwbench: open %s: %w", dev, err)
	}
	t.File, t.Path = f2, dev
	t.onClose(f2.Close)
	// While hwbench holds it open, detaching only marks the device for
	// detaching at the last close (loopdev.Detach), and the backing file
	// lives as long as the loop device does: nothing is left behind if
	// the process dies.
	if _, err := loopdev.Detach(dev, backing); err != nil {
		return fmt.Errorf("hwbench: mark %s for detaching at its last close: %w", dev, err)
	}
	return removeFile(backing)
}

// describe fills in sizes and queue settings.
func (t *Target) describe() {
	t.Logical = t.File.BlockSize()
	t.Physical = t.Logical
	if n, err := t.File.Size(); err == nil {
		t.Size = n
	}
	var sysfs string
	if t.IsBlockDevice() {
		if bd, err := lookupBlockDev(t.Path); err == nil {
			sysfs = bd.sysfs
			t.stats = filepath.Join(sysfs, "stat")
		}
	} else {
		var st unix.Stat_t
		if unix.Stat(t.Path, &st) == nil {
			if dir, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))); err == nil {
				sysfs = dir
			}
		}
		t.FS = fsName(t.Path)
	}
	if sysfs == "" {
		return
	}
	queue := filepath.Join(sysfs, "queue")
	if _, err := os.Stat(queue); err != nil {
		queue = filepath.Join(filepath.Dir(sysfs), "queue") // a partition
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	t.Queue = QueueInfo{
		Name:       filepath.Base(sysfs),
		WriteCache: read(filepath.Join(queue, "write_cache")),
		FUA:        read(filepath.Join(queue, "fua")) == "1",
		Rotational: read(filepath.Join(queue, "rotational")) == "1",
		LoopDIO:    read(filepath.Join(sysfs, "loop", "dio")),
	}
	if t.IsBlockDevice() {
		if n, err := strconv.Atoi(read(filepath.Join(queue, "physical_block_size"))); err == nil && n > 0 {
			t.Physical = n
		}
	}
}

// fsName names the file system under path.
func fsName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return ""
	}
	switch int64(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext2/3/4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.RAMFS_MAGIC:
		return "ramfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("file system magic %#x", st.Type)
}

// DiskStats are the counters of /sys/class/block/NAME/stat that hwbench
// reports (Documentation/block/stat.rst): requests completed, including
// the empty REQ_PREFLUSH "writes" of flushes, and flush requests the block
// layer sent the driver (post-flushes of emulated FUA included).
type DiskStats struct {
	Reads, Writes, WriteSectors, Flushes int64
}

// Sub returns s minus before.
func (s DiskStats) Sub(before DiskStats) DiskStats {
	return DiskStats{s.Reads - before.Reads, s.Writes - before.Writes, s.WriteSectors - before.WriteSectors, s.Flushes - before.Flushes}
}

// DiskStats reads the block device's counters; ok is false for a file or
// where the kernel does not count flushes (before Linux 5.5).
func (t *Target) DiskStats() (s DiskStats, ok bool) {
	if t.stats == "" {
		return s, false
	}
	b, err := os.ReadFile(t.stats)
	if err != nil {
		return s, false
	}
	f := strings.Fields(string(b))
	if len(f) < 17 {
		return s, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return DiskStats{Reads: n(0), Writes: n(4), WriteSectors: n(6), Flushes: n(15)}, true
}

// regionDevice refuses writes outside [0, limit).
type regionDevice struct {
	*impl.File
	limit int64
}

func (d regionDevice) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	if off < 0 || off+int64(len(p)) > d.limit {
		return fmt.Errorf("hwbench: write of %d bytes at %d of %s is outside the region [0, %d) it may write: %w",
			len(p), off, d.Path(), d.limit, ErrRefused)
	}
	return d.File.WriteAt(p, off, fl)
}

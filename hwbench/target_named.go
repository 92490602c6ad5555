package hwbench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// openNamed opens the file or block device the user named. Every check
// that needs no write access is made first (safety.go): nothing is
// created, opened for writing, grown or truncated before they all pass.
func (t *Target) openNamed(opt TargetOptions) (err error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return fmt.Errorf("%w: -device=%s: cannot read /proc/self/mountinfo (%v), so hwbench cannot tell what the target lies on or whether it is mounted",
			ErrRefused, opt.Path, err)
	}
	n, err := resolveNamed(opt.Path, mounts)
	if abs, aerr := filepath.Abs(opt.Path); aerr == nil && n.path != "" && n.path != abs {
		// A symbolic link (e.g. /dev/disk/by-id/...): say where it led.
		t.Notes = append(t.Notes, fmt.Sprintf("-device=%s resolves to %s", opt.Path, n.path))
		defer func() {
			if err != nil {
				err = fmt.Errorf("%w (-device=%s resolves to %s)", err, opt.Path, n.path)
			}
		}()
	}
	if err != nil {
		return err
	}
	switch {
	case !n.exists:
		return t.createNamed(n, opt)
	case n.st.Mode&unix.S_IFMT == unix.S_IFREG:
		return t.openNamedFile(n, mounts, opt)
	default: // resolveNamed let only a block device through
		return t.openNamedBlock(n.path, mounts, opt)
	}
}

// createNamed creates the named file that does not exist, writes it in
// full, and removes it at Close.
func (t *Target) createNamed(n namedPath, opt TargetOptions) error {
	path := n.path
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("hwbench: create %s: %w", path, err)
	}
	t.onClose(func() error { return removeFile(path) })
	err = prefill(f, opt.Region)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hwbench: write %s: %w", path, err)
	}
	t.Kind = "file"
	t.Notes = append(t.Notes, fmt.Sprintf("%s did not exist: created, and removed at the end", path))
	t.markVolatileFS(path, n.fs)
	return t.openFile(path, impl.OpenOptions{})
}

// markVolatileFS marks a named file not durable if fs is tmpfs or ramfs.
func (t *Target) markVolatileFS(path string, fs fsInfo) {
	if v := fs.volatile(); v != "" {
		t.markNotDurable(fmt.Sprintf("%s is on %s, which keeps files in memory only", path, fs), "meaningless on "+v)
	}
}

// openNamedFile uses an existing regular file once the checks pass: not
// in use (never allowed), not read-only (unless OverwriteReadOnly), no
// file-system signature and empty (unless Destructive). An empty one is
// grown and written, then truncated back to empty at the end; a
// non-empty one is grown if too small and cut back to its size at the
// end.
func (t *Target) openNamedFile(n namedPath, mounts []mountinfo.Mount, opt TargetOptions) error {
	t.Kind = "file"
	path, size := n.path, n.st.Size
	use := fileInUse(path, &n.st, mounts)
	t.Notes = append(t.Notes, use.notes...)
	if err := refuseFileInUse(path, use.why); err != nil {
		return err
	}
	if err := refuseReadOnly(path, n.st.Mode, opt.OverwriteReadOnly); err != nil {
		return err
	}
	sigs, err := fileSignatures(path, size)
	if err != nil {
		return err
	}
	if err := t.refuseFormatted(path, sigs, opt.Destructive); err != nil {
		return err
	}
	if size > 0 && !opt.Destructive {
		return fmt.Errorf("%w: %s is a non-empty regular file (%d bytes); the benchmark would overwrite its first %s. Name a file that does not exist or is empty, or pass -destructive",
			ErrRefused, path, size, formatBytes(opt.Region))
	}

	// Every check passed: now it may be opened for writing. O_NOFOLLOW and
	// the identity check make sure it is still the file checked.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("hwbench: open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return fmt.Errorf("hwbench: fstat %s: %w", path, err)
	}
	if idOf(&st) != idOf(&n.st) || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = f.Close()
		return fmt.Errorf("%w: %s was replaced by another file while hwbench checked it; run again", ErrRefused, path)
	}
	if size < opt.Region {
		t.onClose(func() error {
			if err := os.Truncate(path, size); err != nil {
				return fmt.Errorf("hwbench: truncate %s back to %d bytes: %w", path, size, err)
			}
			return nil
		})
		if size == 0 {
			err = prefill(f, opt.Region)
		} else {
			err = f.Truncate(opt.Region)
		}
		if err != nil {
			err = fmt.Errorf("hwbench: grow %s to %d bytes: %w", path, opt.Region, err)
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s was %d bytes: grown to %s, and cut back at the end", path, size, formatBytes(opt.Region)))
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("%s: -destructive, its first %s overwritten", path, formatBytes(opt.Region)))
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("hwbench: close %s: %w", path, cerr)
	}
	if err != nil {
		return err
	}
	t.markVolatileFS(path, n.fs)
	return t.openFile(path, impl.OpenOptions{})
}

// refuseFormatted adds blkid -p's findings on path to hwbench's own (sigs)
// and refuses the target if there are any, unless destructive; then a note
// says what is overwritten.
func (t *Target) refuseFormatted(path string, sigs []Signature, destructive bool) error {
	blkid, note := blkidSignatures(path)
	if note != "" {
		t.Notes = append(t.Notes, note)
	}
	sigs = append(sigs, blkid...)
	err := refuseSignatures(path, sigs)
	if err == nil || !destructive {
		return err
	}
	t.Notes = append(t.Notes, fmt.Sprintf("-destructive: %s", strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ")))
	return nil
}

// fileSignatures looks for on-disk formats in a regular file, as
// FindSignatures does on a device, reading it without O_DIRECT.
func fileSignatures(path string, size int64) ([]Signature, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hwbench: open %s to look for file systems: %w", path, err)
	}
	defer f.Close()
	sigs, err := FindSignatures(func(p []byte, off int64) error {
		_, err := f.ReadAt(p, off)
		return err
	}, size)
	if err != nil {
		return nil, fmt.Errorf("hwbench: look for file systems in %s: %w", path, err)
	}
	return sigs, nil
}

// openNamedBlock opens a block device the user named: refused if it or
// anything it is built on is in use (safety_stack.go), then claimed
// O_EXCL, checked again, and refused if too small or (unless
// -destructive) formatted or holding any data in the region written.
func (t *Target) openNamedBlock(path string, mounts []mountinfo.Mount, opt TargetOptions) error {
	t.Kind = "block device"
	bd, err := lookupBlockDev(path)
	if err != nil {
		return fmt.Errorf("hwbench: %w", err)
	}
	layers, err := t.checkNamedStack(bd, mounts)
	if err != nil {
		return err
	}
	f, err := impl.Open(path, targetOptions(impl.OpenOptions{}))
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return fmt.Errorf("hwbench: %w", err)
	}
	t.File, t.Path = f, path
	t.onClose(f.Close)
	// Checked again now that the claim is held: a mount started between
	// the first check and the open would have been refused by O_EXCL, and
	// holders, loop devices and writers do not all claim exclusively.
	if u := checkStack(layers, mounts); len(u.why) > 0 {
		return refuseStack(path, u)
	}
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("hwbench: %w", err)
	}
	if err := refuseTooSmall(path, size, opt.Region); err != nil {
		return err
	}
	readAt := func(p []byte, off int64) error {
		buf := impl.AlignedBuffer(len(p), f.MemoryAlignment())
		if err := f.ReadAt(buf, off); err != nil {
			return err
		}
		copy(p, buf)
		return nil
	}
	sigs, err := FindSignatures(readAt, size)
	if err != nil {
		return fmt.Errorf("hwbench: look for file systems on %s: %w", path, err)
	}
	if err := t.refuseFormatted(path, sigs, opt.Destructive); err != nil {
		return err
	}
	if len(sigs) == 0 {
		if err := t.refuseNonEmpty(path, readAt, opt.Region, opt.Destructive); err != nil {
			return err
		}
	}
	if why, flush := memoryBlockDev(bd, mounts); why != "" {
		t.markNotDurable(why, flush)
	}
	return nil
}

// checkNamedStack resolves what bd is built on, refuses it if any layer
// is in use, and notes the layers below it.
func (t *Target) checkNamedStack(bd blockDev, mounts []mountinfo.Mount) ([]layer, error) {
	layers, err := resolveStack(bd)
	if err != nil {
		return nil, err
	}
	u := checkStack(layers, mounts)
	t.Notes = append(t.Notes, u.notes...)
	if err := refuseStack(bd.path, u); err != nil {
		return nil, err
	}
	if len(layers) > 1 {
		var below []string
		for _, l := range layers[1:] {
			below = append(below, strings.TrimSuffix(l.name(), ","))
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s is built on %s: each checked as unused", bd.path, strings.Join(below, "; ")))
	}
	return layers, nil
}

// nonEmptyChunk is how much refuseNonEmpty reads at a time.
const nonEmptyChunk = 1 << 20

// refuseNonEmpty refuses a block device that holds any non-zero byte in
// the region the benchmark writes, [0, region), unless destructive (then
// a note says so): a device without a signature may still hold data, as
// a non-empty file does.
func (t *Target) refuseNonEmpty(path string, readAt func([]byte, int64) error, region int64, destructive bool) error {
	buf, zero := make([]byte, nonEmptyChunk), make([]byte, nonEmptyChunk)
	for off := int64(0); off < region; off += nonEmptyChunk {
		n := min(int64(nonEmptyChunk), region-off)
		if err := readAt(buf[:n], off); err != nil {
			return fmt.Errorf("hwbench: read %s at %d to see whether it holds data: %w", path, off, err)
		}
		if bytes.Equal(buf[:n], zero[:n]) {
			continue
		}
		at := off + int64(firstNonZero(buf[:n]))
		if !destructive {
			return fmt.Errorf("%w: %s holds data in the region the benchmark would overwrite (its first %s): the first non-zero byte is at %d. Pass -destructive only if everything there may be lost",
				ErrRefused, path, formatBytes(region), at)
		}
		t.Notes = append(t.Notes, fmt.Sprintf("-destructive: %s held data in its first %s (from byte %d), overwritten", path, formatBytes(region), at))
		return nil
	}
	return nil
}

// firstNonZero is the index of b's first non-zero byte, or -1.
func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// memoryBlockDev says why a block device keeps nothing durable: a RAM
// disk (brd's ramN, zram), or a loop device whose backing file is on
// tmpfs or ramfs (found from the backing file's name, which is not
// touched). It returns "", "" for any other device.
func memoryBlockDev(bd blockDev, mounts []mountinfo.Mount) (why, flushFigures string) {
	name := bd.name
	switch {
	case strings.HasPrefix(name, "zram"):
		return fmt.Sprintf("%s is a compressed RAM disk (zram)", bd.path), "meaningless on a RAM disk"
	case strings.HasPrefix(name, "ram") && strings.Trim(name[3:], "0123456789") == "":
		return fmt.Sprintf("%s is a RAM disk (brd)", bd.path), "meaningless on a RAM disk"
	case strings.HasPrefix(name, "loop"):
		backing := loopdev.BackingFile(name)
		if backing == "" {
			return "", ""
		}
		m, ok := mountOf(mounts, backing, 0, false)
		if fs := (fsInfo{Type: m.FSType, MountPoint: m.MountPoint}); ok && fs.volatile() != "" {
			return fmt.Sprintf("the backing file of %s, %s, is on %s, which keeps files in memory only", bd.path, backing, fs),
				"meaningless on " + fs.volatile()
		}
	}
	return "", ""
}

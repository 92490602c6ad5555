//go:build linux

// File is spec.Device for Linux: a regular file or a block device, normally
// opened O_DIRECT so that every WriteAt reaches the device (or its volatile
// write cache) before it returns, as the model assumes.
//
// The three device operations map onto system calls as follows:
//
//	WriteAt(p, off, 0)    pwrite(2) on the O_DIRECT descriptor
//	WriteAt(p, off, FUA)  pwritev2(2) with RWF_DSYNC
//	Flush()               fdatasync(2)
//
// O_DIRECT (open(2)) requires the offset, the length and the memory address
// of every transfer to be aligned. The alignment is asked of the kernel:
// statx(2) with STATX_DIOALIGN (Linux 6.1 for files, 6.11 for block devices)
// and, failing that, the BLKSSZGET ioctl for a block device or 4096 for a
// file. File rejects misaligned offsets and lengths, and copies misaligned
// memory through an aligned buffer of its own, so callers may pass any
// []byte.
//
// Block devices are opened O_EXCL: the kernel then refuses the open with
// EBUSY if the device is mounted or held by another exclusive opener, so a
// benchmark cannot overwrite a file system that is in use.

package impl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/spec"
)

var _ spec.Device = (*File)(nil)

// ErrNoDirectIO is returned (wrapped) by Open when the file system refuses
// O_DIRECT: open(2) fails with EINVAL. OpenOptions.Buffered opens the same
// file through the page cache instead.
var ErrNoDirectIO = errors.New("the file system does not support O_DIRECT")

// ErrUnaligned is returned (wrapped) by File.WriteAt and File.ReadAt when the
// offset or the length is not a multiple of File.BlockSize.
var ErrUnaligned = errors.New("offset and length must be multiples of the block size")

// OpenOptions says how Open opens a file or block device. The zero value
// opens an existing file or block device for reading and writing with
// O_DIRECT.
type OpenOptions struct {
	// Buffered opens without O_DIRECT: writes go to the page cache, and
	// only Flush or a FUA write makes them durable. Use it where the file
	// system refuses O_DIRECT (ErrNoDirectIO), or to measure the page cache.
	Buffered bool
	// ReadOnly opens for reading only; WriteAt then fails.
	ReadOnly bool
	// Create creates path as a regular file if it does not exist. It is an
	// error together with ReadOnly, or if path is a block device.
	Create bool
	// Size, with Create, grows the regular file to at least Size bytes with
	// ftruncate(2) (sparse; an existing longer file is never shrunk).
	Size int64
	// RawSyscalls issues reads, writes and flushes as raw system calls,
	// which keep the calling goroutine's P (and so no other goroutine runs
	// on it) while the I/O blocks, instead of handing it to another
	// thread. That saves the hand-off, a few percent of a 4 KiB O_DIRECT
	// write here, as fio's threads do; use it only from goroutines locked
	// to threads with GOMAXPROCS above the number of concurrent callers
	// (hwbench does), never in an application with ordinary goroutines,
	// and never on a device this process serves itself (a FUSE file): a raw
	// call blocked on the server holds its P through a garbage collection
	// that stops the server, and the process hangs.
	RawSyscalls bool

	_ struct{}
}

// File is an open regular file or block device. Its methods implement
// spec.Device and are safe for concurrent use. Calls made after Close fail
// with an error wrapping os.ErrClosed; a call that overlaps Close keeps the
// descriptor open until it returns (os.File reference counting), so no call
// ever reaches a descriptor number the process has reused.
type File struct {
	path   string
	file   *os.File
	raw    syscall.RawConn
	block  bool // a block device, opened O_EXCL
	direct bool // opened O_DIRECT
	ro     bool
	rawSys bool // OpenOptions.RawSyscalls

	blockSize int    // offset and length alignment, >= 512
	memAlign  int    // memory alignment of transfers; 1 when buffered
	alignFrom string // where the alignment came from: statx, BLKSSZGET or default

	bounce sync.Pool // *[]byte, aligned to memAlign
	closed atomic.Bool
}

// Open opens path, a regular file or a block device (symbolic links are
// followed), as spec.Device. See OpenOptions for the modes. Errors name the
// path and wrap the system call's error, so errors.Is(err, unix.EBUSY) and
// errors.Is(err, ErrNoDirectIO) work.
func Open(path string, opt OpenOptions) (*File, error) {
	switch {
	case opt.Create && opt.ReadOnly:
		return nil, fmt.Errorf("open %s: OpenOptions.Create and ReadOnly exclude each other", path)
	case opt.Size < 0:
		return nil, fmt.Errorf("open %s: negative OpenOptions.Size %d", path, opt.Size)
	case opt.Size > 0 && !opt.Create:
		return nil, fmt.Errorf("open %s: OpenOptions.Size needs Create", path)
	}

	// The type decides the flags: O_EXCL means "exclusive claim" for a
	// block device and "must not exist" with O_CREAT, so it is only passed
	// for block devices. The type is checked again on the descriptor.
	block := false
	st, err := os.Stat(path)
	switch {
	case err == nil:
		block, err = deviceKind(path, st.Mode())
		if err != nil {
			return nil, err
		}
	case errors.Is(err, os.ErrNotExist) && opt.Create:
		// Created below as a regular file.
	default:
		return nil, fmt.Errorf("open %s: stat: %w", path, errnoOf(err))
	}
	if block && opt.Create {
		return nil, fmt.Errorf("open %s: OpenOptions.Create applies to regular files, and this is a block device", path)
	}

	flags := os.O_RDWR
	if opt.ReadOnly {
		flags = os.O_RDONLY
	}
	if !opt.Buffered {
		flags |= unix.O_DIRECT
	}
	if block {
		flags |= unix.O_EXCL
	}
	if opt.Create {
		flags |= os.O_CREATE
	}
	osf, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, openError(path, err, !opt.Buffered, block)
	}
	f, err := newFile(path, osf, opt, block)
	if err != nil {
		_ = osf.Close()
		return nil, err
	}
	return f, nil
}

// deviceKind reports whether mode is a block device, and fails unless it is
// one or a regular file.
func deviceKind(path string, mode os.FileMode) (block bool, err error) {
	switch {
	case mode.IsRegular():
		return false, nil
	case mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0:
		return true, nil
	default:
		return false, fmt.Errorf("open %s: not a regular file or block device (mode %v)", path, mode)
	}
}

// openError explains the two refusals a user can do something about.
func openError(path string, err error, direct, block bool) error {
	errno := errnoOf(err)
	switch {
	case direct && errors.Is(err, unix.EINVAL):
		// open(2): EINVAL "The filesystem does not support the O_DIRECT
		// flag". With Create the empty file may already exist.
		return fmt.Errorf("open %s: %w (open(2) with O_DIRECT: %w); set OpenOptions.Buffered to use the page cache instead",
			path, ErrNoDirectIO, errno)
	case block && errors.Is(err, unix.EBUSY):
		return fmt.Errorf("open %s: block device is in use: mounted or opened exclusively by another opener, so O_EXCL was refused: %w",
			path, errno)
	default:
		return fmt.Errorf("open %s: %w", path, errno)
	}
}

// errnoOf strips the *os.PathError around err, whose path the caller's
// message already names.
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func newFile(path string, osf *os.File, opt OpenOptions, block bool) (*File, error) {
	st, err := osf.Stat()
	if err != nil {
		return nil, fmt.Errorf("open %s: fstat: %w", path, err)
	}
	isBlock, err := deviceKind(path, st.Mode())
	if err != nil {
		return nil, err
	}
	if isBlock != block {
		return nil, fmt.Errorf("open %s: the path changed type between stat and open", path)
	}
	raw, err := osf.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f := &File{path: path, file: osf, raw: raw, block: block, direct: !opt.Buffered, ro: opt.ReadOnly, rawSys: opt.RawSyscalls}

	var offAlign, memAlign int
	err = f.control(func(fd int) error {
		var e error
		offAlign, memAlign, f.alignFrom, e = dioAlignment(fd, block)
		return e
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: direct I/O alignment: %w", path, err)
	}
	f.blockSize = max(offAlign, 512)
	f.memAlign = memAlign
	if !f.direct {
		f.memAlign = 1 // the page cache copies; any address will do
	}

	if opt.Create && opt.Size > st.Size() {
		if err := osf.Truncate(opt.Size); err != nil {
			return nil, fmt.Errorf("open %s: grow to %d bytes: %w", path, opt.Size, err)
		}
	}
	return f, nil
}

// dioAlignment returns the offset and memory alignment O_DIRECT transfers on
// fd need, and which source said so.
//
// statx(2) documents STATX_DIOALIGN: stx_dio_offset_align and
// stx_dio_mem_align, both 0 if direct I/O is not supported on the file.
// Kernels before 6.1 (files) or 6.11 (block devices, block/bdev.c
// bdev_statx) do not fill them. A block device then falls back to its
// logical block size (BLKSSZGET), which bounds both alignments; a file falls
// back to 4096, the page size and the largest logical block size in common
// use.
func dioAlignment(fd int, block bool) (offAlign, memAlign int, from string, err error) {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx) == nil &&
		stx.Mask&unix.STATX_DIOALIGN != 0 && stx.Dio_offset_align != 0 {
		offAlign, memAlign = int(stx.Dio_offset_align), int(stx.Dio_mem_align)
		return offAlign, max(memAlign, 1), "statx", nil
	}
	if block {
		lbs, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
		if err != nil {
			return 0, 0, "", fmt.Errorf("ioctl BLKSSZGET: %w", err)
		}
		return lbs, lbs, "BLKSSZGET", nil
	}
	return 4096, 4096, "default", nil
}

// control runs op on the descriptor, holding it open for the duration.
func (f *File) control(op func(fd int) error) error {
	if f.closed.Load() {
		return os.ErrClosed
	}
	var opErr error
	if err := f.raw.Control(func(fd uintptr) { opErr = op(int(fd)) }); err != nil {
		return fmt.Errorf("%w (%w)", os.ErrClosed, err)
	}
	return opErr
}

// Path returns the path File was opened with.
func (f *File) Path() string { return f.path }

// IsBlockDevice reports whether File is a block device (opened O_EXCL)
// rather than a regular file.
func (f *File) IsBlockDevice() bool { return f.block }

// RawSyscalls reports whether File issues its I/O as raw system calls
// (OpenOptions.RawSyscalls).
func (f *File) RawSyscalls() bool { return f.rawSys }

// Direct reports whether File was opened O_DIRECT (false with
// OpenOptions.Buffered).
func (f *File) Direct() bool { return f.direct }

// BlockSize returns the unit in which File reads and writes: every offset
// and length must be a multiple of it. It is the O_DIRECT offset alignment
// the kernel reports (stx_dio_offset_align, else BLKSSZGET, else 4096), but
// at least 512, and it is the same whether or not File is Buffered.
func (f *File) BlockSize() int { return f.blockSize }

// MemoryAlignment returns the address alignment File needs of a buffer to
// pass it to the kernel without a copy (stx_dio_mem_align, else the
// BLKSSZGET or default alignment; 1 when Buffered). Buffers from
// AlignedBuffer(n, f.MemoryAlignment()) avoid the copy.
func (f *File) MemoryAlignment() int { return f.memAlign }

// Size returns the current size in bytes: st_size for a regular file, the
// BLKGETSIZE64 ioctl for a block device.
func (f *File) Size() (int64, error) {
	var size int64
	err := f.control(func(fd int) error {
		if f.block {
			n, err := unix.IoctlGetUint64(fd, unix.BLKGETSIZE64)
			if err != nil {
				return fmt.Errorf("ioctl BLKGETSIZE64: %w", err)
			}
			size = int64(n)
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("fstat: %w", err)
		}
		size = st.Size
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.path, err)
	}
	return size, nil
}

// WriteAt writes p at offset off and returns once the write completed. With
// spec.FUA it uses pwritev2(2) with RWF_DSYNC, so the data is durable when it
// returns; without, pwrite(2), and the data may sit in the device's volatile
// write cache until the next Flush.
//
// What RWF_DSYNC costs on an O_DIRECT block device: block/fops.c
// dio_bio_write_op() marks the bio REQ_FUA (which the block layer,
// block/blk-flush.c, turns into write + flush if the device has no FUA),
// and blkdev_write_iter() then still calls generic_write_sync(), which for a
// dsync write issues a full cache flush (blkdev_fsync). The patch "block:
// skip redundant flush for O_DSYNC direct writes" removes that redundant
// flush; until then a FUA write here costs a FUA write plus a flush. On a
// regular file the file system decides: iomap direct I/O (ext4, XFS) may
// use REQ_FUA and skip the flush for a pure overwrite of allocated blocks,
// and otherwise ends with generic_write_sync (a flush, and a journal commit if metadata changed).
// When Buffered, RWF_DSYNC writes back the range and flushes like
// fdatasync(2).
//
// With spec.Preflush it first calls Flush and writes only if that
// succeeded: user space cannot put REQ_PREFLUSH on a write, and
// fdatasync-then-write gives what the flag promises (blk-flush.c runs the
// PREFLUSH step before the DATA step and ends the request if it fails): the
// writes completed before WriteAt was called are durable once it returns
// nil. It costs a flush round trip more than the flag would.
//
// off and len(p) must be multiples of BlockSize (else ErrUnaligned); p may
// have any address. An empty p writes nothing. A short write is an error
// wrapping io.ErrShortWrite.
func (f *File) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	if err := f.checkIO(len(p), off); err != nil {
		return f.ioError("write", len(p), off, err)
	}
	if f.ro {
		return f.ioError("write", len(p), off, errors.New("opened read-only"))
	}
	if len(p) == 0 {
		return nil
	}
	if fl&spec.Preflush != 0 {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("preflush before a write of %d bytes at %d: %w", len(p), off, err)
		}
	}
	buf, release := f.alignedForWrite(p)
	defer release()
	var n int
	err := f.control(func(fd int) error {
		var e error
		n, e = retryEINTR(func() (int, error) {
			switch {
			case fl&spec.FUA != 0 && f.rawSys:
				return rawPwritev2(fd, buf, off, unix.RWF_DSYNC)
			case fl&spec.FUA != 0:
				return unix.Pwritev2(fd, [][]byte{buf}, off, unix.RWF_DSYNC)
			case f.rawSys:
				return rawPwrite(fd, buf, off)
			}
			return unix.Pwrite(fd, buf, off)
		})
		return e
	})
	op := "write"
	if fl&spec.FUA != 0 {
		op = "FUA write (pwritev2 RWF_DSYNC)"
	}
	switch {
	case err != nil:
		return f.ioError(op, len(p), off, err)
	case n != len(p):
		return f.ioError(op, len(p), off, fmt.Errorf("wrote %d bytes: %w", n, io.ErrShortWrite))
	}
	return nil
}

// ReadAt fills p from offset off. off and len(p) must be multiples of
// BlockSize (else ErrUnaligned); p may have any address. Reading fewer than
// len(p) bytes (past the end) is an error wrapping io.ErrUnexpectedEOF.
func (f *File) ReadAt(p []byte, off int64) error {
	if err := f.checkIO(len(p), off); err != nil {
		return f.ioError("read", len(p), off, err)
	}
	if len(p) == 0 {
		return nil
	}
	buf, done := f.alignedForRead(p)
	var n int
	err := f.control(func(fd int) error {
		var e error
		n, e = retryEINTR(func() (int, error) {
			if f.rawSys {
				return rawPread(fd, buf, off)
			}
			return unix.Pread(fd, buf, off)
		})
		return e
	})
	done(max(n, 0))
	switch {
	case err != nil:
		return f.ioError("read", len(p), off, err)
	case n != len(p):
		return f.ioError("read", len(p), off, fmt.Errorf("read %d bytes: %w", n, io.ErrUnexpectedEOF))
	}
	return nil
}

// Flush makes every write that completed before it durable, with
// fdatasync(2): for a block device blkdev_fsync() issues a cache flush; for
// a file the file system writes back what fdatasync needs and flushes.
func (f *File) Flush() error {
	err := f.control(func(fd int) error {
		_, e := retryEINTR(func() (int, error) {
			if f.rawSys {
				return 0, rawFdatasync(fd)
			}
			return 0, unix.Fdatasync(fd)
		})
		return e
	})
	if err != nil {
		return fmt.Errorf("flush (fdatasync) %s: %w", f.path, err)
	}
	return nil
}

// Close closes the descriptor; for a block device it also ends the O_EXCL
// claim.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return fmt.Errorf("close %s: %w", f.path, os.ErrClosed)
	}
	if err := f.file.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	return nil
}

func (f *File) checkIO(n int, off int64) error {
	bs := int64(f.blockSize)
	if off < 0 || off%bs != 0 || int64(n)%bs != 0 {
		return fmt.Errorf("%w %d", ErrUnaligned, f.blockSize)
	}
	return nil
}

func (f *File) ioError(op string, n int, off int64, err error) error {
	return fmt.Errorf("%s of %d bytes at offset %d of %s: %w", op, n, off, f.path, err)
}

// alignedForWrite returns p itself if the kernel can take it, else a copy in
// an aligned buffer, and the function that gives the copy back.
func (f *File) alignedForWrite(p []byte) ([]byte, func()) {
	if isAligned(p, f.memAlign) {
		return p, func() {}
	}
	b := f.getBounce(len(p))
	copy(*b, p)
	return *b, func() { f.bounce.Put(b) }
}

// alignedForRead returns p itself if the kernel can fill it, else an aligned
// buffer, and the function to call with the bytes read, which copies them
// into p and gives the buffer back.
func (f *File) alignedForRead(p []byte) ([]byte, func(n int)) {
	if isAligned(p, f.memAlign) {
		return p, func(int) {}
	}
	b := f.getBounce(len(p))
	return *b, func(n int) {
		copy(p, (*b)[:n])
		f.bounce.Put(b)
	}
}

// getBounce returns an aligned buffer of length n from the pool. A pooled
// buffer too small for n is dropped and a new one made, so the pool settles
// on the largest size in use.
func (f *File) getBounce(n int) *[]byte {
	if v, ok := f.bounce.Get().(*[]byte); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	b := AlignedBuffer(n, f.memAlign)
	return &b
}

func isAligned(p []byte, align int) bool {
	return align <= 1 || uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(align) == 0
}

// AlignedBuffer returns a zeroed slice of length and capacity n whose first
// byte's address is a multiple of align, which must be a power of two. Go's
// garbage collector does not move heap objects, so the address stays
// aligned for the slice's lifetime: the buffer can be handed to O_DIRECT
// reads and writes as is.
func AlignedBuffer(n, align int) []byte {
	if n < 0 || align <= 0 || align&(align-1) != 0 {
		panic(fmt.Sprintf("impl.AlignedBuffer(%d, %d): need n >= 0 and align a power of two", n, align))
	}
	b := make([]byte, n+align-1)
	skip := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % uintptr(align)); rem != 0 {
		skip = align - rem
	}
	return b[skip : skip+n : skip+n]
}

// retryEINTR repeats a system call that a signal interrupted before it did
// anything (EINTR).
func retryEINTR(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

//go:build linux

package crashlab

// The recorder: a FUSE server exposing one file, "image", over a sparse
// backing file, with a loop device (direct I/O) on top. The kernel turns
// I/O on the loop device into FUSE requests (drivers/block/loop.c:
// lo_rw_aio for reads and writes, vfs_fsync for REQ_OP_FLUSH, fallocate for
// discard and write-zeroes), and the server logs each one:
//
//   - WRITE: pwrite the backing file, then number and log the write. A
//     write's number is therefore taken after it finished, which orders it
//     after every write whose completion the kernel could have waited for.
//   - FSYNC: number and log a flush when it arrives. It covers every write
//     numbered before it, all of which finished before the flush arrived.
//     With FlushDelay the reply then waits, as a disk whose flush takes
//     that long would; writes finishing in the meantime are numbered after
//     the flush and so, correctly, not covered by it.
//   - FALLOCATE: punch-hole becomes OpDiscard, zero-range (and
//     write-zeroes) OpZero, logged after the backing file did it.
//
// Writeback caching stays off (else the kernel acknowledges writes before
// the server sees them, and sends no FSYNC for them), the file is opened
// FOPEN_DIRECT_IO, and the mount is made with mount(2) directly
// (DirectMountStrict: these machines have no fusermount). The server reads
// and writes only its backing file, never the loop device.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The fallocate(2) modes the image accepts (include/uapi/linux/falloc.h).
const (
	fallocKeepSize    = 0x01
	fallocPunchHole   = 0x02
	fallocZeroRange   = 0x10
	fallocWriteZeroes = 0x80 // Linux 6.17: loop uses it for REQ_OP_WRITE_ZEROES with REQ_NOUNMAP
)

// imageName is the one file the FUSE server exposes.
const imageName = "image"

// RecorderOptions configure StartRecorder.
type RecorderOptions struct {
	// Dir is where the recorder makes a directory of its own (for the
	// mount point, and for the backing file when /dev/shm cannot hold it);
	// os.TempDir() if empty. Only that new directory is removed at Close.
	Dir string
	// ImageSize is the image's size in bytes, a positive multiple of 4096.
	ImageSize int64
	// LogPath is the log file to create (it must not exist). It outlives
	// the recorder: Close closes it but never removes it.
	LogPath string
	// LogMax bounds the log file's size; 1 GiB if zero. When a record does
	// not fit, the I/O that produced it fails with EIO and the recorder
	// stays failed (Err, Close report ErrLogFull).
	LogMax int64
	// FlushDelay, if positive, delays each flush's reply, to emulate a
	// disk whose cache flush costs that long.
	FlushDelay time.Duration
	// NoLog serves the image without logging anything (LogPath must then
	// be empty): a device whose flushes cost FlushDelay, for benchmarks.
	NoLog bool

	_ struct{}
}

// Recorder is a running recorder: a loop device whose every write, flush,
// discard and zero-range is logged. The image starts as ImageSize zero
// bytes, so replaying the log onto zeros rebuilds any state it had.
type Recorder struct {
	opt     RecorderOptions
	dir     string // our own directory under opt.Dir
	shmDir  string // our own directory under /dev/shm, or ""
	backing *os.File
	mnt     string
	server  *fuse.Server
	dev     string
	log     *LogWriter

	mu      sync.Mutex // orders numbering and logging
	lastSeq uint64     // guarded by mu
	ops     atomic.Int64
	failed  atomic.Pointer[error]

	closeOnce sync.Once
	closeErr  error
}

// StartRecorder creates the backing file, mounts the FUSE server and
// attaches the loop device. It needs root, /dev/fuse and losetup(8). On
// error it has undone everything it did.
func StartRecorder(opt RecorderOptions) (r *Recorder, err error) {
	switch {
	case opt.ImageSize <= 0 || opt.ImageSize%4096 != 0:
		return nil, fmt.Errorf("start recorder: ImageSize %d is not a positive multiple of 4096", opt.ImageSize)
	case opt.LogPath == "" && !opt.NoLog:
		return nil, errors.New("start recorder: LogPath is empty")
	case opt.LogPath != "" && opt.NoLog:
		return nil, errors.New("start recorder: LogPath is set but NoLog says not to log")
	}
	if opt.LogMax == 0 {
		opt.LogMax = 1 << 30
	}
	if opt.Dir == "" {
		opt.Dir = os.TempDir()
	}
	r = &Recorder{opt: opt}
	defer func() {
		// Undo on error, and on a panic before passing it on.
		p := recover()
		if err != nil || p != nil {
			if terr := r.teardown(); terr != nil {
				err = errors.Join(err, terr)
			}
			r = nil
		}
		if p != nil {
			panic(p)
		}
	}()

	if opt.NoLog {
		// nothing to log to
	} else if r.log, err = NewLogWriter(opt.LogPath, opt.LogMax); err != nil {
		return r, fmt.Errorf("start recorder: %w", err)
	}
	if r.dir, err = os.MkdirTemp(opt.Dir, "flushproof-crashlab-"); err != nil {
		return r, fmt.Errorf("start recorder: %w", err)
	}
	backingDir := r.dir
	if shmFits(opt.ImageSize) {
		if d, err := os.MkdirTemp("/dev/shm", "flushproof-crashlab-"); err == nil {
			r.shmDir, backingDir = d, d
		}
	}
	path := filepath.Join(backingDir, "backing")
	if r.backing, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		return r, fmt.Errorf("start recorder: create backing file: %w", err)
	}
	if err = r.backing.Truncate(opt.ImageSize); err != nil {
		return r, fmt.Errorf("start recorder: size backing file %s: %w", path, err)
	}

	r.mnt = filepath.Join(r.dir, "mnt")
	if err = os.Mkdir(r.mnt, 0o700); err != nil {
		return r, fmt.Errorf("start recorder: %w", err)
	}
	timeout := time.Hour // the tree never changes
	root := &recorderRoot{r: r}
	r.server, err = fs.Mount(r.mnt, root, &fs.Options{
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		MountOptions: fuse.MountOptions{
			FsName:               "flushproof-crashlab",
			Name:                 "crashlab",
			DirectMountStrict:    true,
			DisabledCapabilities: fuse.CAP_WRITEBACK_CACHE,
			MaxWrite:             1 << 20,
			DisableXAttrs:        true,
			PanicHandler: func(p any) fuse.Status {
				r.fail(fmt.Errorf("recorder: FUSE handler panicked: %v", p))
				return fuse.EIO
			},
		},
	})
	if err != nil {
		r.server = nil
		return r, fmt.Errorf("start recorder: mount FUSE on %s: %w", r.mnt, err)
	}
	if r.dev, err = attachLoop(r.ImagePath(), true); err != nil {
		return r, fmt.Errorf("start recorder: %w", err)
	}
	if dio := loopDirectIO(r.dev); dio != "1" {
		return r, fmt.Errorf("start recorder: %s over %s has loop/dio=%s, want 1", r.dev, r.ImagePath(), dio)
	}
	return r, nil
}

// shmFits reports whether /dev/shm is a tmpfs with room for size bytes.
func shmFits(size int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return false
	}
	return int64(st.Bavail)*st.Bsize >= size
}

// Device is the loop device, /dev/loopN.
func (r *Recorder) Device() string { return r.dev }

// ImagePath is the FUSE file the loop device sits on.
func (r *Recorder) ImagePath() string { return filepath.Join(r.mnt, imageName) }

// ImageSize is the image's size in bytes.
func (r *Recorder) ImageSize() int64 { return r.opt.ImageSize }

// LogPath is the log file.
func (r *Recorder) LogPath() string { return r.opt.LogPath }

// Ops is the number of operations logged so far.
func (r *Recorder) Ops() int { return int(r.ops.Load()) }

// Err is the error that made the recorder fail (a full log, a failed
// backing write), or nil. Once failed, every write, flush and fallocate
// fails with EIO, so the log is never silently incomplete.
func (r *Recorder) Err() error {
	if p := r.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (r *Recorder) fail(err error) { r.failed.CompareAndSwap(nil, &err) }

// Close detaches the loop device, unmounts the FUSE server, and removes
// the backing file and the recorder's directory; the log stays. It returns
// the recorder's failure (Err), if any, and any teardown error. Calling it
// again returns the same.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		r.closeErr = errors.Join(r.Err(), r.teardown())
	})
	return r.closeErr
}

// teardown undoes what StartRecorder did, as far as it got, in reverse.
func (r *Recorder) teardown() error {
	var errs []error
	mounted := false
	if r.dev != "" {
		if err := detachLoop(r.dev, r.ImagePath()); err != nil {
			errs = append(errs, err)
		}
	}
	if r.server != nil {
		if err := r.server.Unmount(); err != nil {
			// Something still holds the image (the loop device did not let
			// go). Detach the mount from the tree; the kernel drops it when
			// the last user is gone.
			lerr := unix.Unmount(r.mnt, unix.MNT_DETACH)
			errs = append(errs, fmt.Errorf("unmount %s: %w (lazy unmount: %v)", r.mnt, err, lerr))
			mounted = lerr != nil
		}
	}
	if r.backing != nil {
		if err := r.backing.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close backing file: %w", err))
		}
	}
	if r.shmDir != "" {
		if err := os.RemoveAll(r.shmDir); err != nil {
			errs = append(errs, err)
		}
	}
	if r.dir != "" && !mounted {
		if err := os.RemoveAll(r.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if r.log != nil {
		if err := r.log.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("tear down recorder (%s): %w", r.dev, errors.Join(errs...))
	}
	return nil
}

// record numbers op and logs it. Numbering and appending happen under one
// lock, so the log is in number order.
func (r *Recorder) record(op Op) syscall.Errno {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err() != nil {
		return syscall.EIO
	}
	op.Seq = r.lastSeq + 1
	if r.log == nil {
		// NoLog: count only.
	} else if err := r.log.Append(op); err != nil {
		r.fail(fmt.Errorf("recorder (image %s): %w", r.ImagePath(), err))
		return syscall.EIO
	}
	r.lastSeq = op.Seq
	r.ops.Add(1)
	return 0
}

// checkRange refuses I/O outside the image.
func (r *Recorder) checkRange(off, n int64) syscall.Errno {
	if off < 0 || n < 0 || off > r.opt.ImageSize-n {
		return syscall.ENOSPC
	}
	return 0
}

// recorderRoot is the FUSE root directory; it holds only the image.
type recorderRoot struct {
	fs.Inode
	r *Recorder
}

var _ fs.NodeOnAdder = (*recorderRoot)(nil)

func (root *recorderRoot) OnAdd(ctx context.Context) {
	img := root.NewPersistentInode(ctx, &recorderImage{r: root.r}, fs.StableAttr{Mode: syscall.S_IFREG})
	root.AddChild(imageName, img, false)
}

// recorderImage is the image file.
type recorderImage struct {
	fs.Inode
	r *Recorder
}

var (
	_ fs.NodeOpener    = (*recorderImage)(nil)
	_ fs.NodeGetattrer = (*recorderImage)(nil)
	_ fs.NodeSetattrer = (*recorderImage)(nil)
	_ fs.NodeReader    = (*recorderImage)(nil)
	_ fs.NodeWriter    = (*recorderImage)(nil)
	_ fs.NodeFsyncer   = (*recorderImage)(nil)
	_ fs.NodeAllocater = (*recorderImage)(nil)
)

func (n *recorderImage) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *recorderImage) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = uint64(n.r.opt.ImageSize)
	out.Nlink = 1
	return 0
}

// Setattr accepts anything but a size change: the image's size is fixed.
func (n *recorderImage) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && size != uint64(n.r.opt.ImageSize) {
		return syscall.EPERM
	}
	return n.Getattr(ctx, f, out)
}

func (n *recorderImage) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	got, err := n.r.backing.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

func (n *recorderImage) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	r := n.r
	if r.Err() != nil {
		return 0, syscall.EIO
	}
	if e := r.checkRange(off, int64(len(data))); e != 0 {
		return 0, e
	}
	if _, err := r.backing.WriteAt(data, off); err != nil {
		r.fail(fmt.Errorf("recorder (image %s): backing write [%d, +%d): %w", r.ImagePath(), off, len(data), err))
		return 0, syscall.EIO
	}
	// Append copies data into the log before returning; go-fuse reuses it after.
	if e := r.record(Op{Kind: OpWrite, Off: off, Len: int64(len(data)), Data: data}); e != 0 {
		return 0, e
	}
	return uint32(len(data)), 0
}

func (n *recorderImage) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if e := n.r.record(Op{Kind: OpFlush}); e != 0 {
		return e
	}
	// The flush is acknowledged only once the log holding it is durable,
	// so the log survives a crash of the machine as well as of the
	// recorder: whatever the workload saw acknowledged is in it.
	if n.r.log != nil {
		if err := n.r.log.Sync(); err != nil {
			n.r.fail(fmt.Errorf("recorder (image %s): sync the log: %w", n.r.ImagePath(), err))
			return syscall.EIO
		}
	}
	if d := n.r.opt.FlushDelay; d > 0 {
		time.Sleep(d)
	}
	return 0
}

func (n *recorderImage) Allocate(ctx context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	r := n.r
	if r.Err() != nil {
		return syscall.EIO
	}
	if off > uint64(r.opt.ImageSize) || size > uint64(r.opt.ImageSize) {
		return syscall.ENOSPC
	}
	if e := r.checkRange(int64(off), int64(size)); e != 0 {
		return e
	}
	var kind OpKind
	switch mode &^ fallocKeepSize {
	case 0:
		// Preallocation changes no byte of a fixed-size image.
		return 0
	case fallocPunchHole:
		kind = OpDiscard
	case fallocZeroRange, fallocWriteZeroes:
		kind = OpZero
	default:
		return syscall.EOPNOTSUPP
	}
	// On tmpfs only punch-hole exists (mm/shmem.c, shmem_fallocate); a
	// punched range reads as zeros, which is all OpZero promises.
	fd := int(r.backing.Fd())
	if err := unix.Fallocate(fd, fallocPunchHole|fallocKeepSize, int64(off), int64(size)); err != nil {
		r.fail(fmt.Errorf("recorder (image %s): backing %s [%d, +%d): %w", r.ImagePath(), kind, off, size, err))
		return syscall.EIO
	}
	return r.record(Op{Kind: kind, Off: int64(off), Len: int64(size)})
}

// CloseOnSignal closes the recorder when the process receives one of sigs
// (os.Interrupt and SIGTERM if none are given), then re-raises the signal
// with its default action, so a command killed by the user leaves no loop
// device or mount behind and still dies of the signal. stop ends the
// watch; call it once the command closed the recorder itself.
func (r *Recorder) CloseOnSignal(sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			if err := r.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "crashlab: %v: %v\n", sig, err)
			}
			signal.Reset(sigs...)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-done:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

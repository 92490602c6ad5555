//go:build linux

package crashlab

// The recorder's server side, which runs in the supervisor process
// (supervisor.go): a FUSE server exposing one file, "image", over a sparse
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
// the server sees them, and sends no FSYNC for them), and the file is
// opened FOPEN_DIRECT_IO. The mount is made here with mount(2) (these
// machines have no fusermount) over a /dev/fuse descriptor opened
// O_CLOEXEC, then handed to go-fuse as /dev/fd/N: go-fuse's own direct
// mount opens /dev/fuse without close-on-exec, and every child forked
// before it is closed (mkfs, mount) would keep the connection
// alive after the server died. The server reads and writes only its
// backing file, never the loop device.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
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

// fuseType is the recorder's file system type in the mount table.
const fuseType = "fuse.crashlab"

// recorderSpec is RecorderOptions as the worker sends them.
type recorderSpec struct {
	Dir        string        `json:"dir"`
	ImageSize  int64         `json:"image_size"`
	LogPath    string        `json:"log_path,omitempty"`
	LogMax     int64         `json:"log_max"`
	FlushDelay time.Duration `json:"flush_delay"`
	NoLog      bool          `json:"no_log,omitempty"`
}

// recorderInfo is what the worker learns of a started recorder.
type recorderInfo struct {
	ID     int    `json:"id"`
	Dev    string `json:"dev"`
	Dir    string `json:"dir"`
	ShmDir string `json:"shm_dir,omitempty"`
	Mnt    string `json:"mnt"`
}

// recorderServer is one recorder in the supervisor.
type recorderServer struct {
	spec    recorderSpec
	sup     *supervisor
	dir     string // the run's directory in spec.Dir
	shmDir  string // the run's directory in /dev/shm, or ""
	mnt     string
	dev     string
	backing *os.File
	fuse    *fuseMount
	log     *LogWriter

	mu      sync.Mutex // orders numbering and logging
	lastSeq uint64     // guarded by mu
	ops     atomic.Int64
	failed  atomic.Pointer[error]
}

// startRecorder creates the backing file and the log, mounts the FUSE
// server and attaches the loop device. On error it has undone all of it.
func (s *supervisor) startRecorder(spec recorderSpec) (info *recorderInfo, err error) {
	rs := &recorderServer{spec: spec, sup: s}
	defer func() {
		if err != nil {
			if terr := s.closeRecorder(rs); terr != nil {
				err = errors.Join(err, terr)
			}
		}
	}()
	if !spec.NoLog {
		if rs.log, err = NewLogWriter(spec.LogPath, spec.LogMax); err != nil {
			return nil, err
		}
	}
	if rs.dir, err = s.mkdirTemp(spec.Dir); err != nil {
		return nil, err
	}
	backingDir := rs.dir
	if shmFits(spec.ImageSize) {
		if d, err := s.mkdirTemp("/dev/shm"); err == nil {
			rs.shmDir, backingDir = d, d
		}
	}
	path := filepath.Join(backingDir, "backing")
	if rs.backing, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		return nil, fmt.Errorf("create backing file: %w", err)
	}
	if err = rs.backing.Truncate(spec.ImageSize); err != nil {
		return nil, fmt.Errorf("size backing file %s: %w", path, err)
	}
	rs.mnt = filepath.Join(rs.dir, "mnt")
	if err = os.Mkdir(rs.mnt, 0o700); err != nil {
		return nil, err
	}
	timeout := time.Hour // the tree never changes
	rs.fuse, err = mountFUSE(rs.mnt, s.run.marker(), &recorderRoot{r: rs}, &fs.Options{
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		MountOptions: fuse.MountOptions{
			DisabledCapabilities: fuse.CAP_WRITEBACK_CACHE,
			MaxWrite:             fuseMaxWrite,
			DisableXAttrs:        true,
			PanicHandler: func(p any) fuse.Status {
				rs.fail(fmt.Errorf("recorder: FUSE handler panicked: %v", p))
				return fuse.EIO
			},
		},
	})
	if err != nil {
		return nil, err
	}
	if rs.dev, err = loopdev.Attach(rs.imagePath(), loopdev.Options{DirectIO: true}); err != nil {
		return nil, err
	}
	if dio := loopdev.DirectIO(rs.dev); dio != "1" {
		return nil, fmt.Errorf("%s over %s has loop/dio=%s, want 1", rs.dev, rs.imagePath(), dio)
	}
	s.mu.Lock()
	s.nextRec++
	id := s.nextRec
	s.recorders[id] = rs
	s.mu.Unlock()
	return &recorderInfo{ID: id, Dev: rs.dev, Dir: rs.dir, ShmDir: rs.shmDir, Mnt: rs.mnt}, nil
}

// closeRecorder detaches the loop device, unmounts the FUSE server,
// closes the backing file and the log, and removes the recorder's
// directories.
func (s *supervisor) closeRecorder(rs *recorderServer) error {
	err := s.undo([]string{rs.dir, rs.shmDir}, []*recorderServer{rs}, nil)
	s.forget(rs.dir, rs.shmDir)
	if err != nil {
		return fmt.Errorf("tear down recorder (%s): %w", rs.dev, err)
	}
	return nil
}

// finish closes the backing file and the log, once the server has ended.
func (rs *recorderServer) finish() error {
	var errs []error
	if rs.backing != nil {
		if err := rs.backing.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close backing file: %w", err))
		}
		rs.backing = nil
	}
	if rs.log != nil {
		errs = append(errs, rs.log.Close())
	}
	return errors.Join(errs...)
}

// shmFits reports whether /dev/shm is a tmpfs with room for size bytes.
func shmFits(size int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return false
	}
	return int64(st.Bavail)*st.Bsize >= size
}

func (rs *recorderServer) imagePath() string { return filepath.Join(rs.mnt, imageName) }

// Err is the error that made the recorder fail, or nil.
func (rs *recorderServer) Err() error {
	if p := rs.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (rs *recorderServer) fail(err error) { rs.failed.CompareAndSwap(nil, &err) }

// record numbers op and logs it. Numbering and appending happen under one
// lock, so the log is in number order.
func (rs *recorderServer) record(op Op) syscall.Errno {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.Err() != nil {
		return syscall.EIO
	}
	op.Seq = rs.lastSeq + 1
	if rs.log == nil {
		// NoLog: count only.
	} else if err := rs.log.Append(op); err != nil {
		rs.fail(fmt.Errorf("recorder (image %s): %w", rs.imagePath(), err))
		return syscall.EIO
	}
	rs.lastSeq = op.Seq
	rs.ops.Add(1)
	return 0
}

// checkRange refuses I/O outside the image.
func (rs *recorderServer) checkRange(off, n int64) syscall.Errno {
	if off < 0 || n < 0 || off > rs.spec.ImageSize-n {
		return syscall.ENOSPC
	}
	return 0
}

// fuseMaxWrite is the largest WRITE the kernel sends (max_write; loop
// splits bigger requests).
const fuseMaxWrite = 1 << 20

// fuseMount is a FUSE file system this process mounted and serves.
type fuseMount struct {
	point  string
	server *fuse.Server
	done   chan struct{} // closed when the server has ended
}

// mountFUSE mounts root at point with the given source name (the run's
// marker) and serves it. The /dev/fuse descriptor is close-on-exec from
// the start, so no child ever holds it.
func mountFUSE(point, source string, root fs.InodeEmbedder, opts *fs.Options) (*fuseMount, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("mount FUSE on %s: open /dev/fuse: %w", point, err)
	}
	// The options fusermount passes (fs/fuse/inode.c, fuse_parse_param).
	data := fmt.Sprintf("fd=%d,rootmode=%o,user_id=%d,group_id=%d,max_read=%d",
		fd, unix.S_IFDIR, os.Geteuid(), os.Getegid(), fuseMaxWrite)
	if err := unix.Mount(source, point, fuseType, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mount FUSE on %s: %w", point, err)
	}
	// go-fuse serves an already mounted descriptor named /dev/fd/N (its
	// "magic mountpoint"); it reads the kernel's INIT here and owns fd
	// from now on, closing it on error.
	server, err := fuse.NewServer(fs.NewNodeFS(root, opts), fmt.Sprintf("/dev/fd/%d", fd), &opts.MountOptions)
	if err != nil {
		_ = unix.Unmount(point, unix.MNT_DETACH)
		return nil, fmt.Errorf("serve FUSE on %s: %w", point, err)
	}
	m := &fuseMount{point: point, server: server, done: make(chan struct{})}
	go func() {
		server.Serve() // until the mount is gone or the connection aborted
		close(m.done)
	}()
	if err := server.WaitMount(); err != nil {
		_ = unix.Unmount(point, unix.MNT_DETACH)
		return nil, fmt.Errorf("serve FUSE on %s: %w", point, err)
	}
	return m, nil
}

// wait waits until the server has ended, or deadline.
func (m *fuseMount) wait(deadline time.Time) error {
	select {
	case <-m.done:
		return nil
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("the FUSE server of %s still runs after its unmount", m.point)
	}
}

// recorderRoot is the FUSE root directory; it holds only the image.
type recorderRoot struct {
	fs.Inode
	r *recorderServer
}

var _ fs.NodeOnAdder = (*recorderRoot)(nil)

func (root *recorderRoot) OnAdd(ctx context.Context) {
	img := root.NewPersistentInode(ctx, &recorderImage{r: root.r}, fs.StableAttr{Mode: syscall.S_IFREG})
	root.AddChild(imageName, img, false)
}

// recorderImage is the image file.
type recorderImage struct {
	fs.Inode
	r *recorderServer
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
	out.Size = uint64(n.r.spec.ImageSize)
	out.Nlink = 1
	return 0
}

// Setattr accepts anything but a size change: the image's size is fixed.
func (n *recorderImage) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && size != uint64(n.r.spec.ImageSize) {
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
		r.fail(fmt.Errorf("recorder (image %s): backing write [%d, +%d): %w", r.imagePath(), off, len(data), err))
		return 0, syscall.EIO
	}
	// Append copies data into the log before returning; go-fuse reuses it after.
	if e := r.record(Op{Kind: OpWrite, Off: off, Len: int64(len(data)), Data: data}); e != 0 {
		return 0, e
	}
	return uint32(len(data)), 0
}

func (n *recorderImage) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	r := n.r
	if e := r.record(Op{Kind: OpFlush}); e != 0 {
		return e
	}
	// The flush is acknowledged only once the log holding it is durable,
	// so the log survives a crash of the machine as well as of the
	// recorder: whatever the workload saw acknowledged is in it.
	if r.log != nil {
		if err := r.log.Sync(); err != nil {
			r.fail(fmt.Errorf("recorder (image %s): sync the log: %w", r.imagePath(), err))
			return syscall.EIO
		}
	}
	// Once the worker is dead nobody measures the delay: the clean-up's
	// unmount should not wait for it.
	if d := r.spec.FlushDelay; d > 0 && !r.sup.workerGone.Load() {
		time.Sleep(d)
	}
	return 0
}

func (n *recorderImage) Allocate(ctx context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	r := n.r
	if r.Err() != nil {
		return syscall.EIO
	}
	if off > uint64(r.spec.ImageSize) || size > uint64(r.spec.ImageSize) {
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
		r.fail(fmt.Errorf("recorder (image %s): backing %s [%d, +%d): %w", r.imagePath(), kind, off, size, err))
		return syscall.EIO
	}
	return r.record(Op{Kind: kind, Off: int64(off), Len: int64(size)})
}

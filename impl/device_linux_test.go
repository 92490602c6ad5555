//go:build linux

package impl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/spec"
)

// devTestFSName names the file system under path, for test logs.
func devTestFSName(t *testing.T, path string) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	names := map[int64]string{
		unix.EXT4_SUPER_MAGIC:      "ext2/3/4",
		unix.XFS_SUPER_MAGIC:       "xfs",
		unix.BTRFS_SUPER_MAGIC:     "btrfs",
		unix.TMPFS_MAGIC:           "tmpfs",
		unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
		unix.RAMFS_MAGIC:           "ramfs",
		unix.PROC_SUPER_MAGIC:      "proc",
	}
	if name, ok := names[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("magic %#x", st.Type)
}

// devTestDirectDir returns a directory of the test's own on a file system
// that accepts O_DIRECT: t.TempDir() if it does, else a new directory under
// /var/tmp (removed at the end). It skips the test if neither does.
func devTestDirectDir(t *testing.T) string {
	t.Helper()
	candidates := []struct {
		where string
		dir   func() (string, error)
	}{
		{"t.TempDir()", func() (string, error) { return t.TempDir(), nil }},
		{"/var/tmp", func() (string, error) {
			dir, err := os.MkdirTemp("/var/tmp", "flushproof-impl-test-")
			if err == nil {
				t.Cleanup(func() { _ = os.RemoveAll(dir) })
			}
			return dir, err
		}},
	}
	var refused []string
	for _, c := range candidates {
		dir, err := c.dir()
		if err != nil {
			refused = append(refused, fmt.Sprintf("%s: %v", c.where, err))
			continue
		}
		probe := filepath.Join(dir, "probe")
		f, err := Open(probe, OpenOptions{Create: true})
		if errors.Is(err, ErrNoDirectIO) {
			refused = append(refused, fmt.Sprintf("%s (%s, %s): %v", c.where, dir, devTestFSName(t, dir), err))
			continue
		}
		require.NoError(t, err, "probe O_DIRECT in %s", dir)
		require.NoError(t, f.Close())
		require.NoError(t, os.Remove(probe))
		t.Logf("O_DIRECT works in %s: %s (%s)", c.where, dir, devTestFSName(t, dir))
		return dir
	}
	t.Skipf("no directory accepts O_DIRECT: %s", strings.Join(refused, "; "))
	return ""
}

// devTestOpen opens path and closes it at the end of the test.
func devTestOpen(t *testing.T, path string, opt OpenOptions) *File {
	t.Helper()
	f, err := Open(path, opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// devTestPattern returns n bytes that differ with seed and position.
func devTestPattern(n int, seed int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(seed*131 + i*7 + i/251)
	}
	return p
}

// devTestRoundTrip writes block at off with FUA and the next one plainly,
// flushes, and reads both back.
func devTestRoundTrip(t *testing.T, dev spec.Device, off int64) {
	t.Helper()
	bs := dev.BlockSize()
	fua, plain := devTestPattern(bs, 1), devTestPattern(bs, 2)
	require.NoError(t, dev.WriteAt(fua, off, spec.FUA))
	require.NoError(t, dev.WriteAt(plain, off+int64(bs), 0))
	require.NoError(t, dev.Flush())
	got := make([]byte, 2*bs)
	require.NoError(t, dev.ReadAt(got, off))
	assert.True(t, bytes.Equal(fua, got[:bs]), "FUA-written block reads back")
	assert.True(t, bytes.Equal(plain, got[bs:]), "plainly written block reads back")
}

func TestFileDirectRoundTrip(t *testing.T) {
	dir := devTestDirectDir(t)
	path := filepath.Join(dir, "dev")
	const size = 1 << 20
	f := devTestOpen(t, path, OpenOptions{Create: true, Size: size})
	t.Logf("%s: BlockSize %d, MemoryAlignment %d (from %s)", devTestFSName(t, dir), f.BlockSize(), f.MemoryAlignment(), f.alignFrom)

	assert.Equal(t, path, f.Path())
	assert.False(t, f.IsBlockDevice())
	assert.True(t, f.Direct())
	bs := f.BlockSize()
	assert.GreaterOrEqual(t, bs, 512)
	assert.Zero(t, bs&(bs-1), "block size %d is a power of two", bs)
	n, err := f.Size()
	require.NoError(t, err)
	assert.EqualValues(t, size, n)

	devTestRoundTrip(t, f, int64(bs))

	// Past the end: a short read is an error.
	err = f.ReadAt(make([]byte, bs), size)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorContains(t, err, path)

	// The data is in the file, not only in File: reopen read-only.
	require.NoError(t, f.Close())
	ro := devTestOpen(t, path, OpenOptions{ReadOnly: true})
	got := make([]byte, bs)
	require.NoError(t, ro.ReadAt(got, int64(bs)))
	assert.Equal(t, devTestPattern(bs, 1), got)
	err = ro.WriteAt(got, 0, spec.FUA)
	assert.ErrorContains(t, err, "read-only")

	// Create with a smaller Size never shrinks.
	again := devTestOpen(t, path, OpenOptions{Create: true, Size: 4096})
	n, err = again.Size()
	require.NoError(t, err)
	assert.EqualValues(t, size, n)
}

func TestFileBufferedRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	f := devTestOpen(t, path, OpenOptions{Create: true, Buffered: true, Size: 1 << 16})
	assert.False(t, f.Direct())
	assert.Equal(t, 1, f.MemoryAlignment())
	devTestRoundTrip(t, f, 0)
	// Buffered mode keeps the block discipline, so code tested on it runs
	// unchanged on O_DIRECT.
	assert.ErrorIs(t, f.WriteAt(make([]byte, 100), 0, 0), ErrUnaligned)
}

func TestFileRejectsUnaligned(t *testing.T) {
	f := devTestOpen(t, filepath.Join(devTestDirectDir(t), "dev"), OpenOptions{Create: true, Size: 1 << 16})
	bs := f.BlockSize()
	cases := []struct {
		name string
		off  int64
		n    int
	}{
		{"offset 1", 1, bs},
		{"offset half a block", int64(bs / 2), bs},
		{"negative offset", -int64(bs), bs},
		{"length one short", 0, bs - 1},
		{"length one over", 0, bs + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range []error{
				f.WriteAt(make([]byte, c.n), c.off, 0),
				f.WriteAt(make([]byte, c.n), c.off, spec.FUA),
				f.ReadAt(make([]byte, c.n), c.off),
			} {
				assert.ErrorIs(t, err, ErrUnaligned)
				assert.ErrorContains(t, err, f.Path())
				assert.ErrorContains(t, err, fmt.Sprint(bs))
			}
		})
	}
}

func TestFileUnalignedMemory(t *testing.T) {
	f := devTestOpen(t, filepath.Join(devTestDirectDir(t), "dev"), OpenOptions{Create: true, Size: 1 << 16})
	bs, align := f.BlockSize(), f.MemoryAlignment()
	require.Greater(t, align, 1, "O_DIRECT needs some memory alignment, else this test proves nothing")

	// One byte past an aligned address is misaligned for any align > 1;
	// passed to the kernel as is, O_DIRECT would fail with EINVAL.
	src := AlignedBuffer(2*bs+1, align)[1:]
	require.False(t, isAligned(src, align))
	copy(src, devTestPattern(2*bs, 3))
	require.NoError(t, f.WriteAt(src, int64(bs), spec.FUA))

	dst := AlignedBuffer(2*bs+1, align)[1:]
	require.NoError(t, f.ReadAt(dst, int64(bs)))
	assert.Equal(t, devTestPattern(2*bs, 3), dst)

	// A smaller transfer reuses the pooled buffer, a larger one replaces it.
	for _, n := range []int{bs, 4 * bs} {
		src := AlignedBuffer(n+1, align)[1:]
		copy(src, devTestPattern(n, n))
		require.NoError(t, f.WriteAt(src, 0, 0))
		dst := AlignedBuffer(n+1, align)[1:]
		require.NoError(t, f.ReadAt(dst, 0))
		assert.Equal(t, devTestPattern(n, n), dst, "%d bytes", n)
	}
}

// TestFileConcurrent runs WriteAt and Flush from 16 goroutines at once on
// disjoint blocks, half of them through misaligned buffers (the bounce
// pool), then checks every block holds its goroutine's last write.
func TestFileConcurrent(t *testing.T) {
	const goroutines, rounds = 16, 8
	f := devTestOpen(t, filepath.Join(devTestDirectDir(t), "dev"), OpenOptions{Create: true})
	dev := NewCounting(f)
	bs := f.BlockSize()

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds*2)
	for g := range goroutines {
		wg.Go(func() {
			off := int64(g) * int64(2*bs)
			for r := range rounds {
				p := devTestPattern(2*bs, g*rounds+r)
				if g%2 == 1 {
					q := AlignedBuffer(2*bs+1, f.MemoryAlignment())[1:]
					copy(q, p)
					p = q
				}
				fl := spec.WriteFlags(0)
				if r%2 == 1 {
					fl = spec.FUA
				}
				errs <- dev.WriteAt(p, off, fl)
				errs <- dev.Flush()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	got := make([]byte, goroutines*2*bs)
	require.NoError(t, dev.ReadAt(got, 0))
	for g := range goroutines {
		want := devTestPattern(2*bs, g*rounds+rounds-1)
		assert.True(t, bytes.Equal(want, got[g*2*bs:(g+1)*2*bs]), "goroutine %d's blocks", g)
	}
	assert.Equal(t, Counts{Writes: goroutines * rounds, FUAWrites: goroutines * rounds / 2, Flushes: goroutines * rounds, Reads: 1}, dev.Counts())
}

func TestFileClosed(t *testing.T) {
	f, err := Open(filepath.Join(t.TempDir(), "dev"), OpenOptions{Create: true, Buffered: true})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	bs := f.BlockSize()
	_, sizeErr := f.Size()
	for name, err := range map[string]error{
		"WriteAt": f.WriteAt(make([]byte, bs), 0, 0),
		"ReadAt":  f.ReadAt(make([]byte, bs), 0),
		"Flush":   f.Flush(),
		"Size":    sizeErr,
		"Close":   f.Close(),
	} {
		assert.ErrorIs(t, err, os.ErrClosed, name)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, path string
		opt        OpenOptions
		want       string
	}{
		{"directory", dir, OpenOptions{}, "not a regular file or block device"},
		{"character device", "/dev/null", OpenOptions{ReadOnly: true}, "not a regular file or block device"},
		{"missing without Create", filepath.Join(dir, "missing"), OpenOptions{}, "no such file"},
		{"Create and ReadOnly", filepath.Join(dir, "x"), OpenOptions{Create: true, ReadOnly: true}, "exclude each other"},
		{"Size without Create", filepath.Join(dir, "x"), OpenOptions{Size: 4096}, "needs Create"},
		{"negative Size", filepath.Join(dir, "x"), OpenOptions{Create: true, Size: -1}, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(c.path, c.opt)
			if !assert.Error(t, err) {
				_ = f.Close()
				return
			}
			assert.ErrorContains(t, err, c.path)
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err := os.Stat(filepath.Join(dir, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused Open creates nothing")
}

// devTestAssertNoDirectIO checks the error a user gets where O_DIRECT is
// refused: it says what failed, where, and what to do.
func devTestAssertNoDirectIO(t *testing.T, err error, path string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoDirectIO)
	assert.ErrorIs(t, err, unix.EINVAL)
	for _, want := range []string{path, "O_DIRECT", "OpenOptions.Buffered"} {
		assert.ErrorContains(t, err, want)
	}
	t.Logf("error: %v", err)
}

// TestOpenNoDirectIO opens files on file systems that refuse O_DIRECT: a
// ramfs the test mounts on its own directory (root only), and /proc (read
// only, so nothing is written there).
func TestOpenNoDirectIO(t *testing.T) {
	t.Run("ramfs", func(t *testing.T) {
		dir := t.TempDir()
		if err := unix.Mount("flushproof-test", dir, "ramfs", 0, ""); err != nil {
			t.Skipf("cannot mount ramfs on %s (needs root / CAP_SYS_ADMIN): %v", dir, err)
		}
		t.Cleanup(func() { assert.NoError(t, unix.Unmount(dir, 0), "unmount ramfs %s", dir) })
		require.Equal(t, "ramfs", devTestFSName(t, dir))

		path := filepath.Join(dir, "dev")
		_, err := Open(path, OpenOptions{Create: true})
		devTestAssertNoDirectIO(t, err, path)

		f := devTestOpen(t, path, OpenOptions{Create: true, Buffered: true, Size: 1 << 16})
		devTestRoundTrip(t, f, 0)
	})
	t.Run("proc", func(t *testing.T) {
		const path = "/proc/self/status"
		_, err := Open(path, OpenOptions{ReadOnly: true})
		devTestAssertNoDirectIO(t, err, path)
		f := devTestOpen(t, path, OpenOptions{ReadOnly: true, Buffered: true})
		assert.False(t, f.Direct())
	})
}

// TestOpenTmpfs uses /dev/shm if it is tmpfs. tmpfs refused O_DIRECT until
// Linux 6.6 ("tmpfs: trivial support for direct IO"); either way the
// outcome must be a working File or the ErrNoDirectIO explanation, and
// buffered mode must work.
func TestOpenTmpfs(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil || devTestFSName(t, "/dev/shm") != "tmpfs" {
		t.Skip("/dev/shm is not a tmpfs here")
	}
	dir, err := os.MkdirTemp("/dev/shm", "flushproof-impl-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "dev")

	f, err := Open(path, OpenOptions{Create: true, Size: 1 << 16})
	if err != nil {
		devTestAssertNoDirectIO(t, err, path)
	} else {
		t.Logf("tmpfs accepts O_DIRECT on this kernel: BlockSize %d, MemoryAlignment %d (from %s)", f.BlockSize(), f.MemoryAlignment(), f.alignFrom)
		devTestRoundTrip(t, f, 0)
		require.NoError(t, f.Close())
	}

	b := devTestOpen(t, path, OpenOptions{Create: true, Buffered: true, Size: 1 << 16})
	assert.False(t, b.Direct())
	devTestRoundTrip(t, b, int64(2*b.BlockSize()))
}

func TestAlignedBuffer(t *testing.T) {
	for _, align := range []int{1, 2, 512, 4096, 1 << 16} {
		for _, n := range []int{0, 1, 511, 4096, 100000} {
			b := AlignedBuffer(n, align)
			assert.Len(t, b, n)
			assert.Equal(t, n, cap(b), "capacity: appending must not move the buffer")
			if n > 0 {
				assert.True(t, isAligned(b, align), "AlignedBuffer(%d, %d)", n, align)
			}
		}
	}
	for _, bad := range [][2]int{{-1, 512}, {512, 0}, {512, -512}, {512, 3}, {512, 768}} {
		assert.Panics(t, func() { AlignedBuffer(bad[0], bad[1]) }, "AlignedBuffer(%d, %d)", bad[0], bad[1])
	}
}

// devTestLoop attaches path to a free loop device with direct I/O on and
// detaches it at the end of the test. It skips without root or losetup.
func devTestLoop(t *testing.T, path string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skipf("losetup not found: %v", err)
	}
	out, err := exec.Command(losetup, "--find", "--show", "--direct-io=on", path).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach a loop device (%s --find --show --direct-io=on): %v: %s", losetup, err, out)
	}
	dev := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(dev, "/dev/loop"), "losetup printed %q", out)
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("detach %s: %v: %s", dev, err, out)
		}
	})
	if dio, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop/dio")); err == nil {
		t.Logf("%s over %s, loop/dio=%s", dev, path, strings.TrimSpace(string(dio)))
	}
	return dev
}

func TestLoopDevice(t *testing.T) {
	const size = 64 << 20
	backing := filepath.Join(t.TempDir(), "backing")
	require.NoError(t, os.WriteFile(backing, nil, 0o600))
	require.NoError(t, os.Truncate(backing, size)) // sparse
	dev := devTestLoop(t, backing)

	f := devTestOpen(t, dev, OpenOptions{})
	t.Logf("%s: BlockSize %d, MemoryAlignment %d (from %s)", dev, f.BlockSize(), f.MemoryAlignment(), f.alignFrom)
	assert.True(t, f.IsBlockDevice())
	assert.True(t, f.Direct())
	assert.Contains(t, []int{512, 4096}, f.BlockSize())
	n, err := f.Size()
	require.NoError(t, err)
	assert.EqualValues(t, size, n)

	const off = 1 << 20
	devTestRoundTrip(t, f, off)

	// O_EXCL: while f holds the device, another exclusive open is refused.
	for _, opt := range []OpenOptions{{}, {ReadOnly: true}, {Buffered: true}} {
		second, err := Open(dev, opt)
		if !assert.Error(t, err, "second O_EXCL open with %+v", opt) {
			_ = second.Close()
			continue
		}
		assert.ErrorIs(t, err, unix.EBUSY)
		assert.ErrorContains(t, err, dev)
		assert.ErrorContains(t, err, "O_EXCL")
		t.Logf("second open: %v", err)
	}
	_, err = Open(dev, OpenOptions{Create: true})
	assert.ErrorContains(t, err, "block device")

	// Once f is closed the claim is gone.
	require.NoError(t, f.Close())
	again := devTestOpen(t, dev, OpenOptions{ReadOnly: true})
	got := make([]byte, again.BlockSize())
	require.NoError(t, again.ReadAt(got, off))
	assert.Equal(t, devTestPattern(again.BlockSize(), 1), got)
	require.NoError(t, again.Close())

	// The writes went through the loop device into the backing file.
	raw, err := os.ReadFile(backing)
	require.NoError(t, err)
	bs := again.BlockSize()
	assert.True(t, bytes.Equal(devTestPattern(bs, 1), raw[off:off+bs]), "FUA block in backing file")
	assert.True(t, bytes.Equal(devTestPattern(bs, 2), raw[off+bs:off+2*bs]), "plain block in backing file")
}

// TestFileRawSyscalls: the raw system-call path writes (plain and FUA),
// flushes and reads like the ordinary one.
func TestFileRawSyscalls(t *testing.T) {
	dir := devTestDirectDir(t)
	f := devTestOpen(t, filepath.Join(dir, "raw"), OpenOptions{Create: true, Size: 1 << 20, RawSyscalls: true})
	devTestRoundTrip(t, f, 0)
	bs := f.BlockSize()
	p := devTestPattern(bs, 9)
	require.NoError(t, f.WriteAt(p, int64(3*bs), spec.FUA))
	got := make([]byte, bs)
	require.NoError(t, f.ReadAt(got, int64(3*bs)))
	assert.Equal(t, p, got)
	require.NoError(t, f.Flush())
	err := f.ReadAt(got, 1<<20) // past the end
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

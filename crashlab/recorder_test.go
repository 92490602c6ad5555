//go:build linux

package crashlab

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/spec"
)

// recTestNeeds skips the test unless it can mount FUSE and attach loop
// devices.
func recTestNeeds(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the recorder needs root (mount(2) of FUSE, loop devices)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the recorder needs /dev/fuse: %v", err)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("the recorder needs loop devices: %v", err)
	}
}

// recTestStart starts a recorder, closes it at the end of the test, and
// checks then that it left nothing behind.
func recTestStart(t *testing.T, opt RecorderOptions) *Recorder {
	t.Helper()
	recTestNeeds(t)
	if opt.LogPath == "" {
		opt.LogPath = filepath.Join(t.TempDir(), "log")
	}
	if opt.Dir == "" {
		opt.Dir = t.TempDir()
	}
	r, err := StartRecorder(opt)
	require.NoError(t, err)
	t.Logf("recorder: %s over %s, loop/dio=%s, log %s", r.Device(), r.ImagePath(), loopdev.DirectIO(r.Device()), r.LogPath())
	t.Cleanup(func() {
		_ = r.Close()
		recTestAssertGone(t, r)
	})
	return r
}

// recTestAssertGone checks that a closed recorder left no loop device, no
// mount and no directory behind.
func recTestAssertGone(t *testing.T, r *Recorder) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), r.mnt, "FUSE mount left behind")
	if out, err := exec.Command("losetup", "-a").CombinedOutput(); err == nil {
		assert.NotContains(t, string(out), r.ImagePath(), "loop device left behind")
	}
	assert.NotEqual(t, r.ImagePath(), loopdev.BackingFile(r.Device()), "%s still attached", r.Device())
	assert.NoDirExists(t, r.dir)
	if r.shmDir != "" {
		assert.NoDirExists(t, r.shmDir)
	}
	assert.FileExists(t, r.LogPath(), "the log outlives the recorder")
}

// recTestKinds renders ops as "write@0 flush ..." for messages.
func recTestKinds(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		if op.Kind == OpFlush {
			fmt.Fprintf(&b, "%s ", op.Kind)
		} else {
			fmt.Fprintf(&b, "%s@%d+%d ", op.Kind, op.Off, op.Len)
		}
	}
	return b.String()
}

func recTestPattern(n, seed int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(seed*29 + i*13 + i/509)
	}
	return p
}

func TestRecorderBlockIO(t *testing.T) {
	r := recTestStart(t, RecorderOptions{ImageSize: 64 << 20})
	// Attaching may already flush: turning on loop's direct I/O fsyncs the
	// backing file (drivers/block/loop.c, loop_update_dio).
	start := r.Ops()
	dev, err := impl.Open(r.Device(), impl.OpenOptions{})
	require.NoError(t, err)
	defer func() { _ = dev.Close() }()
	bs := dev.BlockSize()
	a, b, c := recTestPattern(bs, 1), recTestPattern(2*bs, 2), recTestPattern(bs, 3)
	offA, offB, offC := int64(0), int64(8*bs), int64(1<<20)

	require.NoError(t, dev.WriteAt(a, offA, 0))
	require.NoError(t, dev.WriteAt(b, offB, 0))
	require.NoError(t, dev.Flush())
	before := r.Ops()
	require.NoError(t, dev.WriteAt(c, offC, spec.FUA))
	afterFUA := r.Ops()
	got := make([]byte, 2*bs)
	require.NoError(t, dev.ReadAt(got, offB))
	assert.Equal(t, b, got)
	require.NoError(t, dev.Close())
	assert.Equal(t, afterFUA, r.Ops(), "reads and close log nothing")
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close is idempotent")

	ops, err := ReadLog(r.LogPath())
	require.NoError(t, err)
	t.Logf("log: %s", recTestKinds(ops))
	require.Len(t, ops, afterFUA)
	for _, op := range ops[:start] {
		assert.Equal(t, OpFlush, op.Kind, "only flushes before the test's I/O")
	}
	// The plain writes and the flush: nothing else reaches the image.
	s := uint64(start)
	assert.Equal(t, []Op{
		{Seq: s + 1, Kind: OpWrite, Off: offA, Len: int64(len(a)), Data: a},
		{Seq: s + 2, Kind: OpWrite, Off: offB, Len: int64(len(b)), Data: b},
		{Seq: s + 3, Kind: OpFlush},
	}, ops[start:before])
	// The FUA write (pwritev2 RWF_DSYNC: REQ_FUA, block/fops.c): loop has
	// no FUA, so the block layer sends the write and then a flush
	// (block/blk-flush.c, REQ_FSEQ_POSTFLUSH; a PREFLUSH only comes with
	// REQ_PREFLUSH, as in a journal commit), and blkdev_fsync adds the
	// RWF_DSYNC flush.
	require.GreaterOrEqual(t, len(ops)-before, 2)
	assert.Equal(t, Op{Seq: s + 4, Kind: OpWrite, Off: offC, Len: int64(len(c)), Data: c}, ops[before])
	for _, op := range ops[before+1:] {
		assert.Equal(t, OpFlush, op.Kind, "after the FUA write, only flushes")
	}
}

func TestRecorderExt4(t *testing.T) {
	recTestNeeds(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skipf("needs mkfs.ext4: %v", err)
	}
	if fss, _ := os.ReadFile("/proc/filesystems"); !bytes.Contains(fss, []byte("\text4\n")) {
		t.Skip("the kernel has no ext4")
	}
	r := recTestStart(t, RecorderOptions{ImageSize: 64 << 20})
	out, err := exec.Command(mkfs, "-q", "-F", r.Device()).CombinedOutput()
	require.NoError(t, err, "mkfs.ext4: %s", out)
	mkfsOps := r.Ops()

	mnt := filepath.Join(t.TempDir(), "ext4")
	require.NoError(t, os.Mkdir(mnt, 0o700))
	require.NoError(t, unix.Mount(r.Device(), mnt, "ext4", 0, ""))
	mounted := true
	unmount := func() error {
		if !mounted {
			return nil
		}
		mounted = false
		return unix.Unmount(mnt, 0)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})

	data := recTestPattern(64<<10, 7)
	f, err := os.Create(filepath.Join(mnt, "file"))
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	beforeFsync := r.Ops()
	require.NoError(t, f.Sync())
	afterFsync := r.Ops()
	require.NoError(t, f.Close())
	require.NoError(t, unmount())
	require.NoError(t, r.Close())

	ops, err := ReadLog(r.LogPath())
	require.NoError(t, err)
	counts := map[OpKind]int{}
	var bytesWritten int64
	for _, op := range ops {
		counts[op.Kind]++
		if op.Kind == OpWrite {
			bytesWritten += op.Len
		}
	}
	t.Logf("mkfs.ext4: %d ops; fsync: %d ops; total %d: %v, %d bytes written", mkfsOps, afterFsync-beforeFsync, len(ops), counts, bytesWritten)
	assert.Positive(t, counts[OpFlush], "mkfs and fsync flush")
	assert.Greater(t, afterFsync, beforeFsync, "fsync reaches the device")

	// The file's data was written, and a flush follows it.
	var dataSeq uint64
	for _, op := range ops {
		if op.Kind == OpWrite && bytes.Contains(op.Data, data[:4096]) {
			dataSeq = op.Seq
			break
		}
	}
	require.NotZero(t, dataSeq, "the file's data is in a logged write")
	flushed := false
	for _, op := range ops[dataSeq:] {
		flushed = flushed || op.Kind == OpFlush
	}
	assert.True(t, flushed, "a flush after the file's data (op %d)", dataSeq)
}

// TestRecorderLogFull fills a small log: the write that does not fit fails,
// and so does everything after it, and Close says why.
func TestRecorderLogFull(t *testing.T) {
	r := recTestStart(t, RecorderOptions{ImageSize: 16 << 20, LogMax: 64 << 10})
	dev, err := impl.Open(r.Device(), impl.OpenOptions{})
	require.NoError(t, err)
	defer func() { _ = dev.Close() }()
	block := recTestPattern(4096, 5)
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		werr = dev.WriteAt(block, int64(i)*4096, 0)
	}
	require.Error(t, werr, "a 64 KiB log cannot hold 64 writes of 4 KiB")
	assert.ErrorIs(t, r.Err(), ErrLogFull)
	assert.Error(t, dev.Flush(), "a failed recorder fails flushes too")
	require.NoError(t, dev.Close())
	assert.ErrorIs(t, r.Close(), ErrLogFull)

	ops, err := ReadLog(r.LogPath())
	require.NoError(t, err)
	assert.Equal(t, r.Ops(), len(ops))
	for _, op := range ops {
		assert.Contains(t, []OpKind{OpWrite, OpFlush}, op.Kind)
	}
}

func TestStartRecorderErrors(t *testing.T) {
	dir := t.TempDir()
	for _, opt := range []RecorderOptions{
		{ImageSize: 0, LogPath: filepath.Join(dir, "a")},
		{ImageSize: 4097, LogPath: filepath.Join(dir, "b")},
		{ImageSize: 1 << 20},
	} {
		_, err := StartRecorder(opt)
		assert.Error(t, err)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)

	// A log path that exists is never overwritten, and nothing is left.
	recTestNeeds(t)
	logPath := filepath.Join(dir, "exists")
	require.NoError(t, os.WriteFile(logPath, []byte("keep"), 0o600))
	own := t.TempDir()
	_, err = StartRecorder(RecorderOptions{Dir: own, ImageSize: 1 << 20, LogPath: logPath})
	assert.ErrorIs(t, err, os.ErrExist)
	got, _ := os.ReadFile(logPath)
	assert.Equal(t, "keep", string(got))
	entries, err = os.ReadDir(own)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestRecorderSignal runs a recorder in a child process, kills it with
// SIGTERM, and checks that the child tore everything down.
func TestRecorderSignal(t *testing.T) {
	if os.Getenv("CRASHLAB_SIGNAL_CHILD") != "" {
		r, err := StartRecorder(RecorderOptions{Dir: os.Getenv("CRASHLAB_SIGNAL_CHILD"), ImageSize: 1 << 20,
			LogPath: filepath.Join(os.Getenv("CRASHLAB_SIGNAL_CHILD"), "log")})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		r.CloseOnSignal(unix.SIGTERM)
		fmt.Println(r.Device(), r.ImagePath(), r.dir, r.shmDir)
		time.Sleep(20 * time.Second)
		os.Exit(3) // not killed
	}
	recTestNeeds(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecorderSignal$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CRASHLAB_SIGNAL_CHILD="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	fields := strings.Fields(line)
	require.GreaterOrEqual(t, len(fields), 3, "child said %q", line)
	dev, image, own := fields[0], fields[1], fields[2]
	require.Equal(t, image, loopdev.BackingFile(dev))

	require.NoError(t, cmd.Process.Signal(unix.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws, _ := exit.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == unix.SIGTERM, "child died of SIGTERM: %v", err)
	assert.NotEqual(t, image, loopdev.BackingFile(dev), "loop device detached")
	mounts, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), own)
	assert.NoDirExists(t, own)
	if len(fields) > 3 {
		assert.NoDirExists(t, fields[3])
	}
	_, err = ReadLog(filepath.Join(dir, "log"))
	assert.NoError(t, err)
}

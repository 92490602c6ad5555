package hwbench

// A named block device is checked down its whole stack (safety_stack.go):
// each case is a loop device of the tests' own over images of their own,
// named with the strongest flags, refused, and the data below it left
// exactly as it was (sha256, size, mode, times).

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
)

// attachLoopWith attaches a loop device over path with opt and detaches
// it at the end of the test.
func attachLoopWith(t *testing.T, path string, opt loopdev.Options) string {
	t.Helper()
	dev, err := loopdev.Attach(path, opt)
	if err != nil {
		t.Skipf("attach a loop device to %s: %v", path, err)
	}
	t.Cleanup(func() {
		_, err := loopdev.Detach(dev, path)
		assert.NoError(t, err)
	})
	return dev
}

// helloFile writes a file "hello" on the file system mounted on mnt and
// syncs it, so that its image changes only when written to.
func helloFile(t *testing.T, mnt string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "hello"), []byte("hello\n"), 0o644))
	d, err := os.Open(mnt)
	require.NoError(t, err)
	require.NoError(t, unix.Syncfs(int(d.Fd())))
	require.NoError(t, d.Close())
}

// mbrImage writes an image of size bytes with one Linux partition from
// sector 2048 to the end, and returns the partition's byte offset.
func mbrImage(t *testing.T, path string, size int64) uint64 {
	t.Helper()
	img := make([]byte, 512)
	entry := img[446:462]
	entry[4] = 0x83
	putLE32 := func(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	putLE32(entry[8:], 2048)
	putLE32(entry[12:], uint32(size/512-2048))
	img[510], img[511] = 0x55, 0xaa
	require.NoError(t, os.WriteFile(path, img, 0o600))
	require.NoError(t, os.Truncate(path, size))
	return 2048 * 512
}

// TestRefuseLoopOverPartitionedImage: an image with a partition table
// whose partition 1 is formatted and mounted through a second loop device
// at the partition's offset. A loop device over the whole image, named
// with -destructive, used to be accepted and the mounted ext4 destroyed.
func TestRefuseLoopOverPartitionedImage(t *testing.T) {
	requireRoot(t, "loop devices and mounts")
	img := filepath.Join(t.TempDir(), "disk.img")
	const size = 64 << 20
	off := mbrImage(t, img, size)
	part := attachLoopWith(t, img, loopdev.Options{Offset: off, SizeLimit: size - off})
	testMkfsExt4(t, part)
	mnt := mountFS(t, part, "ext4", "")
	helloFile(t, mnt)
	whole := attachLoopWith(t, img, loopdev.Options{})

	before := stateOf(t, img, true)
	for _, destructive := range []bool{false, true} {
		err := openOrRefuse(t, TargetOptions{Path: whole, Region: 16 << 20, Destructive: destructive, OverwriteReadOnly: true})
		assertRefused(t, err, whole+" is in use", img+", the backing file of "+whole+", is in use",
			"it backs the loop device "+part+" from byte 1048576, 66060288 bytes", part+" is mounted on "+mnt, "-destructive or not")
	}
	assertUnchanged(t, img, before, true)
	got, err := os.ReadFile(filepath.Join(mnt, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
}

// TestRefuseLoopOverMountedLoop: a loop device whose backing file is the
// node of another loop device, which is mounted.
func TestRefuseLoopOverMountedLoop(t *testing.T) {
	requireRoot(t, "loop devices and mounts")
	img := ext4Image(t, t.TempDir(), 32<<20)
	lower := attachLoop(t, img)
	mnt := mountFS(t, lower, "ext4", "")
	helloFile(t, mnt)
	upper := attachLoopWith(t, lower, loopdev.Options{})

	before := stateOf(t, img, true)
	for _, destructive := range []bool{false, true} {
		err := openOrRefuse(t, TargetOptions{Path: upper, Region: 16 << 20, Destructive: destructive, OverwriteReadOnly: true})
		assertRefused(t, err, upper+" is in use", "below it, the backing device of "+upper+": "+lower+" is mounted on "+mnt, "-destructive or not")
	}
	assertUnchanged(t, img, before, true)

	// The lower device named itself: another loop device is built on it.
	err := openOrRefuse(t, TargetOptions{Path: lower, Region: 16 << 20, Destructive: true})
	assertRefused(t, err, lower+" backs the loop device "+upper, lower+" is mounted on "+mnt)
	assertUnchanged(t, img, before, true)
}

// randomFile writes size random bytes (no signature a prober knows) to a
// new file in dir.
func randomFile(t *testing.T, dir string, size int) string {
	t.Helper()
	data := make([]byte, size)
	_, err := rand.Read(data)
	require.NoError(t, err)
	data[510], data[511] = 0, 0 // not even by chance a boot sector
	path := filepath.Join(dir, "random.img")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// TestRefuseLoopOverFileOpenForWriting: a loop device over a file another
// process holds open for writing was accepted with no flag at all, while
// the file named itself is refused even with -destructive.
func TestRefuseLoopOverFileOpenForWriting(t *testing.T) {
	requireRoot(t, "loop devices")
	img := randomFile(t, t.TempDir(), 16<<20)
	holder := holdOpen(t, img, ">>")
	dev := attachLoop(t, img)

	before := stateOf(t, img, true)
	for _, destructive := range []bool{false, true} {
		err := openOrRefuse(t, TargetOptions{Path: dev, Region: 16 << 20, Destructive: destructive, OverwriteReadOnly: true})
		assertRefused(t, err, img+", the backing file of "+dev+", is in use", "it is open for writing by process", "-destructive or not")
		assert.Contains(t, err.Error(), "process "+itoa(holder.Process.Pid))
	}
	assertUnchanged(t, img, before, true)
}

// TestRefuseNonEmptyBlockDevice: a block device with data but no
// signature needs -destructive, as a non-empty file does; an all-zero one
// does not.
func TestRefuseNonEmptyBlockDevice(t *testing.T) {
	requireRoot(t, "loop devices")
	img := randomFile(t, t.TempDir(), 16<<20)
	dev := attachLoop(t, img)
	before := stateOf(t, img, true)
	err := openOrRefuse(t, TargetOptions{Path: dev, Region: 16 << 20})
	assertRefused(t, err, dev+" holds data in the region the benchmark would overwrite", "first non-zero byte is at 0", "-destructive")
	assertUnchanged(t, img, before, true)

	tg, err := OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: true})
	require.NoError(t, err)
	assert.Contains(t, tg.Notes, "-destructive: "+dev+" held data in its first 16 MiB (from byte 0), overwritten")
	require.NoError(t, tg.Close())

	// Data only past the region is not overwritten, and is no reason.
	zeros := filepath.Join(t.TempDir(), "zeros.img")
	require.NoError(t, os.WriteFile(zeros, nil, 0o600))
	require.NoError(t, os.Truncate(zeros, 32<<20))
	f, err := os.OpenFile(zeros, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("data past the region"), 20<<20)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	dev2 := attachLoop(t, zeros)
	tg, err = OpenTarget(TargetOptions{Path: dev2, Region: 16 << 20})
	require.NoError(t, err)
	require.NoError(t, tg.Close())
}

// TestRefuseBlockDeviceOpenForWriting: another process writing to the
// named device without claiming it exclusively (as dd does).
func TestRefuseBlockDeviceOpenForWriting(t *testing.T) {
	dev, backing := testLoop(t, 16<<20)
	holder := holdOpen(t, dev, ">>")
	before := stateOf(t, backing, true)
	err := openOrRefuse(t, TargetOptions{Path: dev, Region: 16 << 20, Destructive: true})
	assertRefused(t, err, dev+" is open for writing by process "+itoa(holder.Process.Pid))
	assertUnchanged(t, backing, before, true)
}

// TestRefuseTrailingSlash: FILE/ names a directory; it never means FILE,
// and is not created.
func TestRefuseTrailingSlash(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data.bin")
	require.NoError(t, os.WriteFile(file, []byte("precious"), 0o600))
	before := stateOf(t, file, true)
	for _, p := range []string{file + "/", file + "//", file + "/.", filepath.Join(dir, "new.bin") + "/"} {
		err := openOrRefuse(t, TargetOptions{Path: p, Destructive: true, OverwriteReadOnly: true})
		assertRefused(t, err, "-device="+p+" names a directory", "without the trailing slash")
	}
	assertUnchanged(t, file, before, true)
	_, err := os.Stat(filepath.Join(dir, "new.bin"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestResolveStackSysfs walks a sysfs tree made here: a device-mapper
// device over a partition of a disk and over a second disk. Partitions
// and device-mapper devices cannot be made on this machine (no partition
// scanning of loop devices, no device mapper), so the walk is checked on
// the tree the kernel would show (Documentation/ABI/stable/sysfs-block:
// holders/, slaves/, partition, dev). Device numbers of major 240 (local
// use, Documentation/admin-guide/devices.txt) match nothing real.
func TestResolveStackSysfs(t *testing.T) {
	root := t.TempDir()
	mk := func(dir, devno string, files ...string) string {
		d := filepath.Join(root, dir)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "holders"), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(d, "slaves"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "dev"), []byte(devno+"\n"), 0o644))
		for _, f := range files {
			require.NoError(t, os.WriteFile(filepath.Join(d, f), []byte("1\n"), 0o644))
		}
		return d
	}
	disk := mk("devices/block/fdz", "240:0")
	part := mk("devices/block/fdz/fdz1", "240:1", "partition")
	other := mk("devices/block/fdy", "240:16")
	dm := mk("devices/virtual/block/dm-9", "240:32")
	for _, s := range []string{part, other} {
		require.NoError(t, os.Symlink(s, filepath.Join(dm, "slaves", filepath.Base(s))))
		require.NoError(t, os.Symlink(dm, filepath.Join(s, "holders", "dm-9")))
	}

	top, err := blockDevAt(dm)
	require.NoError(t, err)
	layers, err := resolveStack(top)
	require.NoError(t, err)
	var got []string
	for _, l := range layers {
		got = append(got, l.name())
	}
	assert.Equal(t, []string{
		"/dev/dm-9",
		"/dev/fdy, a component of /dev/dm-9,",
		"/dev/fdz1, a component of /dev/dm-9,",
		"/dev/fdz, the disk /dev/fdz1 is a partition of,",
	}, got)

	// dm-9 holds its components: that is the walk's own way down, no
	// use. Another holder of a component is.
	u := checkStack(layers, nil)
	assert.Empty(t, u.why, "the holder the walk came down from")
	require.NoError(t, os.Symlink(dm, filepath.Join(part, "holders", "dm-10")))
	u = checkStack(layers, nil)
	assert.Equal(t, []string{"below it, a component of /dev/dm-9: /dev/fdz1 is held by dm-10 (/sys/class/block/fdz1/holders)"}, u.why)
	require.NoError(t, os.Remove(filepath.Join(part, "holders", "dm-10")))

	// A holder of the disk the partition lies on (a device-mapper
	// device over the whole disk) is a use; the disk's other partitions
	// are not looked at, they do not overlap.
	require.NoError(t, os.Symlink(dm, filepath.Join(disk, "holders", "dm-11")))
	u = checkStack(layers, nil)
	assert.Equal(t, []string{"below it, the disk /dev/fdz1 is a partition of: /dev/fdz is held by dm-11 (/sys/class/block/fdz/holders)"}, u.why)
}

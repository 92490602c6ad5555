package hwbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/internal/loopdev"
	"github.com/flushproof/flushproof/internal/mountinfo"
)

// memReader serves FindSignatures from a byte slice.
func memReader(dev []byte) func(p []byte, off int64) error {
	return func(p []byte, off int64) error {
		if off < 0 || off+int64(len(p)) > int64(len(dev)) {
			return errors.New("read past the end")
		}
		copy(p, dev[off:])
		return nil
	}
}

func TestFindSignatures(t *testing.T) {
	const size = 8 << 20
	type magic struct {
		off int64 // negative: from the end
		b   string
	}
	cases := []struct {
		name   string
		magics []magic
		want   []string // names that must be found (others may be too)
	}{
		{"zeros", nil, nil},
		{"ext4", []magic{{1080, "\x53\xef"}}, []string{"ext2/3/4 superblock"}},
		{"XFS", []magic{{0, "XFSB"}}, []string{"XFS superblock"}},
		{"btrfs", []magic{{65600, "_BHRfS_M"}}, []string{"btrfs superblock"}},
		{"swap, 4 KiB pages", []magic{{4086, "SWAPSPACE2"}}, []string{"swap area (SWAPSPACE2)"}},
		{"old swap, 16 KiB pages", []magic{{16374, "SWAP-SPACE"}}, []string{"swap area (SWAP-SPACE)"}},
		{"MBR", []magic{{510, "\x55\xaa"}}, []string{"DOS/MBR partition table or boot sector (0x55AA)"}},
		{"GPT", []magic{{510, "\x55\xaa"}, {512, "EFI PART"}}, []string{"GPT partition table", "DOS/MBR partition table or boot sector (0x55AA)"}},
		{"GPT, 4 KiB sectors", []magic{{4096, "EFI PART"}}, []string{"GPT partition table"}},
		{"GPT backup header only", []magic{{-512, "EFI PART"}}, []string{"GPT backup header"}},
		{"LUKS", []magic{{0, "LUKS\xba\xbe"}}, []string{"LUKS header"}},
		{"vfat (FAT32)", []magic{{82, "FAT32   "}, {510, "\x55\xaa"}}, []string{"FAT32 boot sector"}},
		{"vfat (FAT16)", []magic{{54, "FAT16   "}, {510, "\x55\xaa"}}, []string{"FAT12/16 boot sector"}},
		{"exFAT", []magic{{3, "EXFAT   "}, {510, "\x55\xaa"}}, []string{"exFAT boot sector"}},
		{"NTFS", []magic{{3, "NTFS    "}, {510, "\x55\xaa"}}, []string{"NTFS boot sector"}},
		{"md v1.2", []magic{{4096, "\xfc\x4e\x2b\xa9"}}, []string{"Linux md RAID superblock"}},
		{"md v0.90 (end)", []magic{{size - 65536, "\xfc\x4e\x2b\xa9"}}, []string{"Linux md RAID superblock"}},
		{"LVM2", []magic{{512, "LABELONE"}}, []string{"LVM2 physical volume label"}},
		{"ISO 9660", []magic{{32769, "CD001"}}, []string{"ISO 9660 volume descriptor"}},
		{"LUKS2 secondary header at 4 MiB", []magic{{0x400000, "SKUL\xba\xbe"}}, []string{"LUKS2 secondary header"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dev := make([]byte, size)
			for _, m := range c.magics {
				off := m.off
				if off < 0 {
					off += size
				}
				copy(dev[off:], m.b)
			}
			sigs, err := FindSignatures(memReader(dev), size)
			require.NoError(t, err)
			var names []string
			for _, s := range sigs {
				names = append(names, s.Name)
				assert.Equal(t, "hwbench", s.Source)
			}
			if len(c.want) == 0 {
				assert.Empty(t, names)
			}
			for _, w := range c.want {
				assert.Contains(t, names, w)
			}
		})
	}
}

// What the scenarios write must never look like a file system: a device
// benchmarked once must not be refused (or misnamed) the next time.
func TestBuffersCarryNoSignature(t *testing.T) {
	const size = 8 << 20
	dev := make([]byte, size)
	for off := 0; off < size; off += IOSize {
		copy(dev[off:], pattern(IOSize, off/IOSize))
	}
	sigs, err := FindSignatures(memReader(dev), size)
	require.NoError(t, err)
	assert.Empty(t, sigs)
}

func TestFindSignaturesSmallDevice(t *testing.T) {
	for _, size := range []int64{0, 4096, 64 << 10} {
		sigs, err := FindSignatures(memReader(make([]byte, size)), size)
		require.NoError(t, err, "size %d", size)
		assert.Empty(t, sigs, "size %d", size)
	}
}

func TestUnescapeMount(t *testing.T) {
	assert.Equal(t, "/mnt/my disk", mountinfo.Unescape(`/mnt/my\040disk`))
	assert.Equal(t, "/plain", mountinfo.Unescape("/plain"))
	assert.Equal(t, `/odd\`, mountinfo.Unescape(`/odd\`))
}

// attachLoop attaches a loop device with direct I/O to path (as
// -device=loop does) and detaches it at the end of the test (also on
// failure). It skips where loop devices cannot be had (not root, no loop
// driver).
func attachLoop(t *testing.T, path string) string {
	t.Helper()
	dev, err := loopdev.Attach(path, loopdev.Options{DirectIO: true})
	if errors.Is(err, loopdev.ErrUnavailable) {
		t.Skipf("no loop device: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := loopdev.Detach(dev, path)
		assert.NoError(t, err)
	})
	return dev
}

// testLoop attaches a loop device over a sparse file of size bytes of the
// test's own, and detaches it at the end of the test (also on failure).
// It skips where loop devices cannot be had (not root, no loop driver).
func testLoop(t *testing.T, size int64) (dev, backing string) {
	t.Helper()
	backing = filepath.Join(t.TempDir(), "backing.img")
	require.NoError(t, os.WriteFile(backing, nil, 0o600))
	require.NoError(t, os.Truncate(backing, size))
	return attachLoop(t, backing), backing
}

// testMkfsExt4 puts an ext4 file system on dev, a loop device of the
// test's own.
func testMkfsExt4(t *testing.T, dev string) {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skipf("mkfs.ext4 not installed: %v", err)
	}
	// Inode tables and journal are written now, not by ext4's lazyinit
	// thread once mounted: that thread writes zeros over zeros, so the
	// image's content stays but its mtime moves under a test that checks
	// nothing was written below a mounted file system.
	out, err := exec.Command(mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev).CombinedOutput()
	require.NoError(t, err, "mkfs.ext4 %s: %s", dev, out)
}

// ext4Magic reads the ext2/3/4 magic of dev's first superblock.
func ext4Magic(t *testing.T, dev string) []byte {
	t.Helper()
	f, err := os.Open(dev)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 2)
	_, err = f.ReadAt(b, 1080)
	require.NoError(t, err)
	return b
}

func TestRefuseFormattedLoopDevice(t *testing.T) {
	dev, _ := testLoop(t, 64<<20)
	testMkfsExt4(t, dev)
	before, err := os.ReadFile(dev)
	require.NoError(t, err)
	const region = 16 << 20

	_, err = OpenTarget(TargetOptions{Path: dev, Region: region})
	require.ErrorIs(t, err, ErrRefused)
	msg := err.Error()
	t.Logf("refusal: %v", err)
	for _, want := range []string{dev, "ext2/3/4 superblock", "-destructive", "would overwrite"} {
		assert.Contains(t, msg, want)
	}
	if _, err := exec.LookPath("blkid"); err == nil {
		assert.Contains(t, msg, "TYPE=ext4", "blkid -p's second opinion")
	}
	after, err := os.ReadFile(dev)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(before, after), "a refused device is not written")
	assert.Equal(t, []byte{0x53, 0xef}, ext4Magic(t, dev))

	// -destructive: the unmounted, formatted device may be used.
	tg, err := OpenTarget(TargetOptions{Path: dev, Region: region, Destructive: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	assert.Equal(t, "block device", tg.Kind)
	assert.Contains(t, strings.Join(tg.Notes, " "), "ext2/3/4 superblock", "the note says what -destructive overwrote")
	rep, err := Run(context.Background(), tg, Config{Duration: 60 * time.Millisecond, Span: region, Scenarios: []string{"S3"}})
	require.NoError(t, err)
	require.Len(t, rep.Comparisons, 1)
	assert.Positive(t, rep.Comparisons[0].Optimised.Ops)
	require.NoError(t, tg.Close())
}

func TestRefuseMountedLoopDevice(t *testing.T) {
	dev, _ := testLoop(t, 64<<20)
	testMkfsExt4(t, dev)
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Skipf("cannot mount ext4 on %s: %v", mnt, err)
	}
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(mnt, 0), "unmount %s", mnt) })

	for _, destructive := range []bool{false, true} {
		_, err := OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: destructive})
		require.ErrorIs(t, err, ErrRefused, "destructive %v", destructive)
		t.Logf("destructive %v: %v", destructive, err)
		assert.Contains(t, err.Error(), dev+" is mounted on "+mnt)
		assert.Contains(t, err.Error(), "-destructive or not")
	}
	assert.Equal(t, []byte{0x53, 0xef}, ext4Magic(t, dev))
}

func TestRefuseTooSmallLoopDevice(t *testing.T) {
	dev, _ := testLoop(t, 4<<20)
	for _, destructive := range []bool{false, true} {
		_, err := OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: destructive})
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), "has 4194304 bytes")
		assert.Contains(t, err.Error(), "16 MiB")
	}
	// The same device is fine for a region that fits, and carries nothing.
	tg, err := OpenTarget(TargetOptions{Path: dev, Region: 4 << 20})
	require.NoError(t, err)
	assert.EqualValues(t, 4<<20, tg.Size)
	require.NoError(t, tg.Close())
}

func TestRefuseBusyLoopDevice(t *testing.T) {
	dev, _ := testLoop(t, 16<<20)
	// Another exclusive opener (as a mount would be) holds the device.
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	_, err = OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: true})
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "in use")
}

// TestLoopTargetCleanup checks that -device=loop leaves nothing behind:
// the backing file is gone while the device is in use, and the device is
// detached once closed.
func TestLoopTargetCleanup(t *testing.T) {
	dir := t.TempDir()
	tg, err := OpenTarget(TargetOptions{Path: "loop", Region: 16 << 20, LoopSize: 64 << 20, TempDir: dir})
	if errors.Is(err, ErrLoopUnavailable) {
		t.Skipf("no loop device: %v", err)
	}
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = tg.Close()
		}
	})
	assert.Equal(t, "loop device", tg.Kind)
	assert.EqualValues(t, 64<<20, tg.Size)
	assert.Contains(t, tg.String(), "direct I/O")
	sysBacking := filepath.Join("/sys/block", filepath.Base(tg.Path), "loop", "backing_file")
	bf, err := os.ReadFile(sysBacking)
	require.NoError(t, err)
	assert.Equal(t, tg.Backing+" (deleted)", strings.TrimSpace(string(bf)), "the backing file is unlinked once attached")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing left in %s while the device is open", dir)

	require.NoError(t, tg.Close())
	closed = true
	if bf, err := os.ReadFile(sysBacking); err == nil {
		assert.NotContains(t, string(bf), tg.Backing, "%s still attached after Close", tg.Path)
	}
}

func TestNamedFileRules(t *testing.T) {
	dir := t.TempDir()
	const region = 1 << 20

	t.Run("missing: created and removed", func(t *testing.T) {
		path := filepath.Join(dir, "new.dev")
		tg, err := OpenTarget(TargetOptions{Path: path, Region: region})
		require.NoError(t, err)
		assert.Equal(t, "file", tg.Kind)
		assert.EqualValues(t, region, tg.Size)
		require.NoError(t, tg.Close())
		_, err = os.Stat(path)
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("empty: used and emptied again", func(t *testing.T) {
		path := filepath.Join(dir, "empty.dev")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		tg, err := OpenTarget(TargetOptions{Path: path, Region: region})
		require.NoError(t, err)
		assert.EqualValues(t, region, tg.Size)
		require.NoError(t, tg.Close())
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Zero(t, st.Size())
	})
	t.Run("non-empty: refused, then -destructive", func(t *testing.T) {
		path := filepath.Join(dir, "precious.txt")
		require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
		_, err := OpenTarget(TargetOptions{Path: path, Region: region})
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), "non-empty regular file")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "precious", string(got), "a refused file is untouched")

		tg, err := OpenTarget(TargetOptions{Path: path, Region: region, Destructive: true})
		require.NoError(t, err)
		require.NoError(t, tg.Close())
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.EqualValues(t, len("precious"), st.Size(), "cut back to its size")
	})
	t.Run("directory", func(t *testing.T) {
		_, err := OpenTarget(TargetOptions{Path: dir, Region: region})
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), "neither a regular file nor a block device")
	})
	t.Run("bad region", func(t *testing.T) {
		_, err := OpenTarget(TargetOptions{Region: 1000})
		assert.ErrorContains(t, err, "multiple of 1 MiB")
	})
}

func TestRegionGuard(t *testing.T) {
	tg, err := OpenTarget(TargetOptions{Region: 1 << 20})
	require.NoError(t, err)
	defer tg.Close()
	dev := tg.Device()
	buf := make([]byte, IOSize)
	assert.NoError(t, dev.WriteAt(buf, 1<<20-IOSize, 0))
	for _, off := range []int64{1 << 20, 1<<20 - IOSize/2, -IOSize} {
		err := dev.WriteAt(buf, off, 0)
		assert.ErrorIs(t, err, ErrRefused, "offset %d", off)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Scenarios: []string{"S5"}}, "unknown scenario"},
		{Config{Span: 1 << 20, Writers: 512}, "too small"},
		{Config{Span: 1<<20 + 4096}, "multiple of 1 MiB"},
	} {
		assert.ErrorContains(t, c.cfg.withDefaults().validate(512), c.want)
	}
	assert.NoError(t, Config{}.withDefaults().validate(4096))
}

// TestS2Think runs S2 with a pause between each write's completion and its
// flush check (Config.Think). Whether syncs then share flushes depends on
// the device; what must hold is that sharing never flushes more than
// always does.
func TestS2Think(t *testing.T) {
	cfg := Config{Duration: 100 * time.Millisecond, Span: 16 << 20, Writers: 8, Think: 200 * time.Microsecond, Scenarios: []string{"S2"}}
	tg, err := OpenTarget(TargetOptions{Region: cfg.Region()})
	require.NoError(t, err)
	defer tg.Close()
	rep, err := Run(context.Background(), tg, cfg)
	require.NoError(t, err)
	require.Len(t, rep.Comparisons, 6) // 3 policies against always, tight and paused
	for _, c := range rep.Comparisons {
		assert.Equal(t, 1.0, c.Baseline.FlushesPerOp(), c.Name)
		assert.LessOrEqual(t, c.Optimised.FlushesPerOp(), 1.0, c.Name)
		assert.InDelta(t, 1.0, c.Optimised.FlushesPerOp()+c.Optimised.Extra[ExtraSkippedPerSync], 1e-9, c.Name)
	}
	for _, c := range rep.Comparisons[3:] {
		assert.GreaterOrEqual(t, c.Optimised.Extra[ExtraThinkMicros], 200.0, "%s: nanosleep pauses at least as long as asked", c.Name)
		assert.Contains(t, c.Name, "think")
	}
}

func TestRefuseActiveSwapLoopDevice(t *testing.T) {
	dev, _ := testLoop(t, 16<<20)
	mkswap, err1 := exec.LookPath("mkswap")
	swapon, err2 := exec.LookPath("swapon")
	swapoff, err3 := exec.LookPath("swapoff")
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Skipf("swap tools missing: %v", err)
	}
	out, err := exec.Command(mkswap, dev).CombinedOutput()
	require.NoError(t, err, "mkswap %s: %s", dev, out)
	if out, err := exec.Command(swapon, dev).CombinedOutput(); err != nil {
		t.Skipf("swapon %s: %v: %s", dev, err, out)
	}
	t.Cleanup(func() {
		out, err := exec.Command(swapoff, dev).CombinedOutput()
		assert.NoError(t, err, "swapoff %s: %s", dev, out)
	})
	for _, destructive := range []bool{false, true} {
		_, err := OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: destructive})
		require.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), dev+" is an active swap area")
	}
}

// TestRefuseMountedPartition formats and mounts the first partition of a
// loop device (an MBR written here, attached with partition scanning) and
// checks that the whole device is refused. It skips where the kernel does
// not scan loop partitions.
func TestRefuseMountedPartition(t *testing.T) {
	backing := filepath.Join(t.TempDir(), "disk.img")
	const size = 64 << 20
	img := make([]byte, 512)
	// One Linux (0x83) partition from sector 2048, in the first entry of
	// the partition table at byte 446.
	entry := img[446:462]
	entry[4] = 0x83
	putLE32 := func(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	putLE32(entry[8:], 2048)
	putLE32(entry[12:], size/512-2048)
	img[510], img[511] = 0x55, 0xaa
	require.NoError(t, os.WriteFile(backing, img, 0o600))
	require.NoError(t, os.Truncate(backing, size))
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	dev, err := loopdev.Attach(backing, loopdev.Options{PartScan: true})
	if err != nil {
		t.Skipf("attach %s with partition scanning: %v", backing, err)
	}
	t.Cleanup(func() {
		_, err := loopdev.Detach(dev, backing)
		assert.NoError(t, err)
	})
	part := dev + "p1"
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		if st, err := os.Stat(part); err == nil && st.Mode()&os.ModeDevice != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("no partition %s appeared (no partition scanning for loop devices here)", part)
		}
		time.Sleep(20 * time.Millisecond)
	}
	testMkfsExt4(t, part)
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount(part, mnt, "ext4", 0, ""); err != nil {
		t.Skipf("cannot mount %s: %v", part, err)
	}
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(mnt, 0)) })
	_, err = OpenTarget(TargetOptions{Path: dev, Region: 16 << 20, Destructive: true})
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "its partition "+part+" is mounted on "+mnt)
}

// mountinfoFixture is a mount table as the kernel writes it: optional
// fields of varying number, a mount point with an escaped space, a tmpfs
// mounted with a file as its source, devtmpfs, proc and a bind mount.
const mountinfoFixture = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs devtmpfs rw,size=12334416k,mode=755
24 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
25 23 0:23 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
26 22 254:0 /srv/data /mnt/my\040data rw,relatime shared:1 master:4 - ext4 /dev/vda rw
27 22 0:40 / /tmp/x/mnt rw,relatime - tmpfs /tmp/x/image\040one.img rw,size=1024k
28 27 0:41 / /tmp/x/mnt rw,relatime - ramfs ramfs rw
bad line
29 22 0:42 / /broken rw - ext4
`

func TestParseMountinfo(t *testing.T) {
	m := mountinfo.Parse(mountinfoFixture)
	require.Len(t, m, 7, "the two malformed lines are skipped")
	assert.Equal(t, mountinfo.Mount{ID: 22, Major: 254, Minor: 0, MountPoint: "/", FSType: "ext4", Source: "/dev/vda"}, m[0])
	assert.Equal(t, "devtmpfs", m[1].FSType)
	assert.Equal(t, "/mnt/my data", m[4].MountPoint, "octal escapes undone")
	assert.Equal(t, "ext4", m[4].FSType, "two optional fields before the separator")
	assert.Equal(t, "/tmp/x/image one.img", m[5].Source)
	assert.Equal(t, mountinfo.Mount{ID: 28, Major: 0, Minor: 41, MountPoint: "/tmp/x/mnt", FSType: "ramfs", Source: "ramfs"}, m[6])
}

func TestMountOf(t *testing.T) {
	m := mountinfo.Parse(mountinfoFixture)
	cases := []struct {
		path   string
		dev    uint64
		hasDev bool
		want   string // mount point
		fs     string
	}{
		{"/home/u/f", unix.Mkdev(254, 0), true, "/", "ext4"},
		{"/dev/loop0", unix.Mkdev(0, 5), true, "/dev", "devtmpfs"},
		{"/dev/shm/x", unix.Mkdev(0, 23), true, "/dev/shm", "tmpfs"},
		{"/dev/shmx", 0, false, "/dev", "devtmpfs"}, // a prefix of the name is not a parent
		{"/proc/1/status", unix.Mkdev(0, 21), true, "/proc", "proc"},
		{"/mnt/my data/f", unix.Mkdev(254, 0), true, "/mnt/my data", "ext4"},
		// ramfs stacked on the tmpfs at the same mount point hides it.
		{"/tmp/x/mnt/f", 0, false, "/tmp/x/mnt", "ramfs"},
		// The device number picks the hidden one when the file is on it
		// (a descriptor opened before the second mount).
		{"/tmp/x/mnt/f", unix.Mkdev(0, 40), true, "/tmp/x/mnt", "tmpfs"},
		// A device no mount shows (a btrfs subvolume): the deepest mount.
		{"/dev/shm/y", unix.Mkdev(0, 99), true, "/dev/shm", "tmpfs"},
	}
	for _, c := range cases {
		got, ok := mountOf(m, c.path, c.dev, c.hasDev)
		require.True(t, ok, c.path)
		assert.Equal(t, c.want, got.MountPoint, c.path)
		assert.Equal(t, c.fs, got.FSType, c.path)
	}
	_, ok := mountOf(nil, "/x", 0, false)
	assert.False(t, ok)
}

func TestFSInfoClasses(t *testing.T) {
	cases := []struct {
		fs               fsInfo
		pseudo, volatile string
	}{
		{fsInfo{Type: "ext4", Magic: unix.EXT4_SUPER_MAGIC}, "", ""},
		{fsInfo{Type: "proc", Magic: unix.PROC_SUPER_MAGIC}, "proc", ""},
		{fsInfo{Type: "cgroup2"}, "cgroup2", ""},
		{fsInfo{Magic: unix.SYSFS_MAGIC}, "sysfs", ""}, // no mountinfo entry: the magic decides
		{fsInfo{Magic: configfsMagic}, "configfs", ""},
		{fsInfo{Type: "tmpfs", Magic: unix.TMPFS_MAGIC}, "", "tmpfs"},
		{fsInfo{Type: "ramfs", Magic: unix.RAMFS_MAGIC}, "", "ramfs"},
		{fsInfo{Magic: unix.RAMFS_MAGIC}, "", "ramfs"},
		// devtmpfs says TMPFS_MAGIC; only mountinfo tells it apart.
		{fsInfo{Type: "devtmpfs", Magic: unix.TMPFS_MAGIC}, "", ""},
		{fsInfo{Type: "fuse.sshfs", Magic: unix.FUSE_SUPER_MAGIC}, "", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.pseudo, c.fs.pseudo(), "%+v", c.fs)
		assert.Equal(t, c.volatile, c.fs.volatile(), "%+v", c.fs)
	}
}

func TestParseFdinfo(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		writable bool
		ino      uint64
		hasIno   bool
	}{
		{"append, write only", "pos:\t0\nflags:\t0102001\nmnt_id:\t26\nino:\t9981171\n", true, 9981171, true},
		{"read-write", "pos:\t4096\nflags:\t02100002\nmnt_id:\t30\nino:\t12\n", true, 12, true},
		{"read only, O_DIRECT", "pos:\t0\nflags:\t0140000\nmnt_id:\t30\nino:\t12\n", false, 12, true},
		{"O_PATH", "pos:\t0\nflags:\t012000000\nmnt_id:\t30\nino:\t12\n", false, 12, true},
		{"before Linux 5.14: no ino", "pos:\t0\nflags:\t02\nmnt_id:\t30\n", true, 0, false},
		{"eventfd lines after", "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1057\neventfd-count:                0\n", true, 1057, true},
	}
	for _, c := range cases {
		fi, err := parseFdinfo(c.data)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.writable, fi.writable(), c.name)
		assert.Equal(t, c.ino, fi.Ino, c.name)
		assert.Equal(t, c.hasIno, fi.HasIno, c.name)
	}
	for _, bad := range []string{"pos:\t0\n", "flags:\t09\n", "flags:\t02\nino:\tx\n"} {
		_, err := parseFdinfo(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseMaps(t *testing.T) {
	const maps = `55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 1836                       /usr/bin/cat
7f2c4a000000-7f2c4a021000 rw-p 00000000 00:00 0 
7f2c4a1d5000-7f2c4a1f7000 rw-s 00001000 103:02 917511                     /srv/my image.img (deleted)
7ffd2b9a3000-7ffd2b9c4000 rw-p 00000000 00:00 0                          [stack]
7f2c4a300000-7f2c4a301000 r--s 00000000 00:19 77
short line
`
	got := parseMaps(maps)
	assert.Equal(t, []mapping{
		{Major: 0xfe, Minor: 0, Ino: 1836, Path: "/usr/bin/cat"},
		{Major: 0x103, Minor: 2, Ino: 917511, Path: "/srv/my image.img (deleted)"},
		{Major: 0, Minor: 0x19, Ino: 77},
	}, got)

	s := &sameFileCache{id: fileID{Major: 0x103, Minor: 2, Ino: 917511}, path: "/elsewhere"}
	assert.True(t, mapsFile(maps, s), "same device and inode")
	s = &sameFileCache{id: fileID{Major: 0, Minor: 44, Ino: 917511}, path: "/srv/my image.img"}
	assert.True(t, mapsFile(maps, s), "same inode and name, another st_dev (btrfs subvolume)")
	s = &sameFileCache{id: fileID{Major: 0x103, Minor: 2, Ino: 917512}, path: "/srv/my image.img"}
	assert.False(t, mapsFile(maps, s), "another inode")
}

func TestParseSwaps(t *testing.T) {
	const swaps = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
		"/dev/vda2                               partition\t1048572\t\t0\t\t-2\n" +
		"/var/swap\\040file                       file\t\t16380\t\t0\t\t-3\n" +
		"/old/swap\\040(deleted)                  file\t\t16380\t\t0\t\t-4\n"
	got := parseSwaps(swaps)
	assert.Equal(t, []swapArea{
		{Path: "/dev/vda2", Type: "partition"},
		{Path: "/var/swap file", Type: "file"},
		{Path: "/old/swap (deleted)", Type: "file"},
	}, got)
	p, deleted := stripDeleted(got[2].Path)
	assert.Equal(t, "/old/swap", p)
	assert.True(t, deleted)
	_, deleted = stripDeleted(got[1].Path)
	assert.False(t, deleted)
}

func TestListSome(t *testing.T) {
	assert.Equal(t, "a, b", listSome([]string{"b", "a"}))
	assert.Equal(t, "1, 2, 3, 4, 5 and 2 more", listSome([]string{"7", "6", "5", "4", "3", "2", "1"}))
}

func TestRefuseReadOnlyMode(t *testing.T) {
	for _, c := range []struct {
		mode    uint32
		allowed bool
		refused bool
	}{
		{0o444, false, true}, {0o400, false, true}, {0o000, false, true},
		{0o444, true, false}, {0o644, false, false}, {0o200, false, false}, {0o002, false, false},
	} {
		err := refuseReadOnly("/f", unix.S_IFREG|c.mode, c.allowed)
		if c.refused {
			assert.ErrorIs(t, err, ErrRefused, "%#o", c.mode)
			assert.ErrorContains(t, err, "-overwrite-readonly")
			assert.ErrorContains(t, err, fmt.Sprintf("mode %#o", c.mode))
		} else {
			assert.NoError(t, err, "%#o allowed %v", c.mode, c.allowed)
		}
	}
}

// TestFlushFiguresMarked checks that a report of a device keeping nothing
// durable marks its flush figures in the tables and in report.md.
func TestFlushFiguresMarked(t *testing.T) {
	h := NewLatencyHistogram()
	require.NoError(t, h.RecordValues(20_000, 100))
	base := Result{Scenario: "S2", Group: "tight", Variant: "always", Role: "baseline", Tool: "hwbench", Threads: 4,
		Ops: 100, Duration: time.Second, Writes: 100, Flushes: 100, Latency: h}
	opt := base
	opt.Variant, opt.Role, opt.Flushes = "join", "optimised", 40
	plain := Result{Scenario: "S3", Group: "8 writers", Variant: "serialised", Role: "baseline", Tool: "hwbench", Threads: 8,
		Ops: 100, Duration: time.Second, Writes: 100, Latency: h}
	plainOpt := plain
	plainOpt.Variant, plainOpt.Role = "parallel", "optimised"
	rep := Report{
		Device:       "/mnt/t/f (file on tmpfs; 1 MiB; NOT DURABLE: on tmpfs)",
		Results:      []Result{base, opt, plain, plainOpt},
		Comparisons:  []Comparison{{Scenario: "S2", Name: "join vs always", Baseline: base, Optimised: opt}, {Scenario: "S3", Name: "parallel", Baseline: plain, Optimised: plainOpt}},
		FlushFigures: "meaningless on tmpfs",
	}
	var b strings.Builder
	require.NoError(t, WriteTables(&b, rep))
	tables := b.String()
	assert.Contains(t, tables, "NOT DURABLE")
	assert.Equal(t, 1, strings.Count(tables, "flushes: meaningless on tmpfs"), "marked under the S2 table only, S3 flushes nothing:\n%s", tables)

	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, rep))
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "- Flush figures: meaningless on tmpfs")
	assert.Contains(t, string(md), "| flushes/op (meaningless on tmpfs) |")

	rep.FlushFigures = ""
	b.Reset()
	require.NoError(t, WriteTables(&b, rep))
	assert.NotContains(t, b.String(), "flushes: ")
}

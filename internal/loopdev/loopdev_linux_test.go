//go:build linux

package loopdev

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseBackingFile(t *testing.T) {
	for _, c := range []struct {
		text    string
		path    string
		deleted bool
	}{
		{"/tmp/a.img\n", "/tmp/a.img", false},
		{"/tmp/a.img (deleted)\n", "/tmp/a.img", true},
		{"/tmp/with space (deleted) x\n", "/tmp/with space (deleted) x", false},
		{"/tmp/no-newline", "/tmp/no-newline", false},
	} {
		p, d := parseBackingFile(c.text)
		assert.Equal(t, c.path, p, "%q", c.text)
		assert.Equal(t, c.deleted, d, "%q", c.text)
	}
}

func TestLoopName(t *testing.T) {
	for _, c := range []struct {
		dev  string
		name string
		ok   bool
	}{
		{"/dev/loop7", "loop7", true},
		{"loop12", "loop12", true},
		{"/dev/loop", "", false},
		{"/dev/loop-control", "", false},
		{"/dev/loop0p1", "", false},
		{"/dev/sda", "", false},
	} {
		name, ok := loopName(c.dev)
		assert.Equal(t, c.name, name, c.dev)
		assert.Equal(t, c.ok, ok, c.dev)
	}
}

// Nothing that is not a loop device is read or detached.
func TestNotALoopDevice(t *testing.T) {
	asked, err := Detach("/dev/sda", "/x")
	assert.ErrorContains(t, err, "not a loop device")
	assert.False(t, asked)
	assert.Empty(t, BackingFile("/dev/sda"))
	assert.Equal(t, "unknown", DirectIO("/dev/sda"))
	_, err = BackingID("/dev/sda")
	assert.ErrorContains(t, err, "not a loop device")
}

func TestUnavailableWithoutRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root loop devices are available; this checks the error an unprivileged user gets")
	}
	if _, err := os.Stat(controlPath); err != nil {
		t.Skipf("no %s here: %v", controlPath, err)
	}
	file := filepath.Join(t.TempDir(), "img")
	require.NoError(t, os.WriteFile(file, make([]byte, 1<<20), 0o600))
	dev, err := Attach(file, Options{})
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorContains(t, err, file)
	assert.Empty(t, dev)
}

// needLoop skips unless this process may attach loop devices.
func needLoop(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("attaching a loop device needs root")
	}
	if _, err := os.Stat(controlPath); err != nil {
		t.Skipf("no loop devices here: %v", err)
	}
}

// attach attaches a loop device to a fresh 1 MiB file and detaches it at
// the end of the test.
func attach(t *testing.T, opt Options) (dev, file string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "backing.img")
	require.NoError(t, os.WriteFile(file, make([]byte, 1<<20), 0o600))
	dev, err := Attach(file, opt)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := Detach(dev, file)
		assert.NoError(t, err)
		waitDetached(t, dev, file)
	})
	return dev, file
}

// waitDetached waits up to two seconds for dev to let go of file (udev
// may hold it open for a moment after a change).
func waitDetached(t *testing.T, dev, file string) {
	t.Helper()
	assert.Eventually(t, func() bool { return BackingFile(dev) != file }, 2*time.Second, 5*time.Millisecond,
		"%s still attached to %s", dev, file)
}

// directIOWorks reports whether files in dir take O_DIRECT.
func directIOWorks(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.CreateTemp(dir, "odirect")
	require.NoError(t, err)
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func TestAttachDetach(t *testing.T) {
	needLoop(t)
	for _, c := range []struct {
		name string
		opt  Options
	}{
		{"buffered", Options{}},
		{"direct I/O", Options{DirectIO: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev, file := attach(t, c.opt)
			assert.Regexp(t, `^/dev/loop[0-9]+$`, dev)
			assert.Equal(t, file, BackingFile(dev))
			assert.Contains(t, List(), Loop{Dev: dev, Name: filepath.Base(dev), Backing: file})

			want := "0"
			if c.opt.DirectIO && directIOWorks(t, filepath.Dir(file)) {
				want = "1"
			}
			assert.Equal(t, want, DirectIO(dev))

			var st unix.Stat_t
			require.NoError(t, unix.Stat(file, &st))
			id, err := BackingID(dev)
			require.NoError(t, err)
			assert.Equal(t, FileID{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), Ino: st.Ino}, id)

			// Writable through the device, and the file sees it.
			f, err := os.OpenFile(dev, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("loopdev!"), 4096)
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			got := make([]byte, 8)
			b, err := os.Open(file)
			require.NoError(t, err)
			_, err = b.ReadAt(got, 4096)
			b.Close()
			require.NoError(t, err)
			assert.Equal(t, "loopdev!", string(got))

			// Another file's name leaves the device alone.
			asked, err := Detach(dev, file+".other")
			require.NoError(t, err)
			assert.False(t, asked)
			assert.Equal(t, file, BackingFile(dev))

			asked, err = Detach(dev, file)
			require.NoError(t, err)
			assert.True(t, asked)
			waitDetached(t, dev, file)
			assert.NotContains(t, List(), Loop{Dev: dev, Name: filepath.Base(dev), Backing: file})

			// Detached: a second Detach asks nothing.
			asked, err = Detach(dev, file)
			require.NoError(t, err)
			assert.False(t, asked)
		})
	}
}

// A device still open is detached at its last close, and an unlinked
// backing file is still named (without sysfs's " (deleted)").
func TestDetachWhileOpen(t *testing.T) {
	needLoop(t)
	dev, file := attach(t, Options{})
	f, err := os.Open(dev)
	require.NoError(t, err)
	require.NoError(t, os.Remove(file))
	assert.Contains(t, List(), Loop{Dev: dev, Name: filepath.Base(dev), Backing: file, Deleted: true})

	asked, err := Detach(dev, file)
	require.NoError(t, err)
	assert.True(t, asked)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, file, BackingFile(dev), "detached while still open")
	require.NoError(t, f.Close())
	waitDetached(t, dev, file)
}

// Attaching from many goroutines at once gives each its own device: a
// device taken by another between LOOP_CTL_GET_FREE and LOOP_CONFIGURE
// is asked for again, never shared.
func TestAttachConcurrently(t *testing.T) {
	needLoop(t)
	const n = 4
	type got struct {
		dev, file string
		err       error
	}
	res := make(chan got, n)
	dir := t.TempDir()
	for i := range n {
		file := filepath.Join(dir, "img"+string(rune('a'+i)))
		require.NoError(t, os.WriteFile(file, make([]byte, 1<<20), 0o600))
		go func() {
			dev, err := Attach(file, Options{})
			res <- got{dev, file, err}
		}()
	}
	devs := map[string]bool{}
	for range n {
		g := <-res
		if !assert.NoError(t, g.err) {
			continue
		}
		t.Cleanup(func() {
			_, err := Detach(g.dev, g.file)
			assert.NoError(t, err)
			waitDetached(t, g.dev, g.file)
		})
		assert.False(t, devs[g.dev], "%s given twice", g.dev)
		devs[g.dev] = true
		assert.Equal(t, g.file, BackingFile(g.dev))
	}
}

func TestAttachMissingFile(t *testing.T) {
	needLoop(t)
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := Attach(missing, Options{})
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, missing)
	assert.False(t, errors.Is(err, ErrUnavailable))
}

// With PartScan the kernel makes a device of each partition of an MBR
// partition table in the file.
func TestAttachPartScan(t *testing.T) {
	needLoop(t)
	const size = 4 << 20
	img := make([]byte, size)
	entry := img[446:462]
	entry[4] = 0x83                                 // Linux
	binary.LittleEndian.PutUint32(entry[8:], 2048)  // first sector
	binary.LittleEndian.PutUint32(entry[12:], 4096) // sectors
	img[510], img[511] = 0x55, 0xaa
	file := filepath.Join(t.TempDir(), "parted.img")
	require.NoError(t, os.WriteFile(file, img, 0o600))
	dev, err := Attach(file, Options{PartScan: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := Detach(dev, file)
		assert.NoError(t, err)
		waitDetached(t, dev, file)
	})
	flag, err := os.ReadFile(filepath.Join(sysfs, filepath.Base(dev), "loop", "partscan"))
	require.NoError(t, err)
	assert.Equal(t, "1", strings.TrimSpace(string(flag)), "LO_FLAGS_PARTSCAN set")
	part := filepath.Join(sysfs, filepath.Base(dev), filepath.Base(dev)+"p1", "size")
	deadline := time.Now().Add(time.Second)
	for {
		b, err := os.ReadFile(part)
		if err == nil {
			assert.Equal(t, "4096", strings.TrimSpace(string(b)), "partition 1's sectors")
			return
		}
		if time.Now().After(deadline) {
			// Not every kernel scans loop partitions (on the machine this
			// was written on, losetup --partscan made none either).
			t.Skipf("no partition %s appeared (the kernel scans no loop partitions here)", part)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A device attached through a symbolic link and by a relative name is
// detached by the name it was attached by.
func TestDetachByLinkAndRelativeName(t *testing.T) {
	needLoop(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))
	file := filepath.Join(real, "img")
	require.NoError(t, os.WriteFile(file, make([]byte, 1<<20), 0o600))
	t.Chdir(dir)
	for _, name := range []string{filepath.Join(dir, "link", "img"), filepath.Join("link", "img"), filepath.Join("real", "img")} {
		dev, err := Attach(name, Options{})
		require.NoError(t, err, name)
		assert.Equal(t, file, BackingFile(dev), "sysfs names the file without links")
		asked, err := Detach(dev, name)
		assert.NoError(t, err, name)
		assert.True(t, asked, name)
		if !asked {
			_, _ = Detach(dev, file)
		}
		waitDetached(t, dev, file)
	}
}

// TestWindow: a device attached at an offset, for a length, shows that
// part of its file: Window reads it back, the device's size is the
// length, and its first byte is the file's byte at the offset. The
// backing file's identity (BackingID) is the file's, with no Rdev.
func TestWindow(t *testing.T) {
	needLoop(t)
	dev, file := attach(t, Options{Offset: 4096, SizeLimit: 512 << 10})
	off, limit, ok := Window(dev)
	require.True(t, ok)
	assert.EqualValues(t, 4096, off)
	assert.EqualValues(t, 512<<10, limit)

	whole, _ := attach(t, Options{})
	off, limit, ok = Window(whole)
	require.True(t, ok)
	assert.Zero(t, off)
	assert.Zero(t, limit)
	_, _, ok = Window("/dev/sda")
	assert.False(t, ok, "not a loop device")

	var st unix.Stat_t
	require.NoError(t, unix.Stat(file, &st))
	id, err := BackingID(dev)
	require.NoError(t, err)
	assert.Equal(t, FileID{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), Ino: st.Ino}, id)

	// A loop device over that loop device's node: its backing is a block
	// device, named by Rdev.
	upper, err := Attach(dev, Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := Detach(upper, dev)
		assert.NoError(t, err)
		waitDetached(t, upper, dev)
	})
	var dst unix.Stat_t
	require.NoError(t, unix.Stat(dev, &dst))
	id, err = BackingID(upper)
	require.NoError(t, err)
	assert.Equal(t, dst.Rdev, id.Rdev)
}

package hwbench

// The refusals of named targets (safety.go) on real files, loop devices
// and mounts of the tests' own. Each refusal is checked twice: the error
// (ErrRefused, and the words that say why and what flag would allow it),
// and the target itself (sha256 of its content, size and mode unchanged).
// Tests that need loop devices or mounts skip, saying why, unless root.

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperEnv asks the test binary, re-executed by holdMapped, to map a file
// and wait instead of running the tests.
const helperEnv = "HWBENCH_TEST_HELPER"

// runHelperProcess runs the helper TestMain was asked for, if any:
// "mmap:PATH" maps PATH shared and read-only, closes its descriptor (so
// only the mapping holds the file), prints "mapped" and waits for its
// stdin to close.
func runHelperProcess() (code int, ok bool) {
	v := os.Getenv(helperEnv)
	if v == "" {
		return 0, false
	}
	path, found := strings.CutPrefix(v, "mmap:")
	if !found {
		fmt.Fprintf(os.Stderr, "%s: unknown helper %q\n", helperEnv, v)
		return 2, true
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	st, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	_ = f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mmap %s: %v\n", path, err)
		return 1, true
	}
	fmt.Println("mapped")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = unix.Munmap(mem)
	return 0, true
}

// fileState is what a refused target must keep.
type fileState struct {
	exists bool
	sum    [32]byte // of the content, for a regular file whose content is stable
	size   int64
	mode   os.FileMode
	// The modification and change times, for a regular file whose
	// content is stable and not under /proc (whose inodes take the time
	// they are made): a file grown and cut back before a refusal keeps
	// its content and size, but not these.
	mtime, ctime unix.Timespec
}

// stateOf records path's state; content says whether to checksum it.
func stateOf(t *testing.T, path string, content bool) fileState {
	t.Helper()
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return fileState{}
	}
	require.NoError(t, err, "stat %s", path)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	s := fileState{exists: true, size: fi.Size(), mode: fi.Mode()}
	if content && fi.Mode().IsRegular() {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		s.sum = sha256.Sum256(data)
		if !strings.HasPrefix(path, "/proc/") {
			s.mtime, s.ctime = st.Mtim, st.Ctim
		}
	}
	return s
}

// assertUnchanged checks that path is as before.
func assertUnchanged(t *testing.T, path string, before fileState, content bool) {
	t.Helper()
	after := stateOf(t, path, content)
	assert.Equal(t, before.exists, after.exists, "%s exists as before", path)
	assert.Equal(t, before.size, after.size, "%s: size unchanged", path)
	assert.Equal(t, before.mode, after.mode, "%s: mode unchanged", path)
	assert.Equal(t, fmt.Sprintf("%x", before.sum), fmt.Sprintf("%x", after.sum), "%s: sha256 of the content unchanged", path)
	assert.Equal(t, before.mtime, after.mtime, "%s: not written (mtime unchanged)", path)
	assert.Equal(t, before.ctime, after.ctime, "%s: not truncated or changed (ctime unchanged)", path)
}

// assertRefused checks that err is a refusal whose message holds words.
func assertRefused(t *testing.T, err error, words ...string) {
	t.Helper()
	require.ErrorIs(t, err, ErrRefused)
	t.Logf("refusal: %v", err)
	for _, w := range words {
		assert.Contains(t, err.Error(), w)
	}
}

// openOrRefuse opens path with the strongest flags (Destructive and
// OverwriteReadOnly unless told otherwise); a target that opens is closed.
func openOrRefuse(t *testing.T, opt TargetOptions) error {
	t.Helper()
	if opt.Region == 0 {
		opt.Region = 1 << 20
	}
	tg, err := OpenTarget(opt)
	if err == nil {
		assert.NoError(t, tg.Close())
	}
	return err
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root (%s); running as uid %d", why, os.Geteuid())
	}
}

// tool finds a program in PATH or the sbin directories (not in a normal
// user's PATH), and skips the test without it.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	t.Skipf("%s is not installed", name)
	return ""
}

// ext4Image makes an ext4 image file of size bytes in dir. The inode
// tables and journal are written at mkfs time, so that a mounted image
// only changes when written to (no lazy initialisation in the background).
func ext4Image(t *testing.T, dir string, size int64) string {
	t.Helper()
	mkfs := tool(t, "mkfs.ext4")
	img := filepath.Join(dir, "ext4.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, size))
	out, err := exec.Command(mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", img).CombinedOutput()
	require.NoError(t, err, "mkfs.ext4 %s: %s", img, out)
	return img
}

// mountFS mounts a file system of the test's own on a new directory and
// unmounts it at the end of the test.
func mountFS(t *testing.T, source, fstype, data string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount(source, mnt, fstype, 0, data); err != nil {
		t.Skipf("mount -t %s %s %s: %v", fstype, source, mnt, err)
	}
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(mnt, 0), "unmount %s", mnt) })
	return mnt
}

// startHolder starts cmd, waits for it to print want, and kills it at the
// end of the test.
func startHolder(t *testing.T, cmd *exec.Cmd, want string) *exec.Cmd {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		require.Equal(t, want, l, "the holder process is ready")
	case <-time.After(10 * time.Second):
		t.Fatalf("the holder process did not print %q within 10s", want)
	}
	return cmd
}

// holdOpen starts a shell that opens path on descriptor 3 with redirect
// (">>" to write, "<" to read) and waits.
func holdOpen(t *testing.T, path, redirect string) *exec.Cmd {
	t.Helper()
	sh := tool(t, "sh")
	return startHolder(t, exec.Command(sh, "-c", `exec 3`+redirect+`"$1" && echo ready && exec sleep 60`, "sh", path), "ready")
}

// holdMapped re-executes the test binary to map path (runHelperProcess).
func holdMapped(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=mmap:"+path)
	return startHolder(t, cmd, "mapped")
}

// TestRefuseMountedImageFile is the case of the issue: an ext4 image file,
// attached to a loop device and mounted, a file written on it. Naming the
// image is refused, -destructive or not, and the image is left as it was.
func TestRefuseMountedImageFile(t *testing.T) {
	requireRoot(t, "loop devices and mounts")
	img := ext4Image(t, t.TempDir(), 32<<20)
	dev := attachLoop(t, img)
	mnt := mountFS(t, dev, "ext4", "")
	helloFile(t, mnt)

	before := stateOf(t, img, true)
	for _, destructive := range []bool{false, true} {
		err := openOrRefuse(t, TargetOptions{Path: img, Region: 16 << 20, Destructive: destructive, OverwriteReadOnly: true})
		assertRefused(t, err, img+" is in use", "it backs the loop device "+dev, dev+" is mounted on "+mnt, "-destructive or not")
	}
	assertUnchanged(t, img, before, true)
	got, err := os.ReadFile(filepath.Join(mnt, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
}

// TestRefuseLoopBackingFile: an image attached to a loop device, not
// mounted, is refused by its own name, by another hard link to it, and
// when the name it was attached by is gone (sysfs then says "(deleted)",
// and only LOOP_GET_STATUS64's device and inode can tell).
func TestRefuseLoopBackingFile(t *testing.T) {
	requireRoot(t, "loop devices")
	cases := []struct {
		name string
		// attachBy returns the name to attach by, given the image;
		// after runs once the device is attached.
		attachBy func(t *testing.T, img string) string
		after    func(t *testing.T, name string)
	}{
		{"by its name", func(t *testing.T, img string) string { return img }, nil},
		{"by another hard link", func(t *testing.T, img string) string {
			link := filepath.Join(filepath.Dir(img), "link.img")
			require.NoError(t, os.Link(img, link))
			return link
		}, nil},
		{"by a name since removed", func(t *testing.T, img string) string {
			link := filepath.Join(filepath.Dir(img), "gone.img")
			require.NoError(t, os.Link(img, link))
			return link
		}, func(t *testing.T, name string) { require.NoError(t, os.Remove(name)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "data.img")
			content := []byte(strings.Repeat("precious data\n", 4096))
			require.NoError(t, os.WriteFile(img, content, 0o600))
			by := c.attachBy(t, img)
			dev := attachLoop(t, by)
			if c.after != nil {
				c.after(t, by)
			}
			before := stateOf(t, img, true)
			err := openOrRefuse(t, TargetOptions{Path: img, Destructive: true, OverwriteReadOnly: true})
			assertRefused(t, err, img+" is in use", "it backs the loop device "+dev, "-destructive or not")
			assertUnchanged(t, img, before, true)
		})
	}
}

// TestRefuseMountSourceFile: a file named as the source of a mounted file
// system (as a file-backed erofs or fuse2fs would be; here a tmpfs, which
// takes any source) is refused.
func TestRefuseMountSourceFile(t *testing.T) {
	requireRoot(t, "mounts")
	img := filepath.Join(t.TempDir(), "source.img")
	require.NoError(t, os.WriteFile(img, []byte("not quite a file system"), 0o600))
	mnt := mountFS(t, img, "tmpfs", "size=1m")
	before := stateOf(t, img, true)
	err := openOrRefuse(t, TargetOptions{Path: img, Destructive: true, OverwriteReadOnly: true})
	assertRefused(t, err, "it is the source of the tmpfs file system mounted on "+mnt, "-destructive or not")
	assertUnchanged(t, img, before, true)
}

// TestRefuseFileInUseByProcess: a file another process holds open for
// writing, or has mapped, is refused; one it only reads is not. These
// need no root: a process's own children are visible to it.
func TestRefuseFileInUseByProcess(t *testing.T) {
	dir := t.TempDir()
	content := []byte(strings.Repeat("log line\n", 1000))

	for _, size := range []int{len(content), 0} {
		// An empty file is the one hwbench would grow: it must not be
		// touched before the refusal either.
		t.Run(fmt.Sprintf("open for writing, %d bytes", size), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("written-%d.log", size))
			require.NoError(t, os.WriteFile(path, content[:size], 0o600))
			holder := holdOpen(t, path, ">>")
			before := stateOf(t, path, true)
			err := openOrRefuse(t, TargetOptions{Path: path, Destructive: true, OverwriteReadOnly: true})
			// The shell may not have become sleep yet: the name is not checked.
			assertRefused(t, err, fmt.Sprintf("it is open for writing by process %d (", holder.Process.Pid), ", fd 3)", "-destructive or not")
			assertUnchanged(t, path, before, true)
		})
	}
	t.Run("mapped", func(t *testing.T) {
		path := filepath.Join(dir, "mapped.dat")
		require.NoError(t, os.WriteFile(path, content, 0o600))
		holder := holdMapped(t, path)
		before := stateOf(t, path, true)
		err := openOrRefuse(t, TargetOptions{Path: path, Destructive: true, OverwriteReadOnly: true})
		assertRefused(t, err, "it is mapped by "+fmt.Sprintf("process %d", holder.Process.Pid), "-destructive or not")
		assertUnchanged(t, path, before, true)

		// Once the mapping is gone, only the ordinary rule is left: a
		// non-empty file needs -destructive (not given, so untouched).
		require.NoError(t, holder.Process.Kill())
		_ = holder.Wait()
		err = openOrRefuse(t, TargetOptions{Path: path})
		assertRefused(t, err, "non-empty regular file")
		assert.NotContains(t, err.Error(), "in use")
		assertUnchanged(t, path, before, true)
	})
	t.Run("open for reading only: accepted", func(t *testing.T) {
		path := filepath.Join(dir, "read.dev")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		holdOpen(t, path, "<")
		require.NoError(t, openOrRefuse(t, TargetOptions{Path: path}))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Zero(t, st.Size(), "emptied again")
	})
}

// TestRefuseSwapFile: an active swap file is refused. It skips where
// swapon is not allowed (e.g. in a container).
func TestRefuseSwapFile(t *testing.T) {
	requireRoot(t, "swapon")
	mkswap, swapon, swapoff := tool(t, "mkswap"), tool(t, "swapon"), tool(t, "swapoff")
	path := filepath.Join(t.TempDir(), "swapfile")
	// Written, not sparse: swapon refuses files with holes.
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20), 0o600))
	out, err := exec.Command(mkswap, path).CombinedOutput()
	require.NoError(t, err, "mkswap %s: %s", path, out)
	if out, err := exec.Command(swapon, path).CombinedOutput(); err != nil {
		t.Skipf("swapon %s: %v: %s", path, err, out)
	}
	t.Cleanup(func() {
		out, err := exec.Command(swapoff, path).CombinedOutput()
		assert.NoError(t, err, "swapoff %s: %s", path, out)
	})
	before := stateOf(t, path, true)
	err = openOrRefuse(t, TargetOptions{Path: path, Destructive: true, OverwriteReadOnly: true})
	assertRefused(t, err, "it is an active swap file", "-destructive or not")
	assertUnchanged(t, path, before, true)
}

// TestRefuseNotStorage: pseudo files, device nodes other than block
// devices, FIFOs, sockets, directories, and files to be created on a
// pseudo file system or devtmpfs are refused with every flag given, and
// before anything is opened: a FIFO would block an open, and the content
// of a writable kernel file (/proc/self/comm is this process's name)
// would change.
func TestRefuseNotStorage(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	toProc := filepath.Join(dir, "to-status")
	require.NoError(t, os.Symlink("/proc/self/status", toProc))
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere", "x"), dangling))

	cases := []struct {
		path    string
		content bool     // the content is stable enough to checksum
		words   []string // in the refusal
		needs   string   // skip unless this exists
	}{
		{"/proc/self/status", false, []string{"/status is on proc", "pseudo file system", "-destructive or not"}, ""},
		{"/proc/self/comm", true, []string{"/comm is on proc", "pseudo file system"}, ""},
		{toProc, false, []string{"/status is on proc", "resolves to /proc/"}, ""},
		{"/sys/devices/system/cpu/possible", true, []string{"is on sysfs", "pseudo file system"}, "/sys/devices/system/cpu/possible"},
		{"/sys/kernel/mm/transparent_hugepage/enabled", true, []string{"is on sysfs"}, "/sys/kernel/mm/transparent_hugepage/enabled"},
		{"/dev/null", false, []string{"/dev/null is a character device", "neither a regular file nor a block device"}, ""},
		{fifo, false, []string{"a named pipe (FIFO)", "neither a regular file nor a block device"}, ""},
		{sock, false, []string{"a socket"}, ""},
		{dir, false, []string{"a directory", "neither a regular file nor a block device"}, ""},
		{dangling, false, []string{"symbolic link to", "does not exist"}, ""},
		{"/proc/self/hwbench-new", false, []string{"is on proc"}, ""},
		{"/sys/kernel/hwbench-new", false, []string{"/sys/kernel is on sysfs"}, "/sys/kernel"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.path, "/", "_"), func(t *testing.T) {
			if c.needs != "" {
				if _, err := os.Stat(c.needs); err != nil {
					t.Skipf("no %s here: %v", c.needs, err)
				}
			}
			before := stateOf(t, c.path, c.content)
			done := make(chan error, 1)
			go func() {
				done <- openOrRefuse(t, TargetOptions{Path: c.path, Destructive: true, OverwriteReadOnly: true})
			}()
			select {
			case err := <-done:
				assertRefused(t, err, c.words...)
			case <-time.After(10 * time.Second):
				t.Fatalf("OpenTarget(%s) still running after 10s (blocked opening it?)", c.path)
			}
			assertUnchanged(t, c.path, before, c.content)
		})
	}

	t.Run("a file to create on devtmpfs", func(t *testing.T) {
		if fs, err := fsOfForTest("/dev"); err != nil || fs != "devtmpfs" {
			t.Skipf("/dev is not devtmpfs here (%q, %v)", fs, err)
		}
		path := fmt.Sprintf("/dev/hwbench-test-%d", os.Getpid())
		err := openOrRefuse(t, TargetOptions{Path: path, Destructive: true, OverwriteReadOnly: true})
		assertRefused(t, err, "would be created on devtmpfs")
		_, err = os.Lstat(path)
		assert.ErrorIs(t, err, os.ErrNotExist, "%s was not created", path)
	})
}

// fsOfForTest reads the type of the mount at mountPoint from
// /proc/self/mounts, independently of the code under test.
func fsOfForTest(mountPoint string) (string, error) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	typ := ""
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == mountPoint {
			typ = f[2] // the last one is on top
		}
	}
	return typ, nil
}

// TestReadOnlyFile: a file without write permission bits is refused with
// -destructive, and used with OverwriteReadOnly (by root, whom open(2)
// lets write to it; a normal user is refused by open(2) itself).
func TestReadOnlyFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty-readonly.dev")
	require.NoError(t, os.WriteFile(empty, nil, 0o444))
	before := stateOf(t, empty, true)
	err := openOrRefuse(t, TargetOptions{Path: empty, Destructive: true})
	assertRefused(t, err, "has no write permission bit (mode 0444)")
	assertUnchanged(t, empty, before, true)

	path := filepath.Join(t.TempDir(), "readonly.txt")
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
	require.NoError(t, os.Chmod(path, 0o444))
	before = stateOf(t, path, true)

	err = openOrRefuse(t, TargetOptions{Path: path, Destructive: true})
	assertRefused(t, err, path+" has no write permission bit (mode 0444)", "-overwrite-readonly", "-destructive or not")
	assertUnchanged(t, path, before, true)

	tg, err := OpenTarget(TargetOptions{Path: path, Region: 1 << 20, Destructive: true, OverwriteReadOnly: true})
	if os.Geteuid() != 0 {
		require.ErrorIs(t, err, os.ErrPermission, "open(2) refuses a normal user")
		assert.NotErrorIs(t, err, ErrRefused)
		assertUnchanged(t, path, before, true)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, "file", tg.Kind)
	require.NoError(t, tg.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.EqualValues(t, len("precious"), st.Size(), "cut back to its size")
	assert.Equal(t, os.FileMode(0o444), st.Mode().Perm(), "mode unchanged")
}

// TestRefuseFileWithFileSystem: a plain file (not attached, not mounted)
// holding an ext4 file system is refused without -destructive, naming the
// signature, and used with it.
func TestRefuseFileWithFileSystem(t *testing.T) {
	img := ext4Image(t, t.TempDir(), 32<<20)
	before := stateOf(t, img, true)
	err := openOrRefuse(t, TargetOptions{Path: img, Region: 16 << 20})
	words := []string{img + " holds data", "ext2/3/4 superblock (magic at byte 1080)", "Pass -destructive"}
	if _, err := exec.LookPath("blkid"); err == nil {
		words = append(words, "TYPE=ext4")
	}
	assertRefused(t, err, words...)
	assertUnchanged(t, img, before, true)

	tg, err := OpenTarget(TargetOptions{Path: img, Region: 16 << 20, Destructive: true})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(tg.Notes, "\n"), "-destructive: "+img+" holds data: ext2/3/4 superblock")
	require.NoError(t, tg.Close())
}

// TestNotDurableTargets: targets on tmpfs and ramfs mounts of the test's
// own are measured, but say that nothing there is durable; so do the
// temporary file and -device=loop's backing file there, and a named loop
// device over a file there. One short S2 run checks that the tables then
// mark the flush figures.
func TestNotDurableTargets(t *testing.T) {
	requireRoot(t, "mount -t tmpfs and ramfs")
	for _, fstype := range []string{"tmpfs", "ramfs"} {
		t.Run(fstype, func(t *testing.T) {
			mnt := mountFS(t, fstype, fstype, "")
			check := func(t *testing.T, tg *Target, words ...string) {
				t.Helper()
				t.Logf("%s: NotDurable %q", tg.Path, tg.NotDurable)
				for _, w := range append(words, fstype) {
					assert.Contains(t, tg.NotDurable, w)
				}
				assert.Equal(t, "meaningless on "+fstype, tg.FlushFigures)
				assert.Contains(t, tg.String(), "NOT DURABLE: ")
				assert.Contains(t, strings.Join(tg.Notes, "\n"), "nothing written here is durable")
			}

			named := filepath.Join(mnt, "bench.dev")
			tg, err := OpenTarget(TargetOptions{Path: named, Region: 1 << 20})
			require.NoError(t, err)
			check(t, tg, named+" is on "+fstype+" (mounted on "+mnt+")")
			if fstype == "tmpfs" {
				cfg := Config{Duration: 30 * time.Millisecond, Span: 1 << 20, Writers: 2, Scenarios: []string{"S2"}}
				rep, err := Run(t.Context(), tg, cfg)
				require.NoError(t, err)
				var b strings.Builder
				require.NoError(t, WriteTables(&b, rep))
				assert.Contains(t, b.String(), "flushes: meaningless on tmpfs")
				assert.Contains(t, b.String(), "NOT DURABLE: ")
			}
			require.NoError(t, tg.Close())

			tg, err = OpenTarget(TargetOptions{Region: 1 << 20, TempDir: mnt})
			require.NoError(t, err)
			check(t, tg, "the temporary file is in "+mnt)
			require.NoError(t, tg.Close())

			if fstype != "tmpfs" {
				return // a loop device needs a file system that takes its direct I/O or its writes; tmpfs is enough
			}
			tg, err = OpenTarget(TargetOptions{Path: "loop", Region: 1 << 20, LoopSize: 16 << 20, TempDir: mnt})
			if errors.Is(err, ErrLoopUnavailable) {
				t.Skipf("no loop device: %v", err)
			}
			require.NoError(t, err)
			check(t, tg, "the loop device's backing file is in "+mnt)
			require.NoError(t, tg.Close())

			backing := filepath.Join(mnt, "named-loop.img")
			require.NoError(t, os.WriteFile(backing, nil, 0o600))
			require.NoError(t, os.Truncate(backing, 4<<20))
			dev := attachLoop(t, backing)
			tg, err = OpenTarget(TargetOptions{Path: dev, Region: 1 << 20})
			require.NoError(t, err)
			check(t, tg, "the backing file of "+dev+", "+backing)
			require.NoError(t, tg.Close())
		})
	}
}

// TestDurableTargetsSayNothing: a target on a disk's file system carries
// no NotDurable, so the marks above are not printed everywhere.
func TestDurableTargetsSayNothing(t *testing.T) {
	dir := t.TempDir()
	if fs, ok := volatileDir(dir); ok {
		t.Skipf("the test's temporary directory %s is on %s", dir, fs)
	}
	tg, err := OpenTarget(TargetOptions{Path: filepath.Join(dir, "f"), Region: 1 << 20})
	require.NoError(t, err)
	defer func() { assert.NoError(t, tg.Close()) }()
	assert.Empty(t, tg.NotDurable)
	assert.Empty(t, tg.FlushFigures)
	assert.NotContains(t, tg.String(), "NOT DURABLE")
}

// TestSymlinkToBlockDevice: a symbolic link (as in /dev/disk/by-id) that
// leads to a block device is followed; the device is then checked and
// used as itself, and the notes say where the link led.
func TestSymlinkToBlockDevice(t *testing.T) {
	dev, _ := testLoop(t, 4<<20)
	link := filepath.Join(t.TempDir(), "by-id-link")
	require.NoError(t, os.Symlink(dev, link))
	tg, err := OpenTarget(TargetOptions{Path: link, Region: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, dev, tg.Path)
	assert.Equal(t, "block device", tg.Kind)
	assert.Contains(t, strings.Join(tg.Notes, "\n"), "-device="+link+" resolves to "+dev)
	require.NoError(t, tg.Close())
}

// TestSlowFlushNotDurable: -device=slowflush is an emulated device, and
// says so.
func TestSlowFlushNotDurable(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	tg, err := OpenTarget(TargetOptions{Path: "slowflush:1ms", Region: 1 << 20})
	if errors.Is(err, ErrLoopUnavailable) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close()) }()
	assert.Contains(t, tg.NotDurable, "durability is emulated, not real")
	assert.Equal(t, "emulated (each flush waits 1ms; no disk is behind it)", tg.FlushFigures)
	assert.Contains(t, tg.String(), "NOT DURABLE: an emulated device")
}

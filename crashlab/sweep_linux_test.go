//go:build linux

package crashlab

import (
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

func TestParseMarker(t *testing.T) {
	run := runID{proc{12, 345}, proc{67, 890}}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{run.marker(), true},
		{run.marker() + "-123456", true},
		{run.marker() + "-", false},
		{markerPrefix + "12-345-67", false},           // three numbers: not ours
		{markerPrefix + "2538313719", false},          // the old recorder directories
		{markerPrefix + "12-345-67-890-1-2", false},   // too many parts
		{markerPrefix + "0-345-67-890", false},        // pid 0
		{markerPrefix + "12-345-99999999-890", false}, // pid above PID_MAX_LIMIT
		{markerPrefix + "12-x-67-890", false},
		{"crashlab-12-345-67-890", false},
		{"notarun", false},
	} {
		got, ok := parseMarker(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		if ok {
			assert.Equal(t, run, got, tc.name)
		}
	}
	assert.Equal(t, []runID{run}, markersIn("/tmp/x/"+run.marker()+"-7/mnt/image"))
}

func TestProcAlive(t *testing.T) {
	me, err := self()
	require.NoError(t, err)
	assert.True(t, me.alive())
	assert.False(t, proc{me.pid, me.start + 1}.alive(), "same pid, other start time: a reused pid")
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	_, start, err := procStat(cmd.Process.Pid)
	require.NoError(t, err)
	child := proc{cmd.Process.Pid, start}
	// Not waited for yet: a zombie once it exits, and a zombie is gone.
	assert.Eventually(t, func() bool { return !child.alive() }, 5*time.Second, time.Millisecond)
	require.NoError(t, cmd.Wait())
	assert.False(t, child.alive())
	assert.True(t, runID{proc{me.pid, me.start + 1}, child}.dead())
	assert.False(t, runID{me, child}.dead(), "a run with a live worker is alive")
	assert.False(t, runID{child, me}.dead(), "a run with a live supervisor is alive")
}

// TestSweep plants the leftovers of a dead run (a directory in the
// temporary directory and in /dev/shm, a loop device over a file in it
// with ext4 mounted from it, a FUSE mount whose server is gone, and a
// mount in a directory outside the roots swept) next to a live run's
// directories and mount and unmarked directories. The sweep removes all
// of the dead run's and nothing else.
//
// The planted run's worker is this process, so that no other process's
// sweep (hwbench's tests start recorders meanwhile) takes it away first;
// this sweep is told it is dead. A second dead run, dead by its start
// times, has only a directory, which is gone afterwards (by whichever
// sweep).
func TestSweep(t *testing.T) {
	recTestNeeds(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skipf("needs mkfs.ext4: %v", err)
	}
	me, err := self()
	require.NoError(t, err)
	// Same pid, other start times: processes that are gone.
	dead := runID{me, proc{me.pid, me.start + 1}}
	reallyDead := runID{proc{me.pid, me.start + 2}, proc{me.pid, me.start + 5}}
	liveWorker := runID{me, proc{me.pid, me.start + 3}}
	liveSupervisor := runID{proc{me.pid, me.start + 4}, me}
	require.True(t, reallyDead.dead())
	require.False(t, dead.dead() || liveWorker.dead() || liveSupervisor.dead())

	root, outside := t.TempDir(), t.TempDir()
	mkdir := func(parts ...string) string {
		d := filepath.Join(parts...)
		require.NoError(t, os.MkdirAll(d, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(d, "file"), []byte("x"), 0o600))
		return d
	}
	shm := func(name string) string {
		d := mkdir("/dev/shm", name)
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		return d
	}
	mountTmpfs := func(d string) string {
		mnt := mkdir(d, "mnt")
		require.NoError(t, unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"))
		t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
		return mnt
	}

	// The dead run.
	deadDir := mkdir(root, dead.marker()+"-1")
	deadShm := shm(dead.marker() + "-2")
	img := filepath.Join(deadDir, "image")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 8<<20))
	out, err := exec.Command(mkfs, "-q", "-F", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	dev, err := loopdev.Attach(img, loopdev.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = loopdev.Detach(dev, img) })
	ext4 := mkdir(deadDir, "mnt")
	require.NoError(t, unix.Mount(dev, ext4, "ext4", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(ext4, unix.MNT_DETACH) })
	fuseMnt := mkdir(deadDir, "fuse")
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Mount(dead.marker(), fuseMnt, fuseType, unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)))
	unix.Close(fd) // the server "died": the kernel aborts the connection
	t.Cleanup(func() { _ = unix.Unmount(fuseMnt, unix.MNT_DETACH) })
	deadOutside := mkdir(outside, dead.marker()+"-3")
	deadOutsideMnt := mountTmpfs(deadOutside)
	reallyDeadDir := mkdir(root, reallyDead.marker()+"-4")

	// What must stay.
	liveDir := mkdir(root, liveWorker.marker()+"-1")
	liveMnt := mountTmpfs(liveDir)
	keep := []string{
		liveDir,
		mkdir(root, liveSupervisor.marker()+"-1"),
		shm(liveWorker.marker() + "-2"),
		mkdir(root, markerPrefix+"notarun"),
		mkdir(root, markerPrefix+"2538313719"),
		mkdir(root, "flushproof-crashlab-1-2-3"),
	}

	isDead := func(r runID) bool { return r == dead || r.dead() }
	var lines []string
	require.NoError(t, sweepRuns([]string{root, "/dev/shm"}, func(s string) { lines = append(lines, s) }, isDead))
	t.Logf("swept:\n%s", strings.Join(lines, "\n"))

	mounts, err := mountinfo.Read()
	require.NoError(t, err)
	mounted := map[string]bool{}
	for _, m := range mounts {
		mounted[m.MountPoint] = true
	}
	for _, d := range []string{deadDir, deadShm, deadOutside, reallyDeadDir} {
		assert.NoDirExists(t, d)
	}
	for _, m := range []string{ext4, fuseMnt, deadOutsideMnt} {
		assert.False(t, mounted[m], "%s still mounted", m)
	}
	assert.NotEqual(t, img, loopdev.BackingFile(dev), "%s still attached", dev)
	for _, d := range keep {
		assert.DirExists(t, d)
		assert.FileExists(t, filepath.Join(d, "file"))
	}
	assert.True(t, mounted[liveMnt], "a live run's mount was unmounted")
	all := strings.Join(lines, "\n")
	for _, want := range []string{"aborted FUSE connection", ext4, dev, fuseMnt, deadDir, deadShm, deadOutside} {
		assert.Contains(t, all, want)
	}
	for _, d := range keep {
		assert.NotContains(t, all, d)
	}

	// A second sweep finds nothing of it.
	lines = nil
	require.NoError(t, sweepRuns([]string{root, "/dev/shm"}, func(s string) { lines = append(lines, s) }, isDead))
	assert.NotContains(t, strings.Join(lines, "\n"), dead.marker())
}

package crashlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needReplay skips the test unless Replay can run fs here.
func needReplay(t *testing.T, fs FS, mkfs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("crash lab replay: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("crash lab replay needs root (losetup, mount)")
	}
	missing := ReplayTools(fs)
	if _, err := exec.LookPath(mkfs); err != nil {
		missing = append(missing, mkfs)
	}
	if len(missing) > 0 {
		t.Skipf("crash lab replay of %s needs %s, not found", fs, strings.Join(missing, ", "))
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("crash lab replay needs loop devices: %v", err)
	}
}

// mkfsLog makes a file system in an image file of size bytes and turns it
// into a log: one write per non-zero 4 KiB chunk, then a flush, then
// rewrites of some chunks with the same data (unflushed writes whose loss or
// landing leaves the same file system, so every random state must pass).
func mkfsLog(t *testing.T, size int64, mkfs ...string) (ops []Op, flush uint64) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "mkfs.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	args := append(mkfs[1:], img)
	if out, err := exec.Command(mkfs[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(mkfs, " "), err, out)
	}
	data, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 4096
	zero := make([]byte, chunk)
	var written []Op
	for off := int64(0); off < size; off += chunk {
		c := data[off : off+chunk]
		if bytes.Equal(c, zero) {
			continue
		}
		op := Op{Seq: uint64(len(ops) + 1), Kind: OpWrite, Off: off, Len: chunk, Data: bytes.Clone(c)}
		ops = append(ops, op)
		written = append(written, op)
	}
	flush = uint64(len(ops) + 1)
	ops = append(ops, Op{Seq: flush, Kind: OpFlush})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		op := written[rng.IntN(len(written))]
		op.Seq = uint64(len(ops) + 1)
		ops = append(ops, op)
	}
	return ops, flush
}

// afterFlush keeps the states whose last flush is flush and adds one that
// crashed before any flush with nothing landed (an all-zero image, which no
// file system mounts).
func afterFlush(states []CrashState, flush uint64) []CrashState {
	var out []CrashState
	for _, s := range states {
		if s.Flush == flush {
			s.Index = len(out)
			out = append(out, s)
		}
	}
	return append(out, CrashState{Index: len(out), Kind: Random, Cut: flush - 1, Keep: 0})
}

func TestReplayExt4(t *testing.T) {
	needReplay(t, Ext4, "mkfs.ext4")
	src := t.TempDir()
	want := []byte("acknowledged by fsync\n")
	if err := os.WriteFile(filepath.Join(src, "hello"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 16 << 20
	ops, flush := mkfsLog(t, size, "mkfs.ext4", "-q", "-F", "-E", "nodiscard", "-d", src)
	states := afterFlush(CrashStates(ops, 60, 3), flush)
	good := func(mnt string, _ CrashState) error {
		got, err := os.ReadFile(filepath.Join(mnt, "hello"))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("hello holds %q, want %q", got, want)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	rep, err := Replay(ctx, ops, size, states, Ext4, good, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	last := len(states) - 1
	for i, res := range rep.Results {
		switch {
		case i == last && res.Status != StatusMountError:
			t.Errorf("%s: zero image gave %v (%v), want a mount error", res.State.Describe(), res.Status, res.Err)
		case i != last && res.Status != StatusOK:
			t.Errorf("%s: %v: %v\n%s", res.State.Describe(), res.Status, res.Err, res.Output)
		}
	}
	if len(rep.Results) != len(states) || rep.Counts[StatusOK] != len(states)-1 {
		t.Errorf("report: %v", rep)
	}

	// A check that fails is reported per state, with its error.
	bad := func(mnt string, _ CrashState) error {
		if _, err := os.Stat(filepath.Join(mnt, "never-written")); err != nil {
			return err
		}
		return nil
	}
	rep, err = Replay(ctx, ops, size, states[:3], Ext4, bad, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	for _, res := range rep.Results {
		if res.Status != StatusCheckError || !errors.Is(res.Err, os.ErrNotExist) {
			t.Errorf("%s: %v (%v), want a check error", res.State.Describe(), res.Status, res.Err)
		}
	}
	// A file system the kernel mounts but fsck rejects: the root
	// directory's block overwritten with zeros before the flush.
	if corrupt := rootDirCorrupted(t, ops, flush, size); corrupt != nil {
		st := CrashStates(corrupt, 0, 0)[0]
		rep, err = Replay(ctx, corrupt, size, []CrashState{st}, Ext4, good, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep)
		if res := rep.Results[0]; res.Status != StatusFsckError || res.Output == "" {
			t.Errorf("%s: %v (%v), want an fsck error with its output", st.Describe(), res.Status, res.Err)
		} else {
			t.Logf("fsck error reported: %v; check error: %v", res.Err, res.CheckErr)
		}
	}
	// A panicking check is a check error too, and cleanup still happens.
	rep, err = Replay(ctx, ops, size, states[:1], Ext4, func(string, CrashState) error { panic("boom") }, 1)
	if err != nil || rep.Results[0].Status != StatusCheckError {
		t.Errorf("panicking check: %v, %v", rep, err)
	}
	assertNoLeftovers(t)
}

func TestReplayXFS(t *testing.T) {
	needReplay(t, XFS, "mkfs.xfs")
	const size = 320 << 20 // mkfs.xfs refuses file systems under 300 MiB
	ops, flush := mkfsLog(t, size, "mkfs.xfs", "-q", "-f", "-K")
	states := afterFlush(CrashStates(ops, 6, 5), flush)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	rep, err := Replay(ctx, ops, size, states, XFS, func(mnt string, _ CrashState) error {
		_, err := os.ReadDir(mnt)
		return err
	}, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	last := len(states) - 1
	for i, res := range rep.Results {
		if (i == last) != (res.Status != StatusOK) {
			t.Errorf("%s: %v: %v\n%s", res.State.Describe(), res.Status, res.Err, res.Output)
		}
	}
	assertNoLeftovers(t)
}

// rootDirCorrupted returns the writes before flush plus a write of zeros
// over the root directory's first block, then the flush; nil (after
// logging why) when debugfs cannot say where that block is.
func rootDirCorrupted(t *testing.T, ops []Op, flush uint64, size int64) []Op {
	t.Helper()
	img := filepath.Join(t.TempDir(), "durable.img")
	if err := BuildImage(img, size, ops, func(op Op) bool { return op.Seq < flush }); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("debugfs", "-R", "bmap / 0", img).Output()
	var blk int64
	if _, serr := fmt.Sscan(strings.TrimSpace(string(out)), &blk); err != nil || serr != nil || blk <= 0 {
		t.Logf("no fsck-error case: debugfs: %v %v %q", err, serr, out)
		return nil
	}
	var c []Op
	for _, op := range ops {
		if op.Seq < flush {
			c = append(c, op)
		}
	}
	stats, err := exec.Command("debugfs", "-R", "stats", img).Output()
	var blockSize int64
	for _, line := range strings.Split(string(stats), "\n") {
		if v, ok := strings.CutPrefix(line, "Block size:"); ok {
			fmt.Sscan(strings.TrimSpace(v), &blockSize)
		}
	}
	if err != nil || blockSize <= 0 {
		t.Logf("no fsck-error case: debugfs stats: %v", err)
		return nil
	}
	c = append(c, Op{Seq: uint64(len(c) + 1), Kind: OpWrite, Off: blk * blockSize, Len: blockSize, Data: make([]byte, blockSize)})
	return append(c, Op{Seq: uint64(len(c) + 1), Kind: OpFlush})
}

// assertNoLeftovers fails if a loop device, mount or directory of this
// process's run survived Replay (its directories carry the run's marker;
// its supervisor runs as long as this process).
func assertNoLeftovers(t *testing.T) {
	t.Helper()
	rm := runRemains(os.Getpid())
	if len(rm.loops)+len(rm.mounts)+len(rm.dirs)+len(rm.errs) > 0 {
		t.Errorf("left behind: %+v", rm)
	}
}

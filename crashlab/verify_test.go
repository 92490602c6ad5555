package crashlab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// needReplay skips the test unless Replay can run fs here.
func needReplay(t *testing.T, fs FS, mkfs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("crash lab replay: skipped in -short mode")
	}
	if err := preflight(fs, false); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath(mkfs); err != nil {
		t.Skipf("crash lab replay of %s needs %s: %v", fs, mkfs, err)
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
	// Once the context ended, no state is replayed and none is reported as
	// failed: they are counted as interrupted.
	ended, end := context.WithCancel(ctx)
	end()
	rep, err = Replay(ended, ops, size, states[:4], Ext4, good, 2)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, rep.Results)
	assert.Equal(t, 4, rep.Interrupted)
	assert.Equal(t, 4, rep.States)
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

func TestBlockSizeReadsTheNewestSuperblock(t *testing.T) {
	ext4SB := func(logBlock uint32) []byte { // the first 4 KiB: ext4's superblock is at 1024
		b := make([]byte, 4096)
		binary.LittleEndian.PutUint16(b[1024+0x38:], 0xef53)
		binary.LittleEndian.PutUint32(b[1024+0x18:], logBlock)
		return b
	}
	xfsSB := func(bs uint32) []byte {
		b := make([]byte, 512)
		copy(b, "XFSB")
		binary.BigEndian.PutUint32(b[4:], bs)
		return b
	}
	w := func(seq uint64, off int64, data []byte) Op {
		return Op{Seq: seq, Kind: OpWrite, Off: off, Len: int64(len(data)), Data: data}
	}
	for _, tc := range []struct {
		name string
		fs   FS
		ops  []Op
		want int64
	}{
		{"ext4 1 KiB", Ext4, []Op{w(1, 0, ext4SB(0))}, 1024},
		{"ext4 4 KiB", Ext4, []Op{w(1, 0, ext4SB(2))}, 4096},
		{"ext4 superblock alone at 1024", Ext4, []Op{w(1, 1024, ext4SB(2)[1024:2048])}, 4096},
		{"ext4: the newest write wins, in Seq order", Ext4, []Op{w(2, 0, ext4SB(2)), w(1, 0, ext4SB(0))}, 4096},
		{"ext4 superblock discarded", Ext4, []Op{w(1, 0, ext4SB(2)), {Seq: 2, Kind: OpDiscard, Off: 0, Len: 4096}}, SectorSize},
		{"xfs 4 KiB", XFS, []Op{w(1, 0, xfsSB(4096))}, 4096},
		{"xfs nonsense block size", XFS, []Op{w(1, 0, xfsSB(4095))}, SectorSize},
		{"xfs log read as ext4", Ext4, []Op{w(1, 0, xfsSB(4096))}, SectorSize},
		{"no superblock", XFS, nil, SectorSize},
	} {
		assert.Equal(t, tc.want, BlockSize(tc.fs, tc.ops), tc.name)
	}
}

func TestVerdict(t *testing.T) {
	random := CrashState{Kind: Random, Torn: true}
	lost := errors.New("writer 0's record 1 is gone")
	for _, tc := range []struct {
		name string
		res  StateResult
		want Verdict
	}{
		{"ok", StateResult{State: random, Status: StatusOK}, VerdictPass},
		{"torn random state that does not mount", StateResult{State: random, Status: StatusMountError, TornWrites: []uint64{7}}, VerdictAllowed},
		{"torn random state that fails fsck", StateResult{State: random, Status: StatusFsckError, TornWrites: []uint64{7}}, VerdictAllowed},
		{"torn flag, but no write torn inside a block", StateResult{State: random, Status: StatusMountError}, VerdictFail},
		{"untorn random state that does not mount", StateResult{State: CrashState{Kind: Random}, Status: StatusMountError}, VerdictFail},
		{"flush point that does not mount", StateResult{State: CrashState{Kind: FlushPoint}, Status: StatusMountError}, VerdictFail},
		{"end of log that fails fsck", StateResult{State: CrashState{Kind: EndOfLog}, Status: StatusFsckError}, VerdictFail},
		{"a lost record in a torn state", StateResult{State: random, Status: StatusCheckError, CheckErr: lost, TornWrites: []uint64{7}}, VerdictFail},
		{"a lost record and fsck errors in a torn state", StateResult{State: random, Status: StatusFsckError, CheckErr: lost, TornWrites: []uint64{7}}, VerdictFail},
		{"a lost record, then a failed unmount", StateResult{State: random, Status: StatusSetupError, CheckErr: lost}, VerdictFail},
		{"setup error", StateResult{State: CrashState{Kind: FlushPoint}, Status: StatusSetupError}, VerdictError},
	} {
		assert.Equal(t, tc.want, tc.res.Verdict(), tc.name)
	}
	r := StateResult{State: random, Status: StatusMountError, Err: errors.New("mount -t ext4 /dev/loop9 /m: exit status 32: bad superblock"), TornWrites: []uint64{7, 9}, BlockSize: 1024}
	assert.Equal(t, "mount-error: mount -t ext4 /dev/loop9 /m: exit status 32: bad superblock (torn inside a 1024-byte block: ops 7, 9)", r.Reason())
}

func TestToolMessageDropsWhatTheErrorSays(t *testing.T) {
	for _, tc := range []struct {
		out, name string
		args      []string
		want      string
	}{
		{"umount: /tmp/x/mnt: not mounted.\n", "umount", []string{"/tmp/x/mnt"}, "not mounted."},
		{"mount: /m: wrong fs type, bad superblock on /dev/loop3.\n       dmesg(1) may have more information after failed mount system call.\n", "mount", []string{"-t", "ext4", "/dev/loop3", "/m"}, "wrong fs type, bad superblock on /dev/loop3."},
		{"Pass 1: Checking inodes\n/dev/loop3: ********** WARNING: Filesystem still has errors **********\n\n", "e2fsck", []string{"-fn", "/dev/loop3"}, "********** WARNING: Filesystem still has errors **********"},
		{"", "losetup", nil, ""},
	} {
		assert.Equal(t, tc.want, toolMessage(tc.out, tc.name, tc.args))
	}
}

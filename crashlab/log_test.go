package crashlab

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logTestOps returns n ops of every kind, numbered from 1.
func logTestOps(n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		seq := uint64(i + 1)
		switch i % 4 {
		case 0:
			data := make([]byte, 512*(1+i%3))
			for j := range data {
				data[j] = byte(i*17 + j)
			}
			ops[i] = Op{Seq: seq, Kind: OpWrite, Off: int64(i) * 4096, Len: int64(len(data)), Data: data}
		case 1:
			ops[i] = Op{Seq: seq, Kind: OpFlush}
		case 2:
			ops[i] = Op{Seq: seq, Kind: OpDiscard, Off: 8192, Len: 1 << 20}
		case 3:
			ops[i] = Op{Seq: seq, Kind: OpZero, Off: 4096, Len: 4096}
		}
	}
	return ops
}

// logTestWrite writes ops to a new log and returns its path.
func logTestWrite(t *testing.T, ops []Op) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log")
	w, err := NewLogWriter(path, 1<<20)
	require.NoError(t, err)
	for _, op := range ops {
		require.NoError(t, w.Append(op))
	}
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "a second Close is a no-op")
	return path
}

func TestLogRoundTrip(t *testing.T) {
	want := logTestOps(13)
	path := logTestWrite(t, want)
	got, err := ReadLog(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	empty := logTestWrite(t, nil)
	got, err = ReadLog(empty)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestLogTornTail(t *testing.T) {
	want := logTestOps(5)
	path := logTestWrite(t, want)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	lastLen := int64(logHeaderBytes + len(want[4].Data))
	lastAt := int64(len(raw)) - lastLen

	for _, keep := range []int64{1, logHeaderBytes - 1, logHeaderBytes, lastLen - 1} {
		require.NoError(t, os.WriteFile(path, raw[:lastAt+keep], 0o600))
		got, err := ReadLog(path)
		var torn *TornTailError
		require.ErrorAs(t, err, &torn, "kept %d bytes of the last record", keep)
		assert.Equal(t, lastAt, torn.Offset)
		assert.Equal(t, keep, torn.Ignored)
		assert.Equal(t, want[:4], got)
	}
}

func TestLogCorrupt(t *testing.T) {
	want := logTestOps(6)
	path := logTestWrite(t, want)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	secondAt := int64(len(logFileMagic)) + logHeaderBytes + int64(len(want[0].Data))

	tests := []struct {
		name    string
		at      int64 // byte to flip
		wantOps int
		wantErr func(error) bool
	}{
		{"data of first", int64(len(logFileMagic)) + logHeaderBytes + 3, 0, isTorn},
		{"seq of second", secondAt + 8, 1, isTorn},
		{"magic of second", secondAt, 1, isTorn},
		{"file header", 0, 0, func(err error) bool { return err != nil && !isTorn(err) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]byte(nil), raw...)
			bad[tc.at] ^= 0x40
			p := filepath.Join(t.TempDir(), "log")
			require.NoError(t, os.WriteFile(p, bad, 0o600))
			got, err := ReadLog(p)
			assert.True(t, tc.wantErr(err), "error %v", err)
			assert.Len(t, got, tc.wantOps)
		})
	}
}

func isTorn(err error) bool {
	var torn *TornTailError
	return errors.As(err, &torn)
}

func TestLogSeqGap(t *testing.T) {
	ops := logTestOps(3)
	path := filepath.Join(t.TempDir(), "log")
	w, err := NewLogWriter(path, 1<<20)
	require.NoError(t, err)
	defer func() { _ = w.Close() }()
	assert.ErrorIs(t, w.Append(ops[1]), ErrSeqGap, "the first op must be 1")
	require.NoError(t, w.Append(ops[0]))
	assert.ErrorIs(t, w.Append(ops[2]), ErrSeqGap)
	require.NoError(t, w.Append(ops[1]))

	// A log written by hand with a gap: re-number the last record and fix
	// its CRC, so only the gap is wrong.
	require.NoError(t, w.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw = encodeRecord(raw, Op{Seq: 7, Kind: OpFlush})
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	got, err := ReadLog(path)
	assert.ErrorIs(t, err, ErrSeqGap)
	assert.False(t, isTorn(err))
	assert.Nil(t, got)
}

func TestLogFull(t *testing.T) {
	ops := logTestOps(8)
	var need int64 = int64(len(logFileMagic))
	for _, op := range ops[:5] {
		need += logHeaderBytes + int64(len(op.Data))
	}
	path := filepath.Join(t.TempDir(), "log")
	w, err := NewLogWriter(path, need+logHeaderBytes-1) // op 6, a flush, does not fit
	require.NoError(t, err)
	for _, op := range ops[:5] {
		require.NoError(t, w.Append(op))
	}
	assert.Equal(t, need, w.Size())
	err = w.Append(ops[5])
	assert.ErrorIs(t, err, ErrLogFull)
	assert.ErrorContains(t, err, path)
	assert.ErrorIs(t, w.Append(ops[5]), ErrLogFull, "full stays full")
	require.NoError(t, w.Close())

	got, err := ReadLog(path)
	require.NoError(t, err, "a full log is intact")
	assert.Equal(t, ops[:5], got)

	_, err = NewLogWriter(path, 1<<20)
	assert.ErrorIs(t, err, os.ErrExist, "never overwrites a log")
	_, err = NewLogWriter(filepath.Join(t.TempDir(), "tiny"), 3)
	assert.Error(t, err)
}

func TestLogRejectsBadOps(t *testing.T) {
	w, err := NewLogWriter(filepath.Join(t.TempDir(), "log"), 1<<20)
	require.NoError(t, err)
	defer func() { _ = w.Close() }()
	for _, op := range []Op{
		{Seq: 1, Kind: 0},
		{Seq: 1, Kind: OpWrite, Len: 3, Data: []byte{1}},
		{Seq: 1, Kind: OpFlush, Data: []byte{1}},
		{Seq: 1, Kind: OpDiscard, Off: -1, Len: 1},
	} {
		assert.Error(t, w.Append(op), "%+v", op)
	}
	require.NoError(t, w.Append(Op{Seq: 1, Kind: OpFlush}), "bad ops did not consume a number")
}

// TestLogConcurrentAppend appends from many goroutines that number their
// ops under one lock, as the recorder does, and checks nothing is lost or
// reordered.
func TestLogConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	w, err := NewLogWriter(path, 64<<20)
	require.NoError(t, err)
	const writers, each = 8, 200
	var (
		mu   sync.Mutex
		next uint64
		wg   sync.WaitGroup
	)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				data := make([]byte, 512)
				binary.LittleEndian.PutUint32(data, uint32(g))
				binary.LittleEndian.PutUint32(data[4:], uint32(i))
				mu.Lock()
				next++
				err := w.Append(Op{Seq: next, Kind: OpWrite, Off: int64(g) << 20, Len: 512, Data: data})
				mu.Unlock()
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())
	got, err := ReadLog(path)
	require.NoError(t, err)
	require.Len(t, got, writers*each)
	seen := make(map[[2]uint32]bool)
	lastPerWriter := make([]int, writers)
	for _, op := range got {
		g, i := binary.LittleEndian.Uint32(op.Data), binary.LittleEndian.Uint32(op.Data[4:])
		assert.Equal(t, int64(g)<<20, op.Off)
		seen[[2]uint32{g, i}] = true
		assert.Equal(t, lastPerWriter[g], int(i), "writer %d's ops in order", g)
		lastPerWriter[g]++
	}
	assert.Len(t, seen, writers*each)
}

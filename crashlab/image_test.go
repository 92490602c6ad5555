package crashlab

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func fill(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

func TestBuildImageAppliesOpsInSeqOrder(t *testing.T) {
	const size = 8 * SectorSize
	ops := []Op{
		// Deliberately out of order: BuildImage sorts by Seq.
		{Seq: 3, Kind: OpWrite, Off: 2 * SectorSize, Len: SectorSize, Data: fill(SectorSize, 'c')},
		{Seq: 1, Kind: OpWrite, Off: 0, Len: 4 * SectorSize, Data: fill(4*SectorSize, 'a')},
		{Seq: 2, Kind: OpFlush},
		{Seq: 4, Kind: OpDiscard, Off: 0, Len: SectorSize},
		{Seq: 5, Kind: OpWrite, Off: 5 * SectorSize, Len: 2 * SectorSize, Data: fill(2*SectorSize, 'e')},
		{Seq: 6, Kind: OpZero, Off: 6 * SectorSize, Len: SectorSize},
		{Seq: 7, Kind: OpWrite, Off: 7*SectorSize + 10, Len: 3, Data: []byte("xyz")},
	}
	path := filepath.Join(t.TempDir(), "img")
	if err := BuildImage(path, size, ops, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	copy(want[SectorSize:], fill(3*SectorSize, 'a'))
	copy(want[2*SectorSize:], fill(SectorSize, 'c'))
	copy(want[5*SectorSize:], fill(SectorSize, 'e'))
	copy(want[7*SectorSize+10:], "xyz")
	if !bytes.Equal(got, want) {
		t.Fatalf("image differs from the expected one")
	}

	// include filters: only op 1 (flushes never count).
	if err := BuildImage(path, size, ops, func(op Op) bool { return op.Seq <= 2 }); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	want = make([]byte, size)
	copy(want, fill(4*SectorSize, 'a'))
	if !bytes.Equal(got, want) {
		t.Fatalf("filtered image differs")
	}
}

func TestBuildImageIsSparseAndRejectsOpsOutside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img")
	const size = 1 << 30
	ops := []Op{{Seq: 1, Kind: OpWrite, Off: size - 4096, Len: 4096, Data: fill(4096, 1)}}
	if err := BuildImage(path, size, ops, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Fatalf("size %d, want %d", fi.Size(), size)
	}
	if blocks := diskBytes(fi); blocks > 1<<20 {
		t.Errorf("a 1 GiB image with one 4 KiB write uses %d bytes on disk: not sparse", blocks)
	}
	bad := []Op{{Seq: 1, Kind: OpWrite, Off: size - 10, Len: 20, Data: fill(20, 1)}}
	if err := BuildImage(path, size, bad, nil); err == nil {
		t.Error("a write past the end of the image was accepted")
	}
	bad = []Op{{Seq: 1, Kind: OpDiscard, Off: -512, Len: 1024}}
	if err := BuildImage(path, size, bad, nil); err == nil {
		t.Error("a discard at a negative offset was accepted")
	}
}

package crashlab

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// SectorSize is the unit of atomicity replay assumes: a crash may tear a
// multi-sector write, never a sector.
const SectorSize = 512

// BuildImage creates (or truncates) the file at path as a sparse image of
// size bytes that reads as zeros, then applies, in Seq order, every OpWrite,
// OpDiscard and OpZero of ops for which include returns true (a nil include
// applies them all). Flushes are markers and never applied. An op reaching
// past size is an error: the log and the image disagree.
func BuildImage(path string, size int64, ops []Op, include func(op Op) bool) error {
	if size < 0 {
		return fmt.Errorf("build image %s: size %d is negative", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	ordered := sortedBySeq(ops)
	for _, op := range ordered {
		if op.Kind == OpFlush || (include != nil && !include(op)) {
			continue
		}
		if err := applyOp(f, size, op); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// sortedBySeq returns ops in Seq order, copying only when they are not.
func sortedBySeq(ops []Op) []Op {
	if sort.SliceIsSorted(ops, func(i, j int) bool { return ops[i].Seq < ops[j].Seq }) {
		return ops
	}
	c := append([]Op(nil), ops...)
	sort.SliceStable(c, func(i, j int) bool { return c[i].Seq < c[j].Seq })
	return c
}

// opRange returns the byte range [off, end) an op changes.
func opRange(op Op) (off, end int64) {
	if op.Kind == OpWrite {
		return op.Off, op.Off + int64(len(op.Data))
	}
	return op.Off, op.Off + op.Len
}

func checkRange(size int64, op Op) error {
	off, end := opRange(op)
	if op.Kind == OpWrite && op.Len != 0 && op.Len != int64(len(op.Data)) {
		return fmt.Errorf("op %d: write of %d bytes says Len %d", op.Seq, len(op.Data), op.Len)
	}
	if off < 0 || end < off || end > size {
		return fmt.Errorf("op %d (%v) covers [%d, %d), outside the %d-byte image", op.Seq, op.Kind, off, end, size)
	}
	return nil
}

// applyOp applies the whole of op to f.
func applyOp(f *os.File, size int64, op Op) error {
	if err := checkRange(size, op); err != nil {
		return err
	}
	off, end := opRange(op)
	return applyRange(f, op, off, end)
}

// applyRange applies the part [off, end) of op to f; the range must lie
// inside the op's own range.
func applyRange(f *os.File, op Op, off, end int64) error {
	if end <= off {
		return nil
	}
	switch op.Kind {
	case OpWrite:
		_, err := f.WriteAt(op.Data[off-op.Off:end-op.Off], off)
		return err
	case OpDiscard, OpZero:
		return zeroRange(f, off, end)
	}
	return fmt.Errorf("op %d: cannot apply %v", op.Seq, op.Kind)
}

// zeroRange makes [off, end) of f read as zeros: a hole punch where the file
// system supports it, else written zeros.
func zeroRange(f *os.File, off, end int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("punch a hole at [%d, %d) of %s: %w", off, end, f.Name(), err)
	}
	zeros := make([]byte, min(end-off, 1<<20))
	for off < end {
		n := min(end-off, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

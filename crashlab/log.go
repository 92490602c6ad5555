package crashlab

// The log file. It starts with an 8-byte file magic, then holds one record
// per Op, in Seq order:
//
//	offset size field
//	0      4    record magic (logRecordMagic, little endian)
//	4      1    kind (OpKind)
//	5      3    zero
//	8      8    seq
//	16     8    off
//	24     8    len (range length; for a write, the data length)
//	32     4    data length (bytes that follow the header)
//	36     4    CRC-32C over the 40-byte header with this field zero, then the data
//	40     n    data
//
// A record is written with one write(2), so a recorder that dies leaves at
// most one torn record, at the end. ReadLog stops there and says how many
// bytes it ignored; it never guesses past a bad record.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
)

const (
	logFileMagic    = "FPCLOG1\n"
	logRecordMagic  = 0x4c435046 // "FPCL"
	logHeaderBytes  = 40
	logMaxDataBytes = 1 << 30 // a sanity bound: no single write is this large
)

var logCRCTable = crc32.MakeTable(crc32.Castagnoli)

// ErrLogFull is returned by LogWriter.Append when the record would make the
// log larger than its bound. The log stays full: every later Append fails
// too, so no operation after a lost one is ever logged.
var ErrLogFull = errors.New("crash lab log is full")

// ErrSeqGap is returned (wrapped) by ReadLog when a record's Seq is not one
// more than the previous record's, and by Append for the same mistake.
var ErrSeqGap = errors.New("gap in the log's sequence numbers")

// TornTailError is returned by ReadLog when the log ends in a record that is
// incomplete or fails its checks: what a recorder killed in the middle of
// an Append leaves. The Ops returned with it are every record before the
// bad one, all intact, so a caller that accepts a torn tail uses them.
type TornTailError struct {
	Path    string
	Offset  int64  // where the bad record starts
	Ignored int64  // bytes from Offset to the end of the file
	Reason  string // what was wrong with the record
}

func (e *TornTailError) Error() string {
	return fmt.Sprintf("crash lab log %s: torn or corrupt record at byte %d (%s); ignored the last %d bytes",
		e.Path, e.Offset, e.Reason, e.Ignored)
}

// LogWriter appends Ops to a log file. It is safe for concurrent use; the
// caller numbers the Ops and must append them in Seq order (1, 2, ...),
// which a caller with many goroutines gets by numbering and appending
// under one lock.
type LogWriter struct {
	path     string
	maxBytes int64

	mu      sync.Mutex
	file    *os.File
	size    int64  // bytes in the file
	lastSeq uint64 // Seq of the last record appended
	err     error  // sticky: ErrLogFull or a failed write
	buf     []byte
}

// NewLogWriter creates a new log file at path (it must not exist) that never
// grows past maxBytes, the file magic included.
func NewLogWriter(path string, maxBytes int64) (*LogWriter, error) {
	if maxBytes < int64(len(logFileMagic)) {
		return nil, fmt.Errorf("create crash lab log %s: bound %d bytes is smaller than the %d-byte file header", path, maxBytes, len(logFileMagic))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create crash lab log: %w", err)
	}
	if _, err := f.Write([]byte(logFileMagic)); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("write crash lab log header %s: %w", path, err)
	}
	return &LogWriter{path: path, maxBytes: maxBytes, file: f, size: int64(len(logFileMagic))}, nil
}

// Path is the log file's path.
func (w *LogWriter) Path() string { return w.path }

// Size is the log file's size in bytes.
func (w *LogWriter) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// Append writes op as one record. op.Seq must be one more than the last
// appended Seq (1 for the first). It returns an error wrapping ErrLogFull,
// and logs nothing, if the record would make the file larger than the
// bound; after that, or after a failed write, every Append fails.
func (w *LogWriter) Append(op Op) error {
	if err := checkOp(op); err != nil {
		return fmt.Errorf("append to crash lab log %s: %w", w.path, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.file == nil:
		return fmt.Errorf("append to crash lab log %s: %w", w.path, os.ErrClosed)
	case w.err != nil:
		return w.err
	case op.Seq != w.lastSeq+1:
		return fmt.Errorf("append to crash lab log %s: op %d after op %d: %w", w.path, op.Seq, w.lastSeq, ErrSeqGap)
	}
	n := int64(logHeaderBytes + len(op.Data))
	if w.size+n > w.maxBytes {
		w.err = fmt.Errorf("append %s op %d (%d bytes) to crash lab log %s at %d of %d bytes: %w",
			op.Kind, op.Seq, n, w.path, w.size, w.maxBytes, ErrLogFull)
		return w.err
	}
	w.buf = encodeRecord(w.buf[:0], op)
	if _, err := w.file.Write(w.buf); err != nil {
		w.err = fmt.Errorf("append op %d to crash lab log %s: %w", op.Seq, w.path, err)
		return w.err
	}
	w.size += n
	w.lastSeq = op.Seq
	return nil
}

// Sync makes the records appended so far durable (fdatasync).
func (w *LogWriter) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return fmt.Errorf("sync crash lab log %s: %w", w.path, os.ErrClosed)
	}
	if err := w.file.Sync(); err != nil {
		return fmt.Errorf("sync crash lab log %s: %w", w.path, err)
	}
	return nil
}

// Close syncs and closes the log file. A second Close returns nil.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return nil
	}
	err := w.file.Sync()
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	w.file = nil
	if err != nil {
		return fmt.Errorf("close crash lab log %s: %w", w.path, err)
	}
	return nil
}

func checkOp(op Op) error {
	switch {
	case op.Kind < OpWrite || op.Kind > OpZero:
		return fmt.Errorf("op %d: unknown kind %s", op.Seq, op.Kind)
	case op.Off < 0 || op.Len < 0:
		return fmt.Errorf("op %d: negative range [%d, +%d)", op.Seq, op.Off, op.Len)
	case op.Kind == OpWrite && op.Len != int64(len(op.Data)):
		return fmt.Errorf("op %d: write Len %d but %d bytes of data", op.Seq, op.Len, len(op.Data))
	case op.Kind != OpWrite && len(op.Data) != 0:
		return fmt.Errorf("op %d: %s carries %d bytes of data", op.Seq, op.Kind, len(op.Data))
	case len(op.Data) > logMaxDataBytes:
		return fmt.Errorf("op %d: %d bytes of data is more than a record holds", op.Seq, len(op.Data))
	}
	return nil
}

func encodeRecord(b []byte, op Op) []byte {
	var h [logHeaderBytes]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], logRecordMagic)
	h[4] = byte(op.Kind)
	le.PutUint64(h[8:], op.Seq)
	le.PutUint64(h[16:], uint64(op.Off))
	le.PutUint64(h[24:], uint64(op.Len))
	le.PutUint32(h[32:], uint32(len(op.Data)))
	crc := crc32.Update(crc32.Checksum(h[:], logCRCTable), logCRCTable, op.Data)
	le.PutUint32(h[36:], crc)
	b = append(b, h[:]...)
	return append(b, op.Data...)
}

// ReadLog reads the log at path. A log that ends in an incomplete or
// corrupt record returns the records before it together with a
// *TornTailError saying how many bytes were ignored. A record whose Seq
// does not follow its predecessor's is an error wrapping ErrSeqGap; it and
// a bad file header return no Ops.
func ReadLog(path string) ([]Op, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read crash lab log: %w", err)
	}
	return parseLog(path, raw)
}

// parseLog reads a log's bytes, as ReadLog does; path names it in errors.
func parseLog(path string, raw []byte) ([]Op, error) {
	if len(raw) < len(logFileMagic) || string(raw[:len(logFileMagic)]) != logFileMagic {
		return nil, fmt.Errorf("read crash lab log %s: not a crash lab log (bad file header): %w", path, io.ErrUnexpectedEOF)
	}
	le := binary.LittleEndian
	var ops []Op
	pos := int64(len(logFileMagic))
	torn := func(reason string) ([]Op, error) {
		return ops, &TornTailError{Path: path, Offset: pos, Ignored: int64(len(raw)) - pos, Reason: reason}
	}
	for pos < int64(len(raw)) {
		rest := raw[pos:]
		if len(rest) < logHeaderBytes {
			return torn(fmt.Sprintf("%d of %d header bytes", len(rest), logHeaderBytes))
		}
		var h [logHeaderBytes]byte
		copy(h[:], rest[:logHeaderBytes])
		if le.Uint32(h[0:]) != logRecordMagic {
			return torn("bad record magic")
		}
		dataLen := int64(le.Uint32(h[32:]))
		if int64(len(rest)) < logHeaderBytes+dataLen {
			return torn(fmt.Sprintf("%d of %d data bytes", int64(len(rest))-logHeaderBytes, dataLen))
		}
		data := rest[logHeaderBytes : logHeaderBytes+dataLen]
		want := le.Uint32(h[36:])
		le.PutUint32(h[36:], 0)
		if got := crc32.Update(crc32.Checksum(h[:], logCRCTable), logCRCTable, data); got != want {
			return torn(fmt.Sprintf("CRC %#08x, header says %#08x", got, want))
		}
		op := Op{
			Seq:  le.Uint64(h[8:]),
			Kind: OpKind(h[4]),
			Off:  int64(le.Uint64(h[16:])),
			Len:  int64(le.Uint64(h[24:])),
		}
		if dataLen > 0 {
			op.Data = append([]byte(nil), data...)
		}
		if err := checkOp(op); err != nil {
			// The CRC matched, so this is what was written: a bug, not a tear.
			return nil, fmt.Errorf("read crash lab log %s: record at byte %d: %w", path, pos, err)
		}
		if want := uint64(len(ops)) + 1; op.Seq != want {
			return nil, fmt.Errorf("read crash lab log %s: record at byte %d is op %d, expected op %d: %w", path, pos, op.Seq, want, ErrSeqGap)
		}
		ops = append(ops, op)
		pos += logHeaderBytes + dataLen
	}
	return ops, nil
}

package impl

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/spec"
)

// DSyncMode is how a DSyncWriter makes each write durable.
type DSyncMode uint8

// The modes.
const (
	// FUA writes with spec.FUA: durable when the write completes. On a
	// device without native FUA the block layer emulates it with a
	// post-flush (block/blk-flush.c).
	FUA DSyncMode = iota + 1
	// WriteFlush writes, then flushes the cache: two commands, and the
	// flush also makes every other completed write durable.
	WriteFlush
)

func (m DSyncMode) String() string {
	switch m {
	case FUA:
		return "fua"
	case WriteFlush:
		return "write+flush"
	}
	return fmt.Sprintf("DSyncMode(%d)", uint8(m))
}

// DSyncWriter makes every write durable before it returns, as an O_DSYNC
// write() does (the patch "block: skip redundant flush for O_DSYNC direct
// writes" compares the two ways for O_DIRECT writes to a block device). Its device must be safe for
// concurrent use if the writer is.
type DSyncWriter struct {
	Dev   spec.Device
	Mode  DSyncMode
	fault implfault.Fault // a deliberate bug (internal/implfault); None in real use
	_     struct{}
}

// withFault returns the writer with the deliberate bug f (DropFUA): a
// negative control for the checker (internal/implfault), never for real
// data.
func (w DSyncWriter) withFault(f implfault.Fault) DSyncWriter {
	w.fault = f
	return w
}

// WriteAt writes p at off and returns once it is durable.
func (w DSyncWriter) WriteAt(p []byte, off int64) error {
	switch w.Mode {
	case FUA:
		if w.fault == implfault.DropFUA {
			return w.Dev.WriteAt(p, off, 0)
		}
		return w.Dev.WriteAt(p, off, spec.FUA)
	case WriteFlush:
		// A failed write is not covered by the flush after it (a flush
		// makes durable only the writes that completed): its error is
		// the result, whatever the flush would say.
		if err := w.Dev.WriteAt(p, off, 0); err != nil && !mutate.On(mutate.DSyncIgnoresWriteError) {
			return err
		}
		return w.Dev.Flush()
	}
	return fmt.Errorf("dsync writer: unknown mode %v", w.Mode)
}

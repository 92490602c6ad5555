// Package crashlab records the block I/O a real kernel sends to a device
// and replays the states a crash may leave (docs/crashlab.md): a FUSE
// server exposes one image file, a loop device with direct I/O sits on it,
// and every write, flush and discard the server sees is logged in an order
// that is safe to replay.
package crashlab

import "fmt"

// OpKind is what a logged operation did to the image.
type OpKind uint8

// The operations.
const (
	// OpWrite wrote Data at Off. It is logged once the backing write
	// finished, so its number orders it after every write it could
	// depend on.
	OpWrite OpKind = iota + 1
	// OpFlush is a cache flush (FUSE FSYNC): it covers every write numbered
	// before it.
	OpFlush
	// OpDiscard discarded [Off, Off+Len) (FALLOCATE with PUNCH_HOLE): the
	// range reads as zeros afterwards.
	OpDiscard
	// OpZero zeroed [Off, Off+Len) (FALLOCATE with ZERO_RANGE).
	OpZero
)

func (k OpKind) String() string {
	switch k {
	case OpWrite:
		return "write"
	case OpFlush:
		return "flush"
	case OpDiscard:
		return "discard"
	case OpZero:
		return "zero"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one logged operation. Seq numbers the log from 1 without gaps.
type Op struct {
	Seq  uint64
	Kind OpKind
	Off  int64
	Len  int64  // OpDiscard, OpZero: the range's length; OpWrite: len(Data)
	Data []byte // OpWrite
}

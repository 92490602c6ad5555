// Counting wraps a spec.Device and counts what is asked of it, so that a
// benchmark can report cache flushes issued per operation: the number a
// "skip this flush" change is meant to lower.

package impl

import (
	"sync/atomic"

	"github.com/flushproof/flushproof/spec"
)

var _ spec.Device = (*Counting)(nil)

// Counts are the calls a Counting device has seen. A call is counted when it
// is made, whether or not it then fails.
type Counts struct {
	Writes    int64 // WriteAt calls, FUA or not
	FUAWrites int64 // WriteAt calls with spec.FUA (a subset of Writes)
	Flushes   int64 // Flush calls
	Reads     int64 // ReadAt calls
}

// Sub returns c minus before: the calls made between two snapshots.
func (c Counts) Sub(before Counts) Counts {
	return Counts{
		Writes:    c.Writes - before.Writes,
		FUAWrites: c.FUAWrites - before.FUAWrites,
		Flushes:   c.Flushes - before.Flushes,
		Reads:     c.Reads - before.Reads,
	}
}

// Counting is a spec.Device that passes every call to Device and counts it.
// It is safe for concurrent use if Device is. BlockSize is passed through
// uncounted.
type Counting struct {
	spec.Device

	writes, fuaWrites, flushes, reads atomic.Int64
}

// NewCounting returns a Counting over dev with all counts zero.
func NewCounting(dev spec.Device) *Counting { return &Counting{Device: dev} }

// WriteAt counts a write (and a FUA write if fl has spec.FUA) and passes it on.
func (c *Counting) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	c.writes.Add(1)
	if fl&spec.FUA != 0 {
		c.fuaWrites.Add(1)
	}
	return c.Device.WriteAt(p, off, fl)
}

// Flush counts a flush and passes it on.
func (c *Counting) Flush() error {
	c.flushes.Add(1)
	return c.Device.Flush()
}

// ReadAt counts a read and passes it on.
func (c *Counting) ReadAt(p []byte, off int64) error {
	c.reads.Add(1)
	return c.Device.ReadAt(p, off)
}

// Counts returns the counts so far. Each field is read atomically, but calls
// running concurrently with Counts may be in some fields and not others.
func (c *Counting) Counts() Counts {
	return Counts{
		Writes:    c.writes.Load(),
		FUAWrites: c.fuaWrites.Load(),
		Flushes:   c.flushes.Load(),
		Reads:     c.reads.Load(),
	}
}

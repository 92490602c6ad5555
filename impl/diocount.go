package impl

import (
	"fmt"

	"github.com/flushproof/flushproof/spec"
)

// DIOCounter counts direct I/O in flight on a file, as inode_dio_begin /
// inode_dio_end do on i_dio_count, so that truncate can wait for it to
// drain (inode_dio_wait) before it frees blocks. docs/diocount.md checks
// when a caller may skip the inner count (the patch "ext4: Add
// DIO_SKIP_DIO_COUNT flag to dax_do_io()").
type DIOCounter struct {
	count   spec.Word
	queue   spec.WaitQueue
	drained *uint64 // times the count reached zero; under the queue's lock
}

// NewDIOCounter returns a counter over count (which must hold 0) and queue.
func NewDIOCounter(count spec.Word, queue spec.WaitQueue) (*DIOCounter, error) {
	if count == nil || queue == nil {
		return nil, fmt.Errorf("dio counter: a word and a wait queue are needed")
	}
	return &DIOCounter{count: count, queue: queue, drained: new(uint64)}, nil
}

// Bind returns a counter that shares c's drain count but acts through
// other handles on the same word and wait queue (each task of the model
// world has its own handles).
func (c *DIOCounter) Bind(count spec.Word, queue spec.WaitQueue) *DIOCounter {
	return &DIOCounter{count: count, queue: queue, drained: c.drained}
}

// Begin is inode_dio_begin.
func (c *DIOCounter) Begin() { c.count.IncReturn() }

// End is inode_dio_end: the count drops, and waiters are woken when it
// reaches zero.
func (c *DIOCounter) End() {
	for {
		n := c.count.Load()
		if n <= 0 {
			panic("impl: DIOCounter.End without Begin")
		}
		if c.count.CompareAndSwap(n, n-1) {
			if n == 1 {
				c.queue.Wake(func() { *c.drained++ })
			}
			return
		}
	}
}

// Wait is inode_dio_wait: it returns once no direct I/O is in flight. New
// I/O must be kept from starting (truncate holds the inode lock) for the
// answer to stay true. It reads the counter outside the queue's condition
// (a wait condition reads only state kept under the queue's lock), so a
// drain between the read and the sleep is seen through the drain count.
func (c *DIOCounter) Wait() {
	for {
		var seen uint64
		c.queue.Wake(func() { seen = *c.drained })
		if c.count.Load() == 0 {
			return
		}
		c.queue.Wait(func() bool { return *c.drained != seen })
	}
}

// Drained returns how many times the count reached zero: state kept under
// the queue's lock (a model's encoding of the state its tasks share reads
// it).
func (c *DIOCounter) Drained() uint64 { return *c.drained }

// InFlight returns the count (unordered, for statistics).
func (c *DIOCounter) InFlight() int64 { return c.count.Load() }

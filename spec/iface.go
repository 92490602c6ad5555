package spec

// The interfaces below are the seam between the model world and the real
// one (docs/impl.md, "The seam"): protocol code written against them runs
// unchanged over a simulated device and memory model (model/) and over a
// Linux file or block device and sync/atomic (impl/).

// WriteFlags modify a write.
type WriteFlags uint8

// FUA asks for the write to be durable when it completes (REQ_FUA; from user
// space, pwritev2 with RWF_DSYNC on a file opened O_DIRECT).
const FUA WriteFlags = 1 << 0

// Preflush asks for the device's cache to be flushed before the data is
// written (REQ_PREFLUSH on a write; blk-flush.c runs the PREFLUSH step before
// the DATA step): when the write completes successfully, every write that
// completed before WriteAt was called is durable. With FUA too, the write
// itself is durable then.
const Preflush WriteFlags = 1 << 1

// Device is a block device or file with a volatile write cache.
type Device interface {
	// WriteAt returns once the write completed; with FUA, it is durable then.
	WriteAt(p []byte, off int64, fl WriteFlags) error
	// Flush returns once a cache flush completed: every write that completed
	// before Flush was called is durable.
	Flush() error
	// ReadAt fills p from offset off.
	ReadAt(p []byte, off int64) error
	// BlockSize is the unit of atomicity and alignment, in bytes.
	BlockSize() int
}

// Word is an atomic64_t (Documentation/atomic_t.txt).
type Word interface {
	Load() int64                        // atomic64_read: unordered
	IncReturn() int64                   // atomic64_inc_return: fully ordered
	CompareAndSwap(old, new int64) bool // atomic64_try_cmpxchg: fully ordered on success only
}

// Fence is smp_mb(). Over sync/atomic, which is sequentially consistent, it
// is a no-op.
type Fence interface{ Full() }

// WaitQueue is a wait queue with its lock (wait_event / wake_up): protocol
// state that lives outside the atomic words, such as which flushes are in
// flight, is changed under Wake and waited on with Wait.
type WaitQueue interface {
	// Wake runs change under the queue's lock, then wakes every waiter so
	// that it re-evaluates its condition.
	Wake(change func())
	// Wait sleeps until cond, evaluated under the queue's lock, holds; it
	// returns at once if cond already holds. Going to sleep and being woken
	// imply a full barrier (memory-barriers.txt, "Sleep and wake-up
	// functions"), and so does Wait when it does not sleep.
	Wait(cond func() bool)
}

package spec

// The interfaces below are the seam between the model world and the real
// one (DESIGN.md, "The shared interface"): protocol code written against them
// runs unchanged over a simulated device and memory model (model/) and over
// a Linux file or block device and sync/atomic (impl/).

// WriteFlags modify a write.
type WriteFlags uint8

// FUA asks for the write to be durable when it completes (REQ_FUA; from user
// space, pwritev2 with RWF_DSYNC on a file opened O_DIRECT).
const FUA WriteFlags = 1 << 0

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

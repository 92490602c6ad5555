// Word and Fence are spec.Word and spec.Fence over sync/atomic: the memory
// half of the real world, as File is its device half.

package impl

import (
	"sync/atomic"

	"github.com/flushproof/flushproof/spec"
)

var (
	_ spec.Word  = (*Word)(nil)
	_ spec.Fence = Fence{}
	_ spec.Fence = (*Fence)(nil)
)

// Word is an atomic64_t over sync/atomic. The zero value holds 0. Every
// operation is sequentially consistent (the Go memory model: all atomic
// operations behave as if executed in one sequentially consistent order),
// which is at least as strong as what spec.Word asks of each: atomic64_read
// may be unordered, atomic64_try_cmpxchg is ordered only on success. A Word
// must not be copied after first use.
type Word struct{ v atomic.Int64 }

// Load returns the value (atomic64_read).
func (w *Word) Load() int64 { return w.v.Load() }

// Store sets the value (atomic64_set). It is not part of spec.Word; it sets
// up initial state, e.g. in tests.
func (w *Word) Store(v int64) { w.v.Store(v) }

// IncReturn adds one and returns the new value (atomic64_inc_return).
func (w *Word) IncReturn() int64 { return w.v.Add(1) }

// CompareAndSwap sets the value to new if it is old, and reports whether it
// did (atomic64_try_cmpxchg, without writing back the value seen).
func (w *Word) CompareAndSwap(old, new int64) bool { return w.v.CompareAndSwap(old, new) }

// Fence is smp_mb() over sync/atomic, and its Full is a no-op: Go's atomic
// operations are already sequentially consistent (the Go memory model,
// "Atomic Values"), so no store-load reordering between them is left to
// forbid. This holds only for shared state accessed through sync/atomic,
// such as Word; plain memory shared between goroutines needs a
// happens-before edge (a channel, a mutex, an atomic), not a Fence.
type Fence struct{}

// Full is smp_mb(); see Fence for why it does nothing.
func (Fence) Full() {}

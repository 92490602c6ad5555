package diocount

import (
	"fmt"

	"github.com/flushproof/flushproof/model/memory"
)

// i_dio_count and i_mutex over Memory. The counter is one location; each
// task, the device (dio_complete of an AIO) and i_mutex are threads.
// i_mutex is a thread that never runs: under Relaxed its view is what the
// last holder saw when it let go (release), and a task that takes the lock
// raises its view to it (acquire). Truncate is the only task that reads the
// counter with plain loads, so only i_mutex's view (until truncate takes the
// lock) and then truncate's keep old stores alive.

const (
	locCount    = 0                     // i_dio_count
	mutexThread = memory.MaxThreads - 1 // i_mutex
)

// counted is one result of counterRMW: the counter's new value.
type counted struct {
	v   int64
	mem memory.Memory
	alt memory.Alt
}

// counterRMW is inode_dio_begin (delta +1: atomic_inc, unordered) or
// inode_dio_end (delta -1: atomic_dec_and_test, fully ordered) by thread t.
// Under TSO both are locked instructions, which drain the store buffer.
// Under LKMM it has one result per store it may read and per pending
// barrier that may complete first (memory.LKMM); otherwise one.
func counterRMW(m memory.Memory, t int, delta int64) []counted {
	if m.Model() == memory.LKMM {
		rmw := m.RMWUnordered
		if delta < 0 {
			rmw = m.RMW
		}
		rs, err := rmw(t, locCount, func(old int64) (int64, bool) { return old + delta, true })
		if err != nil {
			panic(fmt.Sprintf("diocount model: %v (raise the memory bounds)", err))
		}
		out := make([]counted, len(rs))
		for i, r := range rs {
			out[i] = counted{r.New, r.Mem, r.Alt}
		}
		return out
	}
	v, m := counterRMWOne(m, t, delta)
	return []counted{{v, m, 0}}
}

func counterRMWOne(m memory.Memory, t int, delta int64) (int64, memory.Memory) {
	ordered := delta < 0
	if ordered {
		m = m.Fence(t)
	}
	if m.Model() == memory.TSO {
		m = m.Drain(t)
	}
	v := int64(m.Newest(locCount)) + delta
	m, err := m.StoreVisible(t, locCount, v) // Relaxed: appended, and t's view moves to it
	if err != nil {
		panic(fmt.Sprintf("diocount model: %v (raise the memory bounds)", err))
	}
	if ordered {
		m = m.Fence(t)
	}
	return v, m
}

// release is inode_unlock by thread t: i_mutex takes t's view of the
// counter (Relaxed; under SC and TSO there is nothing to carry).
func (s *System) release(m memory.Memory, t int) memory.Memory {
	if s.unorderedLock {
		return m
	}
	m.JoinView(mutexThread, t, locCount)
	return m
}

// acquire is inode_lock by thread t: t's view of the counter rises to
// i_mutex's.
func acquire(m memory.Memory, t int) memory.Memory {
	m.JoinView(t, mutexThread, locCount)
	return m
}

// truncateAcquires is inode_lock by truncate, the one task that reads the
// counter with plain loads: its view rises to i_mutex's and it becomes the
// counter's only reader (i_mutex's view is not taken by anyone who reads
// any more).
func truncateAcquires(m memory.Memory, t int) memory.Memory {
	m.AddReader(locCount, t, mutexThread)
	m.SetReaders(locCount, 1<<t)
	return m
}

// withReaders narrows who may still read the counter with a plain load.
func withReaders(m memory.Memory, threads uint8) memory.Memory {
	m.SetReaders(locCount, threads)
	return m
}

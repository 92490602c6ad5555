package memory

import "fmt"

// x86-TSO: a FIFO store buffer per thread (Memory.buf); a thread's loads
// read its own newest buffered store first; the memory drains a buffer
// one store at a time as a step of its own (Steps).

type bufEntry struct{ loc, val int8 }

// loadTSO is a load under TSO: t's own newest buffered store to loc, else
// memory.
func (m *Memory) loadTSO(t, loc int) int64 {
	for i := int(m.bufN[t]) - 1; i >= 0; i-- {
		if e := m.buf[t][i]; int(e.loc) == loc {
			return int64(e.val)
		}
	}
	return int64(m.Newest(loc))
}

// drain moves every buffered store of t to memory, oldest first (TSO).
func (m Memory) Drain(t int) Memory {
	for m.bufN[t] > 0 {
		m = m.flushOne(t)
	}
	return m
}

func (m Memory) flushOne(t int) Memory {
	e := m.buf[t][0]
	m.vals[e.loc][0] = e.val
	copy(m.buf[t][:], m.buf[t][1:])
	m.bufN[t]--
	m.buf[t][m.bufN[t]] = bufEntry{}
	return m
}

// Buffered reports whether thread t has stores waiting (TSO).
func (m *Memory) Buffered(t int) bool { return m.bufN[t] > 0 }

// Steps calls yield for each step the memory system may take on its own:
// under TSO, a thread's oldest buffered store reaching memory.
func (m Memory) Steps(yield func(t int, next Memory)) {
	if m.model != TSO {
		return
	}
	for t := range m.bufN {
		if m.bufN[t] > 0 {
			yield(t, m.flushOne(t))
		}
	}
}

// BufferLen is the number of stores in thread t's store buffer (TSO).
func (m *Memory) BufferLen(t int) int { return int(m.bufN[t]) }

// storeTSO puts a store in t's store buffer; it fails if the buffer is
// full.
func (m Memory) storeTSO(t, loc int, v int64) (Memory, error) {
	if m.bufN[t] == MaxBuffered {
		return m, fmt.Errorf("memory: store buffer of thread %d is full", t)
	}
	m.buf[t][m.bufN[t]] = bufEntry{int8(loc), int8(v)}
	m.bufN[t]++
	return m, nil
}

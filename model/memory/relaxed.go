package memory

import "fmt"

// Relaxed: per location, the stores some reader may still read, oldest
// first, and per thread a view of each location; stores older than every
// reader's view are dropped (compact), so equal futures give equal states.

// append adds a store at the end of loc's modification order (Relaxed).
func (m Memory) append(t, loc int, v int64) (Memory, error) {
	if m.n[loc] == MaxStores {
		return m, fmt.Errorf("memory: more than %d live stores to location %d", MaxStores, loc)
	}
	m.vals[loc][m.n[loc]] = int8(v)
	m.n[loc]++
	m.view[t][loc] = m.n[loc] - 1 // a thread reads its own newest store
	m.compact(loc)
	return m, nil
}

// compact drops the stores to loc that no reader can read any more.
func (m *Memory) compact(loc int) {
	low := m.n[loc] - 1
	for t := 0; t < MaxThreads; t++ {
		if m.readers[loc]&(1<<t) != 0 && m.view[t][loc] < low {
			low = m.view[t][loc]
		}
	}
	if low == 0 {
		return
	}
	copy(m.vals[loc][:], m.vals[loc][low:m.n[loc]])
	for i := m.n[loc] - low; i < m.n[loc]; i++ {
		m.vals[loc][i] = 0
	}
	m.n[loc] -= low
	for t := 0; t < MaxThreads; t++ {
		if m.view[t][loc] >= low {
			m.view[t][loc] -= low
		} else {
			m.view[t][loc] = 0
		}
	}
}

// loadRelaxed is a plain load under Relaxed: one result per store t's
// view lets it read, the view raised to it.
func (m Memory) loadRelaxed(t, loc int) []Loaded {
	var out []Loaded
	for i := int(m.view[t][loc]); i < int(m.n[loc]); i++ {
		next := m
		next.view[t][loc] = uint8(i)
		next.compact(loc)
		out = append(out, Loaded{int64(m.vals[loc][i]), next, 0})
	}
	return out
}

// fenceRelaxed is a full barrier under Relaxed: t's view of every
// location rises to its newest store.
func (m Memory) fenceRelaxed(t int) Memory {
	for loc := range m.view[t] {
		m.view[t][loc] = m.n[loc] - 1
		m.compact(loc)
	}
	return m
}

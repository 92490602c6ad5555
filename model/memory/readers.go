package memory

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"
)

// The seams a protocol's reductions use, under every model: the readers
// of a location (New), the views a lock passes on, and renaming threads
// and locations (Permuted).

// permuted renames threads and locations: new thread i is old thread
// threads[i], new location l is old location locs[l] (both permutations of
// 0..n-1 over every index). Symmetry reduction uses it.
func (m Memory) Permuted(threads *[MaxThreads]int, locs *[MaxLocations]int) Memory {
	out := m
	var inv [MaxLocations]int8
	for l := 0; l < MaxLocations; l++ {
		inv[locs[l]] = int8(l)
		out.vals[l], out.n[l] = m.vals[locs[l]], m.n[locs[l]]
		var r uint8
		for i := 0; i < MaxThreads; i++ {
			if m.readers[locs[l]]&(1<<threads[i]) != 0 {
				r |= 1 << i
			}
		}
		out.readers[l] = r
	}
	for i := 0; i < MaxThreads; i++ {
		for l := 0; l < MaxLocations; l++ {
			out.view[i][l] = m.view[threads[i]][locs[l]]
		}
		out.buf[i], out.bufN[i] = m.buf[threads[i]], m.bufN[threads[i]]
		for k := 0; k < int(out.bufN[i]); k++ {
			out.buf[i][k].loc = inv[out.buf[i][k].loc]
		}
	}
	if m.model == LKMM {
		w, o := m.open(), out.open()
		w.lkPermuted(&o, threads, locs)
		out = o.close()
	}
	return out
}

// View is thread t's view of loc under Relaxed: the index, among loc's live
// stores (oldest first), of the oldest store t may still read. Symmetry
// reductions key states by it; it is 0 under SC and TSO.
func (m *Memory) View(t, loc int) uint8 {
	if m.model == LKMM {
		return lkRef(m.scope, m.ext).cur[t].at(loc)
	}
	return m.view[t][loc]
}

// Live returns loc's live stores, oldest first (one under SC and TSO).
func (m *Memory) Live(loc int) []int8 { return m.vals[loc][:m.n[loc]] }

// JoinView raises thread dst's view of loc to thread src's (Relaxed only):
// a lock modelled as a thread that never runs passes the view of its last
// holder on to the next one (release, then acquire). A view that
// compaction raised to the oldest live store is still exact here: the
// join is a maximum, and every reader's view is at least that store.
func (m *Memory) JoinView(dst, src, loc int) {
	if mutate.On(mutate.JoinViewLost) {
		return
	}
	switch m.model {
	case Relaxed:
		m.view[dst][loc] = max(m.view[dst][loc], m.view[src][loc])
		m.compact(loc)
	case LKMM:
		if m.post&(1<<dst|1<<src) != 0 {
			panic(fmt.Sprintf("memory: JoinView(%d, %d) under LKMM with a barrier of either pending: Settle it first (it has more than one result)", dst, src))
		}
		w := m.open()
		w.cur[dst] = w.cur[dst].with(loc, max(w.cur[dst].at(loc), w.cur[src].at(loc)))
		w.acq[dst] = w.acq[dst].join(w.cur[dst])
		w.lkCompact(loc)
		*m = w.close()
	}
}

// AddReader makes dst a reader of loc (see New) by an acquire from src,
// which must be one: dst's view rises to src's (JoinView), so it is at
// least the oldest store any reader could read, and no store dropped
// before could be read by dst. It panics if src is not a reader.
func (m *Memory) AddReader(loc, dst, src int) {
	if m.readers[loc]&(1<<src) == 0 {
		panic(fmt.Sprintf("memory: thread %d joins location %d from thread %d, which is not one of its readers", dst, loc, src))
	}
	m.JoinView(dst, src, loc)
	m.readers[loc] |= 1 << dst
}

// Readers returns the threads (bit t) that are readers of loc (see New).
func (m *Memory) Readers(loc int) uint8 { return m.readers[loc] }

// SetReaders narrows the readers of loc (see New) to threads: the stores
// only the others' views kept alive are dropped. It panics if threads is
// not a subset of the readers (a thread becomes a reader only through
// AddReader): a store dropped already could not be given back.
func (m *Memory) SetReaders(loc int, threads uint8) {
	if threads&^m.readers[loc] != 0 {
		panic(fmt.Sprintf("memory: SetReaders(%d, %#b) adds readers to %#b; use AddReader", loc, threads, m.readers[loc]))
	}
	m.readers[loc] = threads
	if m.model == LKMM {
		w := m.open()
		w.lkCompact(loc)
		*m = w.close()
		return
	}
	m.compact(loc)
}

// DropReader removes thread t from the readers of every location: a thread
// that will take no step any more.
func (m *Memory) DropReader(t int) {
	for loc := range m.readers {
		if m.readers[loc]&(1<<t) != 0 {
			m.SetReaders(loc, m.readers[loc]&^(1<<t))
		}
	}
	if m.model == LKMM {
		m.lkForget(t)
	}
}

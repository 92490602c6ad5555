package memory

import "fmt"

// Model says how loads may see stores (docs/flushseq.md, "Memory ordering",
// describes the three).
type Model uint8

// The memory models.
const (
	// SC: every load reads the newest store.
	SC Model = iota + 1
	// TSO is x86-TSO: a thread's stores wait in its FIFO store buffer and
	// reach memory later; a load reads its own newest buffered store to the
	// location, else memory. Loads are not reordered with loads. Locked
	// read-modify-writes and smp_mb drain the buffer.
	TSO
	// Relaxed is LKMM-like and view-based (after the Promising semantics,
	// Kang et al., POPL 2017): each location keeps its stores in
	// modification order; each thread has a view per location, the oldest
	// store it may still read. A plain load may read any store not older
	// than the view and raises the view to it (coherence). smp_mb and fully
	// ordered read-modify-writes (atomic64_inc_return, a successful
	// cmpxchg: Documentation/atomic_t.txt) raise every view of the thread to
	// the newest store; a read-modify-write always reads the newest store;
	// a failed cmpxchg is unordered (it only raises that location's view).
	Relaxed
)

// Models lists the models, weakest last.
func Models() []Model { return []Model{SC, TSO, Relaxed} }

func (m Model) String() string {
	switch m {
	case SC:
		return "SC"
	case TSO:
		return "TSO"
	case Relaxed:
		return "Relaxed"
	}
	return fmt.Sprintf("MemoryModel(%d)", uint8(m))
}

// Bounds of a Memory value, which is a comparable fixed-size struct.
const (
	MaxLocations = 6 // atomic64 words
	MaxThreads   = 8 // threads (tasks, the device) that use memory
	MaxStores    = 8 // live stores per location (Relaxed)
	maxBuffered  = 4 // store buffer entries per thread (TSO)
)

// Memory is the state of a few atomic64 words under one memory model. Values
// are small integers (sequence numbers). The zero value is not ready: use
// New.
//
// Relaxed keeps, per location, the stores that some reader may still read,
// oldest first; stores older than every reader's view are dropped, so equal
// futures give equal states. SC and TSO keep one value per location; TSO adds
// a store buffer per thread.
type Memory struct {
	model   Model
	vals    [MaxLocations][MaxStores]int8
	n       [MaxLocations]uint8 // live stores (Relaxed); 1 otherwise
	view    [MaxThreads][MaxLocations]uint8
	readers [MaxLocations]uint8 // threads that ever load the location
	buf     [MaxThreads][maxBuffered]bufEntry
	bufN    [MaxThreads]uint8
}

type bufEntry struct{ loc, val int8 }

// New returns memory where every location holds 0. readers[l] is the
// set of threads (bit t) that may ever load location l: the views of other
// threads do not keep old stores alive.
func New(m Model, readers [MaxLocations]uint8) Memory {
	mem := Memory{model: m, readers: readers}
	for l := range mem.n {
		mem.n[l] = 1
	}
	return mem
}

// Model returns the memory model.
func (m *Memory) Model() Model { return m.model }

func (m *Memory) Newest(loc int) int8 { return m.vals[loc][m.n[loc]-1] }

// Loaded is one possible result of a load.
type Loaded struct {
	Val int64
	Mem Memory
}

// Load is a plain load (atomic64_read, READ_ONCE) by thread t. Under Relaxed
// it has one result per store the thread may read.
func (m Memory) Load(t, loc int) []Loaded {
	switch m.model {
	case TSO:
		for i := int(m.bufN[t]) - 1; i >= 0; i-- {
			if e := m.buf[t][i]; int(e.loc) == loc {
				return []Loaded{{int64(e.val), m}}
			}
		}
		return []Loaded{{int64(m.Newest(loc)), m}}
	case Relaxed:
		var out []Loaded
		for i := int(m.view[t][loc]); i < int(m.n[loc]); i++ {
			next := m
			next.view[t][loc] = uint8(i)
			next.compact(loc)
			out = append(out, Loaded{int64(m.vals[loc][i]), next})
		}
		return out
	}
	return []Loaded{{int64(m.Newest(loc)), m}}
}

// LoadNewest is a load that reads the newest store (a thread that waits for
// a value until it sees it), raising only that location's view.
func (m Memory) LoadNewest(t, loc int) (int64, Memory) {
	if m.model == TSO {
		return m.Load(t, loc)[0].Val, m
	}
	if m.model == Relaxed {
		m.view[t][loc] = m.n[loc] - 1
		m.compact(loc)
	}
	return int64(m.Newest(loc)), m
}

// Store is a plain store (atomic64_set, WRITE_ONCE) by thread t. Under TSO
// it waits in the store buffer; it fails only if the buffer is full.
func (m Memory) Store(t, loc int, v int64) (Memory, error) {
	switch m.model {
	case TSO:
		if m.bufN[t] == maxBuffered {
			return m, fmt.Errorf("memory: store buffer of thread %d is full", t)
		}
		m.buf[t][m.bufN[t]] = bufEntry{int8(loc), int8(v)}
		m.bufN[t]++
		return m, nil
	case Relaxed:
		return m.append(t, loc, v)
	}
	m.vals[loc][0] = int8(v)
	return m, nil
}

// StoreVisible is a store that other threads can see at once: under TSO it
// bypasses the store buffer (used for the device's completion words: a
// buffered completion is the same as a later completion). Otherwise it is
// Store.
func (m Memory) StoreVisible(t, loc int, v int64) (Memory, error) {
	if m.model == TSO {
		m.vals[loc][0] = int8(v)
		return m, nil
	}
	return m.Store(t, loc, v)
}

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

// Fence is smp_mb() by thread t.
func (m Memory) Fence(t int) Memory {
	switch m.model {
	case TSO:
		return m.Drain(t)
	case Relaxed:
		for loc := range m.view[t] {
			m.view[t][loc] = m.n[loc] - 1
			m.compact(loc)
		}
	}
	return m
}

// IncReturn is atomic64_inc_return: fully ordered, it returns the new value.
func (m Memory) IncReturn(t, loc int) (int64, Memory, error) {
	m = m.Fence(t)
	v := int64(m.Newest(loc)) + 1
	m, err := m.orderedStore(t, loc, v)
	return v, m, err
}

// orderedStore is the store of a fully ordered read-modify-write: a full
// barrier before and after it, and it is visible at once.
func (m Memory) orderedStore(t, loc int, v int64) (Memory, error) {
	m = m.Fence(t)
	if m.model != Relaxed {
		m.vals[loc][0] = int8(v)
		return m, nil
	}
	m, err := m.append(t, loc, v)
	return m.Fence(t), err
}

// CompareAndSwap is atomic64_try_cmpxchg: if loc holds old, store new and
// report true (fully ordered); otherwise report false and the value seen,
// with no ordering under Relaxed. Under TSO a locked cmpxchg drains the
// store buffer either way.
func (m Memory) CompareAndSwap(t, loc int, old, new int64) (bool, int64, Memory, error) {
	if m.model == TSO {
		m = m.Drain(t)
	}
	cur := int64(m.Newest(loc))
	if cur != old {
		if m.model == Relaxed {
			m.view[t][loc] = m.n[loc] - 1 // an RMW reads the newest store
			m.compact(loc)
		}
		return false, cur, m, nil
	}
	m, err := m.orderedStore(t, loc, new)
	return true, cur, m, err
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

// permuted renames threads and locations: new thread i is old thread
// threads[i], new location l is old location locs[l] (both permutations of
// 0..n-1 over every index). Symmetry reduction uses it.
func (m Memory) Permuted(threads, locs *[MaxThreads]int) Memory {
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
	return out
}

// View is thread t's view of loc under Relaxed: the index, among loc's live
// stores (oldest first), of the oldest store t may still read. Symmetry
// reductions key states by it; it is 0 under SC and TSO.
func (m *Memory) View(t, loc int) uint8 { return m.view[t][loc] }

// Live returns loc's live stores, oldest first (one under SC and TSO).
func (m *Memory) Live(loc int) []int8 { return m.vals[loc][:m.n[loc]] }

// BufferLen is the number of stores in thread t's store buffer (TSO).
func (m *Memory) BufferLen(t int) int { return int(m.bufN[t]) }

// JoinView raises thread dst's view of loc to thread src's (Relaxed only):
// a lock modelled as a thread that never runs passes the view of its last
// holder on to the next one (release, then acquire).
func (m *Memory) JoinView(dst, src, loc int) {
	if m.model != Relaxed {
		return
	}
	m.view[dst][loc] = max(m.view[dst][loc], m.view[src][loc])
	m.compact(loc)
}

// SetReaders says which threads (bit t) may still load loc with a plain
// load; the stores only others' views kept alive may then be dropped.
func (m *Memory) SetReaders(loc int, threads uint8) {
	m.readers[loc] = threads
	m.compact(loc)
}

// forget sets thread t's view of loc to the newest store: for a thread whose
// next access to loc comes after a full barrier (which raises the view to
// the newest store then anyway), or that reads loc only through LoadNewest,
// the old view cannot matter, and forgetting it lets older stores die.
func (m *Memory) Forget(t, loc int) {
	if m.model != Relaxed {
		return
	}
	m.view[t][loc] = m.n[loc] - 1
	m.compact(loc)
}

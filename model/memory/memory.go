package memory

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"
)

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
	// LKMM is the Linux kernel memory model (tools/memory-model) for the
	// primitives Memory has, without load buffering: lkmm.go says how and
	// where that is exact. Stores and read-modify-writes have one result
	// per place in modification order they may take (Stores, RMW).
	LKMM
)

// Models lists the models whose operations have one result each (Store,
// Fence, IncReturn, and Wide's of the same names), weakest last. LKMM,
// whose operations have several (Stores, Fences, RMW; Wide's ...Choices),
// the protocols add to their own lists.
func Models() []Model { return []Model{SC, TSO, Relaxed} }

func (m Model) String() string {
	switch m {
	case SC:
		return "SC"
	case TSO:
		return "TSO"
	case Relaxed:
		return "Relaxed"
	case LKMM:
		return "LKMM"
	}
	return fmt.Sprintf("MemoryModel(%d)", uint8(m))
}

// Bounds of a Memory value, which is a comparable fixed-size struct. Every
// array in it and in the LKMM extras is sized by them, so each state of
// every search pays for the bound, not for what its test uses: with 12
// locations (views in uint64, location sets in uint16) the flush
// sequence's 3 tasks x 2 fsyncs took 1.2 times the time and 1.6 times the
// memory under SC and 1.75 and 1.7 times under LKMM (docs/memory.md,
// "Bounds"). Raising them is a change of these constants, LocSet and vw.
const (
	MaxLocations = 6  // atomic64 words
	MaxThreads   = 8  // threads (tasks, the device) that use memory
	MaxStores    = 16 // live stores per location (Relaxed, LKMM)
	MaxBuffered  = 4  // store buffer entries per thread (TSO)
)

// LocSet is a set of locations (bit l: location l), as wide as
// MaxLocations needs.
type LocSet uint8

var _ LocSet = 1<<MaxLocations - 1 // every location has its bit

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
	readers [MaxLocations]uint8 // threads whose view of the location may still matter (SetReaders)
	buf     [MaxThreads][MaxBuffered]bufEntry
	bufN    [MaxThreads]uint8
	ext     lkID   // LKMM (lkmm.go, intern.go)
	scope   uint32 // LKMM: the scope whose tables ext names (intern.go)
	post    uint8  // LKMM: threads (bit t) whose barrier after a read-modify-write is pending, outside ext so that Settle is cheap
}

// New returns memory where every location holds 0. readers[l] is the set
// of threads (bit t) that may load location l with a plain load (Load), or
// whose view of l another thread may take (JoinView, AddReader): the views
// of other threads do not keep old stores alive. The declaration is
// checked: a plain load by a thread outside the set panics, and the set
// only shrinks (SetReaders) or grows through AddReader, so dropping the
// stores no reader can read changes no outcome.
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
	Alt Alt // which store was read (LKMM)
}

// mustLoad panics unless t is one of loc's declared readers (New): a plain
// load may read only what the memory keeps for its readers.
func (m *Memory) mustLoad(t, loc int) {
	if m.readers[loc]&(1<<t) == 0 {
		panic(fmt.Sprintf("memory: thread %d loads location %d but is not one of its declared readers", t, loc))
	}
}

// Load is a plain load (atomic64_read, READ_ONCE) by thread t. Under Relaxed
// it has one result per store the thread may read.
func (m Memory) Load(t, loc int) []Loaded {
	m.mustLoad(t, loc)
	switch m.model {
	case TSO:
		return []Loaded{{m.loadTSO(t, loc), m, 0}}
	case LKMM:
		return m.open().lkLoad(t, loc)
	case Relaxed:
		return m.loadRelaxed(t, loc)
	}
	return []Loaded{{int64(m.Newest(loc)), m, 0}}
}

// LoadCovered is Load for a caller that also runs thread t with this load
// satisfied after the thread's later stores (durable's run-ahead, which
// gives LKMM's load buffering): under LKMM a later store that nothing
// orders after it is then no reason for ErrUnordered. The same as Load
// under the other models.
func (m Memory) LoadCovered(t, loc int) []Loaded {
	if m.model != LKMM {
		return m.Load(t, loc)
	}
	m.mustLoad(t, loc)
	return m.open().lkLoadAs(t, loc, readPlain|readCoveredBit)
}

// LoadNewest is a load that reads the newest store (a thread that waits for
// a value until it sees it), raising only that location's view. It has one
// result, except under LKMM when t's barrier after a read-modify-write is
// pending: then one per order in which other threads' pending barriers
// complete before it (Settle).
func (m Memory) LoadNewest(t, loc int) []Loaded {
	switch m.model {
	case TSO:
		return []Loaded{{Val: m.loadTSO(t, loc), Mem: m}}
	case Relaxed:
		m.view[t][loc] = m.n[loc] - 1
		m.compact(loc)
	case LKMM:
		return m.open().lkLoadNewest(t, loc)
	}
	return []Loaded{{Val: int64(m.Newest(loc)), Mem: m}}
}

// Stores is a plain store (atomic64_set, WRITE_ONCE) by thread t: one
// result per place in modification order it may take (one except under
// LKMM). It fails only if a bound is reached.
func (m Memory) Stores(t, loc int, v int64) ([]Choice, error) {
	return m.StoresDep(t, loc, v, 0)
}

// StoresDep is Stores of a store that depends on t's loads of the
// locations in deps (bit l): on every load of each that t made since its
// last smp_mb (or fully ordered read-modify-write), through a control
// dependency (the store lies in an arm of a branch on the loaded value,
// which includes everything after a return the branch takes) or a data
// dependency (the stored value is computed from it). LKMM orders such a
// load before the store (rwdep is in its ppo), so under LKMM the store is
// not refused after it (ErrUnordered). The other models run in program
// order anyway and ignore deps. deps may hold loc too (ReadsBack): a
// load of the store by t is ordered after t's loads in deps.
func (m Memory) StoresDep(t, loc int, v int64, deps LocSet) ([]Choice, error) {
	if m.model == LKMM {
		return m.open().lkStores(t, loc, v, deps, false, false)
	}
	next, err := m.Store(t, loc, v)
	if err != nil {
		return nil, err
	}
	return []Choice{{next, 0}}, nil
}

// Store is a plain store (atomic64_set, WRITE_ONCE) by thread t. Under TSO
// it waits in the store buffer; it fails only if the buffer is full. Under
// LKMM, which has more than one result, it panics: use Stores.
func (m Memory) Store(t, loc int, v int64) (Memory, error) {
	switch m.model {
	case LKMM:
		panic("memory: Store under LKMM; use Stores")
	case TSO:
		return m.storeTSO(t, loc, v)
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
	if m.model == LKMM {
		panic("memory: StoreVisible under LKMM; use StoresVisible")
	}
	if m.model == TSO {
		m.vals[loc][0] = int8(v)
		return m, nil
	}
	return m.Store(t, loc, v)
}

// StoresVisible is StoreVisible with one result per place in modification
// order the store may take (see Stores).
func (m Memory) StoresVisible(t, loc int, v int64) ([]Choice, error) {
	if m.model == LKMM {
		return m.open().lkStores(t, loc, v, 0, false, false)
	}
	next, err := m.StoreVisible(t, loc, v)
	if err != nil {
		return nil, err
	}
	return []Choice{{next, 0}}, nil
}

// Fence is smp_mb() by thread t. Under LKMM, which has more than one
// result, it panics: use Fences.
func (m Memory) Fence(t int) Memory {
	if m.model == LKMM {
		panic("memory: Fence under LKMM; use Fences")
	}
	if mutate.On(mutate.FenceWeak) {
		return m
	}
	return m.fence(t)
}

// MbTakesIn reports whether smp_mb() takes its thread's views in and
// publishes them (under LKMM, lkFence): always, but under the mutation
// that weakens it (mutate.FenceWeak). Fences asks it, and so does what
// relies on it (model/durable's barrierLanes, for RaiseToBarrier), so
// that a barrier weakened is weakened for both.
func MbTakesIn() bool { return !mutate.On(mutate.FenceWeak) }

// Fences is smp_mb() by thread t: one result, except under LKMM, where
// the pending barriers of other threads' read-modify-writes may complete
// before it in any order (lkmm.go).
func (m Memory) Fences(t int) []Choice {
	if m.model != LKMM {
		return []Choice{{m.Fence(t), 0}}
	}
	if !MbTakesIn() {
		return m.weakFences(t)
	}
	cs := m.open().lkFences(t)
	for i := range cs {
		cs[i].m.cond[t] = 0 // a barrier whatever was read
	}
	return closeAll(cs)
}

// fence is the full barrier of smp_mb and of fully ordered read-modify-writes.
func (m Memory) fence(t int) Memory {
	switch m.model {
	case TSO:
		return m.Drain(t)
	case Relaxed:
		return m.fenceRelaxed(t)
	case LKMM:
		panic("memory: fence under LKMM; use lkFences")
	}
	return m
}

// RMWResult is one result of a read-modify-write: the value read, whether
// it stored (a failed cmpxchg does not) and what.
type RMWResult struct {
	Old, New int64
	Stored   bool
	Mem      Memory
	Alt      Alt // which result this is (LKMM)
}

// RMW is a read-modify-write by thread t: f gives the value to store for
// the value read, or false for a failed conditional one (cmpxchg). A store
// is fully ordered (atomic64_inc_return, a successful cmpxchg); a failed
// cmpxchg orders nothing under Relaxed and LKMM. Under TSO it is a locked
// instruction, which drains the store buffer either way. It has one result
// per store it may read (one except under LKMM).
func (m Memory) RMW(t, loc int, f func(old int64) (int64, bool)) ([]RMWResult, error) {
	if m.model == LKMM {
		return m.open().lkRMW(t, loc, f, false)
	}
	return m.rmw(t, loc, f, true)
}

// RMWCond is RMW for a conditional read-modify-write (cmpxchg), whose
// barriers come only with its store. Under LKMM the loads they order are
// ordered before a later store only if it depends on them or a barrier
// that always happens comes first (else ErrUnordered, lkmm.go's
// checkOrdered says why). RMW with an f that may fail is exact only where
// no store follows it without such a barrier.
func (m Memory) RMWCond(t, loc int, f func(old int64) (int64, bool)) ([]RMWResult, error) {
	if m.model == LKMM {
		return m.open().lkRMW(t, loc, f, true)
	}
	return m.rmw(t, loc, f, true)
}

// rmw is a read-modify-write under SC, TSO or Relaxed: it reads the newest
// store (TSO: after draining the buffer); a store is fully ordered if
// ordered, else appended without barriers.
func (m Memory) rmw(t, loc int, f func(old int64) (int64, bool), ordered bool) ([]RMWResult, error) {
	if m.model == TSO {
		m = m.Drain(t)
	}
	cur := m.rmwRead(t, loc)
	v, ok := f(cur)
	if !ok {
		if m.model == Relaxed {
			m.view[t][loc] = m.n[loc] - 1 // an RMW reads the newest store
			m.compact(loc)
		}
		return []RMWResult{{Old: cur, Mem: m}}, nil
	}
	var err error
	switch {
	case ordered:
		m, err = m.orderedStore(t, loc, v)
	case m.model == Relaxed:
		m, err = m.append(t, loc, v)
	default:
		m.vals[loc][0] = int8(v)
	}
	if err != nil {
		return nil, err
	}
	return []RMWResult{{Old: cur, New: v, Stored: true, Mem: m}}, nil
}

// IncReturn is atomic64_inc_return: fully ordered, it returns the new
// value. It is RMW with its one result, so it panics under LKMM.
func (m Memory) IncReturn(t, loc int) (int64, Memory, error) {
	r, err := m.one(t, loc, func(old int64) (int64, bool) { return old + 1, true })
	return r.New, r.Mem, err
}

// one is RMW under a model where it has one result (panics under LKMM).
func (m Memory) one(t, loc int, f func(old int64) (int64, bool)) (RMWResult, error) {
	if m.model == LKMM {
		panic("memory: a single-result read-modify-write under LKMM; use RMW")
	}
	rs, err := m.rmw(t, loc, f, true)
	if err != nil {
		return RMWResult{Mem: m}, err
	}
	return rs[0], nil
}

// orderedStore is the store of a fully ordered read-modify-write: a full
// barrier before and after it, and it is visible at once.
func (m Memory) orderedStore(t, loc int, v int64) (Memory, error) {
	m = m.fence(t)
	if m.model != Relaxed {
		m.vals[loc][0] = int8(v)
		return m, nil
	}
	m, err := m.append(t, loc, v)
	return m.fence(t), err
}

// RMWUnordered is a read-modify-write with no ordering (atomic_inc,
// atomic_add, the _relaxed variants): like RMW without its barriers. Under
// TSO it is still a locked instruction.
func (m Memory) RMWUnordered(t, loc int, f func(old int64) (int64, bool)) ([]RMWResult, error) {
	return m.RMWOrdered(t, loc, f, RMWOrder{})
}

// RMWOrder is how a read-modify-write of RMWOrdered is ordered beyond its
// atomicity, under LKMM (Documentation/atomic_t.txt). SC and TSO ignore
// it; Relaxed has no acquire or release and panics on them.
type RMWOrder struct {
	Acquire  bool   // _acquire: if it stores, its read orders every later event of its thread
	Release  bool   // _release: if it stores, every earlier event of its thread is ordered before its store
	NoReturn bool   // atomic_add, atomic_inc...: it returns nothing, so smp_rmb does not order its read
	Deps     LocSet // the locations whose loads its store depends on, as in StoresDep
	Cond     bool   // a conditional one (cmpxchg): its acquire comes only with its store (see RMWCond)
	Covered  bool   // its read is covered as LoadCovered's is (only an unacquired read)
	// FailCovered: a cmpxchg's read, if it fails, is covered (a retry
	// loop's failed pass, which the caller shows can be left out of every
	// execution: model/durable's markRetries).
	FailCovered bool
	_           struct{}
}

// RMWOrdered is a read-modify-write without barriers, ordered as o says.
// RMWUnordered is RMWOrdered with the zero RMWOrder. Under LKMM, Acquire,
// Release and Deps need UseOrderings.
func (m Memory) RMWOrdered(t, loc int, f func(old int64) (int64, bool), o RMWOrder) ([]RMWResult, error) {
	switch m.model {
	case LKMM:
		return m.open().lkRMWOnce(t, loc, f, o)
	case Relaxed:
		if o.Acquire || o.Release {
			panic("memory: an acquire or release read-modify-write under Relaxed, which has neither")
		}
	}
	return m.rmw(t, loc, f, false)
}

// LoadAcquire is smp_load_acquire by thread t: one result per store it
// may read, as Load. Under LKMM it orders every later event of t and
// takes in the message view of the store it read, and needs UseOrderings.
// Under SC and TSO it is Load (x86 loads are acquires); Relaxed has no
// acquire and panics.
func (m Memory) LoadAcquire(t, loc int) []Loaded {
	switch m.model {
	case LKMM:
		m.mustLoad(t, loc)
		return m.open().lkLoadAcquire(t, loc)
	case Relaxed:
		panic("memory: smp_load_acquire under Relaxed, which has no acquire")
	}
	return m.Load(t, loc)
}

// StoresRelease is smp_store_release by thread t: one result per place in
// modification order, as Stores. Under LKMM every earlier event of t is
// ordered before it (it is never refused) and it carries everything t
// has seen and read; it needs UseOrderings. Under SC and TSO it is Stores
// (x86 stores are releases); Relaxed has no release and panics.
func (m Memory) StoresRelease(t, loc int, v int64) ([]Choice, error) {
	return m.StoresReleaseDep(t, loc, v, 0)
}

// StoresReleaseDep is StoresRelease of a store that depends on t's loads
// of the locations in deps (as StoresDep): a release is ordered after
// every earlier load anyway, so deps only order after those loads a load
// of the store by t (ReadsBack).
func (m Memory) StoresReleaseDep(t, loc int, v int64, deps LocSet) ([]Choice, error) {
	switch m.model {
	case LKMM:
		return m.open().lkStores(t, loc, v, deps, true, false)
	case Relaxed:
		panic("memory: smp_store_release under Relaxed, which has no release")
	}
	return m.Stores(t, loc, v)
}

// SpinLock is spin_lock by thread t on the lock word loc under LKMM
// (lkmm.go, "Locks"), with free and held its two values: no result while
// the newest store is not free (the thread waits), else one per order of
// other threads' pending barriers its own pending one meets. It needs
// UseOrderings. The other models take a lock with CompareAndSwap: it
// panics under them.
func (m Memory) SpinLock(t, loc int, free, held int64) ([]Choice, error) {
	if m.model != LKMM {
		panic("memory: SpinLock is LKMM's; the other models take a lock with CompareAndSwap")
	}
	return m.open().lkSpinLock(t, loc, free, held)
}

// SpinUnlock is spin_unlock by thread t under LKMM: a release store of
// free that passes on what the thread's earlier stores carry to the next
// SpinLock of loc. It needs UseOrderings. It panics under the other
// models, where an unlock is a store.
func (m Memory) SpinUnlock(t, loc int, free int64) ([]Choice, error) {
	if m.model != LKMM {
		panic("memory: SpinUnlock is LKMM's; under the other models an unlock is a store")
	}
	return m.open().lkSpinUnlock(t, loc, free)
}

// Rmbs is smp_rmb by thread t. Under LKMM its later loads read nothing
// older than what its earlier value-returning loads read and the stores
// those carried (UseOrderings); one result per order of other threads'
// pending barriers its own pending one meets (Settle). Under SC and TSO a
// no-op (a compiler barrier on x86); Relaxed has none and panics.
func (m Memory) Rmbs(t int) []Choice {
	switch m.model {
	case LKMM:
		return m.open().lkRmb(t)
	case Relaxed:
		panic("memory: smp_rmb under Relaxed, which has none")
	}
	return []Choice{{m, 0}}
}

// Wmbs is smp_wmb by thread t. Under LKMM its later stores carry its
// earlier stores and what those carried (UseOrderings); results as Rmbs.
// Under SC and TSO a no-op (a compiler barrier on x86: TSO's store buffer
// is FIFO); Relaxed has none and panics.
func (m Memory) Wmbs(t int) []Choice {
	switch m.model {
	case LKMM:
		return m.open().lkWmb(t)
	case Relaxed:
		panic("memory: smp_wmb under Relaxed, which has none")
	}
	return []Choice{{m, 0}}
}

// rmwRead is the value a read-modify-write by t reads at loc: the newest
// store (mutate.RMWStale: the oldest t's view allows, under Relaxed).
func (m *Memory) rmwRead(t, loc int) int64 {
	if m.model == Relaxed && mutate.On(mutate.RMWStale) {
		return int64(m.vals[loc][m.view[t][loc]])
	}
	return int64(m.Newest(loc))
}

// CompareAndSwap is atomic64_try_cmpxchg: if loc holds old, store new and
// report true (fully ordered); otherwise report false and the value seen,
// with no ordering under Relaxed. Under TSO a locked cmpxchg drains the
// store buffer either way. It is RMW with its one result, so it panics
// under LKMM.
func (m Memory) CompareAndSwap(t, loc int, old, new int64) (bool, int64, Memory, error) {
	r, err := m.one(t, loc, func(cur int64) (int64, bool) { return new, cur == old })
	return r.Stored, r.Old, r.Mem, err
}

package memory

import (
	"errors"
	"fmt"
)

// The LKMM model of Memory: views after the Promising semantics (Kang et
// al., POPL 2017), without promises: READ_ONCE and WRITE_ONCE, smp_mb,
// fully ordered read-modify-writes, unordered ones (atomic_inc, the
// _relaxed variants) and the failed cmpxchg, which orders nothing
// (Documentation/atomic_t.txt); with UseOrderings also stores with
// dependencies, smp_load_acquire, smp_store_release, the _acquire and
// _release RMWs, smp_rmb, smp_wmb and spin locks.
//
//   - Each location keeps its live stores in modification order. A store
//     goes anywhere in that order after the newest store its thread has
//     seen at the location (coherence), except between a read-modify-write
//     and the store it read (atomicity). So two stores of one thread to
//     different locations may reach memory in either order (S, 2+2W).
//   - Each store carries a message view: what must propagate before it
//     (cumul-fence in linux-kernel.cat): what its thread had seen when it
//     last passed smp_mb (a plain store is cumulative only through an
//     earlier strong fence), for a release store all it had seen and read,
//     and the store itself.
//   - Each thread has three views: cur (what it has seen; a load reads a
//     store not older than cur and raises it), acq (cur and the message
//     views of the stores it read, which smp_mb will take in) and rel (cur
//     at its last smp_mb, which its plain stores carry).
//   - smp_mb joins cur with acq and with a global view, then sets the global
//     view to the result: strong fences act in the order they run, which
//     is how smp_mb on both sides forbids SB, and how a barrier on one side
//     alone orders nothing the other side did.
//   - A fully ordered read-modify-write is smp_mb, the read of a store that
//     no other read-modify-write has read, the store right after it, smp_mb
//     (the fencerel(Mb) of linux-kernel.bell around the two events). The
//     barrier after it stays pending: another thread may see the store
//     before the barrier has taken effect. It completes at the thread's
//     next operation (or Settle, before its I/O), or before another
//     thread's barrier: a barrier, and a thread's own pending one
//     completing, has one result for every order in which the pending
//     barriers of other threads may complete before it (Fences, Settle).
//     Only barriers read and write the global view, and a barrier commutes
//     with every other operation of another thread, so completing it no
//     earlier than the next barrier it meets loses no outcome.
//   - The orderings of UseOrderings take message views in without a
//     barrier: an acquire into cur, smp_rmb what its thread's earlier
//     loads read (rv), a store with dependencies or a release its place
//     after acq. Those need, besides the message views, what happens after
//     a strong fence (pb: a store's gv; a thread's g, ah, tah and lgv),
//     which a barrier takes in with the global view anyway; see lkOrd.
//
// A thread runs in program order and a load reads only stores already made.
// That is exact where every store that follows a load of another location
// in its thread is ordered after it: by smp_mb (or a fully ordered RMW), a
// release, an unlock and a later lock, or a dependency the caller declares
// (StoresDep, RMWOrdered); a load of the same location is ordered before
// it by coherence. Otherwise LKMM lets the store propagate before the load
// is satisfied (load buffering is one case; a strong fence of a third
// thread that runs between the two is another), so such a store is refused
// (ErrUnordered) rather than answered wrongly, unless the caller covers
// the load (LoadCovered, RMWOrder.Covered): it also runs the thread with
// that load satisfied after the store, as model/durable does for litmus
// and durability files (its ahead.go), and each order it runs is a program
// order of its own, on which this model is exact. A covered load counts,
// for where a later store goes in co, as one the store depends on (a
// stronger placement; the caller's other run gives the weaker ones);
// Uncover ends a cover. The differential tests against the axiomatic
// reference (model/lkmm) hold this model to LKMM's exact outcome sets on
// the random programs and corpus tests it accepts.
//
// The readers of a location (New) must include every thread that stores
// to it (its view places its stores), except a thread that only updates a
// location whose stores are a chain of read-modify-writes (chain). A load
// that waits for the newest store (LoadNewest) needs no declaration.

// lkExtra is what LKMM keeps beside the stores. Memory holds it by its
// number in a table (intern.go), so that a Memory value stays small and
// without pointers (the explorer stores millions) and equal extras are
// one number.
type lkExtra struct {
	cur, acq, rel [MaxThreads]vw
	glob          vw
	mview         [MaxLocations][MaxStores]vw // per live store: its message view
	glued         [MaxLocations]uint16        // bit i: store i is a read-modify-write's, glued to store i-1
	unord         [MaxThreads]LocSet          // per thread: the locations (bit l) it loaded since its last full barrier
	cond          [MaxThreads]LocSet          // per thread: the locations whose loads only a conditional RMW's barriers ordered (see checkOrdered)
	covered       [MaxThreads]LocSet          // per thread: the locations in unord whose loads since the last barrier were all LoadCovered (see checkOrdered)
	lockOnly      LocSet                      // the locations only spin_lock and spin_unlock access (LockOnly)
	alias         [MaxThreads]int8            // per thread: a Fork's owner plus one, 0 for a thread of its own
	pinned        int8                        // Pin: the thread plus one whose next read of pinLoc reads its own newest store (0: none)
	pinLoc        uint8
	anyOrder      bool  // AllowUnordered
	readBack      bool  // ReadsBack: dmv and dv kept
	unreduced     bool  // Unreduced: no subsumption of pending barriers
	whole         bool  // UseOrderings: views kept whole, lkOrd kept
	ord           ordID // the lkOrd, interned on its own (zero unless UseOrderings)
}

// lkOrd are the views only the orderings of UseOrderings read, kept apart
// from lkExtra so that a memory without them hashes and stores no more
// than before (they are zero, id 0).
type lkOrd struct {
	rv, own [MaxThreads]vw   // per thread: what smp_rmb takes in, what smp_wmb passes on
	ulp     [MaxLocations]vw // per location whose newest store is a spin_unlock: what the unlocker's earlier events pass on (SpinLock)
	// Per thread, at its last spin_unlock: what its earlier events pass
	// on, and its acq (what they read); its next spin_lock, of any lock,
	// takes them in.
	tulp, tacq [MaxThreads]vw
	// Per thread: the locations it had loaded since its last full barrier
	// when it last unlocked (tunord), and those it loaded since (since):
	// its next spin_lock orders the first but not the second before what
	// follows.
	tunord, since [MaxThreads]LocSet

	// What happens-before carries (pb in linux-kernel.cat: an event
	// that happens after a strong fence may not overwrite, or read a
	// store overwritten by, what propagated before the fence). Per live
	// store, gv: the global views of the strong fences its store happens
	// after. Per thread: g, those of everything it does next (its last
	// smp_mb, what its acquires read); ah, the gv of the stores it read
	// since its last smp_mb (a store ordered after those reads, by a
	// dependency or a release, happens after them too); tah, ah at its
	// last unlock. Per thread and location, lgv: the gv of the stores it
	// read or wrote there (its later store there is ordered after them,
	// overwrite & int; a read-modify-write's store after its read).
	// Message views (mview) are what propagates before a store
	// (cumul-fence); under smp_mb alone the two coincide, since a barrier
	// takes in the global view anyway.
	gv         [MaxLocations][MaxStores]vw
	g, ah, tah [MaxThreads]vw
	lgv        [MaxThreads][MaxLocations]vw
	// lmv, per thread and location: the message views of the stores it
	// read or wrote there. A load of another thread's store co-after them
	// happens after those accesses (prop & int), so what is ordered after
	// the load may not read a store that their stores' message views
	// overwrite.
	lmv [MaxThreads][MaxLocations]vw
	// Per live store, its writer plus one (0: the initial store). A load
	// of its own thread's store takes in nothing: rfi is neither in hb nor
	// at the end of prop, so the load happens after nothing the store
	// did.
	wr [MaxLocations][MaxStores]int8
	// (dep ; [Marked] ; rfi) is in linux-kernel.cat's to-r, so in ppo: a
	// load of its own thread's store that depends on loads is ordered
	// after them. Per thread and location, dmv: what its loads there
	// read (their message views and gv, as an acquire takes them in);
	// per live store, dv: that of the locations it depends on (its
	// deps), which a load of it by its own thread takes in.
	dmv [MaxThreads][MaxLocations]vw
	dv  [MaxLocations][MaxStores]vw
}

// lk is a Memory under LKMM opened for an operation: its extras by value
// and, with UseOrderings, its ordering views by pointer (nil without: a
// copy of lk stays small, and every access to them is under m.whole).
// Copies share the pointer, so whatever writes them first takes a copy of
// its own (cow).
type lk struct {
	Memory
	lkExtra
	*lkOrd
	tb *tables // the scope's, looked up once per operation
}

func (m Memory) open() lk {
	tb := tablesOf(m.scope)
	x := tb.lk.get(uint32(m.ext))
	if !x.whole {
		return lk{m, x, nil, tb}
	}
	o := tb.ord.get(uint32(x.ord))
	return lk{m, x, &o, tb}
}

// cow gives m ordering views of its own to write (with UseOrderings).
func (m *lk) cow() {
	if m.lkOrd != nil {
		o := *m.lkOrd
		m.lkOrd = &o
	}
}

func (m lk) close() Memory {
	if m.post != 0 && !m.unreduced {
		m = m.completeSubsumed()
	}
	for t := range m.covered {
		// A cover marks a location loaded since the last barrier: one
		// the barrier (or an RMW's) forgot is no mark (it would only
		// tell apart states with the same futures).
		m.covered[t] &= m.unord[t]
	}
	if !m.unreduced && !m.whole {
		m.lkNormalize()
	}
	out := m.Memory
	if m.whole {
		m.ord = m.tb.ordPut(m.lkOrd)
	}
	out.ext = lkID(m.tb.lk.put(&m.lkExtra, m.lkExtra.shard()))
	return out
}

// vw is a view: a lane of laneBits bits per location, the index of a live
// store.
type vw uint32

const (
	laneBits = 5
	laneMask = 1<<laneBits - 1
)

func (v vw) at(l int) uint8 { return uint8(v>>(laneBits*uint(l))) & laneMask }

func (v vw) with(l int, i uint8) vw {
	s := laneBits * uint(l)
	return v&^(laneMask<<s) | vw(i)<<s
}

// The views are compared and joined a lane at a time all at once: a lane
// holds a store's index, below MaxStores = 16, so its top bit is free, and
// (o|16) - v in each lane neither borrows from the next nor loses its top
// bit exactly when v <= o.
const laneTop vw = (1<<(laneBits*MaxLocations) - 1) / laneMask << (laneBits - 1)

// le has all ones in each lane where v is at or below o, 0 elsewhere.
func (v vw) le(o vw) vw { return ((o | laneTop) - v) & laneTop >> (laneBits - 1) * laneMask }

func (v vw) join(o vw) vw {
	m := o.le(v) // where o is at or below v, keep v
	return v&m | o&^m
}

// laneOp is what lkViews does to every view's lane of one location: the
// three ways a location's stores are renumbered, and a question. A
// value, not a func: a func called with pointers into the memory would
// make every memory it runs on escape to the heap (one allocation per
// load, store and compaction).
type laneOp struct {
	loc  int
	kind uint8
	at   uint8
}

const (
	laneShiftUp uint8 = iota // a store is inserted at index at: lanes at or above it move up one
	laneDrop                 // the stores below at are dropped: lanes move down by at, those below to 0
	laneBelow                // ask whether a lane is below at (nothing changes)
)

// apply does o to w, and reports, for laneBelow, whether w's lane is below.
func (o laneOp) apply(w *vw) bool {
	i := w.at(o.loc)
	switch o.kind {
	case laneShiftUp:
		if i >= o.at {
			*w = w.with(o.loc, i+1)
		}
	case laneDrop:
		if i >= o.at {
			*w = w.with(o.loc, i-o.at)
		} else {
			*w = w.with(o.loc, 0)
		}
	case laneBelow:
		return i < o.at
	}
	return false
}

// lkViews does o to every view of the memory: the threads', the global
// one and the live stores' message views; it reports whether o.apply
// reported true for any.
func (m *lk) lkViews(o laneOp) bool {
	hit := false
	f := func(w *vw) { hit = o.apply(w) || hit }
	for t := range m.cur {
		f(&m.cur[t])
		f(&m.acq[t])
		f(&m.rel[t])
	}
	f(&m.glob)
	for l := range m.mview {
		for i := 0; i < int(m.n[l]); i++ {
			f(&m.mview[l][i])
		}
	}
	if !m.whole {
		return hit
	}
	m.cow()
	for t := range m.cur {
		f(&m.rv[t])
		f(&m.own[t])
		f(&m.tulp[t])
		f(&m.tacq[t])
		f(&m.g[t])
		f(&m.ah[t])
		f(&m.tah[t])
		for l := range m.lgv[t] {
			f(&m.lgv[t][l])
			f(&m.lmv[t][l])
			f(&m.dmv[t][l])
		}
	}
	for l := range m.ulp {
		f(&m.ulp[l])
	}
	for l := range m.gv {
		for i := 0; i < int(m.n[l]); i++ {
			f(&m.gv[l][i])
			f(&m.dv[l][i])
		}
	}
	return hit
}

// mustWrite checks that t may store to loc: it is a reader, or (rmw) it
// updates a location whose stores are a chain of read-modify-writes (see
// chain), where it can read only the newest store: its view is raised to
// it.
func (m *lk) mustWrite(t, loc int, rmw bool) {
	if m.readers[loc]&(1<<t) == 0 && rmw && m.chain(loc) {
		m.cur[t] = m.cur[t].with(loc, m.n[loc]-1)
		return
	}
	if m.readers[loc]&(1<<t) == 0 {
		panic(fmt.Sprintf("memory: under LKMM thread %d stores to location %d but is not one of its declared readers (its view orders its stores)", t, loc))
	}
}

// ErrUnordered is returned for a store under LKMM that follows a load of
// another location by its thread with no smp_mb (or fully ordered
// read-modify-write) between and that does not depend on it (the deps of
// StoresDep and RMWOrdered): LKMM then lets the store take effect
// first, which an in-order thread cannot, so the answer could differ from
// LKMM's. AllowUnordered lifts it; the outcomes are then some of LKMM's (a
// test holds them to that), not all.
var ErrUnordered = errors.New("memory: under LKMM a store follows a load of another location with no smp_mb between and no dependency on it (load buffering is not modelled)")

// UnorderedError is the ErrUnordered of one store: the thread and the
// locations (bit l) of the loads it is not ordered after. Cond says that
// some of them are ordered only by a conditional read-modify-write that
// succeeded (see checkOrdered).
type UnorderedError struct {
	Thread int
	Locs   LocSet
	Cond   bool
}

func (e *UnorderedError) Error() string {
	return fmt.Sprintf("thread %d: %v (locations %b)", e.Thread, ErrUnordered, e.Locs)
}

func (e *UnorderedError) Unwrap() error { return ErrUnordered }

// AllowUnordered lets stores follow loads without a barrier under LKMM
// (see ErrUnordered).
func (m *Memory) AllowUnordered() {
	if m.model != LKMM {
		return
	}
	w := m.open()
	w.anyOrder = true
	*m = w.close()
}

// UseOrderings declares that the memory will be asked for orderings that
// read views other than through smp_mb: stores with dependencies
// (StoresDep, RMWOrdered with Deps), acquire loads and read-modify-writes,
// release stores and read-modify-writes, smp_rmb, smp_wmb and spin locks.
// Those take in or pass on message views directly, so the views are kept
// whole instead of forgotten where the global view covers them
// (lkNormalize), and the views only they read are kept (lkOrd). Any of
// those operations on a memory without the declaration panics. A no-op
// under the other models.
func (m *Memory) UseOrderings() {
	if m.model != LKMM {
		return
	}
	w := m.open()
	if !w.whole {
		w.whole, w.lkOrd = true, &lkOrd{}
	}
	*m = w.close()
}

// ReadsBack declares that a thread may read back its own store that
// depends on its loads (the deps of StoresDep, StoresReleaseDep and
// RMWOrder may then hold the store's own location): under LKMM such a
// load is ordered after the loads the store depends on ((dep ; [Marked]
// ; rfi) is in linux-kernel.cat's to-r), which the memory then keeps
// track of (what each thread's loads of each location read, and per
// store what its dependencies read). It implies UseOrderings. A no-op
// under the other models.
func (m *Memory) ReadsBack() {
	if m.model != LKMM {
		return
	}
	m.UseOrderings()
	w := m.open()
	w.readBack = true
	*m = w.close()
}

// mustWhole panics unless the memory was declared with UseOrderings.
func (m *lk) mustWhole(what string) {
	if !m.whole {
		panic("memory: " + what + " on a memory without UseOrderings")
	}
}

// writeBase is the view after which t's store to loc goes. A load that
// LKMM orders before the store (the store depends on it) has been
// satisfied when the store executes, and with it every store that had to
// propagate to t's CPU before the one it read (that store's message view:
// linux-kernel.cat's prop, which links the store's overwriting to the load
// through cumul-fence and rfe, is then part of hb with the dependency).
// So when the store depends on every load of another location since the
// last barrier, it goes after acq, which is cur joined with those loads'
// message views; otherwise after cur.
//
// ordered reports the first two cases: the store is ordered after every
// load since the last barrier (lkInsert).
func (m *lk) writeBase(t, loc int, deps LocSet, release bool) (base vw, ordered bool) {
	if deps != 0 {
		m.mustWhole("a store with dependencies")
	}
	// The store carries rel (a release store acq, which holds it): what
	// must propagate before it to every CPU, its own included, so it goes
	// after rel's store at loc. Beyond cur that is what smp_wmb passed on
	// from the thread's earlier stores (wmb is in ppo between stores, and
	// a store co-before one that propagates before an earlier store of
	// its thread would be prop & int before it, an hb cycle).
	if release {
		return m.acq[t].join(m.rel[t]), true // a release store is ordered after every earlier load
	}
	// A load its caller covers (LoadCovered) counts as one the store
	// depends on: the store goes after it, which only takes places away,
	// and the run that leaves the load pending gives the places before
	// (without this, a store that depends on one covered load but not on
	// another went after cur, before what the load it depends on saw).
	if o := m.unord[t] &^ (1 << loc); o != 0 && o&^deps&^m.covered[t] == 0 {
		return m.acq[t].join(m.rel[t]), true
	}
	return m.cur[t].join(m.rel[t]), false
}

// checkOrdered refuses t's store to loc after a load of another location
// with no barrier between, unless the store depends on every such load of
// that location (deps, bit l). A load of loc itself is ordered before the
// store by coherence ((overwrite & int) is in LKMM's ppo), which the
// model keeps; a load the store depends on is ordered before it by the
// dependency (rwdep is in ppo).
//
// A conditional read-modify-write that stored (a fully ordered cmpxchg that
// succeeded, an _acquire one) ordered the loads before it, and its own
// read, before what follows. Had it failed it would have ordered nothing,
// and LKMM lets it fail by reading a store its thread cannot yet see in
// program order (one made after a store this thread makes later: load
// buffering), a run the in-order model never takes. So the loads its
// success ordered are kept in cond, and a store that follows is refused
// as after an unordered load, unless it depends on them or a barrier that
// does not depend on a value read (smp_mb, an unconditional fully ordered
// RMW) came between.
//
// A load its caller covers (LoadCovered: the caller also runs the thread
// with that load satisfied after the store) is no reason to refuse.
func (m *lk) checkOrdered(t, loc int, deps LocSet, release bool) error {
	if u := (m.unord[t]&^m.covered[t] | m.cond[t]) &^ (1 << loc) &^ deps; u != 0 && !m.anyOrder && !release {
		return &UnorderedError{Thread: t, Locs: u, Cond: m.cond[t]&^(1<<loc)&^deps != 0}
	}
	return nil
}

// Subsumption. Under LKMM a bigger view only takes behaviours away: a load
// may read fewer stores, a store has fewer places, a barrier publishes and
// takes in more. So of two memories that differ only in that one's views
// are within the other's, the second allows every execution of the first
// (the same operations reading the same values), and the first need not be
// searched: every value, store and durability outcome reachable from it
// is reachable from the second. Two such pairs arise from pending
// barriers, and the search keeps only the second of each:
//
//   - A pending barrier whose thread has seen nothing beyond the global
//     view would publish nothing: completing it now, or later when the
//     global view may have grown, differs only in the thread's own views,
//     which are smallest now. So it completes now (completeSubsumed).
//   - Barrier B of thread t after pending barrier P of u, when t has seen
//     nothing beyond the global view P leaves: the result "P, then B"
//     equals "B, then P right after it" except that t's view is bigger.
//     So it is dropped, and "B first" kept (lkFences).
//
// The views only a barrier takes in are also forgotten where the global
// view covers them (lkNormalize). Unreduced turns all three off; the
// search without reductions (explore.Options.NoReduce) does, and its
// verdicts are held equal to the reduced search's
// (model.TestReductionsKeepVerdicts). The argument covers reachability;
// whether an actor can be blocked forever (a property of every path from
// a state) is covered by that test.

// mustRead panics if t, which reads loc as a failed cmpxchg, is not one of
// its readers.
func (m *lk) mustRead(t, loc int) {
	if m.readers[loc]&(1<<t) == 0 {
		panic(fmt.Sprintf("memory: thread %d's cmpxchg on location %d fails, a read, but it is not one of its declared readers", t, loc))
	}
}

// chain reports whether every live store of loc but the oldest is a
// read-modify-write's: then a read-modify-write can read only the newest,
// whatever its thread's view, so a thread that only updates loc with
// read-modify-writes need not be a reader.
func (m *lk) chain(loc int) bool {
	all := uint16(1)<<m.n[loc] - 1
	return m.glued[loc]|1 == all
}

// lkLoad is a plain load: one result per store not older than t's view
// (after its pending barrier, in every order: lkSettles).
func (m lk) lkLoad(t, loc int) []Loaded { return m.lkLoadAs(t, loc, readPlain) }

// lkLoadAs is lkLoad reading as how says (lkReadAs).
func (m lk) lkLoadAs(t, loc, how int) []Loaded {
	var out []Loaded
	for _, c := range m.lkSettles(t) {
		m := c.m
		for i := int(m.cur[t].at(loc)); i < m.readEnd(t, loc); i++ {
			if m.propForbids(t, loc, i) {
				continue
			}
			next := m.lkReadAs(t, loc, i, how)
			next.lkCompact(loc)
			out = append(out, Loaded{int64(m.vals[loc][i]), next.close(), c.alt.withNewer(int(m.n[loc]) - 1 - i)})
		}
	}
	return out
}

// propForbids reports whether t may not read store i of loc (another
// thread's) for a cycle in hb. Where the store's message view holds a
// store of location l that t's accesses at l are overwritten by, a load
// of it happens after them ((overwrite & ext) ; cumul-fence* ; rfe is
// prop, and internal, so in hb), and so may not read a store that what
// they read or wrote carried (lmv, lgv) overwrites: that load would be
// fr before such a store, which propagates before what t read at l, and
// so happen before it too. The same location's case (l = loc) needs no
// test: the store read is co-after t's accesses there anyway, and
// lkReadAs takes their views in. Found by TestMemoryLKMMReleaseAcquire
// (seed 20): P2 reads x2 (P0: y = 1, then a release of x = 2) and y2 (P1:
// x = 1, then a release of y = 2), with x = 1 and y = 1 last in co.
//
// Where the message view holds t's own newest store at l, and t has
// accessed nothing at l since (its view is that store), the load happens
// after t's accesses at l too: that store propagates before the one read
// (cumul-fence* ; rfe, internal: prop & int, in hb), and t's earlier
// accesses at l are ordered before it ((overwrite & int) is in ppo).
// Found by TestMemoryLKMMReleaseAcquire (seed 42): P0 reads y = 1 from
// P2's xchg_release (after P2's x = 2), stores y = 1, and then reads
// x = 1 from P1's release, which P1 made after reading P0's y = 1; LKMM
// forbids it (x = 2 last in co), since that load of x happens after
// P0's load of y, which read what x = 2 propagated before. Only for a
// reader of l: compaction moves views below the oldest store it keeps
// onto it, and where that store is a reader's own and its view it keeps
// one blank store more for them (lkCompact), so that such a view is
// never taken for one that holds the store. Not at a location only
// locks access: compaction keeps only its newest store there (LockOnly),
// every view of it names that store, and whether the message view held
// t's unlock cannot be told. The rule then forbids nothing, which may
// allow an outcome LKMM forbids but never misses one; with it there,
// TestLKMMLocksRandom found a missed outcome (P2 reads y = 1 from P0's
// add after P0's fully ordered add_return to x, then spin_lock(s),
// spin_unlock(s) and an acquire of x that LKMM lets read 0: the initial
// x's message view named P2's own unlock of s).
func (m *lk) propForbids(t, loc, i int) bool {
	if !m.whole || int(m.wr[loc][i]) == m.owner(t)+1 {
		return false
	}
	v := m.mview[loc][i]
	own := int8(m.owner(t) + 1)
	for l := 0; l < MaxLocations; l++ {
		c := m.cur[t].at(l)
		if l == loc || v.at(l) < c || v.at(l) == c && (m.wr[l][c] != own || m.readers[l]&(1<<t) == 0 || m.lockOnly&(1<<l) != 0) {
			continue
		}
		if floor := m.lmv[t][l].join(m.lgv[t][l]); i < int(floor.at(loc)) {
			return true
		}
	}
	return false
}

// lkLoadNewest is LoadNewest: the newest store, after t's pending barrier
// in every order.
func (m lk) lkLoadNewest(t, loc int) []Loaded {
	var out []Loaded
	for _, c := range m.lkSettles(t) {
		next := c.m.lkRead(t, loc, int(c.m.n[loc]-1))
		next.lkCompact(loc)
		out = append(out, Loaded{int64(c.m.vals[loc][c.m.n[loc]-1]), next.close(), c.alt})
	}
	return out
}

// readEnd is one past the newest store of loc that t may read: the
// newest live store, or, after Pin, t's own newest one there (its view).
func (m *lk) readEnd(t, loc int) int {
	if int(m.pinned) == t+1 && int(m.pinLoc) == loc {
		i := int(m.cur[t].at(loc))
		if m.whole && int(m.wr[loc][i]) != m.owner(t)+1 {
			panic(fmt.Sprintf("memory: Pin(%d, %d): store %d there is not its own", t, loc, i))
		}
		return i + 1
	}
	return int(m.n[loc])
}

// lkRead is the memory after t read store i of loc with a plain load (or
// the read of a value-returning RMW), not compacted.
func (m lk) lkRead(t, loc, i int) lk { return m.lkReadAs(t, loc, i, readPlain) }

// How a load reads (lkReadAs).
const (
	readPlain    = iota // READ_ONCE, the read of a value-returning RMW
	readNoReturn        // the read of an RMW that returns nothing: smp_rmb does not order it
	readAcquire         // smp_load_acquire, an _acquire RMW that stores

	// readCoveredBit, with readPlain or readNoReturn: the caller covers
	// the load's buffering (LoadCovered, RMWOrder.Covered; covered).
	readCoveredBit = 4
)

// lkReadAs is the memory after t read store i of loc, not compacted. A
// plain load's store goes into acq (smp_mb takes it in) and, with
// UseOrderings, into rv (smp_rmb does, if the load returns a value); an
// acquire load's into cur at once, and it orders every later event of its
// thread, so it leaves no mark in unord.
func (m lk) lkReadAs(t, loc, i int, how int) lk {
	isCovered := how&readCoveredBit != 0
	how &^= readCoveredBit
	m.pinned = 0 // a Pin holds for one read
	mv, gv, dv := m.mview[loc][i], vw(0), vw(0)
	if m.whole {
		m.cow()
		gv = m.gv[loc][i]
		if int(m.wr[loc][i]) == m.owner(t)+1 {
			// Its own store (see wr), ordered after the loads it
			// depends on (dv).
			mv, gv, dv = 0, 0, m.dv[loc][i]
		} else {
			// Another thread's store, co-after every store t read or
			// wrote at loc before: those accesses are overwritten by it
			// (overwrite & ext), and the load reads it (rfe), which is
			// prop, internal, so in hb: the load happens after them, and
			// after what they happen after (lgv).
			gv = gv.join(m.lgv[t][loc])
			mv = mv.join(m.lmv[t][loc])
		}
	}
	mg := mv.join(gv).join(dv) // what an event ordered after the load may not go below
	m.cur[t] = m.cur[t].with(loc, uint8(i))
	if how == readAcquire {
		m.mustWhole("an acquire load")
		m.cur[t] = m.cur[t].join(mg)
		m.g[t] = m.g[t].join(gv)
	} else {
		// covered keeps loc only while every load of it since the
		// last barrier was a covered one.
		if isCovered && (m.unord[t]&(1<<loc) == 0 || m.covered[t]&(1<<loc) != 0) {
			m.covered[t] |= 1 << loc
		} else {
			m.covered[t] &^= 1 << loc
		}
		m.unord[t] |= 1 << loc
		if m.whole {
			m.since[t] |= 1 << loc
		}
	}
	m.acq[t] = m.acq[t].join(mg).join(m.cur[t])
	if m.whole {
		m.ah[t] = m.ah[t].join(gv)
		m.lgv[t][loc] = m.lgv[t][loc].join(gv)
		m.lmv[t][loc] = m.lmv[t][loc].join(mv)
		if m.readBack {
			m.dmv[t][loc] = m.dmv[t][loc].join(mg)
		}
		if how != readNoReturn {
			m.rv[t] = m.rv[t].join(mg)
		}
	}
	return m
}

// depView is what a load by t of its store that depends on the loads
// of the locations deps (bit l) takes in (dv).
func (m *lk) depView(t int, deps LocSet) vw {
	var d vw
	for l := 0; l < MaxLocations; l++ {
		if deps&(1<<l) != 0 {
			d = d.join(m.dmv[t][l])
		}
	}
	return d
}

// lkStores is a store of v (plain, or a release store; an unlock is a
// release store that also leaves what its thread's earlier events pass on,
// lkSpinUnlock): one result per place in loc's modification order after
// t's view (writeBase) and not inside a read-modify-write.
func (m lk) lkStores(t, loc int, v int64, deps LocSet, release, unlock bool) ([]Choice, error) {
	m.mustWrite(t, loc, false)
	var out []Choice
	for _, c := range m.lkSettles(t) {
		m := c.m
		if err := m.checkOrdered(t, loc, deps, release); err != nil {
			return nil, err
		}
		if m.n[loc] == MaxStores {
			return nil, fmt.Errorf("memory: more than %d live stores to location %d", MaxStores, loc)
		}
		var pulp vw
		if unlock {
			// What passes on: the thread's own stores with what they
			// carry (own) and what its strong fences and smp_wmb made
			// cumulative (rel), before the unlock.
			pulp = m.rel[t].join(m.own[t])
		}
		base, ordered := m.writeBase(t, loc, deps, release)
		for p := int(m.n[loc]); p > int(base.at(loc)); p-- {
			if p < int(m.n[loc]) && m.glued[loc]&(1<<p) != 0 {
				continue
			}
			next := m
			end := p == int(next.n[loc])
			if unlock {
				next.cow()
				next.tulp[t], next.tacq[t], next.tah[t] = pulp, m.acq[t], m.ah[t] // before the insert, which shifts them
				next.tunord[t], next.since[t] = m.unord[t], 0
			}
			next.lkInsert(t, loc, p, v, false, release, ordered)
			if deps != 0 {
				next.dv[loc][p] = next.depView(t, deps) // lkInsert took a copy (cow)
			}
			if unlock && end {
				next.ulp[loc] = pulp // indices below p: unchanged by the insert
			}
			next.lkCompact(loc)
			out = append(out, Choice{next.close(), c.alt.withNewer(int(m.n[loc]) - p)})
		}
	}
	return out, nil
}

// lkInsert puts t's store of v at index p of loc (glued: the store of a
// read-modify-write that read index p-1; release: a release store, whose
// message view is acq, everything its thread has seen and read; ordered:
// the store is ordered after every load of its thread since its last
// smp_mb, by a release or dependencies, so it happens after them).
func (m *lk) lkInsert(t, loc, p int, v int64, glued, release, ordered bool) {
	m.lkViews(laneOp{loc: loc, kind: laneShiftUp, at: uint8(p)})
	n := int(m.n[loc])
	copy(m.vals[loc][p+1:n+1], m.vals[loc][p:n])
	copy(m.mview[loc][p+1:n+1], m.mview[loc][p:n])
	if m.whole { // lkViews took a copy of the ordering views (cow)
		copy(m.gv[loc][p+1:n+1], m.gv[loc][p:n])
		copy(m.wr[loc][p+1:n+1], m.wr[loc][p:n])
		copy(m.dv[loc][p+1:n+1], m.dv[loc][p:n])
		m.dv[loc][p] = 0
		if p == n {
			m.ulp[loc] = 0 // the newest store is no unlock (SpinUnlock sets it after)
		}
	}
	g := m.glued[loc]
	g = g&(1<<p-1) | (g>>p)<<(p+1)
	if glued {
		g |= 1 << p
	}
	m.glued[loc] = g
	m.n[loc]++
	m.vals[loc][p] = int8(v)
	mv := m.rel[t]
	if release {
		m.mustWhole("a release store")
		mv = m.acq[t]
	}
	if glued {
		// rmw-sequence (linux-kernel.cat's cumul-fence ends with (rf ;
		// rmw)*): what propagates before the store it read propagates
		// before this one too.
		mv = mv.join(m.mview[loc][p-1])
	}
	mv = mv.with(loc, uint8(p))
	m.mview[loc][p] = mv
	if m.whole {
		// It happens after what its thread does everything after (g),
		// what it read or wrote at loc before (lgv: for a
		// read-modify-write, the store it read), and, ordered, every
		// load since the last barrier (ah).
		gv := m.g[t].join(m.lgv[t][loc])
		if ordered {
			gv = gv.join(m.ah[t])
		}
		m.gv[loc][p] = gv
		m.lgv[t][loc] = m.lgv[t][loc].join(gv)
		m.lmv[t][loc] = m.lmv[t][loc].join(mv)
		m.wr[loc][p] = int8(m.owner(t) + 1)
	}
	m.cur[t] = m.cur[t].with(loc, uint8(p))
	m.acq[t] = m.acq[t].join(m.cur[t])
	if m.whole {
		// smp_wmb passes on what the store carries and what it happens
		// after: a later store happens after it (wmb is in ppo).
		m.own[t] = m.own[t].join(mv).join(m.gv[loc][p])
	}
}

// lkLoadAcquire is smp_load_acquire: one result per store not older than
// t's view, after its pending barrier in every order.
func (m lk) lkLoadAcquire(t, loc int) []Loaded { return m.lkLoadAs(t, loc, readAcquire) }

// Locks (lock.cat): spin_lock is an acquire read of the lock word's free
// value glued in co to the store that takes it (LKR, LKW), spin_unlock a
// release store of the free value (UL). Critical sections take the lock
// one at a time, so spin_lock reads the newest store, the last unlock (or
// the initial value), and waits while it is held. Beyond acquire and
// release, po-unlock-lock-po (po ; [UL] ; (po | rf) ; [LKR] ; po in
// linux-kernel.cat) is a cumul-fence: the stores before an unlock (and
// what they carried, without the stores the unlocker only read) propagate
// before the events after the next lock that reads from it, and after the
// unlocker's own next lock of any lock. The unlock leaves that in ulp (for
// the lock word) and tulp (for its thread), and a lock joins both into
// what its thread's later stores carry (rel). Within a thread it is also
// ppo: the unlocker's next lock takes in what its loads before the unlock
// read (tacq), and its loads before the unlock are ordered before its
// stores after that lock (tunord), those between the two are not
// (since).

// lkForget forgets the views of thread t, which takes no step any more
// (DropReader): they order nothing of its own, and others see only what
// its stores carry. A barrier of its still pending is dropped too: a
// barrier orders its thread's earlier events before its later ones, and
// there are none (a strong fence relates events of its own thread on
// both sides, linux-kernel.cat); its taking effect would only give other
// threads' barriers more to see.
//
// The views only its own later events read (UseOrderings: rv, own, g,
// lgv, lmv, dmv, what its last unlock passes on to its next lock) are
// forgotten with them: every one of them is read only when thread t
// takes a step, as a fork's are when the fork ends (Free).
func (m *Memory) lkForget(t int) {
	m.post &^= 1 << t
	w := m.open()
	w.cow()
	w.setPart(t, lkPart{})
	*m = w.close()
}

// LockOnly declares that only spin_lock and spin_unlock will access loc.
// spin_lock reads the newest store (the last unlock, or the initial
// value) and its holder's spin_unlock goes right after its own lock's
// store, so a store older than the newest is read by nothing: the memory
// keeps only the newest (views that named an older one name the newest,
// which orders nothing more, since every access of loc is at the newest
// anyway). Without it, a thread that last took the lock long ago keeps
// every store since alive. A no-op under the other models.
func (m *Memory) LockOnly(loc int) {
	if m.model != LKMM {
		return
	}
	w := m.open()
	w.lockOnly |= 1 << loc
	*m = w.close()
}

// Uncover ends the cover of t's loads of the locations locs (bit l) that
// LoadCovered and RMWOrder.Covered gave: a store that follows and is not
// ordered after them is refused again (ErrUnordered). A no-op under the
// other models.
func (m *Memory) Uncover(t int, locs LocSet) {
	if m.model != LKMM || locs == 0 {
		return
	}
	if lkRef(m.scope, m.ext).covered[t]&locs == 0 {
		return
	}
	x := lkGet(m.scope, m.ext)
	x.covered[t] &^= locs
	m.ext = lkPut(m.scope, &x)
}

// ThreadKey summarises thread t's part of the LKMM state at the given
// locations (its views there, its pending barrier, whether it loaded since
// its last barrier), for symmetry reductions that sort threads by what
// they look like on their own. It is 0 under the other models.
func (m *Memory) ThreadKey(t int, locs ...int) uint64 {
	if m.model != LKMM {
		return 0
	}
	x := lkRef(m.scope, m.ext)
	k := uint64(m.post >> t & 1)
	for _, l := range locs {
		k = k<<14 | uint64(x.cond[t]>>l&1)<<13 | uint64(x.unord[t]>>l&1)<<12 | uint64(x.cur[t].at(l))<<8 | uint64(x.acq[t].at(l))<<4 | uint64(x.rel[t].at(l))
	}
	return k ^ uint64(x.covered[t])<<56 // LoadCovered's marks, 0 unless it is used
}

// lkCompact drops the stores to loc older than every reader's view; of a
// location only locks access (LockOnly), every store but the newest. It
// reports whether it dropped any, and whether it changed anything (a
// blank store blanked).
func (m *lk) lkCompact(loc int) (dropped, changed bool) {
	low := oldestRead(&m.Memory, &m.lkExtra, loc)
	ghost := false
	if low > 0 && m.whole && m.lockOnly&(1<<loc) == 0 && m.ownCurrent(loc, low) {
		// Views below low are moved onto the oldest store kept. Where
		// that store is a reader's own and its view, propForbids would
		// take such a view for one that holds the store, so one store
		// older is kept, blank (no reader's view reaches it, so nothing
		// reads it), for them to name instead.
		ghost = m.lkViews(laneOp{loc: loc, kind: laneBelow, at: low})
		if ghost {
			low--
		}
	}
	if low == 0 && !ghost {
		return false, false
	}
	n := m.n[loc]
	copy(m.vals[loc][:], m.vals[loc][low:n])
	copy(m.mview[loc][:], m.mview[loc][low:n])
	for i := n - low; i < n; i++ {
		m.vals[loc][i], m.mview[loc][i] = 0, 0
	}
	if m.whole {
		m.cow()
		copy(m.gv[loc][:], m.gv[loc][low:n])
		copy(m.wr[loc][:], m.wr[loc][low:n])
		copy(m.dv[loc][:], m.dv[loc][low:n])
		for i := n - low; i < n; i++ {
			m.gv[loc][i], m.wr[loc][i], m.dv[loc][i] = 0, 0, 0
		}
	}
	m.glued[loc] = m.glued[loc] >> low &^ 1
	m.n[loc] = n - low
	m.lkViews(laneOp{loc: loc, kind: laneDrop, at: low})
	if ghost {
		// Blank whether it was dropped down to or was the oldest already
		// (low 0 here): it has one form either way.
		changed = m.vals[loc][0] != 0 || m.mview[loc][0] != 0 || m.gv[loc][0] != 0 || m.wr[loc][0] != 0 || m.dv[loc][0] != 0
		m.vals[loc][0], m.mview[loc][0] = 0, 0
		m.gv[loc][0], m.wr[loc][0], m.dv[loc][0] = 0, 0, 0
	}
	return low > 0, changed || low > 0
}

// oldestRead is the index of the oldest store of loc that compaction
// keeps: the lowest view of it a reader has, or, at a location only
// locks access (LockOnly), the newest.
func oldestRead(m *Memory, x *lkExtra, loc int) uint8 {
	low := m.n[loc] - 1
	for t := 0; t < MaxThreads && low > 0 && x.lockOnly&(1<<loc) == 0; t++ {
		if m.readers[loc]&(1<<t) != 0 {
			low = min(low, x.cur[t].at(loc))
		}
	}
	return low
}

// ownCurrent reports whether store i of loc is the view of a reader
// that made it (its own newest store there, with nothing of loc read
// since) and whose accesses at loc carried something that could forbid
// it a read (propForbids' floor, above nothing at some other location;
// it does not change while the reader's view stays at its store).
func (m *lk) ownCurrent(loc int, i uint8) bool {
	for u := 0; u < MaxThreads; u++ {
		if m.readers[loc]&(1<<u) != 0 && m.cur[u].at(loc) == i && int(m.wr[loc][i]) == m.owner(u)+1 &&
			m.lmv[u][loc].join(m.lgv[u][loc]).with(loc, 0) != 0 {
			return true
		}
	}
	return false
}

// lkPermuted renames threads and locations in the LKMM views (see
// Permuted).
func (m lk) lkPermuted(out *lk, threads *[MaxThreads]int, locs *[MaxLocations]int) {
	pv := func(v vw) vw {
		var o vw
		for l := 0; l < MaxLocations; l++ {
			o = o.with(l, v.at(locs[l]))
		}
		return o
	}
	pl := func(u LocSet) LocSet { // a set of locations
		var o LocSet
		for l := 0; l < MaxLocations; l++ {
			o |= (u >> locs[l] & 1) << l
		}
		return o
	}
	for i := 0; i < MaxThreads; i++ {
		out.cur[i], out.acq[i], out.rel[i] = pv(m.cur[threads[i]]), pv(m.acq[threads[i]]), pv(m.rel[threads[i]])
	}
	for i := 0; m.whole && i < MaxThreads; i++ {
		out.rv[i], out.own[i] = pv(m.rv[threads[i]]), pv(m.own[threads[i]])
		out.tulp[i], out.tacq[i] = pv(m.tulp[threads[i]]), pv(m.tacq[threads[i]])
		out.tunord[i], out.since[i] = pl(m.tunord[threads[i]]), pl(m.since[threads[i]])
		out.g[i], out.ah[i], out.tah[i] = pv(m.g[threads[i]]), pv(m.ah[threads[i]]), pv(m.tah[threads[i]])
		for l := 0; l < MaxLocations; l++ {
			out.lgv[i][l] = pv(m.lgv[threads[i]][locs[l]])
			out.lmv[i][l] = pv(m.lmv[threads[i]][locs[l]])
			out.dmv[i][l] = pv(m.dmv[threads[i]][locs[l]])
		}
	}
	for l := 0; m.whole && l < MaxLocations; l++ {
		out.ulp[l] = pv(m.ulp[locs[l]])
	}
	out.glob = pv(m.glob)
	out.post = 0
	for i := 0; i < MaxThreads; i++ {
		out.unord[i], out.cond[i], out.covered[i] = pl(m.unord[threads[i]]), pl(m.cond[threads[i]]), pl(m.covered[threads[i]])
		if m.post&(1<<threads[i]) != 0 {
			out.post |= 1 << i
		}
	}
	var newID [MaxThreads + 1]int8 // old writer plus one -> new
	for i := 0; i < MaxThreads; i++ {
		newID[threads[i]+1] = int8(i + 1)
	}
	for i := 0; i < MaxThreads; i++ {
		out.alias[i] = newID[m.alias[threads[i]]]
	}
	for l := 0; l < MaxLocations; l++ {
		out.glued[l] = m.glued[locs[l]]
		for i := range out.mview[l] {
			out.mview[l][i] = pv(m.mview[locs[l]][i])
			if m.whole {
				out.gv[l][i] = pv(m.gv[locs[l]][i])
				out.dv[l][i] = pv(m.dv[locs[l]][i])
				out.wr[l][i] = newID[m.wr[locs[l]][i]]
			}
		}
	}
}

// The lanes must hold every store index with the top bit free, for every
// location, in a vw.
var _ [1]struct{} = [1 << laneBits / (2 * MaxStores)]struct{}{}
var _ [32 - laneBits*MaxLocations]struct{}

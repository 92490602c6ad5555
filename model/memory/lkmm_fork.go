package memory

import "fmt"

// Forks: a thread's events on two streams (LKMM with UseOrderings).
//
// A release orders its thread's earlier events before its store, and
// nothing after it; so a store after the release may be seen before a
// load ahead of the release is satisfied (load buffering), while the
// release must still carry what the thread did before it and nothing it
// did after. A caller that runs a thread's later events ahead of a
// pending release (model/durable's ahead.go) runs them on the thread
// and the release, with the loads before it, on a fork: another thread
// slot that starts as a copy of the thread (Fork), whose events the
// thread then takes in (Join: every view is a join of what the events
// before pass on, so joining the fork gives the thread what those events
// add) and which ends with the release (Join, then Free). The fork's
// stores are the owner's (a load of one is rfi, as in one thread).

// owner is the thread whose events thread t runs: t itself, or a fork's
// owner.
func (m *lk) owner(t int) int {
	if a := m.alias[t]; a != 0 {
		return int(a) - 1
	}
	return t
}

// Forked reports the owner of thread v if v is a fork (Fork), else -1.
func (m *Memory) Forked(v int) int {
	if m.model != LKMM {
		return -1
	}
	if a := lkRef(m.scope, m.ext).alias[v]; a != 0 {
		return int(a) - 1
	}
	return -1
}

// Fork makes thread v a copy of thread t: its views, what it loaded since
// its last barrier and last unlock, and a reader of the locations t
// reads. v must be no thread's and no location's reader, and t's barrier
// settled (Settle). unlock says the release the fork will run is a
// spin_unlock: t's own events are then after it, so t has loaded nothing
// since its last unlock (po-unlock-lock-po in linux-kernel.cat reads
// that).
func (m Memory) Fork(t, v int, unlock bool) Memory {
	if m.model != LKMM {
		panic("memory: Fork outside LKMM")
	}
	w := m.open()
	w.mustWhole("Fork")
	switch {
	case t == v || w.alias[t] != 0 || w.alias[v] != 0:
		panic(fmt.Sprintf("memory: Fork(%d, %d): a fork of a fork, or onto a fork", t, v))
	case w.post&(1<<t|1<<v) != 0:
		panic(fmt.Sprintf("memory: Fork(%d, %d) with a barrier pending: Settle it first", t, v))
	}
	for l := range w.readers {
		if w.readers[l]&(1<<v) != 0 {
			panic(fmt.Sprintf("memory: Fork(%d, %d): thread %d reads location %d", t, v, v, l))
		}
		if w.readers[l]&(1<<t) != 0 {
			w.readers[l] |= 1 << v
		}
	}
	w.cow()
	w.setPart(v, w.part(t))
	w.alias[v] = int8(t + 1)
	if unlock {
		w.since[t] = 0
	}
	return w.close()
}

// Join takes fork v's events into its owner t: what they pass on joins
// t's views, and the locations they loaded since the last barrier are
// t's too (covered where both covered them). unlock says the fork's
// release is a spin_unlock (as Fork was told): t's loads since its last
// unlock are then its own, after that unlock, and once v has run it
// (released) what t's next lock reads of its last unlock is v's;
// otherwise t's loads since its last unlock include v's.
func (m Memory) Join(t, v int, unlock, released bool) Memory {
	w := m.open()
	if int(w.alias[v]) != t+1 {
		panic(fmt.Sprintf("memory: Join(%d, %d): %d is not a fork of %d", t, v, v, t))
	}
	w.cow()
	w.cur[t], w.acq[t], w.rel[t] = w.cur[t].join(w.cur[v]), w.acq[t].join(w.acq[v]), w.rel[t].join(w.rel[v])
	ut, uv := w.unord[t], w.unord[v]
	w.covered[t] = (^ut | w.covered[t]) & (^uv | w.covered[v]) & (ut | uv)
	w.unord[t] |= uv
	w.cond[t] |= w.cond[v]
	w.rv[t], w.own[t] = w.rv[t].join(w.rv[v]), w.own[t].join(w.own[v])
	w.g[t], w.ah[t] = w.g[t].join(w.g[v]), w.ah[t].join(w.ah[v])
	for l := range w.lgv[t] {
		w.lgv[t][l], w.lmv[t][l] = w.lgv[t][l].join(w.lgv[v][l]), w.lmv[t][l].join(w.lmv[v][l])
		w.dmv[t][l] = w.dmv[t][l].join(w.dmv[v][l])
	}
	switch {
	case !unlock:
		w.since[t] |= w.since[v]
	case released:
		w.tulp[t], w.tacq[t], w.tah[t], w.tunord[t] = w.tulp[v], w.tacq[v], w.tah[v], w.tunord[v]
	}
	return w.close()
}

// Pin makes thread t's next read of loc (a load, or an unordered,
// acquire or release RMW's read) read only its own newest store there,
// the one its view names (LKMM with UseOrderings): a read its thread
// forwards from its own store, rfi, which LKMM orders after nothing
// (model/durable's ahead.go runs a read that follows a pending release of
// its location this way, on the release's fork, right after the release).
// It panics if that store is not t's.
func (m Memory) Pin(t, loc int) Memory {
	w := m.open()
	w.mustWhole("Pin")
	w.pinned, w.pinLoc = int8(t+1), uint8(loc)
	return w.close()
}

// Free ends fork v: it is no location's reader and holds nothing.
func (m Memory) Free(v int) Memory {
	w := m.open()
	if w.alias[v] == 0 {
		panic(fmt.Sprintf("memory: Free(%d) of no fork", v))
	}
	if w.post&(1<<v) != 0 {
		panic(fmt.Sprintf("memory: Free(%d) with its barrier pending", v))
	}
	w.cow()
	w.setPart(v, lkPart{})
	w.alias[v] = 0
	for l := range w.readers {
		if w.readers[l]&(1<<v) != 0 {
			w.readers[l] &^= 1 << v
			w.lkCompact(l)
		}
	}
	return w.close()
}

// ForgetMarks forgets, for the locations locs (bit l), what thread t
// loaded there since its last barrier and its last unlock, and whether
// those loads were covered or ordered only by a conditional RMW (LKMM; a
// no-op elsewhere). Only a later store of t reads them (whether it is
// ordered after those loads, where it goes in co, what its thread's next
// lock orders), so a caller whose thread makes no store that reads them
// before its next full barrier, which forgets them anyway, may forget
// them, and states that differ only there become one.
func (m *Memory) ForgetMarks(t int, locs LocSet) {
	if m.model != LKMM || m.ext == 0 || locs == 0 {
		return
	}
	r := lkRef(m.scope, m.ext)
	changed := (r.unord[t]|r.cond[t]|r.covered[t])&locs != 0
	var tb *tables
	if r.whole {
		tb = tablesOf(m.scope)
		o := tb.ord.ref(uint32(r.ord))
		changed = changed || (o.since[t]|o.tunord[t])&locs != 0
	}
	if !changed {
		return
	}
	x := *r
	x.unord[t] &^= locs
	x.cond[t] &^= locs
	x.covered[t] &^= locs
	if x.whole {
		o := tb.ord.get(uint32(x.ord))
		if (o.since[t]|o.tunord[t])&locs != 0 {
			o.since[t] &^= locs
			o.tunord[t] &^= locs
			x.ord = tb.ordPut(&o)
		}
	}
	m.ext = lkPut(m.scope, &x)
}

// ForkCurrent reports whether thread t holds what its fork v holds of
// its own (its views, marks and pending barrier): nothing has run on t
// since the fork, so an event t would run now gives the same memory run
// on v (LKMM; false elsewhere or if v is no fork of t).
func (m *Memory) ForkCurrent(t, v int) bool {
	if m.model != LKMM {
		return false
	}
	w := m.open()
	return int(w.alias[v]) == t+1 && m.post>>t&1 == m.post>>v&1 && w.part(t) == w.part(v)
}

// lkPart is what memory keeps of one thread besides its pending barrier
// and its alias: what Fork copies, Free clears and ForkCurrent compares.
type lkPart struct {
	cur, acq, rel        vw
	unord, cond, covered LocSet
	// With UseOrderings (lkOrd), else zero:
	rv, own, tulp, tacq vw
	tunord, since       LocSet
	g, ah, tah          vw
	lgv, lmv, dmv       [MaxLocations]vw
}

// part is thread t's lkPart.
func (m *lk) part(t int) lkPart {
	p := lkPart{cur: m.cur[t], acq: m.acq[t], rel: m.rel[t], unord: m.unord[t], cond: m.cond[t], covered: m.covered[t]}
	if m.lkOrd != nil {
		p.rv, p.own, p.tulp, p.tacq = m.rv[t], m.own[t], m.tulp[t], m.tacq[t]
		p.tunord, p.since = m.tunord[t], m.since[t]
		p.g, p.ah, p.tah = m.g[t], m.ah[t], m.tah[t]
		p.lgv, p.lmv, p.dmv = m.lgv[t], m.lmv[t], m.dmv[t]
	}
	return p
}

// setPart makes p thread t's lkPart (the ordering views after cow).
func (m *lk) setPart(t int, p lkPart) {
	m.cur[t], m.acq[t], m.rel[t] = p.cur, p.acq, p.rel
	m.unord[t], m.cond[t], m.covered[t] = p.unord, p.cond, p.covered
	if m.lkOrd != nil {
		m.rv[t], m.own[t], m.tulp[t], m.tacq[t] = p.rv, p.own, p.tulp, p.tacq
		m.tunord[t], m.since[t] = p.tunord, p.since
		m.g[t], m.ah[t], m.tah[t] = p.g, p.ah, p.tah
		m.lgv[t], m.lmv[t], m.dmv[t] = p.lgv, p.lmv, p.dmv
	}
}

// RaiseToBarrier raises thread t's views (cur and acq) of the locations
// locs (bit l) to what its next full barrier makes of them: the join of
// the two and the global view (LKMM; a no-op elsewhere, or with t's
// barrier after an RMW pending). A caller may call it only where every
// path of t reaches a full barrier that takes its views in before it
// reads anything (smp_mb, or a read-modify-write whose barrier comes
// before its read), or its end, before anything reads those views: an
// access of one of those locations by t. quiet says more: t makes no
// memory access at all before that barrier (locs is then every
// location).
//
// Without UseOrderings nothing else reads them: t's loads and stores of
// other locations read their own lane and only join into these (a load
// takes in the message view read), no other thread reads t's views, and
// a store carries t's rel, which is left as it is. The barrier sets both
// views to the join of cur, acq and the global view it finds, and the
// global view only grows until then, so raising them now changes nothing
// the barrier produces; states that differ only in what t saw at those
// locations before the barrier become one.
//
// A quiet thread is raised whole: its rel is set to the join as well,
// and with UseOrderings every ordering view of its own to what the
// barrier sets it to (g to the join, the rest to nothing), since the
// barrier overwrites them all without reading them. With UseOrderings a
// thread that is not quiet is left as it is: a load reads every lane of
// its thread's views (a read that prop forbids, propForbids) and a
// store carries its thread's g and lgv. The stores no view reaches any
// more stay until Compact drops them.
func (m *Memory) RaiseToBarrier(t int, locs LocSet, quiet bool) {
	if m.model != LKMM || m.ext == 0 || locs == 0 || m.post&(1<<t) != 0 {
		return
	}
	x := lkRef(m.scope, m.ext)
	if x.unreduced || x.alias[t] != 0 || int(x.pinned) == t+1 || x.whole && !quiet {
		return
	}
	for v := range x.alias {
		if int(x.alias[v]) == t+1 {
			return // a fork of t's will join its views into t's (Join)
		}
	}
	c := x.cur[t].join(x.acq[t]).join(x.glob)
	if quiet {
		w := m.open()
		p := lkPart{cur: c, acq: c, rel: c, unord: w.unord[t], cond: w.cond[t], covered: w.covered[t], g: c}
		if w.part(t) == p {
			return
		}
		w.cow()
		w.setPart(t, p)
		*m = w.close()
		return
	}
	changed := LocSet(0)
	for l := 0; l < MaxLocations; l++ {
		if locs&(1<<l) != 0 && (x.cur[t].at(l) != c.at(l) || x.acq[t].at(l) != c.at(l)) {
			changed |= 1 << l
		}
	}
	if changed == 0 {
		return
	}
	w := m.open()
	for l := 0; l < MaxLocations; l++ {
		if changed&(1<<l) != 0 {
			w.cur[t] = w.cur[t].with(l, c.at(l))
			w.acq[t] = w.acq[t].with(l, c.at(l))
		}
	}
	*m = w.close()
}

// Compact drops every store no reader's view reaches any more, at every
// location (LKMM; a no-op elsewhere). An operation compacts the
// locations it touches; the others keep what their readers' views rose
// past until then, which changes no future step. A caller that raises
// views (RaiseToBarrier) compacts after it, at every location, so that
// states with the same futures have one form whichever way they came.
func (m *Memory) Compact() {
	if m.model != LKMM || m.ext == 0 || !m.belowReaders() {
		return
	}
	w := m.open()
	// Whether a location keeps a blank store below its readers' views
	// (lkCompact's ghost) depends on views' lanes at other locations,
	// which compacting those lowers: until no store is dropped, so that
	// the form does not depend on the order of the locations. A memory
	// it leaves as it was is not interned again (lkCompact copies the
	// ordering views before it writes them): closing it would change
	// nothing, since every step closed it (completeSubsumed left no
	// barrier pending that publishes nothing new).
	changed := false
	for dropped := true; dropped; {
		dropped = false
		for l := range w.n {
			d, c := w.lkCompact(l)
			dropped, changed = dropped || d, changed || c
		}
	}
	if changed {
		*m = w.close()
	}
}

// belowReaders reports whether some location holds a store older than
// every reader's view of it (of a location only locks access, one older
// than the newest): whether lkCompact has anything to drop. Read in
// place, without a copy: most memories Compact is asked about have
// nothing.
func (m *Memory) belowReaders() bool {
	x := lkRef(m.scope, m.ext)
	for l := range m.n {
		if oldestRead(m, x, l) > 0 {
			return true
		}
	}
	return false
}

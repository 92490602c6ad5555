package lkmm

import (
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// The axioms and flags of tools/memory-model/linux-kernel.cat and
// linux-kernel.bell as of Linux v6.18 (full-barrier RMWs tagged Mb,
// rmw-sequence, po-unlock-lock-po through po or rf, rcu-order, ppo within
// po): coherence, atomic, happens-before, propagation, rcu and
// plain-coherence, and the flags data-race, mixed-accesses and the
// RCU/SRCU nesting ones. Each relation is named as in the cat file. Lock
// events are already in R, W, Acquire and Release, as lock.cat puts them
// (LKR a read and an Acquire, LKW and UL writes, UL a Release), and an
// LKR and its LKW are an rmw pair (lk-rmw).
//
// Coherence and atomic concern one location each: search.go checks them
// location by location as the search places events (checkLoc). The other
// axioms are checked here, on the events placed so far: statics holds
// what the cat derives from the events and po alone, kept while only rf
// and co change; check adds rf and co.
//
// Every relation an axiom uses grows with the events, po, rf and co:
// unions, sequences, closures, least fixpoints of those (rcu-order),
// intersections and restrictions to sets of events fixed by the events
// themselves, and prop \ id, which removes only the identity. So an
// axiom broken in a partial execution (some threads placed, some reads'
// rf not chosen yet, the co of each location among the writes placed so
// far) is broken in every execution that extends it: the search cuts
// there. The flags use differences over rf and co (data-race): they are
// computed on complete executions only (flags).

// sets of events, each a bit per event index.
type sets struct {
	all, R, W, M, IW, Marked, Plain, R4rmb, NotNoreturn, RMW bitset
	Acquire, Release, MbR, MbW, Mb                           bitset // Mb: smp_mb fences and the events of full-barrier RMWs
	Rmb, Wmb, BeforeAtomic, AfterAtomic, AfterSpinlock       bitset // fences by kind
	AfterUnlockLock, AfterSrcuUnlock                         bitset
	RcuLock, RcuUnlock, SyncRcu, SyncSrcu                    bitset
	SrcuLock, SrcuUnlock, NotSrcuUnlock                      bitset
	barrier                                                  bitset // the events fencerel takes in barrier
	LKR, LKW, UL                                             bitset // lock.cat's lock events
}

// statics are the relations of one prefix of runs (events and po), in
// relations of their own arena.
type statics struct {
	ar *arena
	n  int
	s  sets
	// intRel: the same thread (the initial writes are external to every
	// thread) or the same event.
	intRel            rel
	po, rmw           rel
	data, ctrl, addr  rel // before carry-dep
	hasData           bool
	wmb, rmb          rel
	poRel, acqPo      rel
	strongFence       rel // mb | gp, but for mb's After-unlock-lock part, which needs rf
	pulpPo            rel // po ; [UL] ; po ; [LKR] ; po
	ulPo, lkrPo       rel // po ; [UL] and [LKR] ; po, for the rf part of po-unlock-lock-po
	aulPo             rel // [After-unlock-lock] ; po ; [M]
	hasLocks, hasAUL  bool
	hasPlain, hasRCU  bool
	rcuRscs           rel // matched rcu_read_lock / rcu_read_unlock pairs (linux-kernel.bell)
	sameLoc           rel // loc, over the events that have a location
	unmatchedRcu      [2]bool
	indeg, queue_     []int
	poLoc, barrierRel rel
	val               []int64 // each event's value, for srcu-bad-value-match
}

// placed is an event of the execution being built, with where it stands.
type placed struct {
	*event
	loc  int // index in the search's locations, -1 for a fence
	base int // index of its thread's first event (its own for an initial write)
}

func newStatics(maxEvents int) *statics {
	return &statics{ar: newArena(maxEvents), indeg: make([]int, maxEvents), queue_: make([]int, 0, maxEvents)}
}

func (st *statics) newSet() bitset { return make(bitset, st.ar.w) }

// compute fills st for the events evs.
func (st *statics) compute(evs []placed) {
	n := len(evs)
	st.n = n
	st.ar.reset(n)
	a := st.ar
	s := &st.s
	for _, p := range []*bitset{&s.all, &s.R, &s.W, &s.M, &s.IW, &s.Marked, &s.Plain, &s.R4rmb, &s.NotNoreturn,
		&s.RMW, &s.Acquire, &s.Release, &s.MbR, &s.MbW, &s.Mb, &s.Rmb, &s.Wmb, &s.BeforeAtomic, &s.AfterAtomic,
		&s.AfterSpinlock, &s.AfterUnlockLock, &s.AfterSrcuUnlock, &s.RcuLock, &s.RcuUnlock, &s.SyncRcu,
		&s.SyncSrcu, &s.SrcuLock, &s.SrcuUnlock, &s.NotSrcuUnlock, &s.barrier, &s.LKR, &s.LKW, &s.UL} {
		if *p == nil {
			*p = st.newSet()
		}
		p.clear()
	}
	st.intRel, st.po, st.rmw, st.data, st.ctrl, st.addr = a.get(), a.get(), a.get(), a.get(), a.get(), a.get()
	st.hasData, st.hasLocks, st.hasAUL, st.hasPlain, st.hasRCU = false, false, false, false, false
	// A thread's events are placed together, in program order: end is
	// where the thread of event i stops.
	end := st.queue_[:n]
	for i := n - 1; i >= 0; i-- {
		if i+1 < n && evs[i+1].thread == evs[i].thread && evs[i].thread >= 0 {
			end[i] = end[i+1]
		} else {
			end[i] = i + 1
		}
	}
	st.val = st.val[:0]
	for i, ev := range evs {
		st.val = append(st.val, ev.val)
		s.all.add(i)
		switch ev.kind {
		case read:
			s.R.add(i)
		case write:
			s.W.add(i)
		case fence:
			switch ev.fence {
			case litmus.OpRmb:
				s.Rmb.add(i)
			case litmus.OpWmb:
				s.Wmb.add(i)
			case litmus.OpMb:
				s.Mb.add(i)
			case litmus.OpMbBeforeAtomic:
				s.BeforeAtomic.add(i)
			case litmus.OpMbAfterAtomic:
				s.AfterAtomic.add(i)
			case litmus.OpMbAfterSpinlock:
				s.AfterSpinlock.add(i)
			case litmus.OpMbAfterUnlockLock:
				s.AfterUnlockLock.add(i)
				st.hasAUL = true
			case litmus.OpMbAfterSrcuUnlock:
				s.AfterSrcuUnlock.add(i)
			case litmus.OpRcuLock:
				s.RcuLock.add(i)
				st.hasRCU = true
			case litmus.OpRcuUnlock:
				s.RcuUnlock.add(i)
				st.hasRCU = true
			case litmus.OpSyncRcu:
				s.SyncRcu.add(i)
				st.hasRCU = true
			case litmus.OpSyncSrcu:
				s.SyncSrcu.add(i)
				st.hasRCU = true
			}
			switch ev.fence {
			case litmus.OpBarrier, litmus.OpRmb, litmus.OpWmb, litmus.OpMb, litmus.OpSyncRcu, litmus.OpSyncSrcu,
				litmus.OpMbBeforeAtomic, litmus.OpMbAfterAtomic, litmus.OpRcuLock, litmus.OpRcuUnlock:
				s.barrier.add(i)
			}
		}
		if ev.kind != fence {
			s.M.add(i)
			if ev.thread < 0 {
				s.IW.add(i)
			}
		}
		if ev.plain {
			s.Plain.add(i)
			st.hasPlain = true
		} else {
			s.Marked.add(i) // Marked = ~M | IW | Once | Release | Acquire | ...
		}
		if ev.kind == read && !ev.noreturn {
			s.R4rmb.add(i) // R4rmb = R \ Noreturn
		}
		if !ev.noreturn {
			s.NotNoreturn.add(i)
		}
		if ev.mb {
			s.Mb.add(i)
			if ev.kind == read {
				s.MbR.add(i)
			} else {
				s.MbW.add(i)
			}
		}
		if ev.acquire {
			s.Acquire.add(i)
			s.barrier.add(i)
		}
		if ev.release {
			s.Release.add(i)
			s.barrier.add(i)
		}
		if ev.inRMW {
			s.RMW.add(i)
		}
		switch ev.srcu {
		case srcuLock:
			s.SrcuLock.add(i)
			s.barrier.add(i)
			st.hasRCU = true
		case srcuUnlock:
			s.SrcuUnlock.add(i)
			s.barrier.add(i)
			st.hasRCU = true
		}
		if ev.srcu != srcuUnlock {
			s.NotSrcuUnlock.add(i)
		}
		switch ev.lock {
		case lockLKR:
			s.LKR.add(i)
			st.hasLocks = true
		case lockLKW:
			s.LKW.add(i)
		case lockUL:
			s.UL.add(i)
		}
		st.intRel.add(i, i)
		if ev.thread >= 0 {
			for j := ev.base; j < end[i]; j++ {
				st.intRel.add(i, j)
			}
			for j := i + 1; j < end[i]; j++ {
				st.po.add(i, j)
			}
		}
		if ev.kind == write && ev.rmwRead >= 0 {
			st.rmw.add(ev.base+ev.rmwRead, i)
		}
		ev.data.each(func(k int) { st.data.add(ev.base+k, i); st.hasData = true })
		ev.ctrl.each(func(k int) { st.ctrl.add(ev.base+k, i) })
		ev.addr.each(func(k int) { st.addr.add(ev.base+k, i); st.hasData = true })
	}

	// fencerel(f) = po ; [f] ; po
	fencerel := func(f bitset) rel {
		if f.empty() {
			return a.get() // most tests have few kinds of fence
		}
		t := a.copyOf(st.po)
		t.restrictTo(f)
		return a.seqOf(t, st.po)
	}
	poOpt := a.optOf(st.po)
	// r ; [mid] ; x, restricted to [dom] on the left and [rng] on the right
	via := func(dom bitset, r rel, mid bitset, x rel, rng bitset) rel {
		if mid.empty() {
			return a.get()
		}
		t := a.copyOf(r)
		t.restrict(dom, mid)
		out := a.seqOf(t, x)
		out.restrictTo(rng)
		return out
	}

	// Release Acquire
	st.acqPo = a.copyOf(st.po)
	st.acqPo.restrict(s.Acquire, s.M)
	st.poRel = a.copyOf(st.po)
	st.poRel.restrict(s.M, s.Release)

	// Fences
	st.rmb = fencerel(s.Rmb)
	st.rmb.restrict(s.R4rmb, s.R4rmb)
	st.wmb = fencerel(s.Wmb)
	st.wmb.restrict(s.W, s.W)
	mb := fencerel(s.Mb)
	mb.restrict(s.M, s.M)
	// full-barrier RMWs act as if enclosed by smp_mb()
	t := a.copyOf(st.po)
	t.restrict(s.M, s.MbR)
	mb.or(t)
	t = a.copyOf(st.po)
	t.restrict(s.MbW, s.M)
	mb.or(t)
	// [M] ; fencerel(Before-atomic) ; [RMW] ; po? ; [M]
	mb.or(via(s.M, fencerel(s.BeforeAtomic), s.RMW, poOpt, s.M))
	// [M] ; po? ; [RMW] ; fencerel(After-atomic) ; [M]
	mb.or(via(s.M, poOpt, s.RMW, fencerel(s.AfterAtomic), s.M))
	// [M] ; po? ; [LKW] ; fencerel(After-spinlock) ; [M]
	mb.or(via(s.M, poOpt, s.LKW, fencerel(s.AfterSpinlock), s.M))
	// [M] ; po? ; [Srcu-unlock] ; fencerel(After-srcu-read-unlock) ; [M]
	mb.or(via(s.M, poOpt, s.SrcuUnlock, fencerel(s.AfterSrcuUnlock), s.M))
	// The After-unlock-lock part, [M] ; po-unlock-lock-po ;
	// [After-unlock-lock] ; po ; [M], needs rf: check adds it.
	st.aulPo = a.copyOf(st.po)
	st.aulPo.restrict(s.AfterUnlockLock, s.M)
	// gp = po ; [Sync-rcu | Sync-srcu] ; po?
	sync := st.newSet()
	sync.or(s.SyncRcu)
	sync.or(s.SyncSrcu)
	gp := via(s.all, st.po, sync, poOpt, s.all)
	st.strongFence = mb
	st.strongFence.or(gp)

	// po-unlock-lock-po = po ; [UL] ; (po | rf) ; [LKR] ; po: an unlock
	// then a lock, by the same thread (of any lock) or by the next holder
	// of the same lock, order what precedes the one before what follows
	// the other (explanation.txt, LOCKING). The po part is here, the rf
	// part in check.
	st.pulpPo = a.get()
	if st.hasLocks {
		st.ulPo = a.copyOf(st.po)
		st.ulPo.restrictTo(s.UL)
		st.lkrPo = a.copyOf(st.po)
		st.lkrPo.restrictFrom(s.LKR)
		mid := a.copyOf(st.po)
		mid.restrict(s.UL, s.LKR)
		st.pulpPo.seq(a.seqOf(st.ulPo, mid), st.lkrPo)
	}

	if st.hasPlain {
		st.poLoc = a.get()
		for i := 0; i < n; i++ {
			for j := i + 1; j < end[i]; j++ {
				if evs[i].kind != fence && evs[j].kind != fence && evs[i].loc == evs[j].loc {
					st.poLoc.add(i, j)
				}
			}
		}
		// barrier, for mixed-accesses
		st.barrierRel = fencerel(s.barrier)
		t := a.copyOf(st.po)
		t.restrictTo(s.Release)
		st.barrierRel.or(t)
		t = a.copyOf(st.po)
		t.restrictFrom(s.Acquire)
		st.barrierRel.or(t)
	}

	if st.hasRCU {
		// rcu-rscs: each rcu_read_unlock matched with the nearest
		// unmatched rcu_read_lock before it in its thread (the bell's
		// least fixpoint over unmatched events gives this nesting).
		st.rcuRscs = a.get()
		st.unmatchedRcu = [2]bool{}
		var stack []int
		thread := -2
		for i, ev := range evs {
			if ev.thread != thread {
				if len(stack) > 0 {
					st.unmatchedRcu[0] = true
				}
				stack, thread = stack[:0], ev.thread
			}
			switch {
			case s.RcuLock.has(i):
				stack = append(stack, i)
			case s.RcuUnlock.has(i):
				if len(stack) == 0 {
					st.unmatchedRcu[1] = true
					continue
				}
				st.rcuRscs.add(stack[len(stack)-1], i)
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) > 0 {
			st.unmatchedRcu[0] = true
		}
		// loc, over the events with a location (accesses and Sync-srcu)
		// (only SRCU's "& loc" uses it)
		st.sameLoc = a.get()
		if !s.SrcuLock.empty() || !s.SyncSrcu.empty() {
			for i := range evs {
				if evs[i].event.loc == "" {
					continue
				}
				for j := range evs {
					if evs[j].event.loc == evs[i].event.loc {
						st.sameLoc.add(i, j)
					}
				}
			}
		}
	}
}

// dynRels holds the relations of one check that the rcu and plain-access
// parts and the flags need too.
type dynRels struct {
	rf, co, fr, rfe    rel
	addr               rel
	hb, pb, rb         rel
	strongFence, fence rel // with rcu-fence (the cat's redefinitions)
	nonrwFence         rel
	cumulStar, rmwSeq  rel
	srcuRscs           rel
	wwVis, wrVis, rwXb rel
	preRace            rel
}

// hbpb reports whether the execution whose events st describes, with the
// rf and co given (rfSrc[i] the write read by read i, -1 if not chosen;
// co each location's writes in order), satisfies the happens-before,
// propagation, rcu and plain-coherence axioms (and, with inOrder,
// acyclic po | rf). dyn is the arena of this check's relations.
func (st *statics) hbpb(dyn *arena, rfSrc []int, co [][]int, inOrder bool) bool {
	ok, _ := st.check(dyn, rfSrc, co, inOrder, false)
	return ok
}

// check is hbpb, and with flags the names of the flags the execution
// raises (for a complete execution that satisfies the axioms).
func (st *statics) check(dyn *arena, rfSrc []int, co [][]int, inOrder, flags bool) (bool, []string) {
	n := st.n
	dyn.reset(n)
	a := dyn
	s := &st.s
	var d dynRels
	rf := a.get()
	for i := 0; i < n; i++ {
		if w := rfSrc[i]; w >= 0 {
			rf.add(w, i)
		}
	}
	d.rf = rf
	if inOrder {
		t := a.unionOf(st.po, rf)
		if !t.acyclic(st.indeg, st.queue_) {
			return false, nil
		}
	}
	coR := a.get()
	for _, order := range co {
		for k := len(order) - 2; k >= 0; k-- {
			row := coR.row(order[k])
			row.or(coR.row(order[k+1]))
			row.add(order[k+1])
		}
	}
	d.co = coR
	d.fr = a.seqOf(a.invOf(rf), coR)
	rfi := a.copyOf(rf)
	rfi.and(st.intRel)
	rfe := a.copyOf(rf)
	rfe.andNot(rfi)
	d.rfe = rfe
	overwrite := a.unionOf(coR, d.fr)
	owInt := a.copyOf(overwrite)
	owInt.and(st.intRel)
	owExt := a.copyOf(overwrite)
	owExt.andNot(owInt)

	// Dependencies carried through memory (linux-kernel.bell):
	// carry-dep = (data ; [~ Srcu-unlock] ; rfi)*, then addr, data and
	// ctrl are prefixed by it.
	data, ctrl, addr := st.data, st.ctrl, st.addr
	if st.hasData && !rfi.empty() {
		t := a.copyOf(st.data)
		t.restrictTo(s.NotSrcuUnlock)
		carry := a.seqOf(t, rfi)
		carry.star()
		data, ctrl, addr = a.seqOf(carry, st.data), a.seqOf(carry, st.ctrl), a.seqOf(carry, st.addr)
	}
	d.addr = addr

	// po-unlock-lock-po, with its rf part.
	pulp := st.pulpPo
	if st.hasLocks {
		ulRf := a.copyOf(rf)
		ulRf.restrict(s.UL, s.LKR)
		pulp = a.unionOf(st.pulpPo, a.seqOf(a.seqOf(st.ulPo, ulRf), st.lkrPo))
	}
	strongFence := st.strongFence
	if st.hasAUL && st.hasLocks {
		// [M] ; po-unlock-lock-po ; [After-unlock-lock] ; po ; [M]
		t := a.copyOf(pulp)
		t.restrict(s.M, s.AfterUnlockLock)
		strongFence = a.unionOf(st.strongFence, a.seqOf(t, st.aulPo))
	}
	nonrwFence := a.unionOf(strongFence, st.poRel, st.acqPo)
	fence := a.unionOf(nonrwFence, st.wmb, st.rmb)
	d.nonrwFence = nonrwFence

	// Preserved Program Order
	dep := a.unionOf(addr, data)
	// to-r = (addr ; [R]) | (dep ; [Marked] ; rfi)
	ppo := a.copyOf(addr)
	ppo.restrictTo(s.R)
	t := a.copyOf(dep)
	t.restrictTo(s.Marked)
	ppo.or(a.seqOf(t, rfi))
	// to-w = rwdep | (overwrite & int) | (addr ; [Plain] ; wmb), rwdep =
	// (dep | ctrl) ; [W]
	rwdep := a.unionOf(dep, ctrl)
	rwdep.restrictTo(s.W)
	if st.hasPlain {
		t := a.copyOf(addr)
		t.restrictTo(s.Plain)
		rwdep.or(a.seqOf(t, st.wmb))
	}
	ppo.or(rwdep)
	ppo.or(owInt)
	t = a.copyOf(fence) // fence & int
	t.and(st.intRel)
	ppo.or(t)
	if st.hasLocks {
		t := a.copyOf(pulp)
		t.and(st.intRel)
		ppo.or(t)
	}

	// Propagation: cumul-fence = [Marked] ; (A-cumul(strong-fence |
	// po-rel) | wmb | po-unlock-lock-po) ; [Marked] ; rmw-sequence, with
	// A-cumul(r) = (rfe ; [Marked])? ; r
	base := a.unionOf(strongFence, st.poRel)
	rfeM := a.copyOf(rfe)
	rfeM.restrictTo(s.Marked)
	cf := a.unionOf(a.seqOf(rfeM, base), base, st.wmb, pulp)
	cf.restrict(s.Marked, s.Marked)
	// rmw-sequence = (rf ; rmw)* (commit "tools: memory-model: Add
	// rmw-sequences to the LKMM", v6.3)
	rs := a.seqOf(rf, st.rmw)
	if !rs.empty() {
		rs.star()
		cf = a.seqOf(cf, rs)
	} else {
		rs = a.id(s.all)
	}
	d.rmwSeq = rs
	cfStar := a.starOf(cf)
	d.cumulStar = cfStar
	// prop = [Marked] ; (overwrite & ext)? ; cumul-fence* ; [Marked] ;
	// rfe? ; [Marked]
	p1 := a.optOf(owExt)
	p1.restrictFrom(s.Marked)
	p1 = a.seqOf(p1, cfStar)
	p1.restrictTo(s.Marked)
	prop := a.seqOf(p1, rfeM)
	prop.or(p1)

	// acyclic hb as happens-before: hb = [Marked] ; (ppo | rfe | ((prop
	// \ id) & int)) ; [Marked]
	hb := a.copyOf(prop)
	hb.delID()
	hb.and(st.intRel)
	hb.or(ppo)
	hb.or(rfe)
	hb.restrict(s.Marked, s.Marked)
	if !hb.acyclic(st.indeg, st.queue_) {
		return false, nil
	}
	// acyclic pb as propagation, pb = prop ; strong-fence ; hb* ;
	// [Marked]. With hb acyclic (and within Marked), a cycle of pb is one
	// of (prop ; strong-fence ; [Marked]) | hb that takes a
	// prop ; strong-fence edge, and any cycle of that union does: so pb
	// is acyclic when the union is, with no closure of hb.
	psf := a.seqOf(prop, strongFence)
	psf.restrictTo(s.Marked)
	if !a.unionOf(psf, hb).acyclic(st.indeg, st.queue_) {
		return false, nil
	}
	if !st.hasRCU && !st.hasPlain {
		return true, nil // no flag to raise either
	}
	hbStar := a.starOf(hb)
	pb := a.seqOf(psf, hbStar)
	d.hb, d.pb = hb, pb
	d.strongFence, d.fence = strongFence, fence
	d.rb = a.get()
	if st.hasRCU {
		d.srcuRscs = st.srcuRscs(a, rf)
		rb, ok := st.rcu(a, &d, prop, hbStar, pb)
		if !ok {
			return false, nil
		}
		d.rb = rb
	}
	if st.hasPlain && !st.plainCoherent(a, &d) {
		return false, nil
	}
	if !flags {
		return true, nil
	}
	return true, st.flags(a, &d)
}

// srcuRscs is the bell's srcu-rscs = ([Srcu-lock] ; carry-srcu-data ;
// data ; [Srcu-unlock]) & loc, carry-srcu-data = (data ; [~ Srcu-unlock]
// ; rf)*: the srcu_read_unlock that gets the value its srcu_read_lock
// returned, through registers and memory.
func (st *statics) srcuRscs(a *arena, rf rel) rel {
	s := &st.s
	t := a.copyOf(st.data)
	t.restrictTo(s.NotSrcuUnlock)
	carry := a.seqOf(t, rf)
	carry.star()
	carry.restrictFrom(s.SrcuLock)
	out := a.seqOf(carry, st.data)
	out.restrictTo(s.SrcuUnlock)
	out.and(st.sameLoc)
	return out
}

// rcu checks irreflexive rb as rcu, and returns rb:
//
//	rcu-link = po? ; hb* ; pb* ; prop ; po
//	rcu-order = the least fixpoint of linux-kernel.cat's nine cases
//	rcu-fence = po ; rcu-order ; po?
//	rb = prop ; rcu-fence ; hb* ; pb* ; [Marked]
func (st *statics) rcu(a *arena, d *dynRels, prop, hbStar, pb rel) (rel, bool) {
	s := &st.s
	pbStar := a.starOf(pb)
	// rcu-link is used from grace periods and critical-section starts
	// only (rcu-gp ; rcu-link, rcu-rscsi ; rcu-link, and rcu-order's
	// targets, which are those): its other rows are not computed.
	from := st.newSet()
	for _, x := range []bitset{s.SyncRcu, s.SyncSrcu, s.RcuLock, s.SrcuLock} {
		from.or(x)
	}
	poOpt := a.optOf(st.po)
	poOpt.restrictFrom(from)
	link := a.seqOf(a.seqOf(a.seqOf(poOpt, hbStar), pbStar), a.seqOf(prop, st.po))
	rcuGp := a.id(s.SyncRcu)
	srcuGp := a.id(s.SyncSrcu)
	rcuRscsi := a.invOf(st.rcuRscs)
	srcuRscsi := a.invOf(d.srcuRscs)
	gpLink := func(gp rel) rel { return a.seqOf(gp, link) }
	rcuGpLink, srcuGpLink := gpLink(rcuGp), gpLink(srcuGp)
	rscsiLink := func(x rel) rel { return a.seqOf(x, link) }
	rcuRsLink, srcuRsLink := rscsiLink(rcuRscsi), rscsiLink(srcuRscsi)
	loc := func(x rel) rel {
		x.and(st.sameLoc)
		return x
	}
	order := a.unionOf(rcuGp, srcuGp)
	// The cases without rcu-order in them.
	order.or(a.seqOf(rcuGpLink, rcuRscsi))
	order.or(loc(a.seqOf(srcuGpLink, srcuRscsi)))
	order.or(a.seqOf(rcuRsLink, rcuGp))
	order.or(loc(a.seqOf(srcuRsLink, srcuGp)))
	linkRcuRscsi := a.seqOf(link, rcuRscsi)
	linkSrcuRscsi := a.seqOf(link, srcuRscsi)
	linkRcuGp := a.seqOf(link, rcuGp)
	linkSrcuGp := a.seqOf(link, srcuGp)
	base := order
	for {
		next := a.copyOf(base)
		next.or(a.seqOf(rcuGpLink, a.seqOf(order, linkRcuRscsi)))
		next.or(loc(a.seqOf(srcuGpLink, a.seqOf(order, linkSrcuRscsi))))
		next.or(a.seqOf(rcuRsLink, a.seqOf(order, linkRcuGp)))
		next.or(loc(a.seqOf(srcuRsLink, a.seqOf(order, linkSrcuGp))))
		next.or(a.seqOf(order, a.seqOf(link, order)))
		if next.equal(order) {
			break
		}
		order = next
	}
	rcuFence := a.seqOf(a.seqOf(st.po, order), a.optOf(st.po))
	rb := a.seqOf(a.seqOf(prop, rcuFence), a.seqOf(hbStar, pbStar))
	rb.restrictTo(s.Marked)
	if !rb.irreflexive() {
		return rb, false
	}
	// let fence = fence | rcu-fence; let strong-fence = strong-fence |
	// rcu-fence: for the plain-access part that follows.
	d.strongFence = a.unionOf(d.strongFence, rcuFence)
	d.fence = a.unionOf(d.fence, rcuFence)
	return rb, true
}

// plainCoherent checks empty (wr-incoh | rw-incoh | ww-incoh) as
// plain-coherence, filling d's relations for the data-race flag.
func (st *statics) plainCoherent(a *arena, d *dynRels) bool {
	s := &st.s
	xb := a.unionOf(d.hb, d.pb, d.rb)
	xb.star()
	// vis = cumul-fence* ; rfe? ; [Marked] ; ((strong-fence ; [Marked] ;
	// xbstar) | (xbstar & int))
	rfeOpt := a.optOf(d.rfe)
	rfeOpt.restrictTo(s.Marked)
	sfM := a.copyOf(d.strongFence)
	sfM.restrictTo(s.Marked)
	tail := a.seqOf(sfM, xb)
	xbInt := a.copyOf(xb)
	xbInt.and(st.intRel)
	tail.or(xbInt)
	vis := a.seqOf(a.seqOf(d.cumulStar, rfeOpt), tail)
	// Boundaries for lifetimes of plain accesses
	wPre := a.unionOf(d.addr, d.fence) // [Marked] ; (addr | fence)?
	wPre.addID()
	wPre.restrictFrom(s.Marked)
	rmbR := a.seqOf(a.seqOf(a.id(s.R4rmb), a.seqOf(st.po, a.id(s.Rmb))), st.po)
	rmbR.restrictTo(s.NotNoreturn)
	rPre := a.unionOf(d.addr, d.nonrwFence, rmbR) // [Marked] ; (addr | nonrw-fence | ([R4rmb] ; fencerel(Rmb) ; [~Noreturn]))?
	rPre.addID()
	rPre.restrictFrom(s.Marked)
	wPost := a.optOf(d.fence) // fence? ; [Marked] ; rmw-sequence
	wPost.restrictTo(s.Marked)
	wPost = a.seqOf(wPost, d.rmwSeq)
	rmbR2 := a.seqOf(a.seqOf(a.id(s.NotNoreturn), a.seqOf(st.po, a.id(s.Rmb))), st.po)
	rmbR2.restrictTo(s.R4rmb)
	rPost := a.unionOf(d.nonrwFence, rmbR2) // (nonrw-fence | ([~Noreturn] ; fencerel(Rmb) ; [R4rmb]))? ; [Marked]
	rPost.addID()
	rPost.restrictTo(s.Marked)
	// ww-vis = fence | (strong-fence ; xbstar ; w-pre-bounded) |
	// (w-post-bounded ; vis ; w-pre-bounded), and wr-vis likewise
	sfXb := a.seqOf(d.strongFence, xb)
	wpVis := a.seqOf(wPost, vis)
	d.wwVis = a.unionOf(d.fence, a.seqOf(sfXb, wPre), a.seqOf(wpVis, wPre))
	d.wrVis = a.unionOf(d.fence, a.seqOf(sfXb, rPre), a.seqOf(wpVis, rPre))
	// rw-xbstar = fence | (r-post-bounded ; xbstar ; w-pre-bounded)
	d.rwXb = a.unionOf(d.fence, a.seqOf(a.seqOf(rPost, xb), wPre))
	// pre-race = ext & ((Plain * M) | ((M \ IW) * Plain))
	mNotIW := st.newSet()
	mNotIW.or(s.M)
	mNotIW.andNot(s.IW)
	pr := a.unionOf(a.cross(s.Plain, s.M), a.cross(mNotIW, s.Plain))
	ext := a.cross(s.all, s.all)
	ext.andNot(st.intRel)
	pr.and(ext)
	d.preRace = pr
	// wr-incoh = pre-race & rf & rw-xbstar^-1, and so on
	incoh := func(x, vis rel) bool {
		t := a.copyOf(pr)
		t.and(x)
		t.and(a.invOf(vis))
		return t.empty()
	}
	return incoh(d.rf, d.rwXb) && incoh(d.fr, d.wrVis) && incoh(d.co, d.wwVis)
}

// flags returns the flags a complete execution that satisfies the axioms
// raises, by the names linux-kernel.cat and linux-kernel.bell give them.
func (st *statics) flags(a *arena, d *dynRels) []string {
	s := &st.s
	var out []string
	if st.hasPlain {
		// ww-nonrace = ww-vis & ((Marked * W) | rw-xbstar) & ((W *
		// Marked) | wr-vis)
		nr := a.copyOf(d.wwVis)
		nr.and(a.unionOf(a.cross(s.Marked, s.W), d.rwXb))
		nr.and(a.unionOf(a.cross(s.W, s.Marked), d.wrVis))
		ww := a.copyOf(d.preRace) // ww-race = (pre-race & co) \ ww-nonrace
		ww.and(d.co)
		ww.andNot(nr)
		wr := a.copyOf(d.preRace) // wr-race = (pre-race & (co? ; rf)) \ wr-vis \ rw-xbstar^-1
		wr.and(a.seqOf(a.optOf(d.co), d.rf))
		wr.andNot(d.wrVis)
		wr.andNot(a.invOf(d.rwXb))
		rw := a.copyOf(d.preRace) // rw-race = (pre-race & fr) \ rw-xbstar
		rw.and(d.fr)
		rw.andNot(d.rwXb)
		if !ww.empty() || !wr.empty() || !rw.empty() {
			out = append(out, "data-race")
		}
		// mixed-accesses = ([Plain & W] ; (po-loc \ barrier) ; [Marked]) |
		// ([Marked] ; (po-loc \ barrier) ; [Plain & W])
		pw := st.newSet()
		pw.or(s.Plain)
		pw.and(s.W)
		pl := a.copyOf(st.poLoc)
		pl.andNot(st.barrierRel)
		m1 := a.copyOf(pl)
		m1.restrict(pw, s.Marked)
		m2 := a.copyOf(pl)
		m2.restrict(s.Marked, pw)
		if !m1.empty() || !m2.empty() {
			out = append(out, "mixed-accesses")
		}
	}
	if st.hasRCU {
		if st.unmatchedRcu[0] {
			out = append(out, "unmatched-rcu-lock")
		}
		if st.unmatchedRcu[1] {
			out = append(out, "unmatched-rcu-unlock")
		}
		dom, rng := st.newSet(), st.newSet()
		for i := 0; i < st.n; i++ {
			row := d.srcuRscs.row(i)
			if !row.empty() {
				dom.add(i)
			}
			rng.or(row)
		}
		l := st.newSet()
		l.or(s.SrcuLock)
		l.andNot(dom)
		if !l.empty() {
			out = append(out, "unmatched-srcu-lock")
		}
		u := st.newSet()
		u.or(s.SrcuUnlock)
		u.andNot(rng)
		if !u.empty() {
			out = append(out, "unmatched-srcu-unlock")
		}
		// multiple-srcu-matches: (srcu-rscs^-1 ; srcu-rscs) \ id
		m := a.seqOf(a.invOf(d.srcuRscs), d.srcuRscs)
		m.delID()
		if !m.empty() {
			out = append(out, "multiple-srcu-matches")
		}
		// srcu-bad-value-match: different-values(srcu-rscs)
		bad := false
		for i := 0; i < st.n; i++ {
			d.srcuRscs.row(i).each(func(j int) { bad = bad || st.val[i] != st.val[j] })
		}
		if bad {
			out = append(out, "srcu-bad-value-match")
		}
		// invalid-sleep: rcu-rscs & (po ; [Sync-srcu] ; po)
		t := a.copyOf(st.po)
		t.restrictTo(s.SyncSrcu)
		t = a.seqOf(t, st.po)
		t.and(st.rcuRscs)
		if !t.empty() {
			out = append(out, "invalid-sleep")
		}
	}
	sort.Strings(out)
	return out
}

package lkmm

import "github.com/flushproof/flushproof/model/litmus"

// The axioms of tools/memory-model/linux-kernel.cat (Linux v6.18), all
// accesses being marked and without RCU: coherence, atomic,
// happens-before and propagation. Each relation is named as in the cat
// file. Lock events are already in R, W, Acquire and Release, as lock.cat
// puts them (LKR a read and an Acquire, LKW and UL writes, UL a Release),
// and an LKR and its LKW are an rmw pair (lk-rmw).
//
// Coherence and atomic concern one location each: search.go checks them
// location by location as the search places events (checkLoc). The
// happens-before and propagation axioms are checked here, on the events
// placed so far: statics holds what the cat derives from the events and
// po alone, kept while only rf and co change; hbpb adds rf and co.
//
// Every relation below grows with the events, po, rf and co: unions,
// sequences, closures, intersections and restrictions to fixed sets of
// events, and prop \ id, which removes only the identity. So a cycle
// found in a partial execution (some threads placed, some reads' rf not
// chosen yet, the co of each location among the writes placed so far)
// is in every execution that extends it: the search cuts there.

// sets of events, each a bit per event index.
type sets struct {
	R, W, M, R4rmb, RMW, Acquire, Release, MbR, MbW bitset
	Rmb, Wmb, Mb, BeforeAtomic                      bitset // fences by kind
	AfterAtomic, AfterSpinlock                      bitset
	LKR, LKW, UL                                    bitset // lock.cat's lock events
}

// statics are the relations of one prefix of runs (events and po), in
// relations of their own arena.
type statics struct {
	ar *arena
	n  int
	s  sets
	// intRel: the same thread (the initial writes are external to every
	// thread) or the same event.
	intRel        rel
	po, rmw       rel
	data, ctrl    rel // before carry-dep
	hasData       bool
	wmb           rel
	strongFence   rel // mb (| gp, empty without RCU)
	cumulBase     rel // strong-fence | po-rel, what A-cumul extends
	fenceRel      rel // fence: strong-fence | po-rel | acq-po | wmb | rmb
	pulpPo        rel // po ; [UL] ; po ; [LKR] ; po
	ulPo, lkrPo   rel // po ; [UL] and [LKR] ; po, for the rf part of po-unlock-lock-po
	hasLocks      bool
	indeg, queue_ []int
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
	for _, p := range []*bitset{&s.R, &s.W, &s.M, &s.R4rmb, &s.RMW, &s.Acquire, &s.Release, &s.MbR, &s.MbW,
		&s.Rmb, &s.Wmb, &s.Mb, &s.BeforeAtomic, &s.AfterAtomic, &s.AfterSpinlock, &s.LKR, &s.LKW, &s.UL} {
		if *p == nil {
			*p = st.newSet()
		}
		p.clear()
	}
	st.intRel, st.po, st.rmw, st.data, st.ctrl = a.get(), a.get(), a.get(), a.get(), a.get()
	st.hasData, st.hasLocks = false, false
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
	for i, ev := range evs {
		switch ev.kind {
		case read:
			s.R.add(i)
			if !ev.noreturn {
				s.R4rmb.add(i) // R4rmb = R \ Noreturn (linux-kernel.cat)
			}
			if ev.mb {
				s.MbR.add(i)
			}
		case write:
			s.W.add(i)
			if ev.mb {
				s.MbW.add(i)
			}
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
			}
		}
		if ev.acquire {
			s.Acquire.add(i)
		}
		if ev.release {
			s.Release.add(i)
		}
		if ev.inRMW {
			s.RMW.add(i)
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
	}
	s.M.or(s.R)
	s.M.or(s.W)

	all := st.newSet()
	for i := 0; i < n; i++ {
		all.add(i)
	}
	// fencerel(f) = po ; [f] ; po
	fencerel := func(f bitset) rel {
		t := a.copyOf(st.po)
		t.restrictTo(f)
		out := a.get()
		out.seq(t, st.po)
		return out
	}
	poOpt := a.copyOf(st.po)
	poOpt.addID()

	// Release Acquire
	acqPo := a.copyOf(st.po)
	acqPo.restrict(s.Acquire, s.M)
	poRel := a.copyOf(st.po)
	poRel.restrict(s.M, s.Release)

	// Fences
	rmb := fencerel(s.Rmb)
	rmb.restrict(s.R4rmb, s.R4rmb)
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
	f := fencerel(s.BeforeAtomic)
	f.restrict(s.M, s.RMW)
	t = a.get()
	t.seq(f, poOpt)
	t.restrictTo(s.M)
	mb.or(t)
	// [M] ; po? ; [RMW] ; fencerel(After-atomic) ; [M]
	f = a.copyOf(poOpt)
	f.restrict(s.M, s.RMW)
	t = a.get()
	t.seq(f, fencerel(s.AfterAtomic))
	t.restrictTo(s.M)
	mb.or(t)
	// smp_mb__after_spinlock makes the spin_lock before it a full
	// barrier: [M] ; po? ; [LKW] ; fencerel(After-spinlock) ; [M].
	f = a.copyOf(poOpt)
	f.restrict(s.M, s.LKW)
	t = a.get()
	t.seq(f, fencerel(s.AfterSpinlock))
	t.restrictTo(s.M)
	mb.or(t)
	// The After-unlock-lock case, [M] ; po-unlock-lock-po ;
	// [After-unlock-lock] ; po ; [M], is empty: the litmus primitives
	// have no smp_mb__after_unlock_lock.
	st.strongFence = mb

	st.cumulBase = a.copyOf(mb)
	st.cumulBase.or(poRel)
	st.fenceRel = a.copyOf(st.cumulBase) // nonrw-fence = strong-fence | po-rel | acq-po
	st.fenceRel.or(acqPo)
	st.fenceRel.or(st.wmb)
	st.fenceRel.or(rmb)

	// po-unlock-lock-po = po ; [UL] ; (po | rf) ; [LKR] ; po: an unlock
	// then a lock, by the same thread (of any lock) or by the next holder
	// of the same lock, order what precedes the one before what follows
	// the other (explanation.txt, LOCKING). The po part is here, the rf
	// part in hbpb.
	st.pulpPo = a.get()
	if st.hasLocks {
		st.ulPo = a.copyOf(st.po)
		st.ulPo.restrictTo(s.UL)
		st.lkrPo = a.copyOf(st.po)
		st.lkrPo.restrict(s.LKR, all)
		mid := a.copyOf(st.po)
		mid.restrict(s.UL, s.LKR)
		t = a.get()
		t.seq(st.ulPo, mid)
		st.pulpPo.seq(t, st.lkrPo)
	}
}

// hbpb reports whether the execution whose events st describes, with the
// rf and co given (rfSrc[i] the write read by read i, -1 if not chosen;
// co each location's writes in order), satisfies the happens-before and
// propagation axioms (and, with inOrder, acyclic po | rf). dyn is the
// arena of this check's relations.
func (st *statics) hbpb(dyn *arena, rfSrc []int, co [][]int, inOrder bool) bool {
	n := st.n
	dyn.reset(n)
	a := dyn
	s := &st.s
	rf := a.get()
	for i := 0; i < n; i++ {
		if w := rfSrc[i]; w >= 0 {
			rf.add(w, i)
		}
	}
	if inOrder {
		t := a.copyOf(st.po)
		t.or(rf)
		if !t.acyclic(st.indeg, st.queue_) {
			return false
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
	fr := a.get()
	t := a.get()
	t.inv(rf)
	fr.seq(t, coR)
	rfi := a.copyOf(rf)
	rfi.and(st.intRel)
	rfe := a.copyOf(rf)
	rfe.andNot(rfi)
	overwrite := coR // co | fr
	overwrite.or(fr)
	owInt := a.copyOf(overwrite)
	owInt.and(st.intRel)
	owExt := a.copyOf(overwrite)
	owExt.andNot(owInt)

	// Dependencies carried through memory (linux-kernel.bell):
	// carry-dep = (data ; rfi)*, then addr, data and ctrl are prefixed by it.
	data, ctrl := st.data, st.ctrl
	if st.hasData && !rfi.empty() {
		carry := a.get()
		carry.seq(st.data, rfi)
		carry.star()
		data, ctrl = a.get(), a.get()
		data.seq(carry, st.data)
		ctrl.seq(carry, st.ctrl)
	}

	// Preserved Program Order (addr is empty: the programs have no pointers)
	toW := a.copyOf(data) // rwdep = (dep | ctrl) ; [W]
	toW.or(ctrl)
	toW.restrictTo(s.W)
	toW.or(owInt)
	ppo := a.get() // to-r = dep ; rfi
	ppo.seq(data, rfi)
	ppo.or(toW)
	ppo.or(st.fenceRel)
	pulp := st.pulpPo
	if st.hasLocks {
		pulp = a.copyOf(st.pulpPo)
		ulRf := a.copyOf(rf)
		ulRf.restrict(s.UL, s.LKR)
		t1, t2 := a.get(), a.get()
		t1.seq(st.ulPo, ulRf)
		t2.seq(t1, st.lkrPo)
		pulp.or(t2)
		// po-unlock-lock-po & int is kept as the cat has it, though with
		// every access marked it adds nothing to hb: cumul-fence
		// contains po-unlock-lock-po, so prop does, and (prop \ id) &
		// int is in hb.
		t3 := a.copyOf(pulp)
		t3.and(st.intRel)
		ppo.or(t3)
	}

	// Propagation: A-cumul(r) = rfe? ; r
	cf := a.get()
	cf.seq(rfe, st.cumulBase)
	cf.or(st.cumulBase)
	cf.or(st.wmb)
	cf.or(pulp)
	// rmw-sequence = (rf ; rmw)*: a read-modify-write that reads a store
	// a cumul-fence ordered extends the fence to its own store (commit
	// "tools: memory-model: Add rmw-sequences to the LKMM", v6.3).
	rs := a.get()
	rs.seq(rf, st.rmw)
	if !rs.empty() {
		rs.star()
		t := a.get()
		t.seq(cf, rs)
		cf = t
	}
	// prop = (overwrite & ext)? ; cumul-fence* ; rfe?
	cf.star()
	p1 := a.get()
	p1.seq(owExt, cf)
	p1.or(cf)
	prop := a.get()
	prop.seq(p1, rfe)
	prop.or(p1)

	// acyclic hb as happens-before: hb = ppo | rfe | ((prop \ id) & int)
	hb := a.copyOf(prop)
	hb.delID()
	hb.and(st.intRel)
	hb.or(ppo)
	hb.or(rfe)
	if !hb.acyclic(st.indeg, st.queue_) {
		return false
	}
	// acyclic pb as propagation, pb = prop ; strong-fence ; hb*. With hb
	// acyclic, a cycle of pb is one of prop ; strong-fence | hb that
	// takes a prop ; strong-fence edge, and any cycle of that union
	// does: so pb is acyclic when the union is, with no closure of hb.
	x := a.get()
	x.seq(prop, st.strongFence)
	x.or(hb)
	return x.acyclic(st.indeg, st.queue_)
}

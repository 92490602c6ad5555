package lkmm

import "github.com/flushproof/flushproof/model/litmus"

// execution is one candidate execution: the events of every thread's run
// plus the initial writes, and the choices rf and co.
type execution struct {
	events []event
	n      int
	po     rel // program order within a thread (initial writes are in no thread)
	rmw    rel // read -> write of one successful RMW
	data   rel // read -> write whose value it computes (before carry-dep)
	ctrl   rel // read -> event inside an if arm whose condition it computes
	rf     rel
	rfLock rel // the LKR reads, fixed by the order the lock is taken
	co     rel // transitive: every pair of writes to one location, in order
}

// sets of events, each a bit per event index.
type sets struct {
	R, W, F, M, IW             set
	Acquire, Release, MbR, MbW set
	R4rmb, RMW                 set
	Rmb, Wmb, Mb, BeforeAtomic set // fences by kind
	AfterAtomic, AfterSpinlock set
	LKR, LKW, UL               set // lock.cat's lock events
}

func (x *execution) sets() sets {
	var s sets
	for i, ev := range x.events {
		b := set(1) << uint(i)
		switch ev.kind {
		case read:
			s.R |= b
			if !ev.noreturn {
				s.R4rmb |= b // R4rmb = R \ Noreturn (linux-kernel.cat)
			}
			if ev.mb {
				s.MbR |= b
			}
		case write:
			s.W |= b
			if ev.thread < 0 {
				s.IW |= b
			}
			if ev.mb {
				s.MbW |= b
			}
		case fence:
			s.F |= b
			switch ev.fence {
			case litmus.OpRmb:
				s.Rmb |= b
			case litmus.OpWmb:
				s.Wmb |= b
			case litmus.OpMb:
				s.Mb |= b
			case litmus.OpMbBeforeAtomic:
				s.BeforeAtomic |= b
			case litmus.OpMbAfterAtomic:
				s.AfterAtomic |= b
			case litmus.OpMbAfterSpinlock:
				s.AfterSpinlock |= b
			}
		}
		if ev.acquire {
			s.Acquire |= b
		}
		if ev.release {
			s.Release |= b
		}
		if ev.inRMW {
			s.RMW |= b
		}
		switch ev.lock {
		case lockLKR:
			s.LKR |= b
		case lockLKW:
			s.LKW |= b
		case lockUL:
			s.UL |= b
		}
	}
	s.M = s.R | s.W
	return s
}

// fencerel returns po ; [f] ; po (herd7's fencerel).
func (x *execution) fencerel(f set) rel {
	return x.po.restrict(^set(0), f).seq(x.po)
}

// consistent decides whether the candidate execution is allowed by the
// axioms of tools/memory-model/linux-kernel.cat (Linux v6.18), all
// accesses being marked and without RCU: coherence, atomic,
// happens-before and propagation. Each relation below is named as in the
// cat file. Lock events are already in R, W, Acquire and Release, as
// lock.cat puts them (LKR a read and an Acquire, LKW and UL writes, UL a
// Release), and an LKR and its LKW are an rmw pair (lk-rmw).
func (x *execution) consistent() bool {
	n := x.n
	s := x.sets()
	all := ^set(0)

	// int: same thread (the initial writes are external to every thread).
	intRel := newRel(n)
	for i, a := range x.events {
		for j, b := range x.events {
			if i == j || (a.thread >= 0 && a.thread == b.thread) {
				intRel.add(i, j)
			}
		}
	}
	ext := newRel(n)
	for i := range ext {
		ext[i] = ^intRel[i] & (set(1)<<uint(n) - 1)
	}
	loc := newRel(n)
	for i, a := range x.events {
		for j, b := range x.events {
			if a.kind != fence && b.kind != fence && a.loc == b.loc {
				loc.add(i, j)
			}
		}
	}

	fr := x.rf.inv().seq(x.co)
	com := x.rf.union(x.co, fr)
	poLoc := x.po.inter(loc)
	// acyclic po-loc | com as coherence
	if !poLoc.union(com).acyclic() {
		return false
	}
	rfe := x.rf.inter(ext)
	rfi := x.rf.inter(intRel)
	coe := x.co.inter(ext)
	fre := fr.inter(ext)
	// empty rmw & (fre ; coe) as atomic
	if !x.rmw.inter(fre.seq(coe)).empty() {
		return false
	}

	// Dependencies carried through memory (linux-kernel.bell):
	// carry-dep = (data ; rfi)*, then addr, data and ctrl are prefixed by it.
	carry := x.data.seq(rfi).star()
	data := carry.seq(x.data)
	ctrl := carry.seq(x.ctrl)

	// Release Acquire
	acqPo := x.po.restrict(s.Acquire, s.M)
	poRel := x.po.restrict(s.M, s.Release)
	// po-unlock-lock-po = po ; [UL] ; (po | rf) ; [LKR] ; po: an unlock
	// then a lock, by the same thread (of any lock) or by the next holder
	// of the same lock, order what precedes the one before what follows
	// the other (explanation.txt, LOCKING).
	poUnlockLockPo := x.po.restrict(all, s.UL).seq(x.po.union(x.rf).restrict(s.UL, s.LKR)).seq(x.po)

	// Fences
	rmb := x.fencerel(s.Rmb).restrict(s.R4rmb, s.R4rmb)
	wmb := x.fencerel(s.Wmb).restrict(s.W, s.W)
	poOpt := x.po.opt()
	mb := x.fencerel(s.Mb).restrict(s.M, s.M).union(
		// full-barrier RMWs act as if enclosed by smp_mb()
		x.po.restrict(s.M, s.MbR),
		x.po.restrict(s.MbW, s.M),
		x.fencerel(s.BeforeAtomic).restrict(s.M, s.RMW).seq(poOpt).restrict(all, s.M),
		poOpt.restrict(s.M, s.RMW).seq(x.fencerel(s.AfterAtomic)).restrict(all, s.M),
		// smp_mb__after_spinlock makes the spin_lock before it a full
		// barrier: [M] ; po? ; [LKW] ; fencerel(After-spinlock) ; [M].
		poOpt.restrict(s.M, s.LKW).seq(x.fencerel(s.AfterSpinlock)).restrict(all, s.M),
		// The After-unlock-lock case, [M] ; po-unlock-lock-po ;
		// [After-unlock-lock] ; po ; [M], is empty: the litmus primitives
		// have no smp_mb__after_unlock_lock.
	)
	strongFence := mb // | gp, empty without RCU
	nonrwFence := strongFence.union(poRel, acqPo)
	fenceRel := nonrwFence.union(wmb, rmb)

	// Preserved Program Order (addr is empty: the programs have no pointers)
	dep := data
	rwdep := dep.union(ctrl).restrict(all, s.W)
	overwrite := x.co.union(fr)
	toW := rwdep.union(overwrite.inter(intRel))
	toR := dep.seq(rfi)
	// po-unlock-lock-po & int is kept as the cat has it, though with
	// every access marked it adds nothing to hb: cumul-fence contains
	// po-unlock-lock-po, so prop does, and (prop \ id) & int is in hb.
	ppo := toR.union(toW, fenceRel, poUnlockLockPo.inter(intRel))

	// Propagation
	aCumul := func(r rel) rel { return rfe.opt().seq(r) }
	// rmw-sequence = (rf ; rmw)*: a read-modify-write that reads a store
	// a cumul-fence ordered extends the fence to its own store (commit
	// "tools: memory-model: Add rmw-sequences to the LKMM", v6.3).
	rmwSequence := x.rf.seq(x.rmw).star()
	cumulFence := aCumul(strongFence.union(poRel)).union(wmb, poUnlockLockPo).seq(rmwSequence)
	prop := overwrite.inter(ext).opt().seq(cumulFence.star()).seq(rfe.opt())

	// acyclic hb as happens-before
	hb := ppo.union(rfe, prop.minus(id(n, all)).inter(intRel))
	if !hb.acyclic() {
		return false
	}
	// acyclic pb as propagation
	pb := prop.seq(strongFence).seq(hb.star())
	return pb.acyclic()
}

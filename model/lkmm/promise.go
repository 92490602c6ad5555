package lkmm

// LKMM: an operational, view-based model of the Linux kernel memory model
// (docs/memory.md, "The operational LKMM model").
//
// Each thread runs its code in program order, one statement per step; a
// load reads a store that already exists or a promise (below). What makes
// it weaker than sequential consistency is in the views, vectors of
// positions in each location's modification order (co), which record what
// happens-before (hb) and propagation-before (pb) of linux-kernel.cat
// demand of an event:
//
//   - A store is inserted anywhere in co after what its thread must see,
//     not only at the end (so S and 2+2W are allowed).
//   - Obs(e), for each event, is the set of stores that reach e through
//     cumul-fence* ; rfe? (prop without its first overwrite step): the
//     store itself, what strong fences, releases, smp_wmb and
//     unlock-then-lock pass on, and what the store a load reads from
//     another thread carried. Kept as a view (its newest store per
//     location).
//   - H(e)[T] joins Obs(b) over the events b of thread T with b ->hb* e;
//     H(e).G joins Obs(c) over c -strong-fence-> d -(hb|pb)*-> e. An event
//     of thread T must not overwrite (co, fr) a store of H(e)[T] (that
//     would close an hb cycle through (prop \ id) & int) nor one of H(e).G
//     (a pb cycle). H flows along ppo (dependencies, fences, acquire,
//     release, same-location order), along rfe, and along the prop & int
//     edges an event's Obs creates: an earlier access of the same thread
//     that the store in Obs overwrites happens before it.
//   - Each store position keeps the accesses that read or wrote it, per
//     thread, so that the overwrite edges are found by position.
//   - Knowledge holds references to nodes (events, strong fences) as well
//     as views: an edge into an event that already ran is added to its
//     node, and every event that references the node sees it when it
//     checks its constraints.
//   - Load buffering: just before a read, a thread may promise a later
//     store of its own (value and co position); other threads may read it
//     at once. The promise's knowledge is a reference to its node, filled
//     when the thread reaches the store; the store fulfils the promise
//     only if its value and Obs are the promised ones and nothing it
//     depends on read the promise. A run left with a promise unfulfilled
//     has no outcome.
//
// The primitives and their events are those of the reference (model/lkmm):
// fully ordered RMWs order what precedes them before their read and their
// write before what follows; smp_mb__before_atomic and __after_atomic
// reach the next and the last RMW; locks are an acquire read of the free
// value glued in co to the write that takes it, and a release store.

import (
	"fmt"
	"hash/maphash"
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// The bounds of a test LKMM runs.
const (
	lkT = 4 // threads
	lkL = 4 // locations
	lkS = 8 // stores per location, the initial one included
	lkR = 8 // registers per thread
)

// Promise runs litmus tests under the promise-based operational LKMM model.
//
// Its search is a depth-first search of its own, not model/explore's: a
// state here is 12,792 bytes (views per event node), and explore keeps
// every state whole, where this search keeps two 64-bit hashes of each
// (16 bytes, so a probability of about n²/2¹²⁹ that two of n states
// collide). Under explore the default budget of 4 M states would need
// some 50 GiB. What it gives up: MaxStates is its only bound (no memory
// budget, Stop hook, progress or parallel workers).
type Promise struct {
	// MaxStates bounds the search (0: litmus.DefaultMaxStates).
	MaxStates int
}

// Name returns "LKMM-op".
func (Promise) Name() string { return "LKMM-op" }

// Outcomes returns every final state of t under the model.
func (m Promise) Outcomes(t *litmus.Test) (_ []litmus.Outcome, err error) {
	if err := litmus.MemoryOnly(t); err != nil {
		return nil, err
	}
	if err := t.Refuse(m.Name(), 0); err != nil {
		return nil, err
	}
	defer func() {
		// A bound bounds() should have refused: an error, not a crash
		// and never a partial answer.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s under %s: %v", t.Name, m.Name(), r)
		}
	}()
	if len(t.Threads) > lkT {
		return nil, fmt.Errorf("%s: %w: %d threads (at most %d)", t.Name, litmus.ErrUnsupported, len(t.Threads), lkT)
	}
	p := &lkProg{locs: map[string]int{}}
	for _, l := range t.Locs {
		if len(p.locs) == lkL {
			return nil, fmt.Errorf("%s: %w: more than %d locations", t.Name, litmus.ErrUnsupported, lkL)
		}
		p.locs[l] = len(p.locs)
	}
	for th := range t.Threads {
		p.code = append(p.code, nil)
		p.regs = append(p.regs, map[string]int{})
		p.written = append(p.written, nil)
		if err := p.flatten(th, t.Threads[th].Body); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	// Registers read but never written are 0 and need a slot too.
	for th := range t.Threads {
		var err error
		walkRegs(t.Threads[th].Body, func(name string) {
			if err == nil {
				err = p.reg(th, name, 0, false)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	if err := p.bounds(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	u, err := universe(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	p.universe = u
	var s lkState
	for l, i := range p.locs {
		s.n[i] = 1
		s.msg[i][0] = lkMsg{val: t.Init[l], th: -1, node: -1}
	}
	budget := m.MaxStates
	if budget == 0 {
		budget = litmus.DefaultMaxStates
	}
	r := &lkRun{p: p, seen: map[[2]uint64]struct{}{}, found: map[string]litmus.Outcome{}, budget: budget,
		seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	if err := r.dfs(&s); err != nil {
		return nil, fmt.Errorf("%s under %s: %w", t.Name, m.Name(), err)
	}
	out := make([]litmus.Outcome, 0, len(r.found))
	for _, o := range r.found {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// lkRun is one search. States are kept by a 128-bit hash (two seeds):
// with the few thousand states of a litmus test, a collision has a
// probability below 2^-100.
type lkRun struct {
	p            *lkProg
	seen         map[[2]uint64]struct{}
	found        map[string]litmus.Outcome
	budget       int
	seed1, seed2 maphash.Seed
}

func (r *lkRun) dfs(s *lkState) error {
	key := [2]uint64{maphash.Comparable(r.seed1, *s), maphash.Comparable(r.seed2, *s)}
	if _, ok := r.seen[key]; ok {
		return nil
	}
	if len(r.seen) >= r.budget {
		return fmt.Errorf("%w after %d states: outcomes unknown", litmus.ErrCutShort, len(r.seen))
	}
	r.seen[key] = struct{}{}
	done := true
	for t := range r.p.code {
		if int(s.th[t].pc) >= len(r.p.code[t]) {
			if s.th[t].np > 0 {
				done = false // a promise never fulfilled: no outcome
			}
			continue
		}
		done = false
		var err error
		next := func(n *lkState) {
			if err == nil {
				err = r.dfs(n)
			}
		}
		r.step(s, t, next)
		r.promises(s, t, next)
		if err != nil {
			return err
		}
	}
	if done {
		o := litmus.Outcome{Mem: map[string]int64{}}
		for t := range r.p.code {
			regs := map[string]int64{}
			for _, name := range r.p.written[t] {
				regs[name] = s.th[t].regs[r.p.regs[t][name]]
			}
			o.Regs = append(o.Regs, regs)
		}
		for l, i := range r.p.locs {
			o.Mem[l] = s.msg[i][s.n[i]-1].val
		}
		r.found[o.Key()] = o
	}
	return nil
}

// promises yields the states where thread t has promised one of its
// stores after its next instruction (a plain store, a release store or an
// RMW; not spin_lock or spin_unlock) at some position of co. The value
// is the one its expression has now if no instruction before it sets
// its registers; else every value of the test's universe.
func (r *lkRun) promises(s *lkState, t int, yield func(*lkState)) {
	p := r.p
	th := &s.th[t]
	if int(th.np) == lkP {
		return
	}
	pc := int(th.pc)
	// A promise helps only if a read of t comes before the store: it is
	// made just before that read (making it earlier changes nothing, as
	// t's steps in between read nothing), and promises are made in
	// program order (making two in the other order gives the same runs).
	if in := p.code[t][pc]; in.kind != lkAccess || !in.acc.Op.Info().Reads {
		return
	}
	first := pc + 1
	for i := 0; i < int(th.np); i++ {
		first = max(first, int(th.prom[i].pc)+1)
	}
	for i := first; i < len(p.code[t]); i++ {
		in := p.code[t][i]
		if in.kind != lkAccess {
			continue
		}
		op := in.acc.Op
		info := op.Info()
		if !(op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op.IsRMW()) || th.promised(i) > 0 {
			continue
		}
		if p.ordered(t, pc, i) {
			continue
		}
		x := in.loc
		vals := r.values(s, t, pc, i, in.acc.Val)
		var expect []int64
		if op.IsCmpxchg() {
			expect = r.values(s, t, pc, i, in.acc.Expect)
		}
		for pos := 1; pos <= int(s.n[x]); pos++ {
			if !op.IsRMW() {
				for _, v := range vals {
					n := *s
					if n.promise(t, i, x, pos, v, info.Order == litmus.Release, false) {
						yield(&n)
					}
				}
				continue
			}
			old := s.msg[x][pos-1].val
			if op.IsCmpxchg() && !containsVal(expect, old) {
				continue // a cmpxchg that fails writes nothing to promise
			}
			seen := map[int64]bool{}
			for _, d := range vals {
				nv := old + d
				if op.IsXchg() || op.IsCmpxchg() {
					nv = d
				}
				if seen[nv] {
					continue
				}
				seen[nv] = true
				n := *s
				if n.promise(t, i, x, pos, nv, info.Order == litmus.Release, true) {
					yield(&n)
				}
			}
		}
	}
}

// values returns the values e may have when thread t, now at pc, runs
// instruction i: its value now if no instruction from pc to i sets one of
// its registers, else the test's universe.
func (r *lkRun) values(s *lkState, t, pc, i int, e litmus.Expr) []int64 {
	p := r.p
	final := true
	e.Regs(func(name string) {
		for j := pc; j < i; j++ {
			in := p.code[t][j]
			if in.kind == lkAssign && in.assign.Reg == name ||
				in.kind == lkAccess && in.acc.Reg == name && in.acc.Op.Info().Returns {
				final = false
			}
		}
	})
	if !final {
		return p.universe
	}
	v, err := e.Eval(func(_ int, name string) int64 { return s.th[t].regs[p.regs[t][name]] }, nil)
	if err != nil {
		panic(err)
	}
	return []int64{v}
}

func (r *lkRun) step(s *lkState, t int, yield func(*lkState)) {
	p := r.p
	in := p.code[t][s.th[t].pc]
	eval := func(st *lkState, e litmus.Expr) int64 {
		v, err := e.Eval(func(_ int, name string) int64 { return st.th[t].regs[p.regs[t][name]] }, nil)
		if err != nil {
			panic(err)
		}
		return v
	}
	n := *s
	n.th[t].pc++
	th := &n.th[t]
	switch in.kind {
	case lkAssign:
		i := p.regs[t][in.assign.Reg]
		th.regs[i] = eval(s, in.assign.Val)
		th.rdep[i] = n.regKnow(p, t, in.assign.Val)
		yield(&n)
		return
	case lkBranch:
		c := n.regKnow(p, t, in.cond)
		if th.depth > 0 {
			c.join(th.ctrl[th.depth-1])
		}
		if int(th.depth) == len(th.ctrl) {
			panic("litmus: ifs nested too deep")
		}
		th.ctrl[th.depth] = c
		th.depth++
		if eval(s, in.cond) == 0 {
			th.pc = uint8(in.target)
		}
		yield(&n)
		return
	case lkJump:
		th.pc = uint8(in.target)
		yield(&n)
		return
	case lkEndIf:
		th.depth--
		th.ctrl[th.depth] = lknow{}
		yield(&n)
		return
	}
	a := in.acc
	op := a.Op
	info := op.Info()
	x := in.loc
	setReg := func(st *lkState, v int64, k lknow) {
		if a.Reg != "" && info.Returns {
			i := p.regs[t][a.Reg]
			st.th[t].regs[i] = v
			st.th[t].rdep[i] = k
		}
	}
	switch {
	case info.Fence:
		switch op {
		case litmus.OpMb:
			n.strongFence(t, th.hAll, th.accA)
		case litmus.OpRmb:
			th.pendHR.join(th.hR)
		case litmus.OpWmb:
			th.pendHW.join(th.hW)
			th.wmbObs.join(th.accW)
		case litmus.OpMbBeforeAtomic:
			th.baSeen = true
			th.baH.join(th.hAll)
			th.baObs.join(th.accA)
		case litmus.OpMbAfterAtomic:
			if th.rmwSeen {
				n.strongFence(t, th.rmwH, th.rmwObs)
			}
		case litmus.OpMbAfterSpinlock:
			if th.lkwSeen {
				n.strongFence(t, th.lkwH, th.lkwObs)
			}
		}
		yield(&n)
	case op == litmus.OpReadOnce || op == litmus.OpLoadAcquire:
		for k := 0; k < int(n.n[x]); k++ {
			m := n
			if rk, ok := m.read(t, x, k, lkRead{acquire: op == litmus.OpLoadAcquire}); ok {
				setReg(&m, m.msg[x][k].val, rk)
				yield(&m)
			}
		}
	case op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op == litmus.OpSpinUnlock:
		var v int64
		var data lknow
		if op != litmus.OpSpinUnlock {
			v = eval(s, a.Val)
			data = n.regKnow(p, t, a.Val)
		}
		wf := lkWrite{release: op != litmus.OpWriteOnce, ul: op == litmus.OpSpinUnlock, data: data}
		if pr := th.promised(int(s.th[t].pc)); pr > 0 {
			wf.promise = pr
			m := n
			if _, ok := m.write(t, x, m.posOf(x, int8(pr-1)), v, wf); ok {
				yield(&m)
			}
			return
		}
		for pos := 1; pos <= int(n.n[x]); pos++ {
			m := n
			if _, ok := m.write(t, x, pos, v, wf); ok {
				yield(&m)
			}
		}
	case op == litmus.OpSpinLock:
		for k := 0; k < int(n.n[x]); k++ {
			if n.msg[x][k].val != 0 {
				continue
			}
			m := n
			if _, ok := m.read(t, x, k, lkRead{acquire: true, lkr: true}); !ok {
				continue
			}
			if _, ok := m.write(t, x, k+1, 1, lkWrite{lkw: true}); ok {
				yield(&m)
			}
		}
	case op.IsRMW():
		vt := n.regKnow(p, t, a.Val)
		val := eval(s, a.Val)
		pr := th.promised(int(s.th[t].pc))
		for k := 0; k < int(n.n[x]); k++ {
			if pr > 0 && k != n.posOf(x, int8(pr-1))-1 {
				continue // the read of a promised RMW reads the store its write is glued to
			}
			old := n.msg[x][k].val
			ok := true
			if op.IsCmpxchg() {
				ok = old == eval(s, a.Expect)
			}
			m := n
			rf := lkRead{rmw: true, noreturn: !info.Returns,
				acquire: ok && info.Order == litmus.Acquire, mb: ok && info.Order == litmus.Mb}
			rk, rok := m.read(t, x, k, rf)
			if !rok {
				continue
			}
			if !ok {
				if pr > 0 {
					continue // a promised RMW must write
				}
				setReg(&m, old, rk)
				yield(&m)
				continue
			}
			nv := old + val
			if op.IsXchg() || op.IsCmpxchg() {
				nv = val
			}
			if _, wok := m.write(t, x, k+1, nv, lkWrite{rmw: true, release: info.Order == litmus.Release, mb: info.Order == litmus.Mb, data: vt, promise: pr}); !wok {
				continue
			}
			vk := vt // this iteration's copy: the loop's vt stays unshifted
			if pr == 0 {
				shiftKnow(&rk, x, k+1)
				shiftKnow(&vk, x, k+1)
			}
			ret, rkk := old, rk
			if op.ReturnsNew() {
				ret = nv
				rkk.join(vk)
			}
			setReg(&m, ret, rkk)
			yield(&m)
		}
	default:
		panic(fmt.Sprintf("litmus: LKMM has no step for %s", op))
	}
}

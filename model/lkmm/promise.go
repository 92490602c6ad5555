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
	"math"
	"sort"
	"time"
	"unsafe"

	"github.com/flushproof/flushproof/model/litmus"
)

// Promise runs litmus tests under the promise-based operational LKMM model.
//
// Its state is sized for the test it runs (promise_state.go): any number
// of threads, locations, stores, registers and events runs, within the
// budget, MaxStates and Timeout. Its search is a depth-first search of its
// own, not model/explore's: it keeps a 128-bit key of each state seen (16
// bytes; lkRun.key: a probability of about (P+1)·n²/2¹²⁹ that two of n
// states collide, P the state's parts, one more than the threads: below
// 2⁻⁸⁰ for the 4 M states of the default budget and up to 30 threads),
// not the states, which are hundreds of bytes to tens of kilobytes. What
// it gives up: no memory budget, Stop hook, progress or parallel workers.
//
// Nothing outlives a call: each run's states, scratch space and seen set
// are its own and are garbage once Outcomes returns.
type Promise struct {
	// MaxStates bounds the search (0: litmus.DefaultMaxStates).
	MaxStates int
	// Timeout bounds the run's time (0: none).
	Timeout time.Duration
}

// Name returns "LKMM-op".
func (Promise) Name() string { return "LKMM-op" }

// Outcomes returns every final state of t under the model. A search that
// reaches MaxStates or Timeout returns an error wrapping
// litmus.ErrCutShort, with the states seen, the time taken and the test's
// threads and events, never a partial answer.
func (m Promise) Outcomes(t *litmus.Test) (_ []litmus.Outcome, err error) {
	start := time.Now()
	if err := litmus.MemoryOnly(t); err != nil {
		return nil, err
	}
	if err := t.Refuse(m.Name(), 0); err != nil {
		return nil, err
	}
	defer func() {
		// A fault of the model: an error, not a crash and never a
		// partial answer.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s under %s: %v", t.Name, m.Name(), r)
		}
	}()
	p := &lkProg{locs: map[string]int{}}
	for _, l := range t.Locs {
		if _, ok := p.locs[l]; !ok {
			p.locs[l] = len(p.locs)
		}
	}
	for th := range t.Threads {
		p.code = append(p.code, nil)
		p.regs = append(p.regs, map[string]int{})
		p.written = append(p.written, nil)
		p.depth = append(p.depth, 0)
		if err := p.flatten(th, t.Threads[th].Body, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	// Registers read but never written are 0 and need a slot too.
	for th := range t.Threads {
		walkRegs(t.Threads[th].Body, func(name string) { p.reg(th, name, false) })
	}
	budget := m.MaxStates
	if budget == 0 {
		budget = litmus.DefaultMaxStates
	}
	y := p.layout()
	for x, n := range y.msgCap {
		if n-1 > math.MaxUint16 {
			return nil, fmt.Errorf("%s: %w: %d stores to location %d, more than the 65,535 LKMM-op places in co", t.Name, litmus.ErrUnsupported, n-1, x)
		}
	}
	r := &lkRun{p: p, y: y, seen: map[[2]uint64]struct{}{}, found: map[string]litmus.Outcome{}, budget: budget,
		start: start, timeout: m.Timeout, seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	fail := func(err error) error { return fmt.Errorf("%s under %s: %w", t.Name, m.Name(), err) }
	if err := p.valueSets(t, r.spend); err != nil {
		return nil, fail(err)
	}
	r.tmp = &lkScratch{y: y}
	s := newState(y, r.tmp)
	for l, x := range p.locs {
		s.sc[y.scN+x] = 1
		s.vals[y.msgVals0+y.msgBase[x]] = t.Init[l]
		s.setMSc(x, 0, mTh, -1)
		s.setMSc(x, 0, mNode, -1)
	}
	if err := r.dfs(s); err != nil {
		return nil, fail(err)
	}
	// Sorted by key, each key computed once.
	type keyed struct {
		key string
		o   litmus.Outcome
	}
	ks := make([]keyed, 0, len(r.found))
	for _, o := range r.found {
		ks = append(ks, keyed{o.Key(), o})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	out := make([]litmus.Outcome, len(ks))
	for i, k := range ks {
		out[i] = k.o
	}
	return out, nil
}

// lkRun is one search. States are kept by a 128-bit key (key): with n
// states of P parts, two collide with a probability of about
// (P+1)·n²/2¹²⁹.
type lkRun struct {
	p            *lkProg
	y            *lkLayout
	tmp          *lkScratch
	pool         []*lkState // states free for reuse: a search holds about three per level of depth
	seen         map[[2]uint64]struct{}
	found        map[string]litmus.Outcome
	final        []int64 // scratch for a final state's values
	budget       int
	work         int // valueSets' evaluations
	start        time.Time
	timeout      time.Duration
	seed1, seed2 maphash.Seed
}

// cut is the error of a search cut short by its budget.
func (r *lkRun) cut(why string) error {
	events := 0
	for _, code := range r.p.code {
		for _, in := range code {
			if in.kind == lkAccess {
				events++
			}
		}
	}
	return fmt.Errorf("%w: %s, after %d states in %v (%d threads, %d events, %d locations): outcomes unknown",
		litmus.ErrCutShort, why, len(r.seen), time.Since(r.start).Round(time.Millisecond), len(r.p.code), events, len(r.p.locs))
}

// over returns the error of a budget reached, nil if none is.
func (r *lkRun) over() error {
	if len(r.seen) >= r.budget {
		return r.cut(fmt.Sprintf("the state budget of %d reached", r.budget))
	}
	if r.timeout > 0 && time.Since(r.start) > r.timeout {
		return r.cut(fmt.Sprintf("the timeout of %v reached", r.timeout))
	}
	return nil
}

// spend counts n evaluations of valueSets against the budget (an
// evaluation as a state) and the timeout.
func (r *lkRun) spend(n int) error {
	before := r.work
	r.work += n
	if r.work > r.budget {
		return r.cut(fmt.Sprintf("more than %d evaluations computing the values a run may take", r.budget))
	}
	// The clock is read once per 1024 evaluations.
	if r.timeout > 0 && before>>10 != r.work>>10 && time.Since(r.start) > r.timeout {
		return r.cut(fmt.Sprintf("the timeout of %v reached computing the values a run may take", r.timeout))
	}
	return nil
}

// clone returns a copy of s, from the free states if there is one.
func (r *lkRun) clone(s *lkState) *lkState {
	var n *lkState
	if k := len(r.pool); k > 0 {
		n, r.pool = r.pool[k-1], r.pool[:k-1]
	} else {
		n = newState(r.y, r.tmp)
	}
	n.copyFrom(s)
	return n
}

// promiseCheckHashes makes every search recompute the hashes of every
// part of every state and compare them with the cached ones (a test sets
// it: a change that a step makes without marking its part would leave a
// stale hash, and states that differ would count as one).
var promiseCheckHashes = false

// key is s's key in the seen set: two hashes (two seeds) of its parts'
// hashes, each part hashed with both seeds when it changed. Two states
// differ in some part; its two hashes agree with a probability of 2⁻¹²⁸,
// as do the two keys of two different lists of part hashes: with P parts,
// two states collide with a probability of about (P+1)/2¹²⁸.
func (r *lkRun) key(s *lkState) [2]uint64 {
	for p, d := range s.dirty {
		if d {
			b := s.partBytes(p)
			s.hs[2*p], s.hs[2*p+1] = maphash.Bytes(r.seed1, b), maphash.Bytes(r.seed2, b)
			s.dirty[p] = false
		} else if promiseCheckHashes {
			b := s.partBytes(p)
			if s.hs[2*p] != maphash.Bytes(r.seed1, b) || s.hs[2*p+1] != maphash.Bytes(r.seed2, b) {
				panic(fmt.Sprintf("litmus: LKMM: part %d changed and not marked", p))
			}
		}
	}
	hb := unsafe.Slice((*byte)(unsafe.Pointer(&s.hs[0])), 8*len(s.hs))
	return [2]uint64{maphash.Bytes(r.seed1, hb), maphash.Bytes(r.seed2, hb)}
}

// branch searches from a copy of n that f changed, if f returns true.
func (r *lkRun) branch(n *lkState, f func(m *lkState) bool) error {
	mk := r.tmp.mark()
	m := r.clone(n)
	var err error
	if f(m) {
		err = r.dfs(m)
	}
	r.pool = append(r.pool, m)
	r.tmp.release(mk)
	return err
}

func (r *lkRun) dfs(s *lkState) error {
	key := r.key(s)
	if _, ok := r.seen[key]; ok {
		return nil
	}
	if len(r.seen) >= r.budget || r.timeout > 0 && len(r.seen)&255 == 0 {
		if err := r.over(); err != nil {
			return err
		}
	}
	r.seen[key] = struct{}{}
	// A step that only changes its own thread's registers, control or
	// pending fences (lkProg.local) commutes with every step of the other
	// threads and changes nothing they can do, and every run to an
	// outcome takes it: taking it first, alone, reaches the same
	// outcomes through fewer states.
	for t := range r.p.code {
		if pc := s.pc(t); pc < len(r.p.code[t]) && r.p.code[t][pc].local {
			return r.step(s, t)
		}
	}
	done := true
	for t := range r.p.code {
		if s.pc(t) >= len(r.p.code[t]) {
			if s.ts(t, sNP) > 0 {
				done = false // a promise never fulfilled: no outcome
			}
			continue
		}
		done = false
		if err := r.step(s, t); err != nil {
			return err
		}
		if err := r.promises(s, t); err != nil {
			return err
		}
	}
	if done {
		r.outcome(s)
	}
	return nil
}

// outcome records the outcome of the final state s. Final states with
// the same registers and memory are counted once, by their values.
func (r *lkRun) outcome(s *lkState) {
	p := r.p
	vals := r.final[:0]
	for t := range p.code {
		for _, name := range p.written[t] {
			vals = append(vals, s.reg(t, p.regs[t][name]))
		}
	}
	for x := range r.y.L {
		vals = append(vals, s.mVal(x, s.n(x)-1))
	}
	r.final = vals
	var key []byte
	if len(vals) > 0 {
		key = unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 8*len(vals))
	}
	if _, ok := r.found[string(key)]; ok {
		return
	}
	o := litmus.Outcome{Mem: map[string]int64{}}
	for t := range p.code {
		regs := map[string]int64{}
		for _, name := range p.written[t] {
			regs[name] = s.reg(t, p.regs[t][name])
		}
		o.Regs = append(o.Regs, regs)
	}
	for l, x := range p.locs {
		o.Mem[l] = s.mVal(x, s.n(x)-1)
	}
	r.found[string(key)] = o
}

// promises searches from the states where thread t has promised one of
// its stores after its next instruction (a plain store, a release store
// or an RMW; not spin_lock or spin_unlock) at some position of co. The
// value is the one its expression has now if no instruction before it
// sets its registers; else every value valueSets found it may take.
func (r *lkRun) promises(s *lkState, t int) error {
	p := r.p
	np := s.ts(t, sNP)
	if np == r.y.P[t] {
		return nil
	}
	pc := s.pc(t)
	// A promise helps only if a read of t comes before the store: it is
	// made just before that read (making it earlier changes nothing, as
	// t's steps in between read nothing), and promises are made in
	// program order (making two in the other order gives the same runs).
	if in := &p.code[t][pc]; in.kind != lkAccess || !in.acc.Op.Info().Reads {
		return nil
	}
	first := pc + 1
	for i := range np {
		first = max(first, s.promPC(t, i)+1)
	}
	for i := first; i < len(p.code[t]); i++ {
		in := &p.code[t][i]
		if in.kind != lkAccess {
			continue
		}
		op := in.acc.Op
		if !(op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op.IsRMW()) || s.promised(t, i) > 0 {
			continue
		}
		if p.ordered(t, pc, i) {
			continue
		}
		release := op.Info().Order == litmus.Release
		x := in.loc
		vals := r.values(s, t, pc, i, in.acc.Val, p.vals[in.acc])
		var expect []int64
		if op.IsCmpxchg() {
			expect = r.values(s, t, pc, i, in.acc.Expect, p.expects[in.acc])
		}
		for pos := 1; pos <= s.n(x); pos++ {
			if !op.IsRMW() {
				for _, v := range vals {
					if err := r.branch(s, func(m *lkState) bool { return m.promise(t, i, x, pos, v, release, false) }); err != nil {
						return err
					}
				}
				continue
			}
			old := s.mVal(x, pos-1)
			if op.IsCmpxchg() && !containsVal(expect, old) {
				continue // a cmpxchg that fails writes nothing to promise
			}
			var tried []int64
			for _, d := range vals {
				nv := old + d
				if op.IsXchg() || op.IsCmpxchg() {
					nv = d
				}
				if containsVal(tried, nv) {
					continue
				}
				tried = append(tried, nv)
				if err := r.branch(s, func(m *lkState) bool { return m.promise(t, i, x, pos, nv, release, true) }); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// values returns the values e, all of a set of them, may have when
// thread t, now at pc, runs instruction i: its value now if no
// instruction from pc to i sets one of its registers, else all.
func (r *lkRun) values(s *lkState, t, pc, i int, e litmus.Expr, all []int64) []int64 {
	p := r.p
	final := true
	e.Regs(func(name string) {
		for j := pc; j < i; j++ {
			in := &p.code[t][j]
			if in.kind == lkAssign && in.assign.Reg == name ||
				in.kind == lkAccess && in.acc.Reg == name && in.acc.Op.Info().Returns {
				final = false
			}
		}
	})
	if !final {
		return all
	}
	return []int64{r.eval(s, t, e)}
}

// eval evaluates e with thread t's registers in s.
func (r *lkRun) eval(s *lkState, t int, e litmus.Expr) int64 {
	if e.IsConst {
		return e.Const
	}
	regs := r.p.regs[t]
	v, err := e.Eval(func(_ int, name string) int64 { return s.reg(t, regs[name]) }, nil)
	if err != nil {
		panic(err)
	}
	return v
}

// step searches from the states thread t's next instruction leads s to.
func (r *lkRun) step(s *lkState, t int) error {
	p := r.p
	pc := s.pc(t)
	in := &p.code[t][pc]
	mk := r.tmp.mark()
	defer r.tmp.release(mk)
	n := r.clone(s)
	defer func() { r.pool = append(r.pool, n) }()
	// The step changes t's part, and the stores' part unless it is
	// local; other parts are marked where they change (insert, late).
	n.touch(1 + t)
	if !in.local {
		n.touch(0)
	}
	n.setTs(t, sPC, pc+1)
	switch in.kind {
	case lkAssign:
		i := p.regs[t][in.assign.Reg]
		k := n.regKnow(p, t, in.assign.Val)
		n.setReg(t, i, r.eval(s, t, in.assign.Val))
		n.rdep(t, i).set(k)
		return r.dfs(n)
	case lkBranch:
		c := n.regKnow(p, t, in.cond)
		d := n.ts(t, sDepth)
		if d > 0 {
			c.join(n.ctrl(t, d-1))
		}
		n.ctrl(t, d).set(c)
		n.setTs(t, sDepth, d+1)
		if r.eval(s, t, in.cond) == 0 {
			n.setTs(t, sPC, in.target)
		}
		return r.dfs(n)
	case lkJump:
		n.setTs(t, sPC, in.target)
		return r.dfs(n)
	case lkEndIf:
		d := n.ts(t, sDepth) - 1
		n.setTs(t, sDepth, d)
		n.ctrl(t, d).clear()
		return r.dfs(n)
	}
	a := in.acc
	op := a.Op
	info := op.Info()
	x := in.loc
	setReg := func(m *lkState, v int64, k lknow) {
		if a.Reg != "" && info.Returns {
			i := p.regs[t][a.Reg]
			m.setReg(t, i, v)
			m.rdep(t, i).set(k)
		}
	}
	switch {
	case info.Fence:
		switch op {
		case litmus.OpMb:
			n.strongFence(t, n.tk(t, kHAll), n.tv(t, vAccA))
		case litmus.OpRmb:
			n.tk(t, kPendHR).join(n.tk(t, kHR))
		case litmus.OpWmb:
			n.tk(t, kPendHW).join(n.tk(t, kHW))
			n.tv(t, vWmbObs).join(n.tv(t, vAccW))
		case litmus.OpMbBeforeAtomic:
			n.setFlag(t, sBaSeen, true)
			n.tk(t, kBaH).join(n.tk(t, kHAll))
			n.tv(t, vBaObs).join(n.tv(t, vAccA))
		case litmus.OpMbAfterAtomic:
			if n.flag(t, sRmwSeen) {
				n.strongFence(t, n.tk(t, kRmwH), n.tv(t, vRmwObs))
			}
		case litmus.OpMbAfterSpinlock:
			if n.flag(t, sLkwSeen) {
				n.strongFence(t, n.tk(t, kLkwH), n.tv(t, vLkwObs))
			}
		}
		return r.dfs(n)
	case op == litmus.OpReadOnce || op == litmus.OpLoadAcquire:
		for k := range n.n(x) {
			if err := r.branch(n, func(m *lkState) bool {
				rk, ok := m.read(t, x, k, lkRead{acquire: op == litmus.OpLoadAcquire})
				if ok {
					setReg(m, m.mVal(x, k), rk)
				}
				return ok
			}); err != nil {
				return err
			}
		}
	case op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op == litmus.OpSpinUnlock:
		var v int64
		var data lknow
		if op != litmus.OpSpinUnlock {
			v = r.eval(s, t, a.Val)
			data = n.regKnow(p, t, a.Val)
		}
		wf := lkWrite{release: op != litmus.OpWriteOnce, ul: op == litmus.OpSpinUnlock, data: data}
		if pr := n.promised(t, pc); pr > 0 {
			wf.promise = pr
			return r.branch(n, func(m *lkState) bool { return m.write(t, x, m.posOf(x, pr-1), v, wf) })
		}
		for pos := 1; pos <= n.n(x); pos++ {
			if err := r.branch(n, func(m *lkState) bool { return m.write(t, x, pos, v, wf) }); err != nil {
				return err
			}
		}
	case op == litmus.OpSpinLock:
		for k := range n.n(x) {
			if n.mVal(x, k) != 0 {
				continue
			}
			if err := r.branch(n, func(m *lkState) bool {
				if _, ok := m.read(t, x, k, lkRead{acquire: true, lkr: true}); !ok {
					return false
				}
				return m.write(t, x, k+1, 1, lkWrite{lkw: true})
			}); err != nil {
				return err
			}
		}
	case op.IsRMW():
		vt := n.regKnow(p, t, a.Val)
		val := r.eval(s, t, a.Val)
		pr := n.promised(t, pc)
		for k := range n.n(x) {
			if pr > 0 && k != n.posOf(x, pr-1)-1 {
				continue // the read of a promised RMW reads the store its write is glued to
			}
			old := n.mVal(x, k)
			ok := true
			if op.IsCmpxchg() {
				ok = old == r.eval(s, t, a.Expect)
			}
			err := r.branch(n, func(m *lkState) bool {
				rf := lkRead{rmw: true, noreturn: !info.Returns,
					acquire: ok && info.Order == litmus.Acquire, mb: ok && info.Order == litmus.Mb}
				rk, rok := m.read(t, x, k, rf)
				if !rok {
					return false
				}
				if !ok {
					if pr > 0 {
						return false // a promised RMW must write
					}
					setReg(m, old, rk)
					return true
				}
				nv := old + val
				if op.IsXchg() || op.IsCmpxchg() {
					nv = val
				}
				if !m.write(t, x, k+1, nv, lkWrite{rmw: true, release: info.Order == litmus.Release, mb: info.Order == litmus.Mb, data: vt, promise: pr}) {
					return false
				}
				vk := r.tmp.knowOf(vt) // this branch's copy: vt stays unshifted
				if pr == 0 {
					rk.shift(x, k+1)
					vk.shift(x, k+1)
				}
				ret := old
				if op.ReturnsNew() {
					ret = nv
					rk.join(vk)
				}
				setReg(m, ret, rk)
				return true
			})
			if err != nil {
				return err
			}
		}
	default:
		panic(fmt.Sprintf("litmus: LKMM has no step for %s", op))
	}
	return nil
}

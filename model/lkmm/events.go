package lkmm

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// kind is what an event does to memory.
type kind uint8

const (
	read kind = iota + 1
	write
	fence
)

// event is one event of a thread's run for a given choice of values read:
// herd7's events for the primitives of tools/memory-model/linux-kernel.def,
// with the tags linux-kernel.bell filters (Acquire, Release, Mb, Noreturn,
// RMW).
type event struct {
	thread int // -1 for a location's initial write (herd7's IW)
	kind   kind
	loc    string
	val    int64
	prim   litmus.Op // the primitive that made it (0 for an initial write)
	// fence: the barrier kind (OpMb, OpRmb, ...) of a fence event.
	fence litmus.Op

	acquire  bool // Acquire = ACQUIRE \ W \ FailedRMW (linux-kernel.bell)
	release  bool // Release = RELEASE \ R \ FailedRMW
	mb       bool // Mb = MB \ FailedRMW: both events of a fully ordered RMW that wrote
	noreturn bool // Noreturn = NORETURN \ W: the read of atomic_add and friends
	inRMW    bool // herd7's RMW set: every event of an atomic RMW, failed cmpxchg too
	// reg and regVal are, for a read whose value goes into a register no
	// later statement of the thread can assign, that register and the
	// value it ends with: the search knows it as soon as the read is
	// placed ("" otherwise).
	reg    string
	regVal int64
	// lock is the lock.cat class of an event of spin_lock or spin_unlock
	// (LKR, LKW, UL); 0 for every other event.
	lock lockClass
	// plain marks a plain (unmarked) access: Plain = M \ Marked
	// (linux-kernel.bell). Every other event is Marked.
	plain bool
	// srcu is the SRCU class of an event of srcu_read_lock (a read of
	// the srcu_struct, Srcu-lock), srcu_read_unlock (a write, Srcu-unlock)
	// or synchronize_srcu (Sync-srcu: a fence with the srcu_struct as
	// its location, for the cat's "& loc"); 0 for every other event.
	srcu srcuClass

	// rmwRead is, for the write of an RMW, the index in its thread's
	// trace of the read it is atomic with; -1 otherwise.
	rmwRead int
	// data, ctrl and addr are the reads (trace indices) this event
	// depends on: data through the registers its stored value is
	// computed from, ctrl through the conditions of the if statements it
	// lies in, addr through the registers its address is computed from
	// (an access through a pointer). Never changed once made: runs that
	// share a prefix share these.
	data, ctrl, addr mask
}

// srcuClass is the SRCU tag of an event (linux-kernel.bell's SRCU enum).
type srcuClass uint8

const (
	srcuLock srcuClass = iota + 1
	srcuUnlock
	srcuSync
)

// mask is a set of a thread's events by trace index, of any width; nil
// is empty. A mask is never changed once made (or returns a new one).
type mask []uint64

func maskOf(i int) mask {
	m := make(mask, i/64+1)
	m[i/64] = 1 << uint(i%64)
	return m
}

// or returns m | o.
func (m mask) or(o mask) mask {
	switch {
	case len(o) == 0:
		return m
	case len(m) == 0:
		return o
	}
	if len(m) < len(o) {
		m, o = o, m
	}
	out := append(mask(nil), m...)
	for k, w := range o {
		out[k] |= w
	}
	return out
}

// each calls f with every index in m.
func (m mask) each(f func(int)) {
	for k, w := range m {
		for w != 0 {
			f(k*64 + bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
}

// lockClass is the class lock.cat gives the events of the lock primitives
// (herd7's __lock and __unlock of tools/memory-model/linux-kernel.def).
type lockClass uint8

const (
	// lockLKR is LKR, the read of spin_lock: it is an Acquire (lock.cat
	// adds LKR to Acquire) and reads the lock free.
	lockLKR lockClass = iota + 1
	// lockLKW is LKW, the write of spin_lock that takes the lock, in an
	// rmw pair with the LKR just before it (lock.cat's lk-rmw).
	lockLKW
	// lockUL is UL, the write of spin_unlock: a Release (lock.cat adds UL
	// to Release).
	lockUL
	// lockLF is LF, the read of a spin_trylock that fails: it reads the
	// lock held, from an LKW (rf-lf). A spin_trylock that succeeds is an
	// LKR and an LKW, as spin_lock.
	lockLF
	// lockRL and lockRU are RL and RU, the read of spin_is_locked finding
	// the lock held (from an LKW, rf-rl) or free (from an UL or the
	// initial write, rf-ru).
	lockRL
	lockRU
)

// Values of a lock location, as the operational models store them: the
// reference needs them only for the lock's final value in an outcome.
const (
	lockFree = 0
	lockHeld = 1
)

// runNode is a point in a thread's runs: the events the thread has made
// when it reaches its next read (or its end), for the values its reads
// before returned. A thread's runs form a tree of these, a run being a
// path from the root to an end: a node's kids are the values that read
// may return, each leading to the node at the read after it. Runs that
// agree on their first values share those nodes, so the search places
// the events they share once.
type runNode struct {
	// events are the run's events so far, in program order; the node's
	// own are events[from:] (the first of them, but at the root, the
	// read whose value its parent chose).
	events []event
	from   int
	// end says the run ends here, with the thread's registers regs.
	end  bool
	regs map[string]int64
	// fault, at an end, says the run stops at an access through a value
	// that is no location's address: an execution with this run is an
	// error, not an outcome (herd7 fails the test on it too).
	fault string
	// Otherwise the next read is of loc, and returns one of the kids'
	// values.
	loc  string
	kids []runKid
	// below holds the values the runs through the kids write, for the
	// search to know whether the rest of a run may still write a value.
	below map[valueAt]bool
	// most counts, per location, the most writes a run through the
	// kids makes there.
	most map[string]int
}

// valueAt is a value at a location, named.
type valueAt struct {
	loc string
	val int64
}

// writesFrom counts, per location, the most writes a run makes from
// node's i-th event on.
func (n *runNode) writesFrom(i int) map[string]int {
	out := map[string]int{}
	for l, c := range n.most {
		out[l] = c
	}
	for _, ev := range n.events[i:] {
		if ev.kind == write {
			out[ev.loc]++
		}
	}
	return out
}

// mostFrom returns the most writes a run makes to loc from node's i-th
// event on.
func (n *runNode) mostFrom(i int, loc string) int {
	c := n.most[loc]
	for _, ev := range n.events[i:] {
		if ev.kind == write && ev.loc == loc {
			c++
		}
	}
	return c
}

// mayWrite reports whether the run, from node's i-th event on, may write
// val to loc.
func (n *runNode) mayWrite(i int, loc string, val int64) bool {
	for _, ev := range n.events[i:] {
		if ev.kind == write && ev.loc == loc && ev.val == val {
			return true
		}
	}
	return n.below[valueAt{loc, val}]
}

type runKid struct {
	val  int64
	node *runNode
}

// kid returns the node after the read when it returns v, or nil.
func (n *runNode) kid(v int64) *runNode {
	for _, k := range n.kids {
		if k.val == v {
			return k.node
		}
	}
	return nil
}

// runner runs one thread's code with the read values given by choices; it
// stops at the first read beyond them and says which location it reads.
type runner struct {
	test   *litmus.Test
	thread int
	// last holds the accesses whose register no later statement
	// assigns (lastAssigns).
	last    map[*litmus.Access]bool
	choices []int64
	next    int // next choice to use

	regs   map[string]int64
	taint  map[string]mask // register -> reads its value comes from
	ctrl   mask            // reads the enclosing if conditions come from
	events []event

	needLoc string // set when a read needs a value beyond choices
}

// errNeed stops a run at a read with no chosen value yet.
type errNeed struct{ loc string }

func (e errNeed) Error() string { return "needs a value for " + e.loc }

// errFault stops a run at an access through a value that is no
// location's address.
type errFault struct{ msg string }

func (e errFault) Error() string { return e.msg }

// location returns where access a goes: its location, or for an access
// through a pointer the location whose address the pointer holds, with
// the reads that address comes from (addr).
func (r *runner) location(a *litmus.Access, line int) (string, mask, error) {
	if a.Addr == nil {
		return a.Loc, nil, nil
	}
	v, err := r.eval(*a.Addr)
	if err != nil {
		return "", nil, err
	}
	loc, ok := r.test.LocOfAddr(v)
	if !ok {
		return "", nil, errFault{fmt.Sprintf("line %d: %s through %s, which holds %d: no location's address", line, a.Op, a.Addr, v)}
	}
	return loc, r.regTaint(*a.Addr), nil
}

func (r *runner) regTaint(e litmus.Expr) mask {
	var t mask
	e.Regs(func(name string) { t = t.or(r.taint[name]) })
	return t
}

func (r *runner) eval(e litmus.Expr) (int64, error) {
	return e.Eval(func(_ int, name string) int64 { return r.regs[name] }, nil)
}

// readValue returns the value the next read of loc returns.
func (r *runner) readValue(loc string) (int64, error) {
	if r.next >= len(r.choices) {
		return 0, errNeed{loc}
	}
	v := r.choices[r.next]
	r.next++
	return v, nil
}

func (r *runner) emit(ev event) (int, error) {
	ev.thread = r.thread
	ev.ctrl = ev.ctrl.or(r.ctrl)
	// Only the write of an atomic RMW or of spin_lock has a read it is
	// atomic with; the zero value would pair every other write with the
	// thread's first event.
	if ev.kind != write || !(ev.inRMW || ev.lock == lockLKW) {
		ev.rmwRead = -1
	}
	r.events = append(r.events, ev)
	return len(r.events) - 1, nil
}

func (r *runner) setReg(name string, v int64, t mask) {
	if name == "" {
		return
	}
	r.regs[name] = v
	r.taint[name] = t
}

func (r *runner) run(body []litmus.Stmt) error {
	for _, s := range body {
		switch {
		case s.Assign != nil:
			v, err := r.eval(s.Assign.Val)
			if err != nil {
				return fmt.Errorf("line %d: %w", s.Line, err)
			}
			r.setReg(s.Assign.Reg, v, r.regTaint(s.Assign.Val))
		case s.If != nil:
			c, err := r.eval(s.If.Cond)
			if err != nil {
				return fmt.Errorf("line %d: %w", s.Line, err)
			}
			// ctrl reaches the events inside the arms only, not those
			// after the if (tools/memory-model/Documentation/explanation.txt,
			// "a control dependency if Y syntactically lies within an arm
			// of an if statement", commit fc13b47692ef).
			saved := r.ctrl
			r.ctrl = r.ctrl.or(r.regTaint(s.If.Cond))
			arm := s.If.Else
			if c != 0 {
				arm = s.If.Then
			}
			if err := r.run(arm); err != nil {
				return err
			}
			r.ctrl = saved
		case s.Access != nil:
			if err := r.access(s.Access, s.Line); err != nil {
				switch err.(type) {
				case errNeed, errFault:
					return err
				}
				return fmt.Errorf("line %d: %s: %w", s.Line, s.Access.Op, err)
			}
		default:
			return fmt.Errorf("line %d: empty statement", s.Line)
		}
	}
	return nil
}

func (r *runner) access(a *litmus.Access, line int) error {
	info := a.Op.Info()
	if !modelled(a.Op) {
		// Prepare refuses the constructs of the LKMM language the
		// reference does not model (litmus.Feature) first; this keeps
		// any other from being taken for one it does.
		return fmt.Errorf("%w: %s", ErrUnsupported, info.Name)
	}
	if info.Fence {
		// smp_mb() and friends, barrier(), and RCU's rcu_read_lock,
		// rcu_read_unlock and synchronize_rcu, which linux-kernel.def
		// makes fences (Rcu-lock, Rcu-unlock, Sync-rcu).
		_, err := r.emit(event{kind: fence, prim: a.Op, fence: a.Op})
		return err
	}
	loc, addr, err := r.location(a, line)
	if err != nil {
		return err
	}
	if loc == "" {
		return fmt.Errorf("%w: %s without a location", ErrUnsupported, info.Name)
	}
	switch {
	case a.Op == litmus.OpSpinLock:
		if a.Addr != nil {
			return fmt.Errorf("%w: %s through a pointer", ErrUnsupported, info.Name)
		}
		// LKR then LKW, adjacent in po: lock.cat pairs them as lk-rmw.
		// Their rf and co are not chosen by value but by the order in
		// which the critical sections take the lock (locks.go), so the
		// LKR takes no read choice.
		ri, err := r.emit(event{kind: read, loc: loc, val: lockFree, prim: a.Op,
			acquire: true, lock: lockLKR})
		if err != nil {
			return err
		}
		_, err = r.emit(event{kind: write, loc: loc, val: lockHeld, prim: a.Op,
			lock: lockLKW, rmwRead: ri})
		return err
	case a.Op == litmus.OpSpinTrylock || a.Op == litmus.OpSpinIsLocked:
		if a.Addr != nil {
			return fmt.Errorf("%w: %s through a pointer", ErrUnsupported, info.Name)
		}
		return r.lockTest(a, loc)
	case a.Op == litmus.OpSpinUnlock:
		if a.Addr != nil {
			return fmt.Errorf("%w: %s through a pointer", ErrUnsupported, info.Name)
		}
		_, err := r.emit(event{kind: write, loc: loc, val: lockFree, prim: a.Op,
			release: true, lock: lockUL})
		return err
	case a.Op == litmus.OpSyncSrcu:
		// __srcu{sync-srcu}(X): neither a read nor a write, but an event
		// at the srcu_struct's location.
		_, err := r.emit(event{kind: fence, loc: loc, prim: a.Op, fence: a.Op, srcu: srcuSync, addr: addr})
		return err
	case !info.Reads && info.Writes: // WRITE_ONCE, smp_store_release, plain and srcu_read_unlock stores
		v, err := r.eval(a.Val)
		if err != nil {
			return err
		}
		ev := event{kind: write, loc: loc, val: v, prim: a.Op,
			release: info.Order == litmus.Release, data: r.regTaint(a.Val), addr: addr,
			plain: a.Op == litmus.OpPlainWrite}
		if a.Op == litmus.OpSrcuUnlock {
			ev.srcu = srcuUnlock
		}
		_, err = r.emit(ev)
		return err
	case info.Reads && !info.Writes: // READ_ONCE, smp_load_acquire, plain loads, srcu_read_lock
		v, err := r.readValue(loc)
		if err != nil {
			return err
		}
		ev := event{kind: read, loc: loc, val: v, prim: a.Op,
			acquire: info.Order == litmus.Acquire, addr: addr, plain: a.Op == litmus.OpPlainRead}
		if a.Op == litmus.OpSrcuLock {
			ev.srcu = srcuLock
		}
		i, err := r.emit(ev)
		if err != nil {
			return err
		}
		r.setReg(a.Reg, v, maskOf(i))
		r.final(a, i, v)
		return nil
	case a.Op.IsRMW() || a.Op == litmus.OpAddUnless:
		return r.rmw(a, info, loc, addr)
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, info.Name)
}

// final notes on event i the register a sets to v, if no later statement
// can assign it.
func (r *runner) final(a *litmus.Access, i int, v int64) {
	if a.Reg != "" && r.last[a] {
		r.events[i].reg, r.events[i].regVal = a.Reg, v
	}
}

// lastAssigns marks in out the accesses of body that set a register no
// statement after them (in program order, any arm of an if) assigns;
// later holds the registers the statements after body assign.
func lastAssigns(body []litmus.Stmt, later map[string]bool, out map[*litmus.Access]bool) {
	after := map[string]bool{}
	for r := range later {
		after[r] = true
	}
	for i := len(body) - 1; i >= 0; i-- {
		s := body[i]
		switch {
		case s.Access != nil && s.Access.Reg != "" && s.Access.Op.Info().Returns:
			if !after[s.Access.Reg] {
				out[s.Access] = true
			}
			after[s.Access.Reg] = true
		case s.Assign != nil:
			after[s.Assign.Reg] = true
		case s.If != nil:
			lastAssigns(s.If.Then, after, out)
			lastAssigns(s.If.Else, after, out)
			threadRegs(s.If.Then, after)
			threadRegs(s.If.Else, after)
		}
	}
}

// modelled reports whether the reference models op: every primitive.
func modelled(op litmus.Op) bool { return op > 0 }

// lockTest runs spin_trylock or spin_is_locked (herd7's __trylock and
// __islocked): a read of the lock whose value, chosen as any read's, says
// what it found. spin_trylock finding it free takes it, an LKR and an LKW
// as spin_lock, and returns 1; finding it held, it is an LF and returns
// 0. spin_is_locked is an RL (held, 1) or an RU (free, 0). The search
// gives each read a write of its value at the lock: an LKW for held, an
// UL or the initial write for free, which is lock.cat's rf-lf, rf-rl and
// rf-ru (coherence keeps a read inside the thread's own critical section
// on its own LKW, as rfi-lf and rfi-rl say).
func (r *runner) lockTest(a *litmus.Access, loc string) error {
	v, err := r.readValue(loc)
	if err != nil {
		return err
	}
	held := v == lockHeld
	ev := event{kind: read, loc: loc, val: v, prim: a.Op}
	ret := int64(0)
	switch {
	case a.Op == litmus.OpSpinIsLocked && held:
		ev.lock, ret = lockRL, 1
	case a.Op == litmus.OpSpinIsLocked:
		ev.lock = lockRU
	case held:
		ev.lock = lockLF
	default:
		ev.lock, ev.acquire, ret = lockLKR, true, 1
	}
	i, err := r.emit(ev)
	if err != nil {
		return err
	}
	if ev.lock == lockLKR {
		if _, err := r.emit(event{kind: write, loc: loc, val: lockHeld, prim: a.Op,
			lock: lockLKW, rmwRead: i}); err != nil {
			return err
		}
	}
	r.setReg(a.Reg, ret, maskOf(i))
	r.final(a, i, ret)
	return nil
}

// rmw runs an atomic read-modify-write: a read and, unless it is a
// cmpxchg or an atomic_add_unless that fails, a write, linked by rmw
// (linux-kernel.def's __atomic_op, __atomic_op_return,
// __atomic_fetch_op, __xchg, __cmpxchg, __atomic_add_unless).
func (r *runner) rmw(a *litmus.Access, info litmus.Info, loc string, addr mask) error {
	old, err := r.readValue(loc)
	if err != nil {
		return err
	}
	v, err := r.eval(a.Val)
	if err != nil {
		return err
	}
	vt := r.regTaint(a.Val)
	ok := true
	if a.Op.IsCmpxchg() || a.Op == litmus.OpAddUnless {
		cmp, err := r.eval(a.Expect)
		if err != nil {
			return err
		}
		// cmpxchg writes when it finds the value expected;
		// atomic_add_unless(x, v, u) when it does not find u.
		ok = (old == cmp) == a.Op.IsCmpxchg()
	}
	newVal := old + v
	if a.Op.IsXchg() || a.Op.IsCmpxchg() {
		newVal = v
	}
	// A failed cmpxchg carries no ordering: the bell's FailedRMW strips
	// its Acquire, Release and Mb tags.
	rd := event{kind: read, loc: loc, val: old, prim: a.Op, inRMW: true, addr: addr,
		noreturn: !info.Returns,
		acquire:  ok && info.Order == litmus.Acquire,
		mb:       ok && info.Order == litmus.Mb}
	ri, err := r.emit(rd)
	if err != nil {
		return err
	}
	ret, rt := old, maskOf(ri)
	switch {
	case a.Op.ReturnsNew():
		ret, rt = newVal, rt.or(vt)
	case a.Op == litmus.OpAddUnless:
		ret = boolVal(ok) // "returns non-zero if the add was done"
	}
	if ok {
		if _, err := r.emit(event{kind: write, loc: loc, val: newVal, prim: a.Op, inRMW: true,
			release: info.Order == litmus.Release, mb: info.Order == litmus.Mb,
			rmwRead: ri, data: vt, addr: addr}); err != nil {
			return err
		}
	}
	if info.Returns {
		r.setReg(a.Reg, ret, rt)
		r.final(a, ri, ret)
	}
	return nil
}

// threadRegs lists every register a thread's code assigns, so that every
// outcome names the same registers (a register starts at 0).
func threadRegs(body []litmus.Stmt, out map[string]bool) {
	for _, s := range body {
		switch {
		case s.Assign != nil:
			out[s.Assign.Reg] = true
		case s.If != nil:
			threadRegs(s.If.Then, out)
			threadRegs(s.If.Else, out)
		case s.Access != nil && s.Access.Reg != "" && s.Access.Op.Info().Returns:
			out[s.Access.Reg] = true
		}
	}
}

// runTree returns the runs of thread th, as a tree, when each read of a
// location returns any value of vals[loc]; nil if every run deadlocks.
// Each node made is a step of the budget.
func runTree(t *litmus.Test, th int, body []litmus.Stmt, vals map[string][]int64, b *budget) (*runNode, error) {
	names := map[string]bool{}
	threadRegs(body, names)
	var init map[string]int64 // the registers the initial state sets
	if th < len(t.RegInit) {
		init = t.RegInit[th]
	}
	for n := range init {
		names[n] = true
	}
	last := map[*litmus.Access]bool{}
	lastAssigns(body, nil, last)
	// One runner runs the code again for each node, from the start
	// (the statements nest, so a point of the run is no simple index).
	r := &runner{test: t, thread: th, regs: map[string]int64{}, taint: map[string]mask{}, last: last}
	var explore func(choices []int64, from int) (*runNode, error)
	explore = func(choices []int64, from int) (*runNode, error) {
		if err := b.step(); err != nil {
			return nil, err
		}
		r.choices, r.next, r.ctrl, r.events = choices, 0, nil, nil
		clear(r.taint)
		for n := range names {
			r.regs[n] = init[n]
		}
		err := r.run(body)
		if need, ok := err.(errNeed); ok {
			node := &runNode{events: r.events, from: from, loc: need.loc}
			for _, v := range vals[need.loc] {
				kid, err := explore(append(choices[:len(choices):len(choices)], v), len(node.events))
				if err != nil {
					return nil, err
				}
				if kid != nil {
					node.kids = append(node.kids, runKid{v, kid})
				}
			}
			if len(node.kids) == 0 {
				return nil, nil // every run through here deadlocks
			}
			node.below = map[valueAt]bool{}
			node.most = map[string]int{}
			for _, k := range node.kids {
				for l, c := range k.node.writesFrom(k.node.from) {
					if c > node.most[l] {
						node.most[l] = c
					}
				}
				for v := range k.node.below {
					node.below[v] = true
				}
				for _, ev := range k.node.events[k.node.from:] {
					if ev.kind == write {
						node.below[valueAt{ev.loc, ev.val}] = true
					}
				}
			}
			return node, nil
		}
		fault := ""
		if f, ok := err.(errFault); ok {
			fault, err = fmt.Sprintf("P%d: %s", th, f.msg), nil
		}
		if err != nil {
			return nil, fmt.Errorf("thread %d: %w", th, err)
		}
		nested, err := lockNest(r.events)
		if err != nil {
			return nil, fmt.Errorf("thread %d: %w", th, err)
		}
		if nested {
			return nil, nil // it deadlocks: no execution has this run
		}
		regs := make(map[string]int64, len(r.regs))
		for n, v := range r.regs {
			regs[n] = v
		}
		return &runNode{events: r.events, from: from, end: true, regs: regs, fault: fault}, nil
	}
	return explore(nil, 0)
}

// eachEnd calls f with every end of the runs below n.
func (n *runNode) eachEnd(f func(*runNode)) {
	if n == nil {
		return
	}
	if n.end {
		f(n)
		return
	}
	for _, k := range n.kids {
		k.node.eachEnd(f)
	}
}

// staticWrites counts the statements of body that may write memory.
func staticWrites(body []litmus.Stmt) int {
	n := 0
	for _, s := range body {
		switch {
		case s.Access != nil && s.Access.Op.Info().Writes &&
			s.Access.Op != litmus.OpSpinLock && s.Access.Op != litmus.OpSpinUnlock:
			n++
		case s.If != nil:
			n += staticWrites(s.If.Then) + staticWrites(s.If.Else)
		}
	}
	return n
}

// threadRuns computes, for every thread, its runs over the values the
// locations can hold: starting from the initial values, each round adds
// every value some run writes when its reads return values of the rounds
// before. A value an execution reads comes from a chain of writes, each
// computing its value from a read of the one before (data, or the read of
// its own RMW); herd7 finds values the same way, by solving these
// equations from the constants, so a chain has at most one write per
// write statement (there are no loops) and that many rounds, plus one,
// reach every value of every execution. The search then pairs each read
// with a write of its value (rf) and the axioms decide; a value that no
// write gives yields no execution. There is no bound on the values: a
// test whose values multiply (counters) spends the budget instead.
func threadRuns(t *litmus.Test, locs []string, locks map[string]bool, b *budget) ([]*runNode, error) {
	vals := map[string][]int64{}
	for _, l := range locs {
		vals[l] = []int64{t.Init[l]}
		if locks[l] {
			// spin_trylock and spin_is_locked find a lock free or held
			vals[l] = []int64{lockFree, lockHeld}
		}
	}
	// A value may also justify itself: a thread that stores a constant
	// when it reads a value that only that store leads to (r1 = 1; if
	// (READ_ONCE(x) == 0) r1 = 0; WRITE_ONCE(y, r1), with another thread
	// copying y to x): herd7 solves such a cycle, which no chain from the
	// initial values reaches. So the constants a thread assigns or stores
	// are values, from the first round on, of the locations it writes.
	for th, thread := range t.Threads {
		consts, written := map[int64]bool{}, map[string]bool{}
		threadConsts(thread.Body, locs, consts, written)
		if th < len(t.RegInit) {
			for _, v := range t.RegInit[th] {
				consts[v] = true
			}
		}
		for l := range written {
			for c := range consts {
				if !contains(vals[l], c) {
					vals[l] = append(vals[l], c)
				}
			}
		}
	}
	for l := range vals {
		sort.Slice(vals[l], func(i, j int) bool { return vals[l][i] < vals[l][j] })
	}
	rounds := 1
	for _, th := range t.Threads {
		rounds += staticWrites(th.Body)
	}
	// A thread none of whose read locations got a value in the round
	// before keeps its runs.
	reads := make([]map[string]bool, len(t.Threads))
	for th, thread := range t.Threads {
		reads[th] = map[string]bool{}
		readLocs(thread.Body, locs, reads[th])
	}
	var all []*runNode
	var grown map[string]bool // nil in the first round: every thread runs
	for round := 0; ; round++ {
		prev := all
		all = make([]*runNode, len(t.Threads))
		next := map[string][]int64{} // this round's values, read from the next round on
		for l, vs := range vals {
			next[l] = append([]int64(nil), vs...)
		}
		grew := false
		for th, thread := range t.Threads {
			root := (*runNode)(nil)
			same := grown != nil
			for l := range reads[th] {
				same = same && !grown[l]
			}
			if same {
				root = prev[th]
			} else {
				var err error
				root, err = runTree(t, th, thread.Body, vals, b)
				if err != nil {
					return nil, err
				}
			}
			all[th] = root
			root.eachEnd(func(end *runNode) {
				for _, ev := range end.events {
					if ev.kind != write || ev.lock != 0 || contains(next[ev.loc], ev.val) {
						continue
					}
					next[ev.loc] = append(next[ev.loc], ev.val)
					grew = true
				}
			})
		}
		if !grew || round >= rounds {
			return all, nil
		}
		grown = map[string]bool{}
		for l := range next {
			sort.Slice(next[l], func(i, j int) bool { return next[l][i] < next[l][j] })
			if len(next[l]) > len(vals[l]) {
				grown[l] = true
			}
		}
		vals = next
	}
}

// threadConsts adds to consts the constants body assigns to registers
// or stores, and to written the locations it stores to with a value of
// its own (every one of locs through a pointer).
func threadConsts(body []litmus.Stmt, locs []string, consts map[int64]bool, written map[string]bool) {
	var walk func(e litmus.Expr)
	walk = func(e litmus.Expr) {
		if e.IsConst {
			consts[e.Const] = true
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	for _, s := range body {
		switch {
		case s.Assign != nil:
			walk(s.Assign.Val)
		case s.Access != nil && s.Access.Op.Info().Writes && !isLockOp(s.Access.Op) && s.Access.Op != litmus.OpSpinTrylock:
			walk(s.Access.Val)
			if s.Access.Addr != nil {
				for _, l := range locs {
					written[l] = true
				}
			} else {
				written[s.Access.Loc] = true
			}
		case s.If != nil:
			threadConsts(s.If.Then, locs, consts, written)
			threadConsts(s.If.Else, locs, consts, written)
		}
	}
}

// readLocs adds to out the locations body reads with a value of its
// choice (spin_lock's read aside): every one of locs for a read through
// a pointer.
func readLocs(body []litmus.Stmt, locs []string, out map[string]bool) {
	for _, s := range body {
		switch {
		case s.Access != nil && s.Access.Op.Info().Reads && s.Access.Op != litmus.OpSpinLock:
			if s.Access.Addr != nil {
				for _, l := range locs {
					out[l] = true
				}
			}
			if s.Access.Loc != "" {
				out[s.Access.Loc] = true
			}
		case s.If != nil:
			readLocs(s.If.Then, locs, out)
			readLocs(s.If.Else, locs, out)
		}
	}
}

func contains(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

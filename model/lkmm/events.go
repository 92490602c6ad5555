package lkmm

import (
	"fmt"
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
	// lock is the lock.cat class of an event of spin_lock or spin_unlock
	// (LKR, LKW, UL); 0 for every other event.
	lock lockClass

	// rmwRead is, for the write of an RMW, the index in its thread's
	// trace of the read it is atomic with; -1 otherwise.
	rmwRead int
	// data and ctrl are the reads (trace indices) this event depends on:
	// data through the registers its stored value is computed from, ctrl
	// through the conditions of the if statements it lies in.
	data, ctrl uint16
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
)

// Values of a lock location, as the operational models store them: the
// reference needs them only for the lock's final value in an outcome.
const (
	lockFree = 0
	lockHeld = 1
)

// trace is one thread's run for one choice of the values its reads return:
// its events in program order and its registers at the end.
type trace struct {
	events []event
	regs   map[string]int64
}

// maxThreadEvents bounds the events one thread's run may produce (the
// dependency masks are 16 bits wide).
const maxThreadEvents = 12

// runner runs one thread's code with the read values given by choices; it
// stops at the first read beyond them and says which location it reads.
type runner struct {
	thread  int
	choices []int64
	next    int // next choice to use

	regs   map[string]int64
	taint  map[string]uint16 // register -> reads its value comes from
	ctrl   uint16            // reads the enclosing if conditions come from
	events []event

	needLoc string // set when a read needs a value beyond choices
}

// errNeed stops a run at a read with no chosen value yet.
type errNeed struct{ loc string }

func (e errNeed) Error() string { return "needs a value for " + e.loc }

func (r *runner) regTaint(e litmus.Expr) uint16 {
	var t uint16
	e.Regs(func(name string) { t |= r.taint[name] })
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
	if len(r.events) >= maxThreadEvents {
		return 0, fmt.Errorf("%w: thread %d produces more than %d events", ErrTooLarge, r.thread, maxThreadEvents)
	}
	ev.thread = r.thread
	ev.ctrl |= r.ctrl
	// Only the write of an atomic RMW or of spin_lock has a read it is
	// atomic with; the zero value would pair every other write with the
	// thread's first event.
	if ev.kind != write || !(ev.inRMW || ev.lock == lockLKW) {
		ev.rmwRead = -1
	}
	r.events = append(r.events, ev)
	return len(r.events) - 1, nil
}

func (r *runner) setReg(name string, v int64, t uint16) {
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
			r.ctrl |= r.regTaint(s.If.Cond)
			arm := s.If.Else
			if c != 0 {
				arm = s.If.Then
			}
			if err := r.run(arm); err != nil {
				return err
			}
			r.ctrl = saved
		case s.Access != nil:
			if err := r.access(s.Access); err != nil {
				if _, ok := err.(errNeed); ok {
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

func (r *runner) access(a *litmus.Access) error {
	info := a.Op.Info()
	switch {
	case a.Op == litmus.OpSpinLock:
		// LKR then LKW, adjacent in po: lock.cat pairs them as lk-rmw.
		// Their rf and co are not chosen by value but by the order in
		// which the critical sections take the lock (locks.go), so the
		// LKR takes no read choice.
		ri, err := r.emit(event{kind: read, loc: a.Loc, val: lockFree, prim: a.Op,
			acquire: true, lock: lockLKR})
		if err != nil {
			return err
		}
		_, err = r.emit(event{kind: write, loc: a.Loc, val: lockHeld, prim: a.Op,
			lock: lockLKW, rmwRead: ri})
		return err
	case a.Op == litmus.OpSpinUnlock:
		_, err := r.emit(event{kind: write, loc: a.Loc, val: lockFree, prim: a.Op,
			release: true, lock: lockUL})
		return err
	case info.Fence:
		_, err := r.emit(event{kind: fence, prim: a.Op, fence: a.Op})
		return err
	case !info.Reads && info.Writes: // WRITE_ONCE, smp_store_release
		v, err := r.eval(a.Val)
		if err != nil {
			return err
		}
		_, err = r.emit(event{kind: write, loc: a.Loc, val: v, prim: a.Op,
			release: info.Order == litmus.Release, data: r.regTaint(a.Val)})
		return err
	case info.Reads && !info.Writes: // READ_ONCE, smp_load_acquire
		v, err := r.readValue(a.Loc)
		if err != nil {
			return err
		}
		i, err := r.emit(event{kind: read, loc: a.Loc, val: v, prim: a.Op,
			acquire: info.Order == litmus.Acquire})
		if err != nil {
			return err
		}
		r.setReg(a.Reg, v, 1<<uint(i))
		return nil
	case a.Op.IsRMW():
		return r.rmw(a, info)
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, info.Name)
}

// rmw runs an atomic read-modify-write: a read and, unless it is a
// cmpxchg that fails, a write, linked by rmw (linux-kernel.def's
// __atomic_op, __atomic_op_return, __atomic_fetch_op, __xchg, __cmpxchg).
func (r *runner) rmw(a *litmus.Access, info litmus.Info) error {
	old, err := r.readValue(a.Loc)
	if err != nil {
		return err
	}
	v, err := r.eval(a.Val)
	if err != nil {
		return err
	}
	vt := r.regTaint(a.Val)
	ok := true
	if a.Op.IsCmpxchg() {
		want, err := r.eval(a.Expect)
		if err != nil {
			return err
		}
		ok = old == want
	}
	newVal := old + v
	if a.Op.IsXchg() || a.Op.IsCmpxchg() {
		newVal = v
	}
	// A failed cmpxchg carries no ordering: the bell's FailedRMW strips
	// its Acquire, Release and Mb tags.
	rd := event{kind: read, loc: a.Loc, val: old, prim: a.Op, inRMW: true,
		noreturn: !info.Returns,
		acquire:  ok && info.Order == litmus.Acquire,
		mb:       ok && info.Order == litmus.Mb}
	ri, err := r.emit(rd)
	if err != nil {
		return err
	}
	ret := old
	if a.Op.ReturnsNew() {
		ret = newVal
	}
	if ok {
		if _, err := r.emit(event{kind: write, loc: a.Loc, val: newVal, prim: a.Op, inRMW: true,
			release: info.Order == litmus.Release, mb: info.Order == litmus.Mb,
			rmwRead: ri, data: vt}); err != nil {
			return err
		}
	}
	if info.Returns {
		t := uint16(1) << uint(ri)
		if a.Op.ReturnsNew() {
			t |= vt
		}
		r.setReg(a.Reg, ret, t)
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

// traces returns every run of thread th when each read of a location
// returns any value of vals[loc].
func traces(th int, body []litmus.Stmt, vals map[string][]int64) ([]trace, error) {
	names := map[string]bool{}
	threadRegs(body, names)
	var out []trace
	var explore func(choices []int64) error
	explore = func(choices []int64) error {
		r := &runner{thread: th, choices: choices, regs: map[string]int64{}, taint: map[string]uint16{}}
		for n := range names {
			r.regs[n] = 0
		}
		err := r.run(body)
		if need, ok := err.(errNeed); ok {
			for _, v := range vals[need.loc] {
				if err := explore(append(choices[:len(choices):len(choices)], v)); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("thread %d: %w", th, err)
		}
		nested, err := lockNest(r.events)
		if err != nil {
			return fmt.Errorf("thread %d: %w", th, err)
		}
		if nested {
			return nil // it deadlocks: no execution has this run
		}
		out = append(out, trace{events: r.events, regs: r.regs})
		return nil
	}
	if err := explore(nil); err != nil {
		return nil, err
	}
	return out, nil
}

// maxValues bounds the distinct values one location may hold.
const maxValues = 32

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

// threadTraces computes, for every thread, its runs over the values the
// locations can hold: starting from the initial values, each round adds
// every value some run writes when its reads return values of the rounds
// before. A value an execution reads comes from a chain of writes, each
// computing its value from a read of the one before (data, or the read of
// its own RMW); herd7 finds values the same way, by solving these
// equations from the constants, so a chain has at most one write per
// write statement (there are no loops) and that many rounds, plus one,
// reach every value of every execution. A candidate execution then pairs
// each read with a write of its value (rf) and the axioms decide; a value
// that no write of the combination gives yields no candidate.
func threadTraces(t *litmus.Test, locs []string) ([][]trace, error) {
	vals := map[string][]int64{}
	for _, l := range locs {
		vals[l] = []int64{t.Init[l]}
	}
	rounds := 1
	for _, th := range t.Threads {
		rounds += staticWrites(th.Body)
	}
	for round := 0; ; round++ {
		all := make([][]trace, len(t.Threads))
		next := map[string][]int64{} // this round's values, read from the next round on
		for l, vs := range vals {
			next[l] = append([]int64(nil), vs...)
		}
		grew := false
		for th, thread := range t.Threads {
			ts, err := traces(th, thread.Body, vals)
			if err != nil {
				return nil, err
			}
			all[th] = ts
			for _, tr := range ts {
				for _, ev := range tr.events {
					if ev.kind != write || ev.lock != 0 || contains(next[ev.loc], ev.val) {
						continue
					}
					next[ev.loc] = append(next[ev.loc], ev.val)
					grew = true
					if len(next[ev.loc]) > maxValues {
						return nil, fmt.Errorf("%w: location %s may hold more than %d values", ErrTooLarge, ev.loc, maxValues)
					}
				}
			}
		}
		if !grew || round >= rounds {
			return all, nil
		}
		for l := range next {
			sort.Slice(next[l], func(i, j int) bool { return next[l][i] < next[l][j] })
		}
		vals = next
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

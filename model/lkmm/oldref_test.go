package lkmm_test

// The reference as it was before its search (the cross product of every
// thread's runs, then every rf and co of each combination, each checked
// whole), kept as the oracle of the property tests: copied unchanged but
// for the type's name, oldReference. It refuses more than 4 threads, 4
// locations, 12 events a thread and 64 events an execution.

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// ---- from model/lkmm/reference.go at HEAD ----

// errOldUnsupported says the reference refuses a test: a primitive it does
// not model, or a use of locks lock.cat flags. It wraps
// [litmus.ErrUnsupported], so a caller treats it as any model's refusal.
var errOldUnsupported = fmt.Errorf("old lkmm: %w", litmus.ErrUnsupported)

// errOldTooLarge says a test is beyond the bounds the reference enumerates.
var errOldTooLarge = errors.New("lkmm: test too large to enumerate")

// The bounds of a test the reference enumerates.
const (
	oldMaxThreads = 4
	oldMaxLocs    = 4
	// oldMaxCandidates bounds the candidate executions (runs of the threads
	// combined, times rf and co choices) one test may have.
	oldMaxCandidates = 5_000_000
)

// oldReference is the axiomatic Linux kernel memory model: the outcomes of a
// test are those of its candidate executions that satisfy the axioms of
// tools/memory-model/linux-kernel.cat. It implements [litmus.Model].
type oldReference struct {
	// Candidates, if not 0, bounds the candidate executions of one test
	// instead of oldMaxCandidates (property tests keep each program cheap).
	Candidates int
	// InOrder keeps only the executions in which po | rf is acyclic: those
	// a machine running each thread in program order, each load reading a
	// store already made, can produce. The outcomes it drops need load
	// buffering (a load reading a store that depends on nothing the load
	// precedes, made later in program order).
	InOrder bool
}

// Name returns "LKMM-ref", the reference's one spelling in every
// command and doc (LKMM alone is memory.LKMM, the explorer's model;
// LKMM-op is Promise).
func (oldReference) Name() string { return "LKMM-ref (old)" }

// Outcomes returns every final state of t that some execution allowed by
// LKMM reaches, each once: every thread's registers (those its code
// assigns, 0 if never set on the path taken) and every location's final
// value (its co-last write; a spin lock is 0 free, 1 held). A test
// beyond the bounds, or using a construct the reference refuses (see the
// package doc and locks.go), is an error wrapping [errOldTooLarge] or
// [errOldUnsupported]. A test whose every execution deadlocks (a lock never
// released that another thread waits for, a lock taken twice) has no
// outcome: the result is empty, not an error.
func (r oldReference) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	if err := litmus.MemoryOnly(t); err != nil {
		return nil, err
	}
	if err := t.Refuse(r.Name(), 0); err != nil {
		return nil, err
	}
	if len(t.Threads) > oldMaxThreads {
		return nil, fmt.Errorf("%s: %w: %d threads (at most %d)", t.Name, errOldTooLarge, len(t.Threads), oldMaxThreads)
	}
	locs := testLocs(t)
	if len(locs) > oldMaxLocs {
		return nil, fmt.Errorf("%s: %w: %d locations (at most %d)", t.Name, errOldTooLarge, len(locs), oldMaxLocs)
	}
	locks, err := lockLocs(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	runs, err := threadTraces(t, locs)
	if err != nil {
		return nil, fmt.Errorf("%s: running the threads: %w", t.Name, err)
	}
	e := &enumerator{test: t, locs: locs, locks: locks, runs: runs, found: map[string]litmus.Outcome{}, maxCandidates: oldMaxCandidates, inOrder: r.InOrder}
	if r.Candidates > 0 {
		e.maxCandidates = r.Candidates
	}
	if err := e.combos(0, make([]int, len(runs))); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	out := make([]litmus.Outcome, 0, len(e.found))
	for _, o := range e.found {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// testLocs lists the test's locations: t.Locs, then any other the initial
// state or the code names.
func testLocs(t *litmus.Test) []string {
	seen := map[string]bool{}
	var out []string
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range t.Locs {
		add(l)
	}
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, s := range body {
			if s.Access != nil {
				add(s.Access.Loc)
			}
			if s.If != nil {
				walk(s.If.Then)
				walk(s.If.Else)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	init := make([]string, 0, len(t.Init))
	for l := range t.Init {
		init = append(init, l)
	}
	sort.Strings(init)
	for _, l := range init {
		add(l)
	}
	return out
}

// enumerator walks the candidate executions of one test.
type enumerator struct {
	test       *litmus.Test
	locs       []string
	locks      map[string]bool // the locations used as spin locks
	runs       [][]trace
	candidates int
	// combinations counts the combinations of runs looked at (combos).
	combinations int
	// maxCandidates is oldReference.Candidates or oldMaxCandidates.
	maxCandidates int
	found         map[string]litmus.Outcome
	inOrder       bool // oldReference.InOrder
}

// combosPerCandidate bounds the combinations of runs combos looks at, as
// a multiple of the candidate bound: most fail readable at once, but a
// test whose reads have many values can have too many to look at.
const combosPerCandidate = 64

// combos picks one run per thread, then checks the candidate executions
// of that combination.
func (e *enumerator) combos(th int, pick []int) error {
	if th == len(e.runs) {
		e.combinations++
		if e.combinations > combosPerCandidate*e.maxCandidates {
			return fmt.Errorf("%w: more than %d combinations of the threads' runs", errOldTooLarge, combosPerCandidate*e.maxCandidates)
		}
		if !e.readable(pick) {
			return nil // some read has no write of its value: no candidate
		}
		return e.combination(pick)
	}
	for i := range e.runs[th] {
		pick[th] = i
		if err := e.combos(th+1, pick); err != nil {
			return err
		}
	}
	return nil
}

// readable reports whether every read of the picked runs (lock reads
// aside: locks.go gives them their writes) returns the initial value of
// its location or a value some picked run writes there. Most combinations
// of runs fail this, and combination would build all their relations
// before finding out; this check allocates nothing.
func (e *enumerator) readable(pick []int) bool {
	for th, i := range pick {
		for _, r := range e.runs[th][i].events {
			if r.kind != read || r.lock != 0 || r.val == e.test.Init[r.loc] {
				continue
			}
			if !e.written(pick, r.loc, r.val) {
				return false
			}
		}
	}
	return true
}

// written reports whether a picked run writes val to loc.
func (e *enumerator) written(pick []int, loc string, val int64) bool {
	for th, i := range pick {
		for _, w := range e.runs[th][i].events {
			if w.kind == write && w.lock == 0 && w.loc == loc && w.val == val {
				return true
			}
		}
	}
	return false
}

// combination builds the events of one run per thread and tries every rf
// (a write of the same location and value for each read) and every co
// (each location's writes in some order after its initial write).
func (e *enumerator) combination(pick []int) error {
	x := &execution{}
	locIdx := map[string]int{}
	for i, l := range e.locs {
		locIdx[l] = i
		x.events = append(x.events, event{thread: -1, kind: write, loc: l, val: e.test.Init[l], rmwRead: -1})
	}
	starts := make([]int, len(pick))
	regs := make([]map[string]int64, len(pick))
	for th, i := range pick {
		tr := e.runs[th][i]
		starts[th] = len(x.events)
		x.events = append(x.events, tr.events...)
		regs[th] = tr.regs
	}
	x.n = len(x.events)
	if x.n > maxEvents {
		return fmt.Errorf("%w: %d events (at most %d)", errOldTooLarge, x.n, maxEvents)
	}
	x.po, x.rmw, x.data, x.ctrl = newRel(x.n), newRel(x.n), newRel(x.n), newRel(x.n)
	for th := range pick {
		base := starts[th]
		evs := e.runs[th][pick[th]].events
		for i, ev := range evs {
			for j := i + 1; j < len(evs); j++ {
				x.po.add(base+i, base+j)
			}
			if ev.kind == write && ev.rmwRead >= 0 {
				x.rmw.add(base+ev.rmwRead, base+i)
			}
			for k := range evs {
				if ev.data&(1<<uint(k)) != 0 {
					x.data.add(base+k, base+i)
				}
				if ev.ctrl&(1<<uint(k)) != 0 {
					x.ctrl.add(base+k, base+i)
				}
			}
		}
	}

	// rf candidates: a write of the same location and value that is not
	// po-after the read (that would be a coherence cycle anyway). The
	// lock events' rf and co follow from the order the critical sections
	// take each lock (locks.go).
	var reads []int
	var rfChoices [][]int
	writesOf := make([][]int, len(e.locs))
	for i, ev := range x.events {
		switch {
		case ev.lock != 0:
		case ev.kind == write:
			if ev.thread >= 0 {
				writesOf[locIdx[ev.loc]] = append(writesOf[locIdx[ev.loc]], i)
			}
		case ev.kind == read:
			var ws []int
			for j, w := range x.events {
				if w.kind == write && w.loc == ev.loc && w.val == ev.val && !x.po.has(i, j) {
					ws = append(ws, j)
				}
			}
			if len(ws) == 0 {
				return nil // a value no write gives: no execution
			}
			reads = append(reads, i)
			rfChoices = append(rfChoices, ws)
		}
	}
	cos := make([][][]int, len(e.locs))
	sections := make([]lockSections, len(e.locs))
	for l, ws := range writesOf {
		if e.locks[e.locs[l]] {
			sections[l] = x.sections(e.locs[l])
			cos[l] = sections[l].orders(x.po)
			continue
		}
		cos[l] = orders(ws, x.po)
	}
	n := 1
	for _, c := range rfChoices {
		n *= len(c)
	}
	for _, c := range cos {
		n *= len(c)
	}
	e.candidates += n
	if e.candidates > e.maxCandidates {
		return fmt.Errorf("%w: more than %d candidate executions (%d threads, %d events)",
			errOldTooLarge, e.maxCandidates, len(pick), x.n)
	}

	coPick := make([]int, len(e.locs))
	var pickCo func(l int) error
	pickCo = func(l int) error {
		if l < len(e.locs) {
			for i := range cos[l] {
				coPick[l] = i
				if err := pickCo(l + 1); err != nil {
					return err
				}
			}
			return nil
		}
		mem := map[string]int64{}
		x.co = newRel(x.n)
		x.rfLock = newRel(x.n)
		for li, loc := range e.locs {
			if e.locks[loc] {
				mem[loc] = sections[li].place(x, li, cos[li][coPick[li]])
				continue
			}
			order := append([]int{li}, cos[li][coPick[li]]...) // initial write first
			for a := range order {
				for b := a + 1; b < len(order); b++ {
					x.co.add(order[a], order[b])
				}
			}
			mem[loc] = x.events[order[len(order)-1]].val
		}
		out := litmus.Outcome{Regs: regs, Mem: mem}
		key := out.Key()
		if _, ok := e.found[key]; ok {
			return nil // this outcome is already allowed
		}
		if e.someRF(x, reads, rfChoices, 0) {
			e.found[key] = out
		}
		return nil
	}
	return pickCo(0)
}

// someRF reports whether some choice of rf for reads[k:] makes x
// consistent.
func (e *enumerator) someRF(x *execution, reads []int, choices [][]int, k int) bool {
	if k == 0 {
		x.rf = x.rfLock.clone()
	}
	if k == len(reads) {
		if e.inOrder && !x.po.union(x.rf).acyclic() {
			return false
		}
		return x.consistent()
	}
	r := reads[k]
	for _, w := range choices[k] {
		x.rf[w] |= 1 << uint(r)
		ok := e.someRF(x, reads, choices, k+1)
		x.rf[w] &^= 1 << uint(r)
		if ok {
			return true
		}
	}
	return false
}

// orders returns every order of the writes ws that keeps each thread's
// writes in program order (coherence demands it: po-loc ; co^-1 would be a
// cycle).
func orders(ws []int, po rel) [][]int {
	if len(ws) == 0 {
		return [][]int{nil}
	}
	var out [][]int
	used := make([]bool, len(ws))
	cur := make([]int, 0, len(ws))
	var rec func()
	rec = func() {
		if len(cur) == len(ws) {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i, w := range ws {
			if used[i] {
				continue
			}
			blocked := false
			for j, v := range ws {
				if !used[j] && j != i && po.has(v, w) {
					blocked = true // an earlier write of w's thread is not placed yet
					break
				}
			}
			if blocked {
				continue
			}
			used[i] = true
			cur = append(cur, w)
			rec()
			cur = cur[:len(cur)-1]
			used[i] = false
		}
	}
	rec()
	return out
}

// oldReference is a litmus.Model.
var _ litmus.Model = oldReference{}

// ---- from model/lkmm/events.go at HEAD ----

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
		return 0, fmt.Errorf("%w: thread %d produces more than %d events", errOldTooLarge, r.thread, maxThreadEvents)
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
	return fmt.Errorf("%w: %s", errOldUnsupported, info.Name)
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
						return nil, fmt.Errorf("%w: location %s may hold more than %d values", errOldTooLarge, ev.loc, maxValues)
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

// ---- from model/lkmm/rel.go at HEAD ----

// maxEvents bounds the events of one candidate execution (threads' events
// plus one initial write per location): a relation is one 64-bit row per
// event.
const maxEvents = 64

// set is a set of events, by index.
type set uint64

func (s set) has(i int) bool { return s&(1<<uint(i)) != 0 }

// rel is a binary relation over the events of one execution: row i is the
// set of events j with (i, j) in the relation.
type rel []set

func newRel(n int) rel { return make(rel, n) }

func (r rel) add(i, j int) { r[i] |= 1 << uint(j) }

func (r rel) has(i, j int) bool { return r[i].has(j) }

func (r rel) clone() rel { return append(rel(nil), r...) }

// union returns r | others.
func (r rel) union(others ...rel) rel {
	out := r.clone()
	for _, o := range others {
		for i := range out {
			out[i] |= o[i]
		}
	}
	return out
}

// inter returns r & o.
func (r rel) inter(o rel) rel {
	out := r.clone()
	for i := range out {
		out[i] &= o[i]
	}
	return out
}

// minus returns r \ o.
func (r rel) minus(o rel) rel {
	out := r.clone()
	for i := range out {
		out[i] &^= o[i]
	}
	return out
}

// seq returns r ; o.
func (r rel) seq(o rel) rel {
	out := newRel(len(r))
	for i, row := range r {
		var acc set
		for row != 0 {
			j := bits.TrailingZeros64(uint64(row))
			row &^= 1 << uint(j)
			acc |= o[j]
		}
		out[i] = acc
	}
	return out
}

// inv returns r^-1.
func (r rel) inv() rel {
	out := newRel(len(r))
	for i, row := range r {
		for row != 0 {
			j := bits.TrailingZeros64(uint64(row))
			row &^= 1 << uint(j)
			out.add(j, i)
		}
	}
	return out
}

// restrict returns [dom] ; r ; [rng].
func (r rel) restrict(dom, rng set) rel {
	out := newRel(len(r))
	for i, row := range r {
		if dom.has(i) {
			out[i] = row & rng
		}
	}
	return out
}

// opt returns r? (r with the identity).
func (r rel) opt() rel {
	out := r.clone()
	for i := range out {
		out.add(i, i)
	}
	return out
}

// plus returns r+ (transitive closure), by Warshall's algorithm on rows.
func (r rel) plus() rel {
	out := r.clone()
	for k := range out {
		bit := set(1) << uint(k)
		for i := range out {
			if out[i]&bit != 0 {
				out[i] |= out[k]
			}
		}
	}
	return out
}

// star returns r* (reflexive transitive closure).
func (r rel) star() rel { return r.plus().opt() }

// acyclic reports whether r has no cycle.
func (r rel) acyclic() bool { return r.plus().irreflexive() }

// irreflexive reports whether no event is related to itself.
func (r rel) irreflexive() bool {
	for i, row := range r {
		if row.has(i) {
			return false
		}
	}
	return true
}

// empty reports whether r relates nothing.
func (r rel) empty() bool {
	for _, row := range r {
		if row != 0 {
			return false
		}
	}
	return true
}

// id returns [s], the identity on s, over n events.
func id(n int, s set) rel {
	out := newRel(n)
	for i := 0; i < n; i++ {
		if s.has(i) {
			out.add(i, i)
		}
	}
	return out
}

// ---- from model/lkmm/cat.go at HEAD ----

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

// ---- from model/lkmm/locks.go at HEAD ----

// Spin locks, as tools/memory-model/lock.cat (Linux v6.18) gives them for
// spin_lock and spin_unlock; the prose is the LOCKING section of
// tools/memory-model/Documentation/explanation.txt.
//
// spin_lock(l) is two events, LKR then LKW, an rmw pair (lk-rmw);
// spin_unlock(l) is one event, UL. LKR is an Acquire, UL a Release. A
// critical section is an LKW with the first UL of l after it in its
// thread (critical). The candidate executions of a lock location are the
// orders in which the critical sections take the lock:
//
//   - co of l is the initial write, then each LKW followed at once by its
//     UL, in the order chosen (co0 with IW first, then critical and
//     critical^-1 ; co merge each UL just after its LKW);
//   - each LKR reads from the write just before its LKW in co, the
//     initial write or the previous holder's UL ([IW | UL] ;
//     singlestep(co) ; lk-rmw^-1), so the lock is always taken free;
//   - an LKW never released (UNMATCHED-LKW) comes last in co, and at
//     most one per location is allowed (unmatched-locks): a thread that
//     would wait forever for a lock gives no execution, so the outcomes
//     are those of the executions in which every waiter gets the lock;
//   - a thread that takes a lock it already holds deadlocks (lock-nest):
//     that run gives no execution either.
//
// The orders keep each thread's critical sections in program order
// (coherence would reject any other). What lock.cat only flags, herd7
// reporting the test as suspect, is refused here with an error: an
// unlock of a lock not held (unmatched-unlock), an ordinary access to a
// lock location (mixed-lock-accesses), a final condition on a lock
// location (lock-final). spin_trylock and spin_is_locked (LF, RL, RU
// events) are not litmus primitives: the parser refuses them.

// isLockOp reports whether op is spin_lock or spin_unlock.
func isLockOp(op litmus.Op) bool {
	return op == litmus.OpSpinLock || op == litmus.OpSpinUnlock
}

// lockLocs returns the locations t uses as spin locks, and refuses a test
// that lock.cat would flag: an ordinary access to a lock location, an
// initial value other than free, a final condition reading one.
func lockLocs(t *litmus.Test) (map[string]bool, error) {
	locks := map[string]bool{}
	other := map[string]int{} // location -> line of an ordinary access
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, s := range body {
			switch {
			case s.Access != nil && isLockOp(s.Access.Op):
				locks[s.Access.Loc] = true
			case s.Access != nil && s.Access.Loc != "":
				if _, ok := other[s.Access.Loc]; !ok {
					other[s.Access.Loc] = s.Line
				}
			case s.If != nil:
				walk(s.If.Then)
				walk(s.If.Else)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	for l := range locks {
		if line, ok := other[l]; ok {
			return nil, fmt.Errorf("%w: line %d: %s is a spin lock and an ordinary location (lock.cat flags mixed-lock-accesses)",
				errOldUnsupported, line, l)
		}
		if v := t.Init[l]; v != lockFree {
			return nil, fmt.Errorf("%w: spin lock %s starts at %d, not free", errOldUnsupported, l, v)
		}
	}
	var final string
	var find func(e litmus.Expr)
	find = func(e litmus.Expr) {
		if locks[e.Loc] && final == "" {
			final = e.Loc
		}
		for _, a := range e.Args {
			find(a)
		}
	}
	find(t.Cond)
	if final != "" {
		return nil, fmt.Errorf("%w: the final condition reads spin lock %s (lock.cat flags lock-final)", errOldUnsupported, final)
	}
	return locks, nil
}

// lockNest reports whether a run takes a lock it already holds
// (lock.cat's lock-nest axiom: such a run deadlocks and gives no
// execution; dropping it early saves enumerating executions that
// coherence rejects too, its first LKW being unmatched so co-last yet
// po-before another LKW of the lock), and fails on an unlock of a lock the thread does not hold
// (lock.cat's unmatched-unlock flag).
func lockNest(events []event) (bool, error) {
	held := map[string]bool{}
	for _, ev := range events {
		switch ev.lock {
		case lockLKR:
			if held[ev.loc] {
				return true, nil
			}
		case lockLKW:
			held[ev.loc] = true
		case lockUL:
			if !held[ev.loc] {
				return false, fmt.Errorf("%w: spin_unlock(%s) of a lock the thread does not hold (lock.cat flags unmatched-unlock)",
					errOldUnsupported, ev.loc)
			}
			held[ev.loc] = false
		}
	}
	return false, nil
}

// lockSections are the critical sections of one lock location in one
// combination of runs: its LKW events, and for each the LKR paired with
// it and the UL that ends it (-1 for a lock never released).
type lockSections struct {
	lkw    []int
	lkr    map[int]int
	unlock map[int]int
}

// sections finds the critical sections of loc among x's events (its
// threads' po and rmw already built).
func (x *execution) sections(loc string) lockSections {
	s := lockSections{lkr: map[int]int{}, unlock: map[int]int{}}
	for i, ev := range x.events {
		if ev.lock != lockLKW || ev.loc != loc {
			continue
		}
		s.lkw = append(s.lkw, i)
		for r := range x.events {
			if x.rmw.has(r, i) {
				s.lkr[i] = r
			}
		}
		// critical: the first UL or LKW of loc po-after the LKW, if it
		// is an UL. (A run that nests locks, the first LKW unmatched
		// with another after it, is dropped before; coherence would
		// reject it anyway, an unmatched LKW being co-last.)
		next := -1
		for j, u := range x.events {
			if u.loc == loc && (u.lock == lockUL || u.lock == lockLKW) && x.po.has(i, j) &&
				(next < 0 || x.po.has(j, next)) {
				next = j
			}
		}
		s.unlock[i] = -1
		if next >= 0 && x.events[next].lock == lockUL {
			s.unlock[i] = next
		}
	}
	return s
}

// orders returns the orders in which the critical sections may take the
// lock: program order kept within a thread, the section never released
// last. More than one section never released has no order
// (unmatched-locks).
func (s lockSections) orders(po rel) [][]int {
	held := -1
	for _, w := range s.lkw {
		if s.unlock[w] < 0 {
			if held >= 0 {
				return nil
			}
			held = w
		}
	}
	all := orders(s.lkw, po)
	if held < 0 {
		return all
	}
	var out [][]int
	for _, o := range all {
		if o[len(o)-1] == held {
			out = append(out, o)
		}
	}
	return out
}

// place sets co and the LKR reads of the lock location whose initial
// write is iw, for the sections taking the lock in the order given, and
// returns the lock's final value.
func (s lockSections) place(x *execution, iw int, order []int) int64 {
	co := []int{iw}
	for _, w := range order {
		x.rfLock.add(co[len(co)-1], s.lkr[w])
		co = append(co, w)
		if u := s.unlock[w]; u >= 0 {
			co = append(co, u)
		}
	}
	for a := range co {
		for b := a + 1; b < len(co); b++ {
			x.co.add(co[a], co[b])
		}
	}
	return x.events[co[len(co)-1]].val
}

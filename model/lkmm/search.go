package lkmm

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/flushproof/flushproof/model/litmus"
)

// The search builds the candidate executions of a test thread by thread,
// in one order fixed for the test (placementOrder), and each thread event
// by event in program order, choosing as it goes: the value each read
// returns (which picks the thread's run), the write it reads from (rf),
// and where each write goes in its location's coherence order (co). It
// checks the axioms on every partial execution it makes and cuts a
// branch as soon as one fails; package doc (doc.go) says why each cut is
// sound.
//
// A read takes its value from a write already placed (one of an earlier
// thread, its own thread's before it in program order, or the initial
// write), or is deferred: a thread placed later will write its value. A
// write placed later may then be given to the deferred reads of its
// value, each of which takes it or stays deferred. A write goes anywhere
// in its location's co after the initial write and its own thread's
// earlier writes there. So each candidate execution is built once: a
// read's write is chosen when the later of the two is placed, and the co
// of each location grows by insertion, the order of the writes placed so
// far never changing after.

// locVal is a value at a location.
type locVal struct {
	loc int
	val int64
}

// search is the state of one test's search: the test, its threads' runs,
// the partial execution being built, and what has been found.
type search struct {
	t       *litmus.Test
	inOrder bool
	locs    []string
	locIdx  map[string]int
	isLock  []bool
	roots   []*runNode // per thread; nil if every run deadlocks
	// order lists the threads in the order the search places them, the
	// d-th at depth d (placementOrder).
	order []int
	// mayWrite lists the values each thread writes in some run, and
	// writes the same as a set; supply counts, for each value, the
	// threads not placed yet that may write it.
	mayWrite [][]locVal
	writes   []map[locVal]bool
	supply   map[locVal]int
	// most counts, per thread and location, the most writes a run of
	// the thread makes there, and room the sum over the threads not
	// placed yet: a bound on the values they can give deferred reads.
	most      [][]int
	room      []int
	uses      [][]int // per thread: the locations its runs use
	users     []int   // per location: the threads not placed yet that use it
	closed    []bool  // per location: no thread left to place uses it
	maxEvents int

	// The partial execution: the events placed, the initial writes
	// first (one per location, at the location's index), then each
	// thread's in program order.
	ev       []placed
	rf       []int   // per read: the write it reads, -1 if not chosen
	co       [][]int // per location: its writes placed, in co order
	locEv    [][]int // per location: its events placed, in order
	deferred []int   // reads placed whose write is a later thread's
	regs     []map[string]int64
	ends     []*runNode // per depth: the end of the run placed
	base     int        // the first event of the thread being placed
	// cur is the thread being placed, and known the registers that the
	// reads placed so far set for good (event.reg), of every thread.
	cur   int
	known map[threadReg]int64

	// Checks: the statics of each depth (kept while the runs below it
	// are the same), the arena of the dynamic relations, and scratch.
	st    []*statics
	stKey [][]*runNode
	// mid holds the statics of a thread's run part placed, at each
	// depth, with the node and event it stops at.
	mid     []*statics
	midKey  [][]*runNode
	midNode []*runNode
	midAt   []int
	dyn     *arena
	local   []int
	coPos   []int
	lastOf  []int
	edges   []int
	head    []int
	next    []int
	indeg   []int
	stack   []int

	b *budget

	// What the search looks for: every outcome (found), or, when
	// deciding, one outcome on each side of the condition (got[0]
	// satisfies it, got[1] does not).
	decide bool
	cond   term
	filter *term
	named  map[threadReg]bool // the registers the condition or filter names
	found  map[string]litmus.Outcome
	got    [2]*litmus.Outcome
	// flagged says the test may raise a flag (it has plain accesses, RCU
	// or SRCU): every allowed execution is then visited, for its flags,
	// even when its outcome is known.
	flagged bool
	done    bool
	err     error
}

type threadReg struct {
	th  int
	reg string
}

// budget bounds a search: steps (the runs made and the partial and
// complete candidate executions checked) up to max, time up to timeout.
type budget struct {
	max     int
	timeout time.Duration
	start   time.Time
	runs    int
	checks  int
	steps   int
	err     error
}

// errBudget is the budget's error until Reference adds the counts.
var errBudget = errors.New("budget reached")

func (b *budget) spend() error {
	b.steps++
	if b.err != nil {
		return b.err
	}
	if b.max > 0 && b.steps > b.max {
		b.err = errBudget
	}
	if b.timeout > 0 && (b.steps < 16 || b.steps%16 == 0) && time.Since(b.start) > b.timeout {
		b.err = errBudget
	}
	return b.err
}

// step counts a node of a thread's runs.
func (b *budget) step() error {
	b.runs++
	return b.spend()
}

// check counts a check of the axioms; false when the budget is spent.
func (b *budget) check() bool {
	b.checks++
	return b.spend() == nil
}

// newSearch prepares the search of t: its locations, its threads' runs,
// the order in which to place the threads.
func newSearch(t *litmus.Test, locks map[string]bool, roots []*runNode, b *budget, inOrder bool) *search {
	s := &search{t: t, inOrder: inOrder, locs: testLocs(t), locIdx: map[string]int{}, roots: roots, b: b,
		supply: map[locVal]int{}, cur: -1, known: map[threadReg]int64{}}
	nl, nt := len(s.locs), len(t.Threads)
	s.isLock = make([]bool, nl)
	for i, l := range s.locs {
		s.locIdx[l] = i
		s.isLock[i] = locks[l]
	}
	s.mayWrite = make([][]locVal, nt)
	s.most = make([][]int, nt)
	s.room = make([]int, nl)
	s.writes = make([]map[locVal]bool, nt)
	s.maxEvents = nl
	uses := make([][]bool, nt) // the locations each thread's runs use
	for th, root := range roots {
		s.writes[th] = map[locVal]bool{}
		uses[th] = make([]bool, nl)
		longest := 0
		root.eachEnd(func(end *runNode) {
			if len(end.events) > longest {
				longest = len(end.events)
			}
			if mayFlag(end.events) {
				s.flagged = true
			}
			for _, ev := range end.events {
				if ev.kind == fence {
					continue
				}
				l := s.locIdx[ev.loc]
				uses[th][l] = true
				lv := locVal{l, ev.val}
				if ev.kind == write && !s.writes[th][lv] {
					s.writes[th][lv] = true
					s.mayWrite[th] = append(s.mayWrite[th], lv)
				}
			}
		})
		s.maxEvents += longest
		s.most[th] = make([]int, nl)
		if root != nil {
			for name, c := range root.writesFrom(root.from) {
				s.most[th][s.locIdx[name]] = c
				s.room[s.locIdx[name]] += c
			}
		}
		for _, lv := range s.mayWrite[th] {
			s.supply[lv]++
		}
	}
	s.order = placementOrder(t, uses)
	s.uses = make([][]int, nt)
	s.users = make([]int, nl)
	for th := range uses {
		for l, u := range uses[th] {
			if u {
				s.uses[th] = append(s.uses[th], l)
				s.users[l]++
			}
		}
	}
	s.closed = make([]bool, nl)
	for l := range s.closed {
		s.closed[l] = s.users[l] == 0 // it keeps its initial value
	}

	n := s.maxEvents
	s.ev = make([]placed, 0, n)
	s.rf = make([]int, 0, n)
	s.co = make([][]int, nl)
	s.locEv = make([][]int, nl)
	for l, name := range s.locs {
		i := len(s.ev)
		iw := &event{thread: -1, kind: write, loc: name, val: t.Init[name], rmwRead: -1}
		s.ev = append(s.ev, placed{event: iw, loc: l, base: i})
		s.rf = append(s.rf, -1)
		s.co[l] = []int{i}
		s.locEv[l] = []int{i}
	}
	s.regs = make([]map[string]int64, nt)
	s.ends = make([]*runNode, nt)
	s.st = make([]*statics, nt)
	s.stKey = make([][]*runNode, nt)
	s.mid = make([]*statics, nt)
	s.midKey = make([][]*runNode, nt)
	s.midNode = make([]*runNode, nt)
	s.midAt = make([]int, nt)
	s.dyn = newArena(n)
	for _, p := range []*[]int{&s.local, &s.coPos, &s.head, &s.indeg} {
		*p = make([]int, n)
	}
	s.lastOf = make([]int, nt+1)
	s.cond = s.compile(t.Cond)
	s.named = map[threadReg]bool{}
	var name func(e litmus.Expr)
	name = func(e litmus.Expr) {
		if e.Reg != "" {
			s.named[threadReg{e.Thread, e.Reg}] = true
		}
		for _, a := range e.Args {
			name(a)
		}
	}
	name(t.Cond)
	if t.Filter != nil {
		f := s.compile(*t.Filter)
		s.filter = &f
		name(*t.Filter)
	}
	return s
}

// mayFlag reports whether a run may raise a flag in an execution: it has
// plain accesses (data-race, mixed-accesses) or SRCU events (whose
// matching goes through rf), or its rcu_read_lock and rcu_read_unlock do
// not nest (the unmatched-rcu flags, which depend on the run alone).
func mayFlag(events []event) bool {
	depth := 0
	for _, ev := range events {
		switch {
		case ev.plain || ev.srcu != 0:
			return true
		case ev.fence == litmus.OpRcuLock:
			depth++
		case ev.fence == litmus.OpRcuUnlock:
			depth--
			if depth < 0 {
				return true
			}
		}
	}
	return depth != 0
}

// placementOrder orders the threads for the search: first the one the
// condition names most, then, each time, the one that uses most of the
// locations the threads before it use (the condition's count, then the
// thread's number, breaking ties). Placing neighbours together gives
// most reads their write early, and ends the locations (their final
// value known, their locks' reads set) early.
func placementOrder(t *litmus.Test, uses [][]bool) []int {
	nt := len(uses)
	named := make([]int, nt)
	count := func(e litmus.Expr) {
		var walk func(litmus.Expr)
		walk = func(e litmus.Expr) {
			if e.Reg != "" && e.Thread >= 0 && e.Thread < nt {
				named[e.Thread]++
			}
			for _, a := range e.Args {
				walk(a)
			}
		}
		walk(e)
	}
	count(t.Cond)
	if t.Filter != nil {
		count(*t.Filter)
	}
	var order []int
	placed := make([]bool, nt)
	var used []bool
	if nt > 0 {
		used = make([]bool, len(uses[0]))
	}
	for len(order) < nt {
		best, bestShared := -1, -1
		for th := 0; th < nt; th++ {
			if placed[th] {
				continue
			}
			shared := 0
			for l, u := range uses[th] {
				if u && used[l] {
					shared++
				}
			}
			if best < 0 || shared > bestShared || (shared == bestShared && named[th] > named[best]) {
				best, bestShared = th, shared
			}
		}
		placed[best] = true
		order = append(order, best)
		for l, u := range uses[best] {
			used[l] = used[l] || u
		}
	}
	return order
}

// run searches from the first thread.
func (s *search) run() {
	for _, root := range s.roots {
		if root == nil {
			return // a thread deadlocks in every run: no execution
		}
	}
	if len(s.roots) == 0 {
		s.leaf()
		return
	}
	s.place(0)
}

// place places the thread of depth d in each of its runs. The order of
// the threads is the same in every execution (order): each execution is
// then built once, each read either reading a write placed before it or
// deferred to one of a thread placed later, which give hands it when it
// is placed. An order chosen per execution (each thread placed once the
// writes its reads read are) guesses fewer values, but builds far more
// partial executions, each a prefix of a different order: listing the
// outcomes of a ring of ten RCU readers and grace periods (the public
// corpus's auto/C-RW-G+RW-G+RW-R+...), it placed 115,042 whole runs of a
// thread where the fixed order places 2,046 (docs/memory.md).
func (s *search) place(d int) {
	th := s.order[d]
	for _, lv := range s.mayWrite[th] {
		s.supply[lv]--
	}
	for l, c := range s.most[th] {
		s.room[l] -= c
	}
	saved, savedCur := s.base, s.cur
	s.base, s.cur = len(s.ev), th
	root := s.roots[th]
	s.walk(d, root, root.from)
	s.base, s.cur = saved, savedCur
	for _, lv := range s.mayWrite[th] {
		s.supply[lv]++
	}
	for l, c := range s.most[th] {
		s.room[l] += c
	}
}

// push places event ev, of the thread being placed, and returns its index.
func (s *search) push(ev *event) int {
	i := len(s.ev)
	l := -1
	if ev.kind != fence {
		l = s.locIdx[ev.loc]
		s.locEv[l] = append(s.locEv[l], i)
	}
	s.ev = append(s.ev, placed{event: ev, loc: l, base: s.base})
	s.rf = append(s.rf, -1)
	return i
}

// pop takes back the last event placed.
func (s *search) pop() {
	i := len(s.ev) - 1
	if l := s.ev[i].loc; l >= 0 {
		s.locEv[l] = s.locEv[l][:len(s.locEv[l])-1]
	}
	s.ev = s.ev[:i]
	s.rf = s.rf[:i]
}

// walk places node's events from the i-th on, then the rest of the run.
func (s *search) walk(d int, node *runNode, i int) {
	if s.done {
		return
	}
	if !s.suppliable(node, i) {
		return
	}
	if i == len(node.events) {
		if node.end {
			s.threadEnd(d, node)
		} else {
			s.read(d, node)
		}
		return
	}
	ev := &node.events[i]
	switch {
	case ev.kind == write:
		s.write(d, node, i)
		return
	case ev.lock == lockLKR:
		s.lockRead(d, node, i)
		return
	}
	// A fence.
	s.push(ev)
	s.walk(d, node, i+1)
	s.pop()
}

// read places the read after node, for each value it may return and
// each write it may read that value from: the writes placed, newest in
// co first, then a later thread's. The first execution tried is thus
// the one in which each read reads the latest write placed, which is
// the threads running one after another in the search's order: the
// axioms allow it, so the search meets an allowed execution at once.
func (s *search) read(d int, node *runNode) {
	l := s.locIdx[node.loc]
	for k := len(s.co[l]) - 1; k >= 0 && !s.done; k-- {
		w := s.co[l][k]
		kid := node.kid(s.ev[w].val)
		if kid == nil {
			continue
		}
		r := s.push(&kid.events[kid.from])
		s.rf[r] = w
		// A write of another thread read: an rfe edge, which may close a
		// cycle of hb or pb through the threads placed.
		if s.checkLoc(l) && s.learn(r) && (s.ev[w].thread < 0 || s.ev[w].thread == s.cur || s.hbpbMid(d, kid, kid.from+1)) {
			s.walk(d, kid, kid.from+1)
		}
		s.forget(r)
		s.pop()
	}
	for _, k := range node.kids {
		if s.done {
			return
		}
		if s.supply[locVal{l, k.val}] == 0 {
			continue // no thread placed later writes it
		}
		// A read with no write yet adds no edge but po to coherence:
		// nothing to check.
		r := s.push(&k.node.events[k.node.from])
		s.deferred = append(s.deferred, r)
		if s.learn(r) {
			s.walk(d, k.node, k.node.from+1)
		}
		s.forget(r)
		s.deferred = s.deferred[:len(s.deferred)-1]
		s.pop()
	}
}

// suppliable reports whether the deferred reads may still get their
// writes: each one of a thread placed later, or, for a read of an
// earlier thread, one the run being placed makes from node's i-th event
// on; and the distinct values they read at a location no more than the
// writes those runs can make there.
func (s *search) suppliable(node *runNode, i int) bool {
	for k, r := range s.deferred {
		if s.rf[r] >= 0 {
			continue
		}
		re := s.ev[r]
		if s.supply[locVal{re.loc, re.val}] == 0 &&
			(re.thread == s.cur || !node.mayWrite(i, re.event.loc, re.val)) {
			return false
		}
		// Count the location's distinct values once, at the first
		// deferred read of it.
		first, values := true, 1
		for _, q := range s.deferred[:k] {
			if qe := s.ev[q]; s.rf[q] < 0 && qe.loc == re.loc {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		for j, q := range s.deferred[k+1:] {
			qe := s.ev[q]
			if s.rf[q] >= 0 || qe.loc != re.loc {
				continue
			}
			dup := qe.val == re.val
			for _, p := range s.deferred[k+1 : k+1+j] {
				if pe := s.ev[p]; s.rf[p] < 0 && pe.loc == re.loc && pe.val == qe.val {
					dup = true
				}
			}
			if !dup {
				values++
			}
		}
		if values > 1 && values > s.room[re.loc]+node.mostFrom(i, re.event.loc) {
			return false
		}
	}
	return true
}

// lockRead places node's i-th event, the read of a spin_lock (LKR): it
// reads the lock free (lockFree), from the initial write or an unlock
// placed, newest first, or from an unlock of a later thread. Its LKW,
// next, then goes right after that write in co (the atomic axiom over
// lk-rmw), which is lock.cat's "the LKR reads the write before its LKW
// in co": no section can come between the LKW and its UL, whose read
// would read the lock held, nor after a lock never released.
func (s *search) lockRead(d int, node *runNode, i int) {
	ev := &node.events[i]
	l := s.locIdx[ev.loc]
	r := s.push(ev)
	for k := len(s.co[l]) - 1; k >= 0 && !s.done; k-- {
		w := s.co[l][k]
		if s.ev[w].val != ev.val {
			continue
		}
		s.rf[r] = w
		if s.checkLoc(l) {
			s.walk(d, node, i+1)
		}
	}
	s.rf[r] = -1
	if !s.done && s.supply[locVal{l, ev.val}] > 0 {
		s.deferred = append(s.deferred, r)
		s.walk(d, node, i+1)
		s.deferred = s.deferred[:len(s.deferred)-1]
	}
	s.pop()
}

// learn notes the register read r sets for good, if any, and reports
// whether the search may still want what follows (Decide: the condition
// may already be decided against every side still wanted).
func (s *search) learn(r int) bool {
	ev := s.ev[r]
	if ev.reg == "" || !s.decide || !s.named[threadReg{ev.thread, ev.reg}] {
		return true
	}
	s.known[threadReg{ev.thread, ev.reg}] = ev.regVal
	return s.mayWant()
}

func (s *search) forget(r int) {
	if ev := s.ev[r]; ev.reg != "" && s.decide {
		delete(s.known, threadReg{ev.thread, ev.reg})
	}
}

// write places node's i-th event, a write, at each place of its
// location's co it may take, latest first.
func (s *search) write(d int, node *runNode, i int) {
	ev := &node.events[i]
	l := s.locIdx[ev.loc]
	w := s.push(ev)
	// After the thread's earlier writes of the location (coherence:
	// po-loc ; co^-1 would be a cycle) and the initial write.
	lo := 1
	for k := len(s.co[l]) - 1; k >= 1; k-- {
		if s.ev[s.co[l][k]].thread == ev.thread {
			lo = k + 1
			break
		}
	}
	hi := len(s.co[l])
	if ev.lock == lockUL {
		hi = lo // right after its LKW (the thread's last write of the lock)
	}
	if ev.rmwRead >= 0 {
		// The write of an RMW (or of spin_lock) whose read has its
		// write: right after that write, or the atomic axiom fails
		// (another thread's write in between is fre ; coe, one of its
		// own breaks coherence).
		if src := s.rf[s.base+ev.rmwRead]; src >= 0 {
			p := s.coIndex(l, src) + 1
			if p < lo {
				s.pop()
				return
			}
			lo, hi = p, p
		}
	}
	for p := hi; p >= lo && !s.done; p-- {
		if p < len(s.co[l]) && s.splits(l, p) {
			continue // between an RMW's write and the write its read reads
		}
		if ev.lock == lockLKW {
			// A lock is taken where a critical section ends: after the
			// initial write or an UL.
			if prev := s.ev[s.co[l][p-1]]; prev.thread >= 0 && prev.lock != lockUL {
				continue
			}
		}
		s.insertCo(l, p, w)
		if s.checkLoc(l) {
			s.give(d, node, i, w, 0)
		}
		s.removeCo(l, p)
	}
	s.pop()
}

// splits reports whether a write put at place p of location l's co
// would come between an RMW's write (at p) and the write its read reads
// (at p-1): the atomic axiom forbids it.
func (s *search) splits(l, p int) bool {
	next := s.ev[s.co[l][p]]
	return next.rmwRead >= 0 && s.rf[next.base+next.rmwRead] == s.co[l][p-1]
}

func (s *search) insertCo(l, p, w int) {
	c := append(s.co[l], 0)
	copy(c[p+1:], c[p:])
	c[p] = w
	s.co[l] = c
}

func (s *search) removeCo(l, p int) {
	c := s.co[l]
	copy(c[p:], c[p+1:])
	s.co[l] = c[:len(c)-1]
}

// give offers the write w just placed to the deferred reads from the
// k-th on that read its value from another thread: each takes it, or
// stays deferred if some thread may still write the value. Then the
// walk goes on after w.
func (s *search) give(d int, node *runNode, i, w, k int) {
	if s.done {
		return
	}
	we := s.ev[w]
	for ; k < len(s.deferred); k++ {
		r := s.deferred[k]
		re := s.ev[r]
		if s.rf[r] >= 0 || re.loc != we.loc || re.val != we.val || re.thread == we.thread {
			continue
		}
		s.rf[r] = w
		if s.checkLoc(we.loc) {
			s.give(d, node, i, w, k+1)
		}
		s.rf[r] = -1
		// Or it stays deferred, if a later thread or the rest of this
		// run may write its value.
		if s.supply[locVal{we.loc, we.val}] > 0 || node.mayWrite(i+1, we.event.loc, we.val) {
			s.give(d, node, i, w, k+1)
		}
		return
	}
	s.walk(d, node, i+1)
}

// threadEnd is reached when the thread at depth d has placed a whole
// run, ending at end: check what needs the whole run, then place the
// next thread or, after the last, take the outcome.
func (s *search) threadEnd(d int, end *runNode) {
	th := s.order[d]
	// A critical section never released must be last in its lock's co
	// (lock.cat's unmatched-locks: a thread waiting for it would wait
	// forever, and no execution has that).
	for i := s.base; i < len(s.ev); i++ {
		if s.ev[i].lock == lockLKW && !s.released(i) {
			c := s.co[s.ev[i].loc]
			if c[len(c)-1] != i {
				return
			}
		}
	}
	// Each read still without a write needs a thread not placed yet that
	// may write its value.
	for _, r := range s.deferred {
		if s.rf[r] < 0 && s.supply[locVal{s.ev[r].loc, s.ev[r].val}] == 0 {
			return
		}
	}
	s.regs[th] = end.regs
	s.ends[d] = end
	defer func() { s.regs[th] = nil }()
	// The locations no thread left to place uses are complete: their
	// final value is known.
	for _, l := range s.uses[th] {
		s.users[l]--
		s.closed[l] = s.users[l] == 0
	}
	defer func() {
		for _, l := range s.uses[th] {
			s.users[l]++
			s.closed[l] = false
		}
	}()
	if s.decide && !s.mayWant() {
		return
	}
	last := d == len(s.roots)-1
	var out litmus.Outcome
	var key string
	if last && !s.decide {
		out = s.outcome()
		key = out.Key()
		if _, ok := s.found[key]; ok && !s.flagged && s.fault() == "" {
			return // this outcome is already allowed
		}
	}
	ok, flags := s.check(d, last && s.flagged)
	if !ok {
		return
	}
	if !last {
		s.place(d + 1)
		return
	}
	if f := s.fault(); f != "" {
		s.err = fmt.Errorf("%w: %s, in an execution LKMM allows", ErrFault, f)
		s.done = true
		return
	}
	if s.decide {
		s.leaf()
		return
	}
	if prev, ok := s.found[key]; ok {
		out.Flags = litmus.UnionFlags(prev.Flags, flags)
	} else {
		out.Flags = flags
	}
	s.found[key] = out
}

// fault returns the fault of a run placed, "" if none has one.
func (s *search) fault() string {
	for _, end := range s.ends {
		if end != nil && end.fault != "" {
			return end.fault
		}
	}
	return ""
}

// released reports whether the LKW i has an UL after it in its thread.
func (s *search) released(i int) bool {
	for j := i + 1; j < len(s.ev); j++ {
		if s.ev[j].lock == lockUL && s.ev[j].loc == s.ev[i].loc {
			return true
		}
	}
	return false
}

// coIndex returns the place of write w in its location l's co.
func (s *search) coIndex(l, w int) int {
	for k, x := range s.co[l] {
		if x == w {
			return k
		}
	}
	panic("lkmm: write not in co")
}

// final returns the final value of location l: its co-last write's.
func (s *search) final(l int) int64 {
	c := s.co[l]
	return s.ev[c[len(c)-1]].val
}

// outcome returns the final state of the complete execution.
func (s *search) outcome() litmus.Outcome {
	mem := make(map[string]int64, len(s.locs))
	for l, name := range s.locs {
		mem[name] = s.final(l)
	}
	return litmus.Outcome{Regs: append([]map[string]int64(nil), s.regs...), Mem: mem}
}

// leaf takes the outcome of a complete allowed execution when deciding:
// the side of the condition it is on, if the filter keeps it and that
// side has no witness yet.
func (s *search) leaf() {
	out := s.outcome()
	if !s.decide {
		s.found[out.Key()] = out
		return
	}
	keep, err := out.Filtered(s.t)
	if err != nil {
		s.err, s.done = err, true
		return
	}
	if !keep {
		return
	}
	sat, err := out.Satisfies(s.t.Cond)
	if err != nil {
		s.err, s.done = err, true
		return
	}
	side := 1
	if sat {
		side = 0
	}
	if s.got[side] == nil {
		s.got[side] = &out
	}
	s.done = s.got[0] != nil && s.got[1] != nil
}

// check checks the axioms but coherence and atomic (cat.go) on the events
// placed up to depth d, and returns the flags the execution raises if
// flags is set.
func (s *search) check(d int, flags bool) (bool, []string) {
	if !s.b.check() {
		s.done = true
		return false, nil
	}
	if s.st[d] == nil {
		s.st[d] = newStatics(s.maxEvents)
	}
	key := s.ends[:d+1]
	if !sameRuns(s.stKey[d], key) {
		s.st[d].compute(s.ev)
		s.stKey[d] = append(s.stKey[d][:0], key...)
	}
	return s.st[d].check(s.dyn, s.rf, s.co, s.inOrder, flags)
}

// hbpbMid checks the happens-before and propagation axioms with the
// thread at depth d placed up to node's i-th event.
func (s *search) hbpbMid(d int, node *runNode, i int) bool {
	if !s.b.check() {
		s.done = true
		return false
	}
	if s.mid[d] == nil {
		s.mid[d] = newStatics(s.maxEvents)
	}
	key := s.ends[:d]
	if !sameRuns(s.midKey[d], key) || s.midNode[d] != node || s.midAt[d] != i {
		s.mid[d].compute(s.ev)
		s.midKey[d] = append(s.midKey[d][:0], key...)
		s.midNode[d], s.midAt[d] = node, i
	}
	return s.mid[d].hbpb(s.dyn, s.rf, s.co, s.inOrder)
}

func sameRuns(a, b []*runNode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkLoc checks the coherence and atomic axioms at location l, on
// the events of l placed: acyclic po-loc | rf | co | fr, and no write of
// another thread between an RMW's write and the write its read reads.
// Both concern one location only, so that is the whole check of them.
// po-loc and co enter as the edges between neighbours, which have the
// same cycles as their transitive relations.
func (s *search) checkLoc(l int) bool {
	if !s.b.check() {
		s.done = true
		return false
	}
	evs, co := s.locEv[l], s.co[l]
	m := len(evs)
	for k, w := range co {
		s.coPos[w] = k
	}
	for k, e := range evs {
		s.local[e] = k
	}
	head := s.head[:m]
	for k := range head {
		head[k] = -1
	}
	s.edges, s.next = s.edges[:0], s.next[:0]
	edge := func(a, b int) {
		s.edges = append(s.edges, s.local[b])
		s.next = append(s.next, head[s.local[a]])
		head[s.local[a]] = len(s.edges) - 1
	}
	for k := range s.lastOf {
		s.lastOf[k] = -1
	}
	for _, e := range evs {
		th := s.ev[e].thread + 1
		if p := s.lastOf[th]; p >= 0 && th > 0 {
			edge(p, e) // po-loc
		}
		s.lastOf[th] = e
		if s.ev[e].kind == read {
			if w := s.rf[e]; w >= 0 {
				edge(w, e) // rf
				if k := s.coPos[w] + 1; k < len(co) {
					edge(e, co[k]) // fr
				}
			}
		}
	}
	for k := 0; k+1 < len(co); k++ {
		edge(co[k], co[k+1])
	}
	indeg := s.indeg[:m]
	for k := range indeg {
		indeg[k] = 0
	}
	for _, b := range s.edges {
		indeg[b]++
	}
	stack := s.stack[:0]
	for k, n := range indeg {
		if n == 0 {
			stack = append(stack, k)
		}
	}
	seen := 0
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen++
		for e := head[k]; e >= 0; e = s.next[e] {
			b := s.edges[e]
			indeg[b]--
			if indeg[b] == 0 {
				stack = append(stack, b)
			}
		}
	}
	s.stack = stack
	if seen < m {
		return false
	}
	// empty rmw & (fre ; coe) as atomic
	for _, w := range co {
		we := s.ev[w]
		if we.rmwRead < 0 {
			continue
		}
		r := we.base + we.rmwRead
		src := s.rf[r]
		if src < 0 {
			continue
		}
		for k := s.coPos[src] + 1; k < s.coPos[w]; k++ {
			if s.ev[co[k]].thread != we.thread {
				return false
			}
		}
	}
	return true
}

// sortOutcomes sorts outcomes by key.
func sortOutcomes(outs []litmus.Outcome) {
	sort.Slice(outs, func(i, j int) bool { return outs[i].Key() < outs[j].Key() })
}

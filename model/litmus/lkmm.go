package litmus

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
)

// The bounds of a test LKMM runs.
const (
	lkT = 4 // threads
	lkL = 4 // locations
	lkS = 8 // stores per location, the initial one included
)

// LKMM runs litmus tests under the operational LKMM model.
type LKMM struct {
	// MaxStates bounds the search (0: DefaultMaxStates).
	MaxStates int
}

// Name returns "LKMM-op".
func (LKMM) Name() string { return "LKMM-op" }

type lview [lkL]uint8

func (v *lview) join(o lview) {
	for i := range v {
		if o[i] > v[i] {
			v[i] = o[i]
		}
	}
}

// lknow is knowledge: H's views per thread and G, plus references to
// nodes (events and strong fences) whose knowledge applies too, in full
// (rH) or for its G only (rG). A node's knowledge may grow after later
// events reference it: an edge into an event that already ran (a
// (prop \ id) & int edge from a later access of its thread, a pb edge
// into the events after a strong fence from an access that runs after the
// fence) is added to the node, and every event that references it sees it.
type lknow struct {
	T      [lkT]lview
	G      lview
	rH, rG uint64
}

func (k *lknow) join(o lknow) {
	for i := range k.T {
		k.T[i].join(o.T[i])
	}
	k.G.join(o.G)
	k.rH |= o.rH
	k.rG |= o.rG
}

type lkMsg struct {
	val   int64
	th    int8 // -1: the initial store
	glued bool // the write of an RMW (or spin_lock) whose read read the store just before
	obs   lview
	h     lknow
	dep   lknow // H of the loads its value depends on (to-r: dep ; rfi)
	pulp  lview // spin_unlock: Obs (without rfe) of what precedes it
	node  int8  // the store's node, -1 for the initial store
	prom  bool  // a promise not fulfilled yet
	// ak are the access nodes that read or wrote this store, per thread.
	ak [lkT]uint64
}

// lkNode is an event or a strong fence, as knowledge others reference.
type lkNode struct {
	know   lknow
	obs    lview // an access: Obs(e); a strong fence: the Obs it passes on
	thread int8
	fence  bool
}

const (
	lkN  = 64        // nodes
	lkNT = lkN / lkT // nodes per thread
)

type lkThread struct {
	pc    uint8
	depth uint8
	regs  [MaxRegs]int64
	rdep  [MaxRegs]lknow
	ctrl  [8]lknow

	coh                    lview
	accA, accW, accCF      lview
	sfObs, wmbObs, pulpObs lview
	ulCF, baObs            lview
	rmwObs, lkwObs         lview
	ulH, baH, rmwH, lkwH   lknow
	hAll, hR, hW           lknow
	hLoc                   [lkL]lknow
	pendH, pendHR, pendHW  lknow
	ulSeen, baSeen         bool
	rmwSeen, lkwSeen       bool
	// prom are the thread's promises not yet fulfilled: the store
	// instruction and the store's node, in program order.
	prom [lkP]lkPromise
	np   uint8
}

// lkPromise is a store a thread made before running to it.
type lkPromise struct {
	pc   uint8
	node int8
}

const lkP = 4 // outstanding promises per thread

type lkState struct {
	n     [lkL]uint8
	msg   [lkL][lkS]lkMsg
	th    [lkT]lkThread
	nn    [lkT]uint8 // nodes made by each thread
	used  uint64     // the nodes in use
	nodes [lkN]lkNode
}

// node adds a node of thread n.thread. A thread's nodes are numbered in
// the order it makes them, in a block of its own, so that two runs that
// differ only in how the threads interleave give equal states. Outcomes
// checks beforehand that each thread has room for every node its run
// can make.
func (s *lkState) node(n lkNode) int {
	t := int(n.thread)
	if int(s.nn[t]) == lkNT {
		panic(fmt.Sprintf("litmus: LKMM: more than %d events and fences in thread %d", lkNT, t))
	}
	id := t*lkNT + int(s.nn[t])
	s.nn[t]++
	s.nodes[id] = n
	s.used |= 1 << id
	return id
}

// reach returns the nodes k references, transitively: those whose
// knowledge applies in full, and those whose G applies.
func (s *lkState) reach(k lknow) (full, g uint64) {
	full = k.rH
	for {
		next := full
		for n := 0; n < lkN; n++ {
			if full&(1<<n) != 0 {
				next |= s.nodes[n].know.rH
			}
		}
		if next == full {
			break
		}
		full = next
	}
	g = k.rG
	for n := 0; n < lkN; n++ {
		if full&(1<<n) != 0 {
			g |= s.nodes[n].know.rG
		}
	}
	for {
		next := g
		for n := 0; n < lkN; n++ {
			if g&(1<<n) != 0 {
				next |= s.nodes[n].know.rH | s.nodes[n].know.rG
			}
		}
		if next == g {
			break
		}
		g = next
	}
	return full, g
}

// eff resolves k's references: its views joined with those of the nodes
// it references, transitively (rG ones for their G only).
func (s *lkState) eff(k lknow) lknow {
	full, g := s.reach(k)
	out := k
	for n := 0; n < lkN; n++ {
		if full&(1<<n) != 0 {
			for i := range out.T {
				out.T[i].join(s.nodes[n].know.T[i])
			}
		}
		if (full|g)&(1<<n) != 0 {
			out.G.join(s.nodes[n].know.G)
		}
	}
	return out
}

// ceil is the first position of x that thread t's own accesses may not
// reach: its earliest promise to x (a store later in program order, so
// every access before it in program order is before it in co).
func (s *lkState) ceil(t, x int) int {
	c := int(s.n[x]) + 1
	th := &s.th[t]
	for i := 0; i < int(th.np); i++ {
		if p := s.posOf(x, th.prom[i].node); p >= 0 && p < c {
			c = p
		}
	}
	return c
}

// posOf is the position in x's co of the store whose node is n, -1 if
// none.
func (s *lkState) posOf(x int, n int8) int {
	for i := 0; i < int(s.n[x]); i++ {
		if s.msg[x][i].node == n {
			return i
		}
	}
	return -1
}

// instruction kinds.
const (
	lkAccess uint8 = iota + 1
	lkAssign
	lkBranch // push ctrl; if cond is 0 jump to target
	lkJump
	lkEndIf // pop ctrl
)

type lkIns struct {
	kind   uint8
	line   int
	acc    *Access
	loc    int
	assign *Assign
	cond   Expr
	target int
}

type lkProg struct {
	universe []int64 // every value an expression may take (universe)
	code     [][]lkIns
	regs     []map[string]int
	written  [][]string
	locs     map[string]int
}

func (p *lkProg) flatten(t int, body []Stmt) error {
	for _, s := range body {
		switch {
		case s.Assign != nil:
			if err := p.reg(t, s.Assign.Reg, s.Line, true); err != nil {
				return err
			}
			p.code[t] = append(p.code[t], lkIns{kind: lkAssign, line: s.Line, assign: s.Assign})
		case s.If != nil:
			br := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkBranch, line: s.Line, cond: s.If.Cond})
			if err := p.flatten(t, s.If.Then); err != nil {
				return err
			}
			jmp := len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkJump, line: s.Line})
			p.code[t][br].target = len(p.code[t])
			if err := p.flatten(t, s.If.Else); err != nil {
				return err
			}
			p.code[t][jmp].target = len(p.code[t])
			p.code[t] = append(p.code[t], lkIns{kind: lkEndIf, line: s.Line})
		case s.Access != nil:
			a := s.Access
			loc := -1
			if a.Loc != "" {
				l, ok := p.locs[a.Loc]
				if !ok {
					if len(p.locs) == lkL {
						return fmt.Errorf("%w: more than %d locations", ErrUnsupported, lkL)
					}
					l = len(p.locs)
					p.locs[a.Loc] = l
				}
				loc = l
			}
			if a.Reg != "" && a.Op.Info().Returns {
				if err := p.reg(t, a.Reg, s.Line, true); err != nil {
					return err
				}
			}
			p.code[t] = append(p.code[t], lkIns{kind: lkAccess, line: s.Line, acc: a, loc: loc})
		}
	}
	return nil
}

func (p *lkProg) reg(t int, name string, line int, write bool) error {
	if _, ok := p.regs[t][name]; ok {
		return nil
	}
	if len(p.regs[t]) == MaxRegs {
		return fmt.Errorf("line %d: %w: P%d uses more than %d registers", line, ErrUnsupported, t, MaxRegs)
	}
	p.regs[t][name] = len(p.regs[t])
	if write {
		p.written[t] = append(p.written[t], name)
	}
	return nil
}

// Outcomes returns every final state of t under the model.
func (m LKMM) Outcomes(t *Test) (_ []Outcome, err error) {
	if err := MemoryOnly(t); err != nil {
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
		return nil, fmt.Errorf("%s: %w: %d threads (at most %d)", t.Name, ErrUnsupported, len(t.Threads), lkT)
	}
	p := &lkProg{locs: map[string]int{}}
	for _, l := range t.Locs {
		if len(p.locs) == lkL {
			return nil, fmt.Errorf("%s: %w: more than %d locations", t.Name, ErrUnsupported, lkL)
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
		budget = DefaultMaxStates
	}
	r := &lkRun{p: p, seen: map[[2]uint64]struct{}{}, found: map[string]Outcome{}, budget: budget,
		seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	if err := r.dfs(&s); err != nil {
		return nil, fmt.Errorf("%s under %s: %w", t.Name, m.Name(), err)
	}
	out := make([]Outcome, 0, len(r.found))
	for _, o := range r.found {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// bounds checks that every run of the test fits the state: nodes for its
// events and strong fences, room for its stores in each location's co.
func (p *lkProg) bounds() error {
	stores := make([]int, lkL)
	for t, code := range p.code {
		nodes, before := 0, false
		for _, in := range code {
			if in.kind != lkAccess {
				continue
			}
			op := in.acc.Op
			info := op.Info()
			switch {
			case op.IsRMW():
				nodes += 2 // its read and its write
				if info.Order == Mb {
					nodes += 2 // the strong fences into its read and out of its write
				}
				if before {
					nodes++ // a pending smp_mb__before_atomic
				}
			case op == OpSpinLock:
				nodes += 2
			case op == OpMbBeforeAtomic:
				before = true
			case op == OpMb || op == OpMbAfterAtomic || op == OpMbAfterSpinlock:
				nodes++
			case info.Fence:
			default:
				nodes++
			}
			if info.Writes {
				stores[in.loc]++
			}
		}
		if nodes > lkNT {
			return fmt.Errorf("%w: P%d makes up to %d events and strong fences, more than the %d LKMM holds per thread", ErrUnsupported, t, nodes, lkNT)
		}
	}
	for l, n := range stores {
		if n+1 > lkS {
			return fmt.Errorf("%w: %d stores to location %d, more than the %d LKMM holds", ErrUnsupported, n, l, lkS-1)
		}
	}
	return nil
}

func walkRegs(body []Stmt, f func(string)) {
	expr := func(e Expr) { e.Regs(f) }
	for _, s := range body {
		switch {
		case s.Assign != nil:
			expr(s.Assign.Val)
		case s.If != nil:
			expr(s.If.Cond)
			walkRegs(s.If.Then, f)
			walkRegs(s.If.Else, f)
		case s.Access != nil:
			expr(s.Access.Val)
			expr(s.Access.Expect)
		}
	}
}

// lkRun is one search. States are kept by a 128-bit hash (two seeds):
// with the few thousand states of a litmus test, a collision has a
// probability below 2^-100.
type lkRun struct {
	p            *lkProg
	seen         map[[2]uint64]struct{}
	found        map[string]Outcome
	budget       int
	seed1, seed2 maphash.Seed
}

func (r *lkRun) dfs(s *lkState) error {
	key := [2]uint64{maphash.Comparable(r.seed1, *s), maphash.Comparable(r.seed2, *s)}
	if _, ok := r.seen[key]; ok {
		return nil
	}
	if len(r.seen) >= r.budget {
		return fmt.Errorf("%w after %d states: outcomes unknown", ErrCutShort, len(r.seen))
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
		o := Outcome{Mem: map[string]int64{}}
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
		if !(op == OpWriteOnce || op == OpStoreRelease || op.IsRMW()) || th.promised(i) > 0 {
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
					if n.promise(t, i, x, pos, v, info.Order == Release, false) {
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
				if n.promise(t, i, x, pos, nv, info.Order == Release, true) {
					yield(&n)
				}
			}
		}
	}
}

// ordered reports whether the store of instruction i is, whatever the
// run, ppo-after the read of instruction pc of thread t: then promising
// it before that read is of no use (what reads the promise would happen
// after the read anyway, and a run without the promise gives it). Only
// orders that hold on every path count: an acquire or fully ordered read
// (a cmpxchg may fail, so not one), a release store, the same location,
// a value computed from the read's register, an smp_mb or a fully
// ordered RMW (not a cmpxchg) in between with no if around it.
func (p *lkProg) ordered(t, pc, i int) bool {
	r, w := p.code[t][pc].acc, p.code[t][i].acc
	ri, wi := r.Op.Info(), w.Op.Info()
	switch {
	case p.code[t][pc].loc == p.code[t][i].loc:
		return true
	case !r.Op.IsCmpxchg() && (ri.Order == Acquire || ri.Order == Mb):
		return true
	case !w.Op.IsCmpxchg() && wi.Order == Release:
		return true
	}
	if r.Reg != "" && ri.Returns {
		dep := false
		w.Val.Regs(func(n string) { dep = dep || n == r.Reg })
		if dep {
			return true
		}
	}
	for j := pc + 1; j < i; j++ {
		in := p.code[t][j]
		if in.kind != lkAccess && in.kind != lkAssign {
			return false // an if: the fence may lie on another path
		}
		if in.kind == lkAccess && (in.acc.Op == OpMb || (in.acc.Op.IsRMW() && !in.acc.Op.IsCmpxchg() && in.acc.Op.Info().Order == Mb)) {
			return true
		}
	}
	return false
}

func containsVal(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// values returns the values e may have when thread t, now at pc, runs
// instruction i: its value now if no instruction from pc to i sets one of
// its registers, else the test's universe.
func (r *lkRun) values(s *lkState, t, pc, i int, e Expr) []int64 {
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

// maxUniverse bounds the values a test's expressions may take.
const maxUniverse = 64

// universe returns every value the test's expressions may take, a
// superset: starting from the initial values and the constants, each
// round evaluates every expression (stored values, RMW operands,
// assignments) with its registers set to values found so far, and adds
// each RMW operand to every value found so far. A value an execution
// computes comes from a chain of at most one evaluation per statement
// (there are no loops), so that many rounds reach all.
func universe(t *Test) ([]int64, error) {
	set := map[int64]bool{0: true}
	for _, v := range t.Init {
		set[v] = true
	}
	var exprs, adds []Expr
	stmts := 0
	var walk func([]Stmt)
	walk = func(body []Stmt) {
		for _, st := range body {
			stmts++
			switch {
			case st.Assign != nil:
				exprs = append(exprs, st.Assign.Val)
			case st.If != nil:
				walk(st.If.Then)
				walk(st.If.Else)
			case st.Access != nil:
				a := st.Access
				exprs = append(exprs, a.Val, a.Expect)
				if a.Op.IsRMW() && !a.Op.IsXchg() && !a.Op.IsCmpxchg() {
					adds = append(adds, a.Val)
				}
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	list := func() []int64 {
		out := make([]int64, 0, len(set))
		for v := range set {
			out = append(out, v)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	evalAll := func(e Expr, cur []int64, f func(int64)) error {
		var names []string
		e.Regs(func(n string) {
			for _, m := range names {
				if m == n {
					return
				}
			}
			names = append(names, n)
		})
		if len(names) > 3 {
			return fmt.Errorf("%w: an expression of more than 3 registers", ErrUnsupported)
		}
		vals := map[string]int64{}
		var rec func(k int) error
		rec = func(k int) error {
			if k == len(names) {
				v, err := e.Eval(func(_ int, n string) int64 { return vals[n] }, nil)
				if err != nil {
					return nil // a value no execution computes (division by zero)
				}
				f(v)
				return nil
			}
			for _, v := range cur {
				vals[names[k]] = v
				if err := rec(k + 1); err != nil {
					return err
				}
			}
			return nil
		}
		return rec(0)
	}
	for round := 0; round <= stmts; round++ {
		cur := list()
		for _, e := range exprs {
			if err := evalAll(e, cur, func(v int64) { set[v] = true }); err != nil {
				return nil, err
			}
		}
		for _, e := range adds {
			if err := evalAll(e, cur, func(d int64) {
				for _, old := range cur {
					set[old+d] = true
				}
			}); err != nil {
				return nil, err
			}
		}
		if len(set) > maxUniverse {
			return nil, fmt.Errorf("%w: its values may take more than %d values", ErrUnsupported, maxUniverse)
		}
		if len(set) == len(cur) {
			break
		}
	}
	return list(), nil
}

// views calls f on every view of the state.
func (s *lkState) views(f func(*lview)) {
	know := func(k *lknow) {
		for i := range k.T {
			f(&k.T[i])
		}
		f(&k.G)
	}
	for l := range s.n {
		for i := 0; i < int(s.n[l]); i++ {
			m := &s.msg[l][i]
			f(&m.obs)
			know(&m.h)
			know(&m.dep)
			f(&m.pulp)
		}
	}
	for n := 0; n < lkN; n++ {
		if s.used&(1<<n) == 0 {
			continue
		}
		know(&s.nodes[n].know)
		f(&s.nodes[n].obs)
	}
	for t := range s.th {
		th := &s.th[t]
		for i := range th.rdep {
			know(&th.rdep[i])
		}
		for i := range th.ctrl {
			know(&th.ctrl[i])
		}
		for _, v := range []*lview{&th.coh, &th.accA, &th.accW, &th.accCF, &th.sfObs, &th.wmbObs, &th.pulpObs, &th.ulCF, &th.baObs, &th.rmwObs, &th.lkwObs} {
			f(v)
		}
		for _, k := range []*lknow{&th.ulH, &th.baH, &th.rmwH, &th.lkwH, &th.hAll, &th.hR, &th.hW, &th.pendH, &th.pendHR, &th.pendHW} {
			know(k)
		}
		for i := range th.hLoc {
			know(&th.hLoc[i])
		}
	}
}

// insert places m at position p of location x's co, after shifting every
// view of a later store.
func (s *lkState) insert(x, p int, m lkMsg) {
	s.views(func(v *lview) {
		if int(v[x]) >= p {
			v[x]++
		}
	})
	for i := int(s.n[x]); i > p; i-- {
		s.msg[x][i] = s.msg[x][i-1]
	}
	s.msg[x][p] = m
	s.n[x]++
}

// shiftKnow shifts k's positions of location x from p on, after an insert
// at p.
func shiftKnow(k *lknow, x, p int) {
	for i := range k.T {
		if int(k.T[i][x]) >= p {
			k.T[i][x]++
		}
	}
	if int(k.G[x]) >= p {
		k.G[x]++
	}
}

// propInt references thread t's accesses that precede, in co, a store
// of obs: the (prop \ id) & int edges into an event whose Obs is obs.
func (s *lkState) propInt(t int, obs lview, k *lknow) {
	for x := range obs {
		for j := 0; j < int(obs[x]) && j < int(s.n[x]); j++ {
			k.rH |= s.msg[x][j].ak[t]
		}
	}
}

// pbProp references, for their G, every access that precedes, in co, a
// store of obs: the pb edges from them through a strong fence whose Obs is
// obs.
func (s *lkState) pbProp(obs lview, k *lknow) {
	for x := range obs {
		for j := 0; j < int(obs[x]) && j < int(s.n[x]); j++ {
			for t := range s.msg[x][j].ak {
				k.rG |= s.msg[x][j].ak[t]
			}
		}
	}
}

// late adds the edges into nodes that already ran from the access a of
// thread t at position j of x: to every earlier access b of t whose Obs
// has a store of x after j ((prop \ id) & int), and to every strong
// fence whose Obs has one (pb, for G).
func (s *lkState) late(t, a, x, j int) {
	for n := 0; n < lkN; n++ {
		nd := &s.nodes[n]
		if s.used&(1<<n) == 0 || n == a || int(nd.obs[x]) <= j {
			continue
		}
		switch {
		case nd.fence:
			nd.know.rG |= 1 << a
		case int(nd.thread) == t:
			nd.know.rH |= 1 << a
		}
	}
}

// beforeAtomic applies the smp_mb__before_atomic fences of t before its
// first RMW event after them: what precedes them is strong-fence-before
// that event and everything after it.
func (s *lkState) beforeAtomic(t int) {
	th := &s.th[t]
	h, obs := th.baH, th.baObs
	th.baSeen, th.baH, th.baObs = false, lknow{}, lview{}
	s.strongFence(t, h, obs)
}

// strongFence makes every later event of t strong-fence-after the events
// whose H joins to h and whose Obs joins to obs.
func (s *lkState) strongFence(t int, h lknow, obs lview) {
	f := lknow{G: obs}
	s.pbProp(obs, &f)
	n := s.node(lkNode{know: f, obs: obs, thread: int8(t), fence: true})
	th := &s.th[t]
	th.pendH.join(h)
	th.sfObs.join(obs)
	th.pendH.rH |= 1 << n
}

// regKnow joins the H of the loads the registers of e come from.
func (s *lkState) regKnow(p *lkProg, t int, e Expr) lknow {
	var k lknow
	e.Regs(func(name string) { k.join(s.th[t].rdep[p.regs[t][name]]) })
	return k
}

type lkRead struct {
	acquire, mb, noreturn, rmw bool
	lkr                        bool
}

type lkWrite struct {
	release, mb, rmw, ul, lkw bool
	data                      lknow
	promise                   int // node+1 of the promise this write fulfils, 0 if none
}

// read performs a read of x by t that reads position k, if the axioms
// allow, and returns its H; ok is false if they do not.
func (s *lkState) read(t, x, k int, f lkRead) (lknow, bool) {
	th := &s.th[t]
	if k < int(th.coh[x]) || k >= s.ceil(t, x) {
		return lknow{}, false
	}
	if f.rmw && th.baSeen {
		s.beforeAtomic(t)
	}
	know := th.pendH
	if !f.noreturn {
		know.join(th.pendHR)
	}
	obsCF := th.sfObs
	obsCF.join(th.pulpObs)
	if f.mb {
		// Every earlier access is strong-fence-before this read: a
		// fence node of its own, which the read references.
		know.join(th.hAll)
		obsCF.join(th.accA)
		fk := lknow{G: th.accA}
		s.pbProp(th.accA, &fk)
		know.rH |= 1 << s.node(lkNode{know: fk, obs: th.accA, thread: int8(t), fence: true})
	}
	w := &s.msg[x][k]
	obs := obsCF
	if int(w.th) != t {
		obs.join(w.obs)
		know.join(w.h)
	} else {
		know.join(w.dep)
	}
	s.propInt(t, obs, &know)
	if e := s.eff(know); k < int(e.T[t][x]) || k < int(e.G[x]) {
		return lknow{}, false
	}
	know.T[t].join(obs)
	id := s.node(lkNode{obs: obs, thread: int8(t)})
	know.rH |= 1 << id
	s.nodes[id].know = know
	th.coh[x] = uint8(k)
	th.accA.join(obs)
	th.accCF.join(obsCF)
	th.hAll.join(know)
	if !f.noreturn {
		th.hR.join(know)
	}
	th.hLoc[x].join(know)
	if f.acquire {
		th.pendH.join(know)
	}
	w.ak[t] |= 1 << id
	s.late(t, id, x, k)
	if f.lkr {
		if th.ulSeen {
			th.pendH.join(th.ulH)
			th.pulpObs.join(th.ulCF)
		}
		if int(w.th) != t {
			th.pulpObs.join(w.pulp)
		}
	}
	if f.rmw {
		th.rmwSeen, th.rmwH, th.rmwObs = true, th.hAll, th.accA
	}
	return know, true
}

// write performs a write of v to x by t at position p of co; ok is false
// if the axioms forbid it. With f.promise set, it is the write that
// fulfils t's promise f.promise-1 (a node), already at position p: its
// knowledge must not reference the promise itself (nothing it depends on
// may have read it, or a cycle through it would close), its Obs must be
// the one the promise declared, and its position must satisfy what t
// knows now.
func (s *lkState) write(t, x, p int, v int64, f lkWrite) (lknow, bool) {
	th := &s.th[t]
	fulfil := f.promise > 0
	if p <= int(th.coh[x]) || p > int(s.n[x]) {
		return lknow{}, false
	}
	if fulfil {
		if s.msg[x][p].node != int8(f.promise-1) || s.msg[x][p].val != v {
			return lknow{}, false
		}
	} else {
		if p > s.ceil(t, x) || (p < int(s.n[x]) && s.msg[x][p].glued) {
			return lknow{}, false
		}
		if int(s.n[x]) == lkS {
			panic(fmt.Sprintf("litmus: LKMM: more than %d stores to one location", lkS))
		}
	}
	if f.rmw && th.baSeen {
		s.beforeAtomic(t)
	}
	know := th.pendH
	know.join(th.pendHW)
	know.join(th.hLoc[x])
	know.join(f.data)
	if th.depth > 0 {
		know.join(th.ctrl[th.depth-1])
	}
	obsCF := th.sfObs
	obsCF.join(th.wmbObs)
	obsCF.join(th.pulpObs)
	if f.release {
		know.join(th.hAll)
		obsCF.join(th.accA)
	}
	if (f.rmw || f.lkw) && p > 0 {
		// rmw-sequence (cumul-fence ends with (rf ; rmw)*): what
		// propagates before the store the RMW read, store p-1,
		// propagates before its own.
		obsCF.join(s.msg[x][p-1].obs)
	}
	s.propInt(t, obsCF, &know)
	if e := s.eff(know); p <= int(e.T[t][x]) || p <= int(e.G[x]) {
		return lknow{}, false
	}
	if f.ul {
		th.ulSeen, th.ulH, th.ulCF = true, th.hAll, th.accCF
	}
	var id int
	if fulfil {
		id = f.promise - 1
		if full, g := s.reach(know); (full|g)&(1<<id) != 0 {
			return lknow{}, false
		}
		obs := obsCF
		obs[x] = uint8(p)
		if obs != s.msg[x][p].obs {
			return lknow{}, false
		}
		s.msg[x][p].prom = false
		th.dropPromise(int8(id))
	} else {
		id = s.node(lkNode{thread: int8(t)})
		s.insert(x, p, lkMsg{val: v, th: int8(t), glued: f.rmw || f.lkw, node: int8(id)})
		// Views were shifted: shift the ones held in locals too.
		shiftKnow(&know, x, p)
		shiftKnow(&f.data, x, p)
		if int(obsCF[x]) >= p {
			obsCF[x]++
		}
	}
	obs := obsCF
	obs[x] = uint8(p)
	know.T[t].join(obs)
	know.rH |= 1 << id
	s.nodes[id].know, s.nodes[id].obs = know, obs
	th = &s.th[t]
	w := &s.msg[x][p]
	w.obs, w.h, w.dep = obs, know, f.data
	if f.ul {
		w.pulp = th.ulCF
	}
	w.ak[t] |= 1 << id
	s.late(t, id, x, p)
	th.coh[x] = uint8(p)
	th.accA.join(obs)
	th.accW.join(obs)
	th.accCF.join(obs)
	th.hAll.join(know)
	th.hW.join(know)
	th.hLoc[x].join(know)
	if f.mb {
		s.strongFence(t, know, obs)
	}
	if f.rmw {
		th.rmwSeen, th.rmwH, th.rmwObs = true, th.hAll, th.accA
	}
	if f.lkw {
		th.lkwSeen, th.lkwH, th.lkwObs = true, th.hAll, th.accA
	}
	return know, true
}

// dropPromise removes the promise whose store's node is n.
func (th *lkThread) dropPromise(n int8) {
	for i := 0; i < int(th.np); i++ {
		if th.prom[i].node == n {
			copy(th.prom[i:], th.prom[i+1:th.np])
			th.np--
			th.prom[th.np] = lkPromise{}
			return
		}
	}
}

// promised returns the node+1 of t's promise for instruction pc, 0 if
// none.
func (th *lkThread) promised(pc int) int {
	for i := 0; i < int(th.np); i++ {
		if int(th.prom[i].pc) == pc {
			return int(th.prom[i].node) + 1
		}
	}
	return 0
}

// promise makes thread t promise the store of instruction pc (to x, value
// v) at position p of co, before running to it: load buffering. The
// message declares the Obs the store will have (what t's fences and locks
// pass on now); its knowledge is a reference to its node, which the
// fulfilling write fills, so that what read the promise learns it then.
// An RMW's store is glued to the store before it, which its read will
// read. ok is false if p is not a place the store may take.
func (s *lkState) promise(t, pc, x, p int, v int64, release, rmw bool) bool {
	th := &s.th[t]
	if int(th.np) == lkP || p <= int(th.coh[x]) || p > int(s.n[x]) || (p < int(s.n[x]) && s.msg[x][p].glued) {
		return false
	}
	// Co follows program order among t's stores to x.
	for i := 0; i < int(th.np); i++ {
		q := s.posOf(x, th.prom[i].node)
		if q < 0 {
			continue
		}
		if int(th.prom[i].pc) < pc && p <= q || int(th.prom[i].pc) > pc && p > q {
			return false
		}
	}
	if int(s.n[x]) == lkS {
		panic(fmt.Sprintf("litmus: LKMM: more than %d stores to one location", lkS))
	}
	obsCF := th.sfObs
	obsCF.join(th.wmbObs)
	obsCF.join(th.pulpObs)
	if release {
		obsCF.join(th.accA)
	}
	if rmw && p > 0 {
		obsCF.join(s.msg[x][p-1].obs) // rmw-sequence, as in the store (write)
	}
	id := s.node(lkNode{thread: int8(t)})
	s.insert(x, p, lkMsg{val: v, th: int8(t), glued: rmw, node: int8(id), prom: true})
	if int(obsCF[x]) >= p {
		obsCF[x]++
	}
	obs := obsCF
	obs[x] = uint8(p)
	w := &s.msg[x][p]
	w.obs, w.h = obs, lknow{rH: 1 << id}
	w.ak[t] |= 1 << id
	s.nodes[id].obs = obs
	th = &s.th[t]
	th.prom[th.np] = lkPromise{pc: uint8(pc), node: int8(id)}
	th.np++
	return true
}

func (r *lkRun) step(s *lkState, t int, yield func(*lkState)) {
	p := r.p
	in := p.code[t][s.th[t].pc]
	eval := func(st *lkState, e Expr) int64 {
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
		case OpMb:
			n.strongFence(t, th.hAll, th.accA)
		case OpRmb:
			th.pendHR.join(th.hR)
		case OpWmb:
			th.pendHW.join(th.hW)
			th.wmbObs.join(th.accW)
		case OpMbBeforeAtomic:
			th.baSeen = true
			th.baH.join(th.hAll)
			th.baObs.join(th.accA)
		case OpMbAfterAtomic:
			if th.rmwSeen {
				n.strongFence(t, th.rmwH, th.rmwObs)
			}
		case OpMbAfterSpinlock:
			if th.lkwSeen {
				n.strongFence(t, th.lkwH, th.lkwObs)
			}
		}
		yield(&n)
	case op == OpReadOnce || op == OpLoadAcquire:
		for k := 0; k < int(n.n[x]); k++ {
			m := n
			if rk, ok := m.read(t, x, k, lkRead{acquire: op == OpLoadAcquire}); ok {
				setReg(&m, m.msg[x][k].val, rk)
				yield(&m)
			}
		}
	case op == OpWriteOnce || op == OpStoreRelease || op == OpSpinUnlock:
		var v int64
		var data lknow
		if op != OpSpinUnlock {
			v = eval(s, a.Val)
			data = n.regKnow(p, t, a.Val)
		}
		wf := lkWrite{release: op != OpWriteOnce, ul: op == OpSpinUnlock, data: data}
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
	case op == OpSpinLock:
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
				acquire: ok && info.Order == Acquire, mb: ok && info.Order == Mb}
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
			if _, wok := m.write(t, x, k+1, nv, lkWrite{rmw: true, release: info.Order == Release, mb: info.Order == Mb, data: vt, promise: pr}); !wok {
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

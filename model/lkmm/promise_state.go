package lkmm

import (
	"fmt"

	"github.com/flushproof/flushproof/model/litmus"
)

// The promise-based model's state (Promise): views, knowledge, each
// location's stores in co, event nodes, and the steps that read, write and
// promise under the constraints promise.go's comment describes.

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
	regs  [lkR]int64
	rdep  [lkR]lknow
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
func (s *lkState) regKnow(p *lkProg, t int, e litmus.Expr) lknow {
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

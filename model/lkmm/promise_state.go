package lkmm

import (
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/flushproof/flushproof/model/litmus"
)

// The promise-based model's state (Promise): views, knowledge, each
// location's stores in co, event nodes, and the steps that read, write and
// promise under the constraints promise.go's comment describes.
//
// A state is sized for its test: lkLayout, computed once per test from its
// counts (threads, locations, the stores each location can receive, the
// registers, nested ifs, events and strong fences of each thread, the
// knowledge its code can set), says where each record lies, and the state
// is one []uint64 holding all of it, nothing left unused by a smaller
// test. Copying a state is one copy. It is cut in parts, the stores' and
// one per thread, each hashed on its own so that a step rehashes only
// what it changed (lkRun.key). Each part has four sections:
//
//   - bits: node sets (64 nodes a word): knowledge's references, each
//     store's accessing nodes;
//   - vals: the values of the stores and of the registers;
//   - pos: views, a position of co (uint16) per location; every record
//     of a part's views is a whole number of views, so entry i of them is
//     of location i mod L, which lets an insertion into co shift every
//     view of the state in one pass per part;
//   - sc: the small integers (int32): counts, program counters, node
//     numbers, flags.
//
// Positions are uint16: Outcomes refuses a test with more than 65,535
// stores to one location, whose states would hold tens of megabytes
// each.

// lview is a view: for each location, a position in its co (0 is the
// initial store).
type lview []uint16

func (v lview) join(o lview) {
	for i, p := range o {
		if p > v[i] {
			v[i] = p
		}
	}
}

// lbits is a set of nodes.
type lbits []uint64

func (b lbits) has(n int) bool { return b[n>>6]&(1<<(n&63)) != 0 }
func (b lbits) add(n int)      { b[n>>6] |= 1 << (n & 63) }

func (b lbits) or(o lbits) {
	for i, w := range o {
		b[i] |= w
	}
}

// lknow is knowledge: H's views per thread and G, plus references to
// nodes (events and strong fences) whose knowledge applies too, in full
// (rH) or for its G only (rG). A node's knowledge may grow after later
// events reference it: an edge into an event that already ran (a
// (prop \ id) & int edge from a later access of its thread, a pb edge
// into the events after a strong fence from an access that runs after the
// fence) is added to the node, and every event that references it sees it.
//
// An lknow is a handle on storage in a state or in the run's scratch
// space: assigning it shares the storage; set copies.
type lknow struct {
	v []uint16 // thread t's view at t*l, then G
	b []uint64 // rH, then rG
	l int      // locations
}

func (k lknow) th(t int) lview { return lview(k.v[t*k.l : (t+1)*k.l]) }
func (k lknow) g() lview       { return lview(k.v[len(k.v)-k.l:]) }
func (k lknow) rH() lbits      { return lbits(k.b[:len(k.b)/2]) }
func (k lknow) rG() lbits      { return lbits(k.b[len(k.b)/2:]) }

func (k lknow) join(o lknow) {
	lview(k.v).join(o.v)
	lbits(k.b).or(o.b)
}

func (k lknow) set(o lknow) {
	copy(k.v, o.v)
	copy(k.b, o.b)
}

func (k lknow) clear() {
	clear(k.v)
	clear(k.b)
}

// shift shifts k's positions of location x from p on, after an insert at
// p.
func (k lknow) shift(x, p int) {
	for i := x; i < len(k.v); i += k.l {
		if int(k.v[i]) >= p {
			k.v[i]++
		}
	}
}

// The views of a thread (lkLayout.thPos, in this order).
const (
	vCoh = iota
	vAccA
	vAccW
	vAccCF
	vSfObs
	vWmbObs
	vPulpObs
	vUlCF
	vBaObs
	vRmwObs
	vLkwObs
	thViews
)

// The knowledge of a thread, after its views: these, then hLoc (one per
// location), rdep (one per register) and ctrl (one per nested if). A
// thread has room only for those its code can set (lkUses): kUlH with a
// spin_unlock, kBaH with an smp_mb__before_atomic, kRmwH with an RMW,
// kLkwH with a spin_lock, hLoc for the locations it accesses.
const (
	kUlH = iota
	kBaH
	kRmwH
	kLkwH
	kHAll
	kHR
	kHW
	kPendH
	kPendHR
	kPendHW
	thKnows
)

// The small integers of a thread (lkLayout.thSc): these, then its
// promises not yet fulfilled (the store instruction and the store's node,
// in program order), two each.
const (
	sPC = iota
	sDepth
	sNP // promises outstanding
	sUlSeen
	sBaSeen
	sRmwSeen
	sLkwSeen
	thScalars
)

// The small integers of a store (lkLayout.msgSc).
const (
	mTh    = iota // -1: the initial store
	mGlued        // the write of an RMW (or spin_lock) whose read read the store just before
	mNode         // the store's node, -1 for the initial store
	mProm         // a promise not fulfilled yet
	msgScalars
)

// lkLayout places a test's state: the counts it is sized by and the
// offset of each record. The state is cut in parts, each a run of whole
// words: part 0 holds the stores (and each location's count), part 1+t
// thread t's nodes and its own state. Each part is hashed on its own
// (lkState.key), so that a step rehashes only the parts it changed. Within
// a part come its node sets (bits), its values, its views (pos) and its
// small integers (sc), in that order; the offsets below are in units of
// each section's type over the whole state.
type lkLayout struct {
	T, L int // threads, locations
	N, W int // nodes, and words of a node set
	kv   int // positions of a knowledge: (T+1)*L

	nodeBase   []int // a thread's first node: its nodes are numbered in a block of its own
	nodeCap    []int // the nodes a thread's run can make
	nodeThread []int // the thread of each node
	msgBase    []int // a location's first store record
	msgCap     []int // the stores a location can hold, the initial one included
	M          int   // store records

	R, D, P []int // per thread: registers, nested ifs, promisable stores

	// Per store: pos obs, pulp, h, dep; bits h, dep, then ak, the access
	// nodes of each thread that read or wrote it; sc msgScalars.
	msgPos, msgBits             int
	msgPos0, msgBits0, msgVals0 int
	scN, scMsg                  int
	// Per node: pos know, obs; bits know; sc fence.
	nodePos, nodeBits            int
	nPosOff, nBitsOff, nFenceOff []int
	thNN, thPos, thVals, thSc    []int   // per thread: its node count, views, registers, small integers
	thKPos, thKBits              [][]int // a thread's knowledge: its offsets in pos and bits, -1 if it has no room for it

	parts     [][2]int // each part's words, [start, end)
	posRanges [][2]int // each part's views, [start, end) in pos
	words     int
}

// lkUses is what of a thread's knowledge its code can set (thKnows).
type lkUses struct {
	ul, ba, rmw, lkw bool
	locs             []bool // the locations it accesses
}

func newLayout(nodes, stores, regs, depth, proms []int, uses []lkUses, locs int) *lkLayout {
	T, L := len(nodes), locs
	y := &lkLayout{T: T, L: L, kv: (T + 1) * L, R: regs, D: depth, P: proms, msgCap: stores}
	for t := range T {
		y.nodeBase = append(y.nodeBase, y.N)
		y.nodeCap = append(y.nodeCap, nodes[t])
		for range nodes[t] {
			y.nodeThread = append(y.nodeThread, t)
		}
		y.N += nodes[t]
	}
	y.W = (y.N + 63) / 64
	for x := range L {
		y.msgBase = append(y.msgBase, y.M)
		y.M += stores[x]
	}
	kb := 2 * y.W
	y.msgPos, y.msgBits = 2*L+2*y.kv, 2*kb+T*y.W
	y.nodePos, y.nodeBits = y.kv+L, kb

	// place adds a part of nb words of node sets, nv values, np positions
	// and ns small integers, and returns where its sections start.
	place := func(nb, nv, np, ns int) (b, v, p, c int) {
		b = y.words
		v = b + nb
		p = 4 * (v + nv)
		c = 2 * (v + nv + (np+3)/4)
		end := c/2 + (ns+1)/2
		y.parts = append(y.parts, [2]int{y.words, end})
		y.posRanges = append(y.posRanges, [2]int{p, p + np})
		y.words = end
		return b, v, p, c
	}
	b, v, p, c := place(y.M*y.msgBits, y.M, y.M*y.msgPos, L+y.M*msgScalars)
	y.msgBits0, y.msgVals0, y.msgPos0 = b, v, p
	y.scN, y.scMsg = c, c+L
	for t := range T {
		// The knowledge t has room for: slot[i] is its place among
		// them, -1 if none.
		u := uses[t]
		var slot []int
		nk := 0
		for i := range thKnows + L + regs[t] + depth[t] {
			room := true
			switch {
			case i == kUlH:
				room = u.ul
			case i == kBaH:
				room = u.ba
			case i == kRmwH:
				room = u.rmw
			case i == kLkwH:
				room = u.lkw
			case i >= thKnows && i < thKnows+L:
				room = u.locs[i-thKnows]
			}
			if !room {
				slot = append(slot, -1)
				continue
			}
			slot = append(slot, nk)
			nk++
		}
		b, v, p, c := place(nodes[t]*y.nodeBits+nk*kb, regs[t], nodes[t]*y.nodePos+thViews*L+nk*y.kv, 1+nodes[t]+thScalars+2*proms[t])
		for i := range nodes[t] {
			y.nBitsOff = append(y.nBitsOff, b+i*y.nodeBits)
			y.nPosOff = append(y.nPosOff, p+i*y.nodePos)
			y.nFenceOff = append(y.nFenceOff, c+1+i)
		}
		y.thNN = append(y.thNN, c)
		views := p + nodes[t]*y.nodePos
		y.thPos = append(y.thPos, views)
		var kp, kbits []int
		for _, k := range slot {
			if k < 0 {
				kp, kbits = append(kp, -1), append(kbits, -1)
				continue
			}
			kp = append(kp, views+thViews*L+k*y.kv)
			kbits = append(kbits, b+nodes[t]*y.nodeBits+k*kb)
		}
		y.thKPos, y.thKBits = append(y.thKPos, kp), append(y.thKBits, kbits)
		y.thVals = append(y.thVals, v)
		y.thSc = append(y.thSc, c+1+nodes[t])
	}
	return y
}

// lkState is one state of the search. buf is all of it; bits, vals, pos
// and sc are buf seen as words of each type (lkLayout says where each
// record lies). hs caches two hashes of each part, valid for the parts
// not marked dirty; tmp is the run's scratch space. Only buf is the state:
// hs and dirty are derived from it.
type lkState struct {
	buf   []uint64
	bits  []uint64
	vals  []int64
	pos   []uint16
	sc    []int32
	hs    []uint64
	dirty []bool
	y     *lkLayout
	tmp   *lkScratch
}

func newState(y *lkLayout, tmp *lkScratch) *lkState {
	buf := make([]uint64, y.words+1) // one word more: never empty
	s := &lkState{buf: buf[:y.words], y: y, tmp: tmp, hs: make([]uint64, 2*len(y.parts)), dirty: make([]bool, len(y.parts))}
	s.bits = buf[:y.words]
	s.vals = unsafe.Slice((*int64)(unsafe.Pointer(&buf[0])), y.words)
	s.pos = unsafe.Slice((*uint16)(unsafe.Pointer(&buf[0])), 4*y.words)
	s.sc = unsafe.Slice((*int32)(unsafe.Pointer(&buf[0])), 2*y.words)
	for i := range s.dirty {
		s.dirty[i] = true
	}
	return s
}

// copyFrom makes s a copy of o, cached hashes included.
func (s *lkState) copyFrom(o *lkState) {
	copy(s.buf, o.buf)
	copy(s.hs, o.hs)
	copy(s.dirty, o.dirty)
}

// touch marks part p changed: its hashes are recomputed.
func (s *lkState) touch(p int) { s.dirty[p] = true }

// partBytes is part p as bytes, for hashing.
func (s *lkState) partBytes(p int) []byte {
	r := s.y.parts[p]
	if r[0] == r[1] {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.buf[r[0]])), 8*(r[1]-r[0]))
}

func (s *lkState) know(pos, bits int) lknow {
	y := s.y
	return lknow{v: s.pos[pos : pos+y.kv : pos+y.kv], b: s.bits[bits : bits+2*y.W : bits+2*y.W], l: y.L}
}

func (s *lkState) view(pos int) lview { return lview(s.pos[pos : pos+s.y.L : pos+s.y.L]) }

// Locations and stores.

func (s *lkState) n(x int) int { return int(s.sc[s.y.scN+x]) }

func (s *lkState) mi(x, i int) int { return s.y.msgBase[x] + i }

func (s *lkState) mVal(x, i int) int64 { return s.vals[s.y.msgVals0+s.mi(x, i)] }

func (s *lkState) mSc(x, i, f int) int32 { return s.sc[s.y.scMsg+s.mi(x, i)*msgScalars+f] }

func (s *lkState) setMSc(x, i, f int, v int32) { s.sc[s.y.scMsg+s.mi(x, i)*msgScalars+f] = v }

func (s *lkState) mObs(x, i int) lview { return s.view(s.y.msgPos0 + s.mi(x, i)*s.y.msgPos) }

func (s *lkState) mPulp(x, i int) lview { return s.view(s.y.msgPos0 + s.mi(x, i)*s.y.msgPos + s.y.L) }

func (s *lkState) mH(x, i int) lknow {
	m := s.mi(x, i)
	return s.know(s.y.msgPos0+m*s.y.msgPos+2*s.y.L, s.y.msgBits0+m*s.y.msgBits)
}

func (s *lkState) mDep(x, i int) lknow {
	m := s.mi(x, i)
	return s.know(s.y.msgPos0+m*s.y.msgPos+2*s.y.L+s.y.kv, s.y.msgBits0+m*s.y.msgBits+2*s.y.W)
}

// mAk are the access nodes of thread t that read or wrote the store.
func (s *lkState) mAk(x, i, t int) lbits {
	o := s.y.msgBits0 + s.mi(x, i)*s.y.msgBits + 4*s.y.W + t*s.y.W
	return lbits(s.bits[o : o+s.y.W : o+s.y.W])
}

// Nodes.

func (s *lkState) nn(t int) int { return int(s.sc[s.y.thNN[t]]) }

func (s *lkState) nKnow(n int) lknow { return s.know(s.y.nPosOff[n], s.y.nBitsOff[n]) }

func (s *lkState) nObs(n int) lview { return s.view(s.y.nPosOff[n] + s.y.kv) }

func (s *lkState) nFence(n int) bool { return s.sc[s.y.nFenceOff[n]] != 0 }

// Threads.

func (s *lkState) tv(t, i int) lview { return s.view(s.y.thPos[t] + i*s.y.L) }

func (s *lkState) tk(t, i int) lknow {
	po := s.y.thKPos[t][i]
	if po < 0 {
		panic(fmt.Sprintf("litmus: LKMM: thread %d has no room for its knowledge %d", t, i))
	}
	return s.know(po, s.y.thKBits[t][i])
}

func (s *lkState) hLoc(t, x int) lknow { return s.tk(t, thKnows+x) }
func (s *lkState) rdep(t, r int) lknow { return s.tk(t, thKnows+s.y.L+r) }
func (s *lkState) ctrl(t, d int) lknow { return s.tk(t, thKnows+s.y.L+s.y.R[t]+d) }

func (s *lkState) reg(t, r int) int64       { return s.vals[s.y.thVals[t]+r] }
func (s *lkState) setReg(t, r int, v int64) { s.vals[s.y.thVals[t]+r] = v }
func (s *lkState) ts(t, f int) int          { return int(s.sc[s.y.thSc[t]+f]) }
func (s *lkState) setTs(t, f, v int)        { s.sc[s.y.thSc[t]+f] = int32(v) }
func (s *lkState) flag(t, f int) bool       { return s.sc[s.y.thSc[t]+f] != 0 }
func (s *lkState) setFlag(t, f int, v bool) { s.setTs(t, f, b2i(v)) }
func (s *lkState) promPC(t, i int) int      { return s.ts(t, thScalars+2*i) }
func (s *lkState) promNode(t, i int) int    { return s.ts(t, thScalars+2*i+1) }
func (s *lkState) setProm(t, i, pc, nd int) {
	s.setTs(t, thScalars+2*i, pc)
	s.setTs(t, thScalars+2*i+1, nd)
}
func (s *lkState) coh(t, x int) int { return int(s.tv(t, vCoh)[x]) }
func (s *lkState) pc(t int) int     { return s.ts(t, sPC) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lkScratch is the run's scratch space: knowledge and views a step
// computes and drops. A step marks it on entry and releases to the mark
// when done, so the space a search uses is that of its deepest path; what
// it hands out stays in place (it grows by blocks, never moving them).
type lkScratch struct {
	y     *lkLayout
	knows []lknow
	nk    int
	views []lview
	nv    int
	stack []int // reach's work list
}

type lkMark struct{ k, v int }

func (a *lkScratch) mark() lkMark         { return lkMark{a.nk, a.nv} }
func (a *lkScratch) release(m lkMark)     { a.nk, a.nv = m.k, m.v }
func (a *lkScratch) knowOf(o lknow) lknow { k := a.know(); k.set(o); return k }
func (a *lkScratch) viewOf(o lview) lview { v := a.view(); copy(v, o); return v }

// know returns zeroed knowledge.
func (a *lkScratch) know() lknow {
	if a.nk == len(a.knows) {
		const block = 32
		y := a.y
		pos := make([]uint16, block*y.kv)
		bits := make([]uint64, block*2*y.W)
		for i := range block {
			p, b := pos[i*y.kv:(i+1)*y.kv:(i+1)*y.kv], bits[i*2*y.W:(i+1)*2*y.W:(i+1)*2*y.W]
			a.knows = append(a.knows, lknow{v: p, b: b, l: y.L})
		}
	}
	k := a.knows[a.nk]
	a.nk++
	k.clear()
	return k
}

// view returns a zeroed view.
func (a *lkScratch) view() lview {
	if a.nv == len(a.views) {
		const block = 64
		L := a.y.L
		pos := make([]uint16, block*L)
		for i := range block {
			a.views = append(a.views, lview(pos[i*L:(i+1)*L:(i+1)*L]))
		}
	}
	v := a.views[a.nv]
	a.nv++
	clear(v)
	return v
}

// node adds a node of thread t and returns it. A thread's nodes are
// numbered in the order it makes them, in a block of its own, so that two
// runs that differ only in how the threads interleave give equal states.
// The layout gives each thread room for every node its run can make.
func (s *lkState) node(t int, fence bool) int {
	nn := s.nn(t)
	if nn == s.y.nodeCap[t] {
		panic(fmt.Sprintf("litmus: LKMM: more than the %d events and fences counted in thread %d", nn, t))
	}
	id := s.y.nodeBase[t] + nn
	s.sc[s.y.thNN[t]]++
	if fence {
		s.sc[s.y.nFenceOff[id]] = 1
	}
	return id
}

// reach returns the nodes k references, transitively: those whose
// knowledge applies in full, and those whose G applies (scratch sets).
func (s *lkState) reach(k lknow) (full, g lbits) {
	tk := s.tmp.know()
	full, g = tk.rH(), tk.rG()
	full.or(k.rH())
	s.closeOver(full, func(n int) lbits { return s.nKnow(n).rH() }, nil)
	g.or(k.rG())
	s.each(full, func(n int) { g.or(s.nKnow(n).rG()) })
	s.closeOver(g, func(n int) lbits { return s.nKnow(n).rH() }, func(n int) lbits { return s.nKnow(n).rG() })
	return full, g
}

// each calls f on every node of b.
func (s *lkState) each(b lbits, f func(int)) {
	for w, word := range b {
		for word != 0 {
			i := bits.TrailingZeros64(word)
			word &^= 1 << i
			f(w*64 + i)
		}
	}
}

// closeOver adds to b, until nothing changes, the nodes e(n) and f(n)
// (f may be nil) of every node n in b.
func (s *lkState) closeOver(b lbits, e, f func(int) lbits) {
	st := s.tmp.stack[:0]
	s.each(b, func(n int) { st = append(st, n) })
	push := func(o lbits) {
		for w, word := range o {
			word &^= b[w]
			b[w] |= word
			for word != 0 {
				i := bits.TrailingZeros64(word)
				word &^= 1 << i
				st = append(st, w*64+i)
			}
		}
	}
	for len(st) > 0 {
		n := st[len(st)-1]
		st = st[:len(st)-1]
		push(e(n))
		if f != nil {
			push(f(n))
		}
	}
	s.tmp.stack = st
}

// bound is what k's references resolved (its views joined with those of
// the nodes it references, transitively, rG ones for their G only) say
// of location x: thread t's position and G's.
func (s *lkState) bound(k lknow, t, x int) (tx, gx int) {
	full, g := s.reach(k)
	tx, gx = int(k.th(t)[x]), int(k.g()[x])
	s.each(full, func(n int) {
		nk := s.nKnow(n)
		tx = max(tx, int(nk.th(t)[x]))
		gx = max(gx, int(nk.g()[x]))
	})
	s.each(g, func(n int) { gx = max(gx, int(s.nKnow(n).g()[x])) })
	return tx, gx
}

// ceil is the first position of x that thread t's own accesses may not
// reach: its earliest promise to x (a store later in program order, so
// every access before it in program order is before it in co).
func (s *lkState) ceil(t, x int) int {
	c := s.n(x) + 1
	for i := range s.ts(t, sNP) {
		if p := s.posOf(x, s.promNode(t, i)); p >= 0 && p < c {
			c = p
		}
	}
	return c
}

// posOf is the position in x's co of the store whose node is n, -1 if
// none.
func (s *lkState) posOf(x, n int) int {
	for i := range s.n(x) {
		if int(s.mSc(x, i, mNode)) == n {
			return i
		}
	}
	return -1
}

// insert places a store of thread t with value v at position p of
// location x's co, its node nd, after shifting every view of a later
// store; its views and knowledge are zero.
func (s *lkState) insert(x, p int, v int64, t, nd int, glued, prom bool) {
	y := s.y
	if s.n(x) == y.msgCap[x] {
		panic(fmt.Sprintf("litmus: LKMM: more than the %d stores counted to location %d", y.msgCap[x]-1, x))
	}
	// Each part's views are whole views from its start (lkLayout), so
	// entry i of them is of location i mod L; unused views are 0 and p
	// is at least 1, so shifting them all is shifting the used ones. A
	// part with a view shifted is rehashed. Views hold positions of
	// stores that exist, below n: a store placed last shifts none.
	for part, r := range y.posRanges {
		if p == s.n(x) {
			break
		}
		changed := false
		for i := r[0] + x; i < r[1]; i += y.L {
			if int(s.pos[i]) >= p {
				s.pos[i]++
				changed = true
			}
		}
		if changed {
			s.touch(part)
		}
	}
	s.touch(0)
	a, n := s.mi(x, p), s.mi(x, s.n(x))
	move := func(off, stride int, f func(from, to, end int)) {
		f(off+a*stride, off+(a+1)*stride, off+(n+1)*stride)
	}
	move(y.msgPos0, y.msgPos, func(from, to, end int) {
		copy(s.pos[to:end], s.pos[from:end])
		clear(s.pos[from:to])
	})
	move(y.msgBits0, y.msgBits, func(from, to, end int) {
		copy(s.bits[to:end], s.bits[from:end])
		clear(s.bits[from:to])
	})
	move(y.msgVals0, 1, func(from, to, end int) { copy(s.vals[to:end], s.vals[from:end]) })
	move(y.scMsg, msgScalars, func(from, to, end int) { copy(s.sc[to:end], s.sc[from:end]) })
	s.vals[y.msgVals0+a] = v
	s.setMSc(x, p, mTh, int32(t))
	s.setMSc(x, p, mGlued, int32(b2i(glued)))
	s.setMSc(x, p, mNode, int32(nd))
	s.setMSc(x, p, mProm, int32(b2i(prom)))
	s.sc[y.scN+x]++
}

// propInt references thread t's accesses that precede, in co, a store
// of obs: the (prop \ id) & int edges into an event whose Obs is obs.
func (s *lkState) propInt(t int, obs lview, k lknow) {
	rh := k.rH()
	for x := range obs {
		for j := 0; j < int(obs[x]) && j < s.n(x); j++ {
			rh.or(s.mAk(x, j, t))
		}
	}
}

// pbProp references, for their G, every access that precedes, in co, a
// store of obs: the pb edges from them through a strong fence whose Obs is
// obs.
func (s *lkState) pbProp(obs lview, k lknow) {
	rg := k.rG()
	for x := range obs {
		for j := 0; j < int(obs[x]) && j < s.n(x); j++ {
			for t := range s.y.T {
				rg.or(s.mAk(x, j, t))
			}
		}
	}
}

// late adds the edges into nodes that already ran from the access a of
// thread t at position j of x: to every earlier access b of t whose Obs
// has a store of x after j ((prop \ id) & int), and to every strong
// fence whose Obs has one (pb, for G).
func (s *lkState) late(t, a, x, j int) {
	for u := range s.y.T {
		base := s.y.nodeBase[u]
		for n := base; n < base+s.nn(u); n++ {
			if n == a || int(s.nObs(n)[x]) <= j {
				continue
			}
			var set lbits
			switch {
			case s.nFence(n):
				set = s.nKnow(n).rG()
			case u == t:
				set = s.nKnow(n).rH()
			default:
				continue
			}
			if !set.has(a) {
				set.add(a)
				s.touch(1 + u)
			}
		}
	}
}

// beforeAtomic applies the smp_mb__before_atomic fences of t before its
// first RMW event after them: what precedes them is strong-fence-before
// that event and everything after it.
func (s *lkState) beforeAtomic(t int) {
	h, obs := s.tmp.knowOf(s.tk(t, kBaH)), s.tmp.viewOf(s.tv(t, vBaObs))
	s.setFlag(t, sBaSeen, false)
	s.tk(t, kBaH).clear()
	clear(s.tv(t, vBaObs))
	s.strongFence(t, h, obs)
}

// strongFence makes every later event of t strong-fence-after the events
// whose H joins to h and whose Obs joins to obs.
func (s *lkState) strongFence(t int, h lknow, obs lview) {
	n := s.node(t, true)
	f := s.nKnow(n)
	copy(f.g(), obs)
	s.pbProp(obs, f)
	copy(s.nObs(n), obs)
	pend := s.tk(t, kPendH)
	pend.join(h)
	s.tv(t, vSfObs).join(obs)
	pend.rH().add(n)
}

// regKnow joins the H of the loads the registers of e come from
// (scratch).
func (s *lkState) regKnow(p *lkProg, t int, e litmus.Expr) lknow {
	k := s.tmp.know()
	e.Regs(func(name string) { k.join(s.rdep(t, p.regs[t][name])) })
	return k
}

type lkRead struct {
	acquire, mb, noreturn, rmw bool
	lkr                        bool
}

type lkWrite struct {
	release, mb, rmw, ul, lkw bool
	data                      lknow // zero: none
	promise                   int   // node+1 of the promise this write fulfils, 0 if none
}

// read performs a read of x by t that reads position k, if the axioms
// allow, and returns its H (scratch); ok is false if they do not.
func (s *lkState) read(t, x, k int, f lkRead) (lknow, bool) {
	if k < s.coh(t, x) || k >= s.ceil(t, x) {
		return lknow{}, false
	}
	if f.rmw && s.flag(t, sBaSeen) {
		s.beforeAtomic(t)
	}
	know := s.tmp.knowOf(s.tk(t, kPendH))
	if !f.noreturn {
		know.join(s.tk(t, kPendHR))
	}
	obsCF := s.tmp.viewOf(s.tv(t, vSfObs))
	obsCF.join(s.tv(t, vPulpObs))
	if f.mb {
		// Every earlier access is strong-fence-before this read: a
		// fence node of its own, which the read references.
		accA := s.tv(t, vAccA)
		know.join(s.tk(t, kHAll))
		obsCF.join(accA)
		id := s.node(t, true)
		fk := s.nKnow(id)
		copy(fk.g(), accA)
		s.pbProp(accA, fk)
		copy(s.nObs(id), accA)
		know.rH().add(id)
	}
	from := int(s.mSc(x, k, mTh))
	obs := s.tmp.viewOf(obsCF)
	if from != t {
		obs.join(s.mObs(x, k))
		know.join(s.mH(x, k))
	} else {
		know.join(s.mDep(x, k))
	}
	s.propInt(t, obs, know)
	if tx, gx := s.bound(know, t, x); k < tx || k < gx {
		return lknow{}, false
	}
	know.th(t).join(obs)
	id := s.node(t, false)
	know.rH().add(id)
	s.nKnow(id).set(know)
	copy(s.nObs(id), obs)
	s.tv(t, vCoh)[x] = uint16(k)
	s.tv(t, vAccA).join(obs)
	s.tv(t, vAccCF).join(obsCF)
	s.tk(t, kHAll).join(know)
	if !f.noreturn {
		s.tk(t, kHR).join(know)
	}
	s.hLoc(t, x).join(know)
	if f.acquire {
		s.tk(t, kPendH).join(know)
	}
	s.mAk(x, k, t).add(id)
	s.late(t, id, x, k)
	if f.lkr {
		if s.flag(t, sUlSeen) {
			s.tk(t, kPendH).join(s.tk(t, kUlH))
			s.tv(t, vPulpObs).join(s.tv(t, vUlCF))
		}
		if from != t {
			s.tv(t, vPulpObs).join(s.mPulp(x, k))
		}
	}
	if f.rmw {
		s.setFlag(t, sRmwSeen, true)
		s.tk(t, kRmwH).set(s.tk(t, kHAll))
		copy(s.tv(t, vRmwObs), s.tv(t, vAccA))
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
func (s *lkState) write(t, x, p int, v int64, f lkWrite) bool {
	fulfil := f.promise > 0
	n := s.n(x)
	if p <= s.coh(t, x) || p > n {
		return false
	}
	if fulfil {
		if int(s.mSc(x, p, mNode)) != f.promise-1 || s.mVal(x, p) != v {
			return false
		}
	} else if p > s.ceil(t, x) || (p < n && s.mSc(x, p, mGlued) != 0) {
		return false
	}
	if f.rmw && s.flag(t, sBaSeen) {
		s.beforeAtomic(t)
	}
	know := s.tmp.knowOf(s.tk(t, kPendH))
	know.join(s.tk(t, kPendHW))
	know.join(s.hLoc(t, x))
	// data is this write's copy: the caller's stays unshifted.
	data := s.tmp.know()
	if f.data.v != nil {
		data.set(f.data)
	}
	know.join(data)
	if d := s.ts(t, sDepth); d > 0 {
		know.join(s.ctrl(t, d-1))
	}
	obsCF := s.tmp.viewOf(s.tv(t, vSfObs))
	obsCF.join(s.tv(t, vWmbObs))
	obsCF.join(s.tv(t, vPulpObs))
	if f.release {
		know.join(s.tk(t, kHAll))
		obsCF.join(s.tv(t, vAccA))
	}
	if (f.rmw || f.lkw) && p > 0 {
		// rmw-sequence (cumul-fence ends with (rf ; rmw)*): what
		// propagates before the store the RMW read, store p-1,
		// propagates before its own.
		obsCF.join(s.mObs(x, p-1))
	}
	s.propInt(t, obsCF, know)
	if tx, gx := s.bound(know, t, x); p <= tx || p <= gx {
		return false
	}
	if f.ul {
		s.setFlag(t, sUlSeen, true)
		s.tk(t, kUlH).set(s.tk(t, kHAll))
		copy(s.tv(t, vUlCF), s.tv(t, vAccCF))
	}
	var id int
	obs := s.tmp.view()
	if fulfil {
		id = f.promise - 1
		if full, g := s.reach(know); full.has(id) || g.has(id) {
			return false
		}
		copy(obs, obsCF)
		obs[x] = uint16(p)
		if !slices.Equal(obs, s.mObs(x, p)) {
			return false
		}
		s.setMSc(x, p, mProm, 0)
		s.dropPromise(t, id)
	} else {
		id = s.node(t, false)
		s.insert(x, p, v, t, id, f.rmw || f.lkw, false)
		// Views were shifted: shift the ones held in scratch too.
		know.shift(x, p)
		data.shift(x, p)
		if int(obsCF[x]) >= p {
			obsCF[x]++
		}
		copy(obs, obsCF)
		obs[x] = uint16(p)
	}
	know.th(t).join(obs)
	know.rH().add(id)
	s.nKnow(id).set(know)
	copy(s.nObs(id), obs)
	copy(s.mObs(x, p), obs)
	s.mH(x, p).set(know)
	s.mDep(x, p).set(data)
	if f.ul {
		copy(s.mPulp(x, p), s.tv(t, vUlCF))
	}
	s.mAk(x, p, t).add(id)
	s.late(t, id, x, p)
	s.tv(t, vCoh)[x] = uint16(p)
	s.tv(t, vAccA).join(obs)
	s.tv(t, vAccW).join(obs)
	s.tv(t, vAccCF).join(obs)
	s.tk(t, kHAll).join(know)
	s.tk(t, kHW).join(know)
	s.hLoc(t, x).join(know)
	if f.mb {
		s.strongFence(t, know, obs)
	}
	if f.rmw {
		s.setFlag(t, sRmwSeen, true)
		s.tk(t, kRmwH).set(s.tk(t, kHAll))
		copy(s.tv(t, vRmwObs), s.tv(t, vAccA))
	}
	if f.lkw {
		s.setFlag(t, sLkwSeen, true)
		s.tk(t, kLkwH).set(s.tk(t, kHAll))
		copy(s.tv(t, vLkwObs), s.tv(t, vAccA))
	}
	return true
}

// dropPromise removes t's promise whose store's node is n.
func (s *lkState) dropPromise(t, n int) {
	np := s.ts(t, sNP)
	for i := range np {
		if s.promNode(t, i) == n {
			for j := i; j+1 < np; j++ {
				s.setProm(t, j, s.promPC(t, j+1), s.promNode(t, j+1))
			}
			s.setProm(t, np-1, 0, 0)
			s.setTs(t, sNP, np-1)
			return
		}
	}
}

// promised returns the node+1 of t's promise for instruction pc, 0 if
// none.
func (s *lkState) promised(t, pc int) int {
	for i := range s.ts(t, sNP) {
		if s.promPC(t, i) == pc {
			return s.promNode(t, i) + 1
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
	n := s.n(x)
	np := s.ts(t, sNP)
	if np == s.y.P[t] || p <= s.coh(t, x) || p > n || (p < n && s.mSc(x, p, mGlued) != 0) {
		return false
	}
	// Co follows program order among t's stores to x.
	for i := range np {
		q := s.posOf(x, s.promNode(t, i))
		if q < 0 {
			continue
		}
		if ppc := s.promPC(t, i); ppc < pc && p <= q || ppc > pc && p > q {
			return false
		}
	}
	s.touch(0)
	s.touch(1 + t)
	obsCF := s.tmp.viewOf(s.tv(t, vSfObs))
	obsCF.join(s.tv(t, vWmbObs))
	obsCF.join(s.tv(t, vPulpObs))
	if release {
		obsCF.join(s.tv(t, vAccA))
	}
	if rmw && p > 0 {
		obsCF.join(s.mObs(x, p-1)) // rmw-sequence, as in the store (write)
	}
	id := s.node(t, false)
	s.insert(x, p, v, t, id, rmw, true)
	if int(obsCF[x]) >= p {
		obsCF[x]++
	}
	obsCF[x] = uint16(p)
	copy(s.mObs(x, p), obsCF)
	s.mH(x, p).rH().add(id)
	s.mAk(x, p, t).add(id)
	copy(s.nObs(id), obsCF)
	s.setProm(t, np, pc, id)
	s.setTs(t, sNP, np+1)
	return true
}

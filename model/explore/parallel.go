package explore

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// worker expands parents of a level for parallelLevel.
type worker[S comparable] struct {
	e      *explorer[S]
	parent int32
	k      uint32 // index of the next transition of parent
	edges  []oldEdge
	pedges []pendEdge
	yield  func(Label, S)
	fresh  int64  // states this worker added to the level since it last counted them in e.levelNew
	cod    *coder // collapsed states: this worker's encoder
	s      S      // the parent being expanded
}

// oldEdge is the k-th transition of from, to state to, found before the
// level.
type oldEdge struct {
	from, to int32
	k        uint32
}

// pendEdge is the k-th transition of from, to a state new in the level
// (e.pend[shard], state idx).
type pendEdge struct {
	from  int32
	k     uint32
	shard uint32
	idx   int32
}

func (w *worker[S]) step(l Label, t S) {
	e := w.e
	key := uint64(w.parent)<<32 | uint64(w.k)
	w.k++
	c := t
	if e.sym {
		c = e.canon.Canonical(t)
	}
	var (
		h      uint64
		id     int32
		old    bool
		idx    int32
		fresh  bool
		pieces = w.cod != nil
	)
	if pieces {
		// The tables of pieces do not change during the level: a state
		// with a piece not in them is new.
		var complete bool
		h, complete = w.cod.encode(unsafe.Pointer(&c), false)
		if complete {
			id, old = e.vis.findVec(w.cod.vec, h)
		}
	} else {
		h = e.vis.hash(&c)
		id, old = e.vis.find(&c, h)
	}
	if old {
		if e.opt.Liveness {
			w.edges = append(w.edges, oldEdge{w.parent, id, uint32(key)})
		}
		return
	}
	sh := h >> (64 - shardBits)
	p := &e.pend[sh]
	p.mu.Lock()
	if pieces {
		idx, fresh = p.addVec(w.cod, unsafe.Pointer(&c), h, key, l)
	} else {
		idx, fresh = p.add(&c, h, key, l)
	}
	p.mu.Unlock()
	if fresh {
		w.fresh++
		if e.sys.Check(t) != nil {
			// ViolationAt asks Check again for the message, in the
			// rebuilt path's names.
			p.mu.Lock()
			p.meta[idx].bad = true
			p.mu.Unlock()
		}
	}
	if e.opt.Liveness {
		w.pedges = append(w.pedges, pendEdge{w.parent, uint32(key), uint32(sh), idx})
	}
}

// expand takes chunks of parents lo..hi-1 from next until none is left,
// or until the search is to stop (e.abort). The goroutine that called
// Explore (main) reports progress and polls meanwhile.
func (w *worker[S]) expand(lo, hi int32, next *atomic.Int64, main bool) {
	e := w.e
	size := int64(hi - lo)
	for chunks := 1; ; chunks++ {
		e.levelNew.Add(w.fresh)
		w.fresh = 0
		if e.abort.Load() {
			return
		}
		if main && chunks%pollChunks == 0 {
			// The level's new states wait in e.pend; numbering them will
			// take about as much again (levelBytes).
			n := int(e.levelNew.Load())
			if why := e.poll(e.pendBytes(n) + e.levelBytes(n)); why != "" {
				e.abortWhy = why
				e.abort.Store(true)
				return
			}
		}
		from := next.Add(parChunk) - parChunk
		if from >= size {
			return
		}
		to := min(from+parChunk, size)
		for off := from; off < to; off++ {
			w.parent, w.k = lo+int32(off), 0
			e.r.states.get(w.parent, &w.s)
			if w.cod != nil {
				w.cod.setParent(w.parent, unsafe.Pointer(&w.s))
			}
			e.sys.Next(w.s, w.yield)
			n := int32(w.k)
			if n == 0 && e.sys.Unfinished(w.s) != 0 && !speculative(e.sys, w.s) {
				n = -1
			}
			e.nTrans[off] = n
		}
		if main && e.opt.Progress != nil && time.Since(e.lastProgress) > time.Second {
			e.progress()
		}
	}
}

// parallel runs f(0) .. f(e.workers-1), f(0) in the calling goroutine. A
// panic in another goroutine (a system's Next, say) is raised again in the
// calling one, as the sequential search would.
func (e *explorer[S]) parallel(f func(w int)) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	for w := 1; w < e.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					panicked = p
					mu.Unlock()
				}
			}()
			f(w)
		}()
	}
	func() {
		defer wg.Wait() // also if f(0) panics: the others must stop first
		f(0)
	}()
	if panicked != nil {
		panic(panicked)
	}
}

// parallelLevel expands the states lo..hi-1 with e.workers goroutines and
// numbers the new states as sequentialLevel would. It reports whether the
// search stops.
func (e *explorer[S]) parallelLevel(lo, hi int32) bool {
	r := e.r
	size := int(hi - lo)
	if e.pend == nil {
		e.pend = new([nShards]pendShard[S])
		for range e.workers {
			w := &worker[S]{e: e}
			w.yield = w.step
			if c := r.states.col; c != nil {
				w.cod = newCoder(c)
			}
			e.ws = append(e.ws, w)
		}
	}
	for i := range e.pend {
		e.pend[i].reset()
	}
	e.nTrans = grown(e.nTrans, size)

	// 1. Expand, in parallel.
	var next atomic.Int64
	e.levelNew.Store(0)
	e.parallel(func(w int) { e.ws[w].expand(lo, hi, &next, w == 0) })
	if e.abort.Load() {
		// The level's states are dropped unnumbered: the result counts
		// the levels before it.
		r.Stopped = e.abortWhy
		return true
	}
	total := 0
	for i := range e.pend {
		total += len(e.pend[i].meta)
	}
	if why := e.poll(e.levelBytes(total)); why != "" {
		r.Stopped = why
		return true
	}

	// 2. Number the new states in (parent, transition index) order: a
	// counting sort by parent, then by transition index within a parent.
	seg := grown(e.seg, size)
	clear(seg)
	for i := range e.pend {
		for _, m := range e.pend[i].meta {
			seg[int32(m.key>>32)-lo]++
		}
	}
	at := int32(0)
	for off, c := range seg {
		seg[off] = at // where its new states start, for now
		at += c
	}
	order := grown(e.order, total)
	for i := range e.pend {
		for idx, m := range e.pend[i].meta {
			off := int32(m.key>>32) - lo
			order[seg[off]] = uint64(i)<<32 | uint64(idx)
			seg[off]++ // in the end, where they end
		}
	}
	e.seg, e.order = seg, order
	key := func(ref uint64) uint64 { return e.pend[ref>>32].meta[uint32(ref)].key }
	from := 0
	for _, to := range seg {
		if part := order[from:to]; len(part) > 16 {
			slices.SortFunc(part, func(a, b uint64) int { return cmp.Compare(key(a), key(b)) })
		} else {
			for i := 1; i < len(part); i++ { // insertion sort: few per parent
				for j := i; j > 0 && key(part[j]) < key(part[j-1]); j-- {
					part[j], part[j-1] = part[j-1], part[j]
				}
			}
		}
		from = int(to)
	}
	// Visit the parents in order, as the sequential search does.
	id := int32(r.states.len())
	var (
		stopped  bool
		bad      = int32(-1)
		deadlock = int32(-1)
	)
	from = 0
	for off := 0; off < size && !stopped; off++ {
		parent := lo + int32(off)
		for _, ref := range order[from:seg[off]] {
			p := &e.pend[ref>>32]
			idx := int32(uint32(ref))
			m := &p.meta[idx]
			p.ids[idx] = id
			r.parent.push(&parent)
			r.label.push(m.label)
			if m.bad {
				r.Transitions += int(uint32(m.key)) + 1
				bad, stopped = id, true
				id++
				break
			}
			id++
		}
		from = int(seg[off])
		if stopped {
			break
		}
		switch n := e.nTrans[off]; {
		case n < 0:
			deadlock, stopped = parent, true
		default:
			r.Transitions += int(n)
			if e.budget() > 0 && int(id) >= e.budget() {
				stopped, r.Stopped = true, StopStates
			}
		}
	}

	// 3. Store the numbered states and, unless the search stops, add them to
	// the visited set: in parallel, shard by shard. Collapsed states first
	// have their new pieces added to the tables, in parallel, table by
	// table.
	if c := r.states.col; c != nil {
		e.addPieces(c)
	}
	r.states.resize(int(id))
	var nextShard atomic.Int32
	e.parallel(func(int) {
		for {
			i := int(nextShard.Add(1) - 1)
			if i >= nShards {
				return
			}
			p := &e.pend[i]
			t := &e.vis.shards[i]
			for idx, h := range p.hs {
				id := p.ids[idx]
				if id < 0 {
					continue
				}
				if c := r.states.col; c != nil {
					copy(c.vecs.at(id), p.vecs[idx*c.vecs.k:(idx+1)*c.vecs.k])
				} else {
					*r.states.whole.at(id) = p.whole[idx]
				}
				if !stopped {
					t.insert(h, id)
				}
			}
		}
	})
	switch {
	case bad >= 0:
		r.Violation = r.ViolationAt(Safety, int(bad), e.sys.Check)
	case deadlock >= 0:
		r.Violation = e.deadlock(deadlock)
	}
	if stopped {
		return true
	}
	if e.opt.Liveness {
		e.levelEdges(lo, hi)
	}
	if e.opt.Progress != nil && time.Since(e.lastProgress) > time.Second {
		e.progress()
	}
	return false
}

// addPieces adds to the tables the pieces that the level's numbered
// states brought (provisional ids in their vectors) and gives those states
// the pieces' ids: each table is filled by one goroutine, in the order of
// the shards and of the states in them.
func (e *explorer[S]) addPieces(c *collapsed) {
	k := c.vecs.k
	var next atomic.Int32
	e.parallel(func(int) {
		for {
			j := int(next.Add(1) - 1)
			if j >= k {
				return
			}
			t := &c.tabs[j]
			for i := range e.pend {
				p := &e.pend[i]
				if len(p.rawAt) == 0 {
					continue
				}
				for idx, id := range p.ids {
					v := &p.vecs[idx*k+j]
					if id < 0 || *v&provisional == 0 {
						continue
					}
					img := p.rawPiece(*v, t.size)
					h := maphash.Bytes(c.seed, img)
					got, ok := t.find(img, h)
					if !ok {
						got = t.add(img, h)
					}
					*v = got
				}
			}
		}
	})
}

// levelEdges adds the transitions of the parents lo..hi-1, which the
// workers found in any order, to e.succ in the order of their parents and
// of the parents' transitions, and their counts to e.nsucc.
func (e *explorer[S]) levelEdges(lo, hi int32) {
	size := int(hi - lo)
	// Where each parent's transitions start in the level's.
	seg := grown(e.seg, size+1)
	total := int32(0)
	for off := 0; off < size; off++ {
		seg[off] = total
		total += max(e.nTrans[off], 0)
	}
	seg[size] = total
	to := grown(e.lvl, int(total))
	for _, w := range e.ws {
		for _, ed := range w.edges {
			to[seg[ed.from-lo]+int32(ed.k)] = ed.to
		}
		for _, pe := range w.pedges {
			to[seg[pe.from-lo]+int32(pe.k)] = e.pend[pe.shard].ids[pe.idx]
		}
		w.edges, w.pedges = w.edges[:0], w.pedges[:0]
	}
	for i := range to {
		e.succ.push(&to[i])
	}
	for off := 0; off < size; off++ {
		n := seg[off+1] - seg[off]
		e.nsucc.push(&n)
	}
	e.seg, e.lvl = seg, to
}

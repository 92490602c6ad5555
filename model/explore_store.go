package model

import (
	"fmt"
	"hash/maphash"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"unsafe"
)

// grown returns s with length n, reallocated only if it is too short.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// The state store: states in chunks of chunkLen, so that it grows without
// copying (one slice of millions of states would be copied at every
// doubling, and need three times its size meanwhile). The first chunk grows
// like a slice, so that small searches stay small.
const (
	chunkBits = 14
	chunkLen  = 1 << chunkBits
	chunkMask = chunkLen - 1
)

type stateStore[S any] struct {
	chunks [][]S
	n      int
}

func (st *stateStore[S]) at(id int32) *S { return &st.chunks[id>>chunkBits][id&chunkMask] }

// push appends *s and returns its id.
func (st *stateStore[S]) push(s *S) int32 {
	id := int32(st.n)
	if c := st.n >> chunkBits; c < len(st.chunks) {
		if ch := st.chunks[c]; len(ch) < cap(ch) {
			st.chunks[c] = append(ch, *s)
			st.n++
			return id
		}
	}
	st.resize(st.n + 1)
	*st.at(id) = *s
	return id
}

// resize grows the store to n states (zero states at the end).
func (st *stateStore[S]) resize(n int) {
	for st.n < n {
		c, off := st.n>>chunkBits, st.n&chunkMask
		if c == len(st.chunks) {
			st.chunks = append(st.chunks, nil)
		}
		ch := st.chunks[c]
		want := min(chunkLen, off+(n-st.n))
		if want > cap(ch) {
			size := chunkLen
			if c == 0 {
				size = min(chunkLen, max(want, 2*cap(ch), 16))
			}
			grown := make([]S, want, size)
			copy(grown, ch)
			ch = grown
		}
		st.chunks[c] = ch[:want]
		st.n += want - off
	}
}

// The visited set: nShards open-addressing tables (linear probing) of
// slots that hold the low 32 bits of a state's hash and its id+1 (0 is an
// empty slot). The states themselves stay in the store. A state's shard is
// given by the top bits of its hash, its slot by the low bits.
const (
	shardBits = 6
	nShards   = 1 << shardBits
)

type visited[S comparable] struct {
	seed   maphash.Seed
	states *stateStore[S]
	shards [nShards]idTable
}

type idTable struct {
	slots []uint64
	n     int
	_     [32]byte // keep shards on separate cache lines: workers fill them at once
}

func (v *visited[S]) hash(s *S) uint64 { return maphash.Comparable(v.seed, *s) }

func (v *visited[S]) shard(h uint64) *idTable { return &v.shards[h>>(64-shardBits)] }

// find returns the id of *s, whose hash is h.
func (v *visited[S]) find(s *S, h uint64) (int32, bool) {
	t := v.shard(h)
	if t.n == 0 {
		return -1, false
	}
	mask := uint32(len(t.slots) - 1)
	h32 := uint32(h)
	for i := h32 & mask; ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == 0 {
			return -1, false
		}
		if uint32(e>>32) == h32 {
			if id := int32(uint32(e)) - 1; *v.states.at(id) == *s {
				return id, true
			}
		}
	}
}

// insert adds state id, whose hash is h and which is not in the table.
func (t *idTable) insert(h uint64, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]uint64, max(16, 2*len(old)))
		for _, e := range old {
			if e != 0 {
				t.put(e)
			}
		}
	}
	t.put(uint64(uint32(h))<<32 | uint64(uint32(id)+1))
	t.n++
}

func (t *idTable) put(e uint64) {
	mask := uint32(len(t.slots) - 1)
	i := uint32(e>>32) & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = e
}

// pendShard is one shard of the states new in the level being expanded, in
// the order workers found them, each with the first transition (smallest
// key: parent<<32 | transition index) that reaches it. Its index is an
// open-addressing table whose slots hold gen<<48 | tag<<32 | index+1,
// where tag is 16 bits of the hash; slots of an older level (another gen)
// are empty, so the index is not cleared between levels.
type pendShard[S comparable] struct {
	mu    sync.Mutex
	index []uint64
	gen   uint16
	recs  []pendRec[S]
	meta  []pendMeta
	ids   []int32 // the number given at the end of the level (-1: none)
	errs  []pendErr
	_     [64]byte
}

type pendRec[S comparable] struct {
	h uint64
	s S
}

type pendMeta struct {
	key   uint64
	label Label
	bad   bool // Check failed
}

type pendErr struct {
	idx int32
	err error
}

func (p *pendShard[S]) reset() {
	p.gen++
	if p.gen == 0 {
		clear(p.index)
		p.gen = 1
	}
	p.recs, p.meta, p.ids = p.recs[:0], p.meta[:0], p.ids[:0]
	clear(p.errs)
	p.errs = p.errs[:0]
}

func (p *pendShard[S]) slot(h uint64, idx int) uint64 {
	return uint64(p.gen)<<48 | uint64(uint16(h>>32))<<32 | uint64(uint32(idx)+1)
}

// add finds or adds *s, whose hash is h, reached by the transition key with
// label l; it keeps the smallest key. It reports whether s is new.
func (p *pendShard[S]) add(s *S, h, key uint64, l Label) (int32, bool) {
	if 2*(len(p.recs)+1) > len(p.index) {
		p.index = make([]uint64, max(64, 2*len(p.index)))
		mask := uint32(len(p.index) - 1)
		for idx := range p.recs {
			h := p.recs[idx].h
			i := uint32(h) & mask
			for p.index[i] != 0 {
				i = (i + 1) & mask
			}
			p.index[i] = p.slot(h, idx)
		}
	}
	mask := uint32(len(p.index) - 1)
	gen, tag := uint64(p.gen), uint64(uint16(h>>32))
	for i := uint32(h) & mask; ; i = (i + 1) & mask {
		e := p.index[i]
		if e>>48 != gen {
			idx := len(p.recs)
			p.index[i] = p.slot(h, idx)
			p.recs = append(p.recs, pendRec[S]{h: h, s: *s})
			p.meta = append(p.meta, pendMeta{key: key, label: l})
			p.ids = append(p.ids, -1)
			return int32(idx), true
		}
		if (e>>32)&0xffff == tag {
			idx := int32(uint32(e)) - 1
			if r := &p.recs[idx]; r.h == h && r.s == *s {
				if m := &p.meta[idx]; key < m.key {
					m.key, m.label = key, l
				}
				return idx, false
			}
		}
	}
}

func (p *pendShard[S]) err(idx int32) error {
	for _, e := range p.errs {
		if e.idx == idx {
			return e.err
		}
	}
	return nil
}

// blockedForever finds, for each actor, a state in which it waits and from
// which no path leads to a state where it does not: backward reachability
// from the states where it is not waiting. It returns the violation, or
// the reason Options.Stop gave to stop before it was done.
func (e *explorer[S]) blockedForever() (*Violation, string) {
	r := e.r
	n := r.Len()
	// The predecessors of state i are preds[start[i]:start[i+1]]: two flat
	// slices (livenessBytes), not a slice per state.
	start := make([]int32, n+1)
	for _, ed := range e.edges {
		start[ed[1]+1]++
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	preds := make([]int32, len(e.edges))
	fill := slices.Clone(start[:n])
	for _, ed := range e.edges {
		preds[fill[ed[1]]] = ed[0]
		fill[ed[1]]++
	}
	fill, e.edges = nil, nil
	waiting := make([]uint64, n)
	var all uint64
	for i := range waiting {
		waiting[i] = r.sys.Waiting(*r.states.at(int32(i)))
		all |= waiting[i]
	}
	free := make([]bool, n)
	queue := make([]int32, 0, n)
	for a := 0; all>>a != 0; a++ {
		bit := uint64(1) << a
		if all&bit == 0 {
			continue
		}
		if e.opt.Stop != nil {
			if why := e.opt.Stop(); why != "" {
				return nil, why
			}
		}
		for i := range waiting {
			free[i] = waiting[i]&bit == 0
			if free[i] {
				queue = append(queue, int32(i))
			}
		}
		for len(queue) > 0 {
			i := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, p := range preds[start[i]:start[i+1]] {
				if !free[p] {
					free[p] = true
					queue = append(queue, p)
				}
			}
		}
		for i := range free { // BFS order: the first one has the shortest path
			if !free[i] {
				return r.ViolationAt(BlockedForever, i, fmt.Errorf("%s waits and no schedule ever lets it go on", r.sys.Actors()[a])), ""
			}
		}
	}
	return nil, ""
}

func actorList(names []string, m uint64) string {
	s := ""
	for a := range names {
		if m&(1<<a) != 0 {
			if s != "" {
				s += ", "
			}
			s += names[a]
		}
	}
	return s
}

// memGauge measures the memory the Go runtime holds from the operating
// system (runtime/metrics: /memory/classes/total minus heap/released), the
// quantity debug.SetMemoryLimit bounds: the heap with its garbage until it
// is collected, free pages not yet returned, stacks and metadata. Reading
// it does not stop the world and costs about a microsecond.
type memGauge struct {
	samples [2]metrics.Sample
	freed   bool  // fits gave memory back once
	after   int64 // held just after that
}

func (g *memGauge) init() {
	g.samples[0].Name = "/memory/classes/total:bytes"
	g.samples[1].Name = "/memory/classes/heap/released:bytes"
}

func (g *memGauge) held() int64 {
	metrics.Read(g.samples[:])
	var v [2]uint64
	for i := range g.samples {
		if g.samples[i].Value.Kind() == metrics.KindUint64 {
			v[i] = g.samples[i].Value.Uint64()
		}
	}
	if v[0] < v[1] {
		return 0
	}
	return int64(v[0] - v[1])
}

// fits reports whether growth more bytes fit under limit. Before it says
// no, it collects the garbage and returns the free pages to the system
// (debug.FreeOSMemory) and looks again, unless it did so already and the
// memory held has not grown by a sixteenth of the limit since (collecting
// a heap of gigabytes takes a second).
func (g *memGauge) fits(limit, growth int64) bool {
	h := g.held()
	if h+growth <= limit {
		return true
	}
	if g.freed && h < g.after+limit/16 {
		return false
	}
	debug.FreeOSMemory()
	h = g.held()
	g.freed, g.after = true, h
	return h+growth <= limit
}

// growth estimates what the search's tables may allocate while it finds
// the next `states` states. A visited shard that fills past half doubles,
// and the new table is allocated while the old one is still in use: when
// the shards are about as full as each other they all double within a few
// thousand states, so every shard close to its doubling counts. The store
// takes a chunk at a time; parent and label (and, with Liveness, the
// edges) grow like slices.
func (e *explorer[S]) growth(states int) int64 {
	var g int64
	perShard := 2*states/nShards + 64 // hashes spread unevenly over a few thousand states
	for i := range e.vis.shards {
		t := &e.vis.shards[i]
		if 2*(t.n+perShard) > len(t.slots) {
			g += int64(max(16, 2*len(t.slots))) * 8
		}
	}
	r := e.r
	g += sliceGrowth(len(r.parent), cap(r.parent), states, 4)
	g += sliceGrowth(len(r.label), cap(r.label), states, int64(unsafe.Sizeof(Label{})))
	if e.opt.Liveness {
		perState := r.Transitions/max(1, r.states.n) + 1
		g += sliceGrowth(len(e.edges), cap(e.edges), 2*perState*states, 8)
	}
	return g + int64(states+chunkLen)*int64(unsafe.Sizeof(*new(S)))
}

// levelBytes is what numbering and storing n new states of a parallel
// level takes: the order of the level, the store's chunks for them, and
// growth for n states.
func (e *explorer[S]) levelBytes(n int) int64 {
	return int64(n)*(8+int64(unsafe.Sizeof(*new(S)))) + e.growth(n)
}

// pendBytes is about what the n new states of a level hold in e.pend until
// they are numbered: a record, its metadata, its id and two index slots;
// the next doubling of the shards takes as much again.
func (e *explorer[S]) pendBytes(n int) int64 {
	per := int64(unsafe.Sizeof(pendRec[S]{})) + int64(unsafe.Sizeof(pendMeta{})) + 4 + 16
	return 2 * int64(n) * per
}

// livenessBytes is what blockedForever allocates for n states and the
// given number of edges: the predecessors in two flat slices, a copy of
// the offsets, and per state its waiting actors, a flag and a queue slot.
func livenessBytes(n, edges int) int64 {
	return int64(n)*(4+4+8+1+4) + int64(edges)*4
}

// sliceGrowth is what appending more elements of elem bytes to a slice of
// length n and capacity c allocates: nothing while they fit, else the new
// array (append doubles small slices, then grows by about a quarter:
// runtime.growslice).
func sliceGrowth(n, c, more int, elem int64) int64 {
	need := n + more
	if need <= c {
		return 0
	}
	nc := c
	for nc < need {
		if nc < 256 {
			nc = max(2*nc, 1)
		} else {
			nc += (nc + 3*256) / 4
		}
	}
	return int64(nc) * elem
}

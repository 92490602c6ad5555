package explore

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"

	"github.com/flushproof/flushproof/internal/mutate"
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
// like a slice, so that small searches stay small. The states' parents and
// labels are kept the same way.
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

// sameValues reports whether a and b hold the same values.
func sameValues[T comparable](a, b *stateStore[T]) bool {
	if a.n != b.n {
		return false
	}
	for c := range a.chunks {
		if !slices.Equal(a.chunks[c], b.chunks[c]) {
			return false
		}
	}
	return true
}

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

// labels are the states' labels: each distinct label is kept once, and a
// state has its number (a system has a few thousand labels at most).
type labels struct {
	ids   stateStore[uint32]
	table []Label
	index map[Label]uint32
}

func (ls *labels) push(l Label) {
	id, ok := ls.index[l]
	if !ok {
		if ls.index == nil {
			ls.index = map[Label]uint32{}
		}
		id = uint32(len(ls.table))
		ls.table = append(ls.table, l)
		ls.index[l] = id
	}
	ls.ids.push(&id)
}

func (ls *labels) at(i int32) Label { return ls.table[*ls.ids.at(i)] }

// same reports whether o holds the same labels.
func (ls *labels) same(o *labels) bool {
	if ls.ids.n != o.ids.n {
		return false
	}
	for i := range int32(ls.ids.n) {
		if ls.at(i) != o.at(i) {
			return false
		}
	}
	return true
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
	states *store[S]
	shards [nShards]idTable
}

type idTable struct {
	slots []uint64
	n     int
	_     [32]byte // keep shards on separate cache lines: workers fill them at once
}

func (v *visited[S]) hash(s *S) uint64 { return maphash.Comparable(v.seed, *s) }

func (v *visited[S]) shard(h uint64) *idTable { return &v.shards[h>>(64-shardBits)] }

// find returns the id of *s, whose hash is h (states kept whole).
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
			if id := int32(uint32(e)) - 1; *v.states.whole.at(id) == *s {
				return id, true
			}
		}
	}
}

// findVec returns the id of the state whose vector is vec and whose hash
// is h (states collapsed).
func (v *visited[S]) findVec(vec []uint32, h uint64) (int32, bool) {
	t := v.shard(h)
	if t.n == 0 {
		return -1, false
	}
	vecs := &v.states.col.vecs
	mask := uint32(len(t.slots) - 1)
	h32 := uint32(h)
	for i := h32 & mask; ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == 0 {
			return -1, false
		}
		if uint32(e>>32) == h32 {
			if id := int32(uint32(e)) - 1; slices.Equal(vecs.at(id), vec) {
				return id, true
			}
		}
	}
}

// full reports whether the table must grow before it takes more ids: it
// doubles when it would be more than three quarters full (linear probing
// then looks at 2.5 slots on average to find an id, 8.5 to miss one, in
// one or two cache lines, as a slot is 8 bytes).
func (t *idTable) full(more int) bool { return 4*(t.n+more) > 3*len(t.slots) }

// insert adds state id, whose hash is h and which is not in the table.
func (t *idTable) insert(h uint64, id int32) {
	if t.full(1) {
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
// are empty, so the index is not cleared between levels. A state is kept
// whole, or collapsed as its vector, whose pieces not yet in their tables
// are kept in raw (provisional ids) until the level's end.
type pendShard[S comparable] struct {
	mu    sync.Mutex
	index []uint64
	gen   uint16
	hs    []uint64 // per state: its hash
	whole []S      // states kept whole: the state
	vecs  []uint32 // collapsed: the vectors, k ids a state
	raw   []byte   // collapsed: the level's pieces new in this shard
	rawAt []int    // where each of them starts in raw
	meta  []pendMeta
	ids   []int32 // the number given at the end of the level (-1: none)
	_     [64]byte
}

type pendMeta struct {
	key   uint64
	label Label
	bad   bool // Check failed
}

func (p *pendShard[S]) reset() {
	p.gen++
	if p.gen == 0 {
		clear(p.index)
		p.gen = 1
	}
	p.hs, p.whole, p.vecs, p.meta, p.ids = p.hs[:0], p.whole[:0], p.vecs[:0], p.meta[:0], p.ids[:0]
	p.raw, p.rawAt = p.raw[:0], p.rawAt[:0]
}

func (p *pendShard[S]) slot(h uint64, idx int) uint64 {
	return uint64(p.gen)<<48 | uint64(uint16(h>>32))<<32 | uint64(uint32(idx)+1)
}

// grow makes room in the index for one more state.
func (p *pendShard[S]) grow() {
	if 2*(len(p.hs)+1) <= len(p.index) {
		return
	}
	p.index = make([]uint64, max(64, 2*len(p.index)))
	mask := uint32(len(p.index) - 1)
	for idx, h := range p.hs {
		i := uint32(h) & mask
		for p.index[i] != 0 {
			i = (i + 1) & mask
		}
		p.index[i] = p.slot(h, idx)
	}
}

// found keeps the smallest key of the transitions that reach state idx.
func (p *pendShard[S]) found(idx int32, key uint64, l Label) {
	if m := &p.meta[idx]; key < m.key {
		m.key, m.label = key, l
	}
}

// fresh adds the metadata of a new state.
func (p *pendShard[S]) fresh(h, key uint64, l Label) {
	p.hs = append(p.hs, h)
	p.meta = append(p.meta, pendMeta{key: key, label: l})
	p.ids = append(p.ids, -1)
}

// add finds or adds *s, whose hash is h, reached by the transition key with
// label l; it keeps the smallest key. It reports whether s is new.
func (p *pendShard[S]) add(s *S, h, key uint64, l Label) (int32, bool) {
	p.grow()
	mask := uint32(len(p.index) - 1)
	gen, tag := uint64(p.gen), uint64(uint16(h>>32))
	for i := uint32(h) & mask; ; i = (i + 1) & mask {
		e := p.index[i]
		if e>>48 != gen {
			idx := len(p.hs)
			p.index[i] = p.slot(h, idx)
			p.whole = append(p.whole, *s)
			p.fresh(h, key, l)
			return int32(idx), true
		}
		if (e>>32)&0xffff == tag {
			idx := int32(uint32(e)) - 1
			if p.hs[idx] == h && p.whole[idx] == *s {
				p.found(idx, key, l)
				return idx, false
			}
		}
	}
}

// addVec is add for a collapsed state at s, whose vector d holds (with
// noPiece for the pieces not in their tables).
func (p *pendShard[S]) addVec(d *coder, s unsafe.Pointer, h, key uint64, l Label) (int32, bool) {
	p.grow()
	k := len(d.vec)
	mask := uint32(len(p.index) - 1)
	gen, tag := uint64(p.gen), uint64(uint16(h>>32))
	for i := uint32(h) & mask; ; i = (i + 1) & mask {
		e := p.index[i]
		if e>>48 != gen {
			idx := len(p.hs)
			p.index[i] = p.slot(h, idx)
			for j, id := range d.vec {
				if id == noPiece {
					id = provisional | uint32(len(p.rawAt))
					p.rawAt = append(p.rawAt, len(p.raw))
					p.raw = append(p.raw, d.image(j, s)...)
				}
				p.vecs = append(p.vecs, id)
			}
			p.fresh(h, key, l)
			return int32(idx), true
		}
		if (e>>32)&0xffff == tag {
			idx := int32(uint32(e)) - 1
			if p.hs[idx] == h && p.sameVec(d, s, p.vecs[int(idx)*k:int(idx+1)*k]) {
				p.found(idx, key, l)
				return idx, false
			}
		}
	}
}

// sameVec reports whether the state at s, whose vector d holds, is the one
// whose vector is rec. A piece in its table (an id) is not one that was
// not (noPiece, or provisional: the tables do not change during a level).
func (p *pendShard[S]) sameVec(d *coder, s unsafe.Pointer, rec []uint32) bool {
	for j, id := range d.vec {
		r := rec[j]
		switch {
		case id != noPiece:
			if r != id {
				return false
			}
		case r&provisional == 0:
			return false
		case !bytes.Equal(p.rawPiece(r, d.c.tabs[j].size), d.image(j, s)):
			return false
		}
	}
	return true
}

// rawPiece is the piece of the given size whose provisional id is id.
func (p *pendShard[S]) rawPiece(id uint32, size int) []byte {
	at := p.rawAt[id&^provisional]
	return p.raw[at : at+size]
}

// blockedForever finds, for each actor, a state in which it has not
// returned and from which no path leads to a state where it has: backward
// reachability from the states where it is not unfinished. Whatever the
// actor waits for (a wake-up that never comes, or a loop of steps that
// never gets it out), the state is found. It returns the violation, or
// the reason Options.Stop gave to stop before it was done.
func (e *explorer[S]) blockedForever() (*Violation, string) {
	r := e.r
	n := r.Len()
	// The predecessors of state i are preds[start[i+1]:start[i+2]] (the
	// last state's end at len(preds)): two flat slices (livenessBytes),
	// not a slice per state. start[i+1] counts i's predecessors, then
	// (sums) is where they end, and then, each put in place from the end
	// back, where they begin.
	start := make([]int32, n+1)
	for _, ch := range e.succ.chunks {
		for _, to := range ch {
			start[to+1]++
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	preds := make([]int32, e.succ.n)
	at := int32(0)
	for from := int32(0); from < int32(e.nsucc.n); from++ {
		for k := *e.nsucc.at(from); k > 0; k-- {
			to := *e.succ.at(at)
			start[to+1]--
			preds[start[to+1]] = from
			at++
		}
	}
	predsOf := func(i int32) []int32 {
		if int(i)+2 <= n {
			return preds[start[i+1]:start[i+2]]
		}
		return preds[start[i+1]:]
	}
	e.succ, e.nsucc = stateStore[int32]{}, stateStore[int32]{}
	// The actors unfinished in each state, a byte a state while there are
	// at most 8 actors.
	var (
		small []uint8
		wide  []uint64
		all   uint64
		s     S
	)
	if len(r.sys.Actors()) <= 8 {
		small = make([]uint8, n)
	} else {
		wide = make([]uint64, n)
	}
	for i := range n {
		r.states.get(int32(i), &s)
		u := r.sys.Unfinished(s)
		all |= u
		if small != nil && u > 0xff {
			wide = make([]uint64, n)
			for j, v := range small[:i] {
				wide[j] = uint64(v)
			}
			small = nil
		}
		if small != nil {
			small[i] = uint8(u)
		} else {
			wide[i] = u
		}
	}
	unfinished := func(i int) uint64 {
		if small != nil {
			return uint64(small[i])
		}
		return wide[i]
	}
	// The goals: per actor, the states where it has returned. With the
	// symmetry reduction an actor's name in one stored state may be
	// another's in the next, so there is one goal instead, the states
	// where every actor has returned; an actor's return is for good, so a
	// state from which some actor can never return is one from which not
	// all can, and the other way round.
	var goals []uint64
	for a := 0; all>>a != 0; a++ {
		if all&(1<<a) != 0 {
			goals = append(goals, 1<<a)
		}
	}
	if e.sym && all != 0 {
		goals = []uint64{all}
	}
	free := make([]bool, n)
	queue := make([]int32, 0, n)
	for _, goal := range goals {
		if e.opt.Stop != nil {
			if why := e.opt.Stop(); why != "" {
				return nil, why
			}
		}
		for i := range n {
			free[i] = unfinished(i)&goal == 0
			if mutate.On(mutate.LivenessAnyReturn) {
				free[i] = unfinished(i) != all // mutation: any actor's return will do
			}
			if free[i] {
				queue = append(queue, int32(i))
			}
		}
		for len(queue) > 0 {
			i := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, p := range predsOf(i) {
				if !free[p] {
					free[p] = true
					queue = append(queue, p)
				}
			}
		}
		for i := range free { // BFS order: the first one has the shortest path
			if !free[i] && !speculative(r.sys, r.State(i)) {
				sys, whom := r.sys, "it"
				if len(goals) == 1 && goal&(goal-1) != 0 {
					whom = "them all"
				}
				return r.ViolationAt(BlockedForever, i, func(s S) error {
					if u := sys.Unfinished(s) & goal; u != 0 {
						return fmt.Errorf("%s not returned and no schedule lets %s return", haveList(sys.Actors(), u), whom)
					}
					return nil
				}), ""
			}
		}
	}
	return nil, ""
}

// ActorList names the actors of m (bit a = names[a]), separated by commas.
func ActorList(names []string, m uint64) string {
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

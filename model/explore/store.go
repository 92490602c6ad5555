package explore

import (
	"fmt"
	"github.com/flushproof/flushproof/internal/mutate"
	"hash/maphash"
	"slices"
	"sync"
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

func (p *pendShard[S]) reset() {
	p.gen++
	if p.gen == 0 {
		clear(p.index)
		p.gen = 1
	}
	p.recs, p.meta, p.ids = p.recs[:0], p.meta[:0], p.ids[:0]
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

// blockedForever finds, for each actor, a state in which it has not
// returned and from which no path leads to a state where it has: backward
// reachability from the states where it is not unfinished. Whatever the
// actor waits for (a wake-up that never comes, or a loop of steps that
// never gets it out), the state is found. It returns the violation, or
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
	unfinished := make([]uint64, n)
	var all uint64
	for i := range unfinished {
		unfinished[i] = r.sys.Unfinished(*r.states.at(int32(i)))
		all |= unfinished[i]
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
		for i := range unfinished {
			free[i] = unfinished[i]&goal == 0
			if mutate.On(mutate.LivenessAnyReturn) {
				free[i] = unfinished[i] != all // mutation: any actor's return will do
			}
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
			if !free[i] && !speculative(r.sys, *r.states.at(int32(i))) {
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

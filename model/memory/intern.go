package memory

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// The LKMM extras are interned: a Memory holds a number (lkID) that names
// its lkExtra in a table, so that a Memory value is small and holds no
// pointer. The explorer keeps millions of states; with no pointer in them
// the garbage collector need not scan them, and two equal extras are one
// number, so comparing memories stays a comparison of plain values.
//
// The tables belong to a Scope, and a Memory names its scope (Memory.scope)
// beside its ids. A system that searches makes its memories in a scope of
// its own (NewScope, Scope.New) and holds the *Scope: once nothing holds
// it (the system and its copies are garbage), its tables are given back
// (runtime.AddCleanup), as they are by Release. So a search
// interns only what its own distinct states hold (some 26,000 extras for
// the flush sequence's 3 tasks x 2 fsyncs proof of patched under LKMM:
// about 8 MB, and as much again for the map that finds them), and gives it
// back after. New's memories share the process's scope, which only grows.
// A Memory used after its scope was given back panics (the scope's slot
// carries a generation), never reads another scope's values. Ids are
// handed out in the order values are first interned, which the parallel
// search does not fix; nothing depends on an id but equality.

// lkID names an interned lkExtra; 0 is the zero value.
type lkID uint32

// ordID names an interned lkOrd; 0 is the zero value.
type ordID uint32

const (
	// The values of a table are kept in chunks that double: chunk c holds
	// 2^(lkFirstBits+c) of them, so a small search's scope costs little
	// (the first chunks of its two tables: 64 values each) and a large
	// one's still reaches lkMaxValues.
	lkFirstBits = 6
	lkChunks    = 22
	lkMaxValues = 1<<(lkFirstBits+lkChunks) - 1<<lkFirstBits // about 2^28
	lkShards    = 64
)

// chunkOf returns the chunk of id and its place in it.
func chunkOf(id uint32) (c, i int) {
	v := id + 1<<lkFirstBits
	c = bits.Len32(v) - 1 - lkFirstBits
	return c, int(v - 1<<(lkFirstBits+c))
}

// internTable interns values of T: id 0 is T's zero value.
type internTable[T comparable] struct {
	name   string
	chunks [lkChunks]atomic.Pointer[[]T]
	next   atomic.Uint32 // ids handed out, 0 included
	shards [lkShards]struct {
		sync.Mutex
		ids map[T]uint32
		_   [48]byte // with the mutex and the map, a 64-byte cache line to itself
	}
}

// tables are the intern tables of one scope.
type tables struct {
	id  uint32 // the scope's slot and generation (Memory.scope)
	lk  internTable[lkExtra]
	ord internTable[lkOrd]
}

func newTables(id uint32) *tables {
	return &tables{id: id, lk: internTable[lkExtra]{name: "LKMM states"}, ord: internTable[lkOrd]{name: "LKMM ordering views"}}
}

// The scopes: slot 0 is the process's (New), never given back; the others
// are handed out by NewScope and come back when their owner is garbage.
// An id is slot | generation<<16: a slot given back starts a new
// generation, so that a stale id is refused.
const maxScopes = 1 << 16

var scopes struct {
	tabs [maxScopes]atomic.Pointer[tables]
	mu   sync.Mutex
	gen  [maxScopes]uint16
	free []uint16
	next int // slots handed out so far, 0 included
}

func init() {
	scopes.tabs[0].Store(newTables(0))
	scopes.next = 1
}

// tablesOf returns the tables of scope id; it panics if the scope was
// given back.
func tablesOf(id uint32) *tables {
	t := scopes.tabs[id&(maxScopes-1)].Load()
	if t == nil || t.id != id {
		panic(fmt.Sprintf("memory: an LKMM memory of scope %#x used after its scope was given back (the system that made it is gone)", id))
	}
	return t
}

// Scope is a set of intern tables for the LKMM memories of one system's
// searches. The zero Scope is the process's.
type Scope struct {
	id uint32
	_  struct{}
}

// NewScope returns a scope of its own, given back once the *Scope is
// garbage or at Release. Whoever uses its memories must hold it: a Memory
// names its scope but does not keep it alive.
func NewScope() *Scope {
	sc := &Scope{id: takeSlot()}
	runtime.AddCleanup(sc, releaseScope, sc.id)
	return sc
}

// takeSlot hands out a slot with fresh tables and returns its id. A slot
// has 2^16 generations before an id repeats, so a Memory used after its
// scope was given back is refused unless its slot was reused that often
// since.
func takeSlot() uint32 {
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	var slot int
	switch {
	case len(scopes.free) > 0:
		slot = int(scopes.free[len(scopes.free)-1])
		scopes.free = scopes.free[:len(scopes.free)-1]
	case scopes.next < maxScopes:
		slot = scopes.next
		scopes.next++
	default:
		panic(fmt.Sprintf("memory: more than %d LKMM scopes alive at once", maxScopes-1))
	}
	id := uint32(slot) | uint32(scopes.gen[slot])<<16
	scopes.tabs[slot].Store(newTables(id))
	return id
}

// ScopeFor returns a new scope for the memories of a system under model
// m: only LKMM interns, so nil (the process's scope, which nothing then
// uses) for the others.
func ScopeFor(m Model) *Scope {
	if m != LKMM {
		return nil
	}
	return NewScope()
}

// New is memory.New in the scope; a nil Scope is the process's.
func (s *Scope) New(m Model, readers [MaxLocations]uint8) Memory {
	mem := New(m, readers)
	if s != nil {
		mem.scope = s.id
	}
	return mem
}

// Release gives the scope's tables back: a Memory of the scope used after
// it panics. The process's scope is never given back.
func (s *Scope) Release() { releaseScope(s.id) }

func releaseScope(id uint32) {
	slot := id & (maxScopes - 1)
	if slot == 0 {
		return
	}
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	t := scopes.tabs[slot].Load()
	if t == nil || t.id != id {
		return // given back already
	}
	scopes.tabs[slot].Store(nil)
	scopes.gen[slot]++
	scopes.free = append(scopes.free, uint16(slot))
}

// get returns the value id names.
func (tb *internTable[T]) get(id uint32) T {
	if id == 0 {
		var zero T
		return zero
	}
	c, i := chunkOf(id)
	return (*tb.chunks[c].Load())[i]
}

// ref returns a pointer to the value id names, which the caller only
// reads: a value once interned never changes, and no copy is made.
func (tb *internTable[T]) ref(id uint32) *T {
	if id == 0 {
		return new(T)
	}
	c, i := chunkOf(id)
	return &(*tb.chunks[c].Load())[i]
}

// put interns x, in shard sh. Callers in several goroutines may intern at
// once.
func (tb *internTable[T]) put(x *T, sh int) uint32 {
	var zero T
	if *x == zero {
		return 0
	}
	s := &tb.shards[sh]
	s.Lock()
	defer s.Unlock()
	if id, ok := s.ids[*x]; ok {
		return id
	}
	tb.next.CompareAndSwap(0, 1) // id 0 is the zero value's
	id := tb.next.Add(1) - 1
	if id >= lkMaxValues {
		panic(fmt.Sprintf("memory: more than %d distinct %s interned", lkMaxValues-1, tb.name))
	}
	c, i := chunkOf(id)
	chunk := tb.chunks[c].Load()
	if chunk == nil {
		fresh := make([]T, 1<<(lkFirstBits+c))
		tb.chunks[c].CompareAndSwap(nil, &fresh)
		chunk = tb.chunks[c].Load()
	}
	(*chunk)[i] = *x
	if s.ids == nil {
		s.ids = make(map[T]uint32)
	}
	s.ids[*x] = id
	return id
}

// lkGet returns the extras id names in scope sc.
func lkGet(sc uint32, id lkID) lkExtra {
	if id == 0 {
		return lkExtra{}
	}
	return tablesOf(sc).lk.get(uint32(id))
}

// lkRef is lkGet for a caller that only reads the extras: no copy.
func lkRef(sc uint32, id lkID) *lkExtra {
	if id == 0 {
		return &lkZero
	}
	return tablesOf(sc).lk.ref(uint32(id))
}

// lkZero is the extras of id 0, for lkRef; never written.
var lkZero lkExtra

// lkPut interns x in scope sc.
func lkPut(sc uint32, x *lkExtra) lkID { return lkID(tablesOf(sc).lk.put(x, x.shard())) }

// ordPut interns o.
func (tb *tables) ordPut(o *lkOrd) ordID {
	h := uint32(o.rv[0])*0x9e3779b1 ^ uint32(o.own[0])*0x85ebca6b ^ uint32(o.rv[1])*0xc2b2ae35 ^ uint32(o.own[1])*0x27d4eb2f
	return ordID(tb.ord.put(o, int(h>>16^h)%lkShards))
}

// shard picks x's shard from a few of its views (the map hashes it all).
func (x *lkExtra) shard() int {
	h := uint32(x.glob)*0x9e3779b1 ^ uint32(x.cur[0])*0x85ebca6b ^ uint32(x.cur[1])*0xc2b2ae35 ^
		uint32(x.cur[2])*0x27d4eb2f ^ uint32(x.acq[1])*0x165667b1 ^ uint32(x.mview[0][1])*0xd3a2646c
	return int(h>>16^h) % lkShards
}

package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The LKMM extras are interned: a Memory holds a number (lkID) that names
// its lkExtra in a table shared by the process, so that a Memory value is
// small and holds no pointer. The explorer keeps millions of states; with
// no pointer in them the garbage collector need not scan them, and two
// equal extras are one number, so comparing memories stays a comparison
// of plain values.
//
// The table only grows: an interned value lives as long as the process.
// A search interns what its distinct states hold (some 26,000 extras for
// the flush sequence's 3 tasks x 2 fsyncs proof of patched under LKMM:
// about 8 MB, and as much again for the map that finds them). Ids are handed out in the order values are first interned,
// which the parallel search does not fix; nothing depends on an id but
// equality.

// lkID names an interned lkExtra; 0 is the zero value.
type lkID uint32

// ordID names an interned lkOrd; 0 is the zero value.
type ordID uint32

const (
	lkChunkBits = 12
	lkChunk     = 1 << lkChunkBits
	lkMaxChunks = 1 << 16 // 2^28 values in all
	lkShards    = 64
)

// internTable interns values of T: id 0 is T's zero value.
type internTable[T comparable] struct {
	name   string
	chunks [lkMaxChunks]atomic.Pointer[[lkChunk]T]
	next   atomic.Uint32 // ids handed out, 0 included
	shards [lkShards]struct {
		sync.Mutex
		ids map[T]uint32
		_   [48]byte // with the mutex and the map, a 64-byte cache line to itself
	}
}

var (
	lkTable  = internTable[lkExtra]{name: "LKMM states"}
	ordTable = internTable[lkOrd]{name: "LKMM ordering views"}
)

// get returns the value id names.
func (tb *internTable[T]) get(id uint32) T {
	if id == 0 {
		var zero T
		return zero
	}
	return tb.chunks[id>>lkChunkBits].Load()[id&(lkChunk-1)]
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
	c := id >> lkChunkBits
	if int(c) >= lkMaxChunks {
		panic(fmt.Sprintf("memory: more than %d distinct %s interned", lkMaxChunks*lkChunk, tb.name))
	}
	chunk := tb.chunks[c].Load()
	if chunk == nil {
		tb.chunks[c].CompareAndSwap(nil, new([lkChunk]T))
		chunk = tb.chunks[c].Load()
	}
	chunk[id&(lkChunk-1)] = *x
	if s.ids == nil {
		s.ids = make(map[T]uint32)
	}
	s.ids[*x] = id
	return id
}

// lkGet returns the extras id names.
func lkGet(id lkID) lkExtra { return lkTable.get(uint32(id)) }

// lkPut interns x.
func lkPut(x *lkExtra) lkID { return lkID(lkTable.put(x, x.shard())) }

// ordGet returns the ordering views id names.
func ordGet(id ordID) lkOrd { return ordTable.get(uint32(id)) }

// ordPut interns o.
func ordPut(o *lkOrd) ordID {
	h := uint32(o.rv[0])*0x9e3779b1 ^ uint32(o.own[0])*0x85ebca6b ^ uint32(o.rv[1])*0xc2b2ae35 ^ uint32(o.own[1])*0x27d4eb2f
	return ordID(ordTable.put(o, int(h>>16^h)%lkShards))
}

// shard picks x's shard from a few of its views (the map hashes it all).
func (x *lkExtra) shard() int {
	h := uint32(x.glob)*0x9e3779b1 ^ uint32(x.cur[0])*0x85ebca6b ^ uint32(x.cur[1])*0xc2b2ae35 ^
		uint32(x.cur[2])*0x27d4eb2f ^ uint32(x.acq[1])*0x165667b1 ^ uint32(x.mview[0][1])*0xd3a2646c
	return int(h>>16^h) % lkShards
}

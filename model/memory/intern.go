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

const (
	lkChunkBits = 12
	lkChunk     = 1 << lkChunkBits
	lkMaxChunks = 1 << 16 // 2^28 extras in all
	lkShards    = 64
)

var lkTable struct {
	chunks [lkMaxChunks]atomic.Pointer[[lkChunk]lkExtra]
	next   atomic.Uint32 // ids handed out; 0 is the zero value's
	shards [lkShards]struct {
		sync.Mutex
		ids map[lkExtra]lkID
		_   [48]byte // with the mutex and the map, a 64-byte cache line to itself
	}
}

func init() {
	lkTable.chunks[0].Store(new([lkChunk]lkExtra))
	lkTable.next.Store(1)
}

// lkGet returns the extras id names.
func lkGet(id lkID) lkExtra {
	return lkTable.chunks[id>>lkChunkBits].Load()[id&(lkChunk-1)]
}

// lkPut interns x. Callers in several goroutines may intern at once.
func lkPut(x *lkExtra) lkID {
	if *x == (lkExtra{}) {
		return 0
	}
	sh := &lkTable.shards[x.shard()]
	sh.Lock()
	defer sh.Unlock()
	if id, ok := sh.ids[*x]; ok {
		return id
	}
	id := lkID(lkTable.next.Add(1) - 1)
	c := id >> lkChunkBits
	if int(c) >= lkMaxChunks {
		panic(fmt.Sprintf("memory: more than %d distinct LKMM states interned", lkMaxChunks*lkChunk))
	}
	chunk := lkTable.chunks[c].Load()
	if chunk == nil {
		lkTable.chunks[c].CompareAndSwap(nil, new([lkChunk]lkExtra))
		chunk = lkTable.chunks[c].Load()
	}
	chunk[id&(lkChunk-1)] = *x
	if sh.ids == nil {
		sh.ids = make(map[lkExtra]lkID)
	}
	sh.ids[*x] = id
	return id
}

// shard picks x's shard from a few of its views (the map hashes it all).
func (x *lkExtra) shard() int {
	h := uint32(x.glob)*0x9e3779b1 ^ uint32(x.cur[0])*0x85ebca6b ^ uint32(x.cur[1])*0xc2b2ae35 ^
		uint32(x.cur[2])*0x27d4eb2f ^ uint32(x.acq[1])*0x165667b1 ^ uint32(x.mview[0][1])*0xd3a2646c
	return int(h>>16^h) % lkShards
}

package world

import (
	"bytes"
	"hash/maphash"
)

// keyTable is the search's set of state keys, numbered in the order they
// were added. It holds no pointers but one per chunk of key bytes, so the
// garbage collector does not scan its millions of keys (a map of strings
// costs a scan of every key at each collection, and the replays collect
// often).
type keyTable struct {
	seed   maphash.Seed
	chunks [][]byte
	at     []keyRef // at[id]: where key id is
	slots  []uint64 // open addressing: the hash's high 32 bits << 32 | id+1; 0 is empty
}

type keyRef struct{ chunk, off, n uint32 }

const keyChunk = 1 << 20

func newKeyTable() *keyTable {
	return &keyTable{seed: maphash.MakeSeed(), slots: make([]uint64, 1024)}
}

func (t *keyTable) key(id uint32) []byte {
	r := t.at[id]
	return t.chunks[r.chunk][r.off : r.off+r.n]
}

// find returns the id of key, hashed to h, if the table has it.
func (t *keyTable) find(key []byte, h uint64) (uint32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>32 == h>>32 && bytes.Equal(t.key(uint32(s)-1), key) {
			return uint32(s) - 1, true
		}
	}
}

// add adds key, hashed to h and not in the table, as the next id.
func (t *keyTable) add(key []byte, h uint64) uint32 {
	id := uint32(len(t.at))
	c := len(t.chunks) - 1
	if c < 0 || len(t.chunks[c])+len(key) > cap(t.chunks[c]) {
		t.chunks = append(t.chunks, make([]byte, 0, max(keyChunk, len(key))))
		c++
	}
	t.at = append(t.at, keyRef{chunk: uint32(c), off: uint32(len(t.chunks[c])), n: uint32(len(key))})
	t.chunks[c] = append(t.chunks[c], key...)
	if 2*len(t.at) > len(t.slots) {
		t.grow()
		return id
	}
	t.put(h, id)
	return id
}

func (t *keyTable) put(h uint64, id uint32) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = h>>32<<32 | uint64(id+1)
}

// grow doubles the slots and puts every key in again.
func (t *keyTable) grow() {
	t.slots = make([]uint64, 2*len(t.slots))
	for id := range t.at {
		t.put(t.hash(t.key(uint32(id))), uint32(id))
	}
}

func (t *keyTable) hash(key []byte) uint64 { return maphash.Bytes(t.seed, key) }

package explore

// Collapsed states (Options.Store): a state is kept as a vector of piece
// ids instead of a whole value of S. The bytes of S are cut, once per type,
// into k pieces along its fields (padding and blank fields left out); each
// distinct piece is kept once, in a table of its own per position, and a
// state is the k ids of its pieces. Two states are equal if and only if
// their vectors are: a piece's id is given by comparing whole bytes, and
// for the kinds of fields allowed (booleans, integers, and arrays and
// structs of them) equal bytes are equal values, as == compares them. The
// search needs a state's value only to expand it, judge it or print it; it
// is then decoded into a scratch S.
//
// The states of a protocol differ in few places: many share the memory,
// the device, a thread's registers. A 1,136-byte state of a durability
// litmus file then takes 40 bytes of ids and a few bytes of new pieces.

import (
	"bytes"
	"hash/maphash"
	"os"
	"reflect"
	"sync"
	"unsafe"
)

// StoreMode says how a search keeps its states (Options.Store).
type StoreMode uint8

const (
	// StoreAuto collapses the states of a type that allows it
	// (collapsible) and has at least compactMinSize bytes, and keeps
	// others whole. The environment variable FLUSHPROOF_STORE, if set to
	// "whole" or "compact", chooses instead (for comparing the two on a
	// whole run).
	StoreAuto StoreMode = iota
	// StoreWhole keeps every state as a value of S.
	StoreWhole
	// StoreCompact collapses the states whenever S allows it, however
	// small S is.
	StoreCompact
)

// compactMinSize: smaller states are kept whole under StoreAuto (a vector
// of ids and its tables would save little or nothing).
const compactMinSize = 64

// storeEnv is the environment variable that overrides StoreAuto.
const storeEnv = "FLUSHPROOF_STORE"

// run is a stretch of a piece's bytes in S: n bytes at off.
type run struct{ off, n uint32 }

// piece is one position of the vector: the fields in runs, size bytes in all.
type piece struct {
	runs []run
	size int
}

// layout is how a type's values are cut into pieces.
type layout struct {
	size   int // unsafe.Sizeof of the type
	pieces []piece
}

// pieceMax is the most bytes of fields a piece takes, unless a single
// field (an array of integers) is larger, or the type so large that more
// than pieceCount pieces would be needed. Every state of the flush
// sequence's litmus file at 4 tasks x 2 fsyncs (1,136 bytes: ten pieces)
// and of its state machine at 3 x 2 (300 bytes: three pieces), cut so,
// took 43 and 22 bytes a state of ids and new pieces, against 68 and 91
// with pieces of at most 64 bytes and 48 and 32 with 256 (docs/memory.md,
// "The search's memory").
const (
	pieceMax   = 128
	pieceCount = 16
)

var layouts sync.Map // reflect.Type -> *layout; nil if not collapsible

// layoutOf returns the layout of S, or nil if S is not collapsible: it has
// a field that == does not compare by its bytes (a float: +0 == -0 and NaN
// != NaN), or that refers to memory (pointers, strings, interfaces,
// channels, functions, maps, slices).
func layoutOf[S any]() *layout {
	t := reflect.TypeFor[S]()
	if l, ok := layouts.Load(t); ok {
		return l.(*layout)
	}
	var leaves []run
	var lay *layout
	if collapsible(t, 0, &leaves) && len(leaves) > 0 {
		lay = &layout{size: int(t.Size())}
		limit := max(pieceMax, (lay.size+pieceCount-1)/pieceCount)
		var cur piece
		for _, lf := range leaves {
			if cur.size > 0 && cur.size+int(lf.n) > limit {
				lay.pieces = append(lay.pieces, cur)
				cur = piece{}
			}
			if k := len(cur.runs) - 1; k >= 0 && cur.runs[k].off+cur.runs[k].n == lf.off {
				cur.runs[k].n += lf.n
			} else {
				cur.runs = append(cur.runs, lf)
			}
			cur.size += int(lf.n)
		}
		lay.pieces = append(lay.pieces, cur)
	}
	l, _ := layouts.LoadOrStore(t, lay)
	return l.(*layout)
}

// collapsible reports whether t's values compare as their bytes, and
// appends its fields' bytes at off to leaves, in memory order: a struct's
// fields (blank ones, which == skips, left out, as is padding), an array
// of structs or arrays element by element, booleans, integers and arrays
// of them as they are.
func collapsible(t reflect.Type, off uintptr, leaves *[]run) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		*leaves = append(*leaves, run{uint32(off), uint32(t.Size())})
		return true
	case reflect.Array:
		e := t.Elem()
		if t.Len() == 0 {
			return collapsible(e, off, new([]run))
		}
		if k := e.Kind(); k != reflect.Struct && k != reflect.Array {
			if !collapsible(e, off, new([]run)) {
				return false
			}
			if t.Size() > 0 {
				*leaves = append(*leaves, run{uint32(off), uint32(t.Size())})
			}
			return true
		}
		for i := 0; i < t.Len(); i++ {
			if !collapsible(e, off+uintptr(i)*e.Size(), leaves) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			dst := leaves
			if f.Name == "_" {
				dst = new([]run) // not compared, but no pointers either
			}
			if !collapsible(f.Type, off+f.Offset, dst) {
				return false
			}
		}
		return true
	}
	return false
}

// Piece ids in a vector: a table's index (below provisional); noPiece, a
// piece not in the table (encode without inserting); provisional|i, the
// i-th piece a level's pending shard holds until the level's end.
const (
	provisional = 1 << 31
	noPiece     = 1<<32 - 1
)

// pieceChunk is how many pieces a chunk of a table holds (the first grows
// like a slice, so that small searches stay small).
const (
	pieceChunkBits = 12
	pieceChunk     = 1 << pieceChunkBits
)

// pieceTable holds the distinct pieces of one position, each once: their
// bytes in chunks, their hashes, and an index of hash32<<32 | id+1 slots.
type pieceTable struct {
	size   int
	data   [][]byte
	hashes []uint64
	index  idTable
}

func (t *pieceTable) at(id uint32) []byte {
	c := t.data[id>>pieceChunkBits]
	o := int(id&(pieceChunk-1)) * t.size
	return c[o : o+t.size : o+t.size]
}

// find returns the id of the piece img, whose hash is h.
func (t *pieceTable) find(img []byte, h uint64) (uint32, bool) {
	x := &t.index
	if x.n == 0 {
		return noPiece, false
	}
	mask := uint32(len(x.slots) - 1)
	h32 := uint32(h)
	for i := h32 & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return noPiece, false
		}
		if uint32(e>>32) == h32 {
			if id := uint32(e) - 1; bytes.Equal(t.at(id), img) {
				return id, true
			}
		}
	}
}

// add keeps img, whose hash is h and which is not in the table, and
// returns its id.
func (t *pieceTable) add(img []byte, h uint64) uint32 {
	id := uint32(t.index.n)
	c := int(id >> pieceChunkBits)
	if c == len(t.data) {
		t.data = append(t.data, nil)
	}
	ch := t.data[c]
	if len(ch) == cap(ch) {
		size := pieceChunk * t.size
		if c == 0 {
			size = min(size, max(2*cap(ch), 16*t.size))
		}
		grown := make([]byte, len(ch), size)
		copy(grown, ch)
		ch = grown
	}
	t.data[c] = append(ch, img...)
	t.hashes = append(t.hashes, h)
	t.index.insert(h, int32(id))
	return id
}

// bytes is what the table holds.
func (t *pieceTable) bytes() int64 {
	b := int64(cap(t.hashes))*8 + int64(len(t.index.slots))*8
	for _, c := range t.data {
		b += int64(cap(c))
	}
	return b
}

// vecStore holds the states' vectors, k ids each, in chunks of chunkLen
// states like stateStore.
type vecStore struct {
	k      int
	chunks [][]uint32
	n      int
}

func (v *vecStore) at(id int32) []uint32 {
	c := v.chunks[id>>chunkBits]
	o := int(id&chunkMask) * v.k
	return c[o : o+v.k : o+v.k]
}

// resize grows the store to n vectors (zero ones at the end).
func (v *vecStore) resize(n int) {
	for v.n < n {
		c, off := v.n>>chunkBits, v.n&chunkMask
		if c == len(v.chunks) {
			v.chunks = append(v.chunks, nil)
		}
		ch := v.chunks[c]
		want := min(chunkLen, off+(n-v.n))
		if want*v.k > cap(ch) {
			size := chunkLen
			if c == 0 {
				size = min(chunkLen, max(want, 2*cap(ch)/v.k, 16))
			}
			grown := make([]uint32, want*v.k, size*v.k)
			copy(grown, ch)
			ch = grown
		}
		v.chunks[c] = ch[:want*v.k]
		v.n += want - off
	}
}

// push appends vec and returns its id.
func (v *vecStore) push(vec []uint32) int32 {
	id := int32(v.n)
	v.resize(v.n + 1)
	copy(v.at(id), vec)
	return id
}

// collapsed is the store of a search whose states are collapsed.
type collapsed struct {
	lay  *layout
	seed maphash.Seed
	tabs []pieceTable
	vecs vecStore
}

func newCollapsed(lay *layout) *collapsed {
	c := &collapsed{lay: lay, seed: maphash.MakeSeed(), tabs: make([]pieceTable, len(lay.pieces))}
	for i := range c.tabs {
		c.tabs[i].size = lay.pieces[i].size
	}
	c.vecs.k = len(lay.pieces)
	return c
}

// bytesAt is the memory of n bytes at p.
func bytesAt(p unsafe.Pointer, off uint32, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(p, off)), n)
}

// decode writes state id's fields into the state at dst (its padding is
// left as it is: == does not look at it).
func (c *collapsed) decode(id int32, dst unsafe.Pointer) {
	vec := c.vecs.at(id)
	for i := range c.lay.pieces {
		p := &c.lay.pieces[i]
		img := c.tabs[i].at(vec[i])
		at := 0
		for _, r := range p.runs {
			copy(bytesAt(dst, r.off, r.n), img[at:at+int(r.n)])
			at += int(r.n)
		}
	}
}

// hashVec combines the hashes of a state's pieces into the state's hash.
func hashVec(hs []uint64) uint64 {
	h := uint64(len(hs)) * 0x9e3779b97f4a7c15
	for _, x := range hs {
		h = (h ^ x) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	// murmur3's finalizer: the shard, slot and tag bits all depend on
	// every piece.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// coder encodes states for one goroutine: a state's vector (vec) and
// its pieces' hashes (hs). A state's pieces that are those of the parent
// being expanded take its ids without a look-up.
type coder struct {
	c      *collapsed
	vec    []uint32
	hs     []uint64
	pvec   []uint32       // the parent's vector
	parent unsafe.Pointer // the parent state, nil for none
	buf    []byte         // a piece of several runs, gathered
}

func newCoder(c *collapsed) *coder {
	k := len(c.lay.pieces)
	maxSize := 0
	for _, p := range c.lay.pieces {
		maxSize = max(maxSize, p.size)
	}
	return &coder{c: c, vec: make([]uint32, k), hs: make([]uint64, k), pvec: make([]uint32, k), buf: make([]byte, maxSize)}
}

// setParent makes state id, decoded at s, the parent of the states
// encoded next; s must not change meanwhile.
func (d *coder) setParent(id int32, s unsafe.Pointer) {
	copy(d.pvec, d.c.vecs.at(id))
	d.parent = s
}

// image is piece i of the state at s: its own memory if it is one run,
// else gathered into buf.
func (d *coder) image(i int, s unsafe.Pointer) []byte {
	p := &d.c.lay.pieces[i]
	if len(p.runs) == 1 {
		return bytesAt(s, p.runs[0].off, p.runs[0].n)
	}
	b := d.buf[:0]
	for _, r := range p.runs {
		b = append(b, bytesAt(s, r.off, r.n)...)
	}
	return b
}

// encode sets vec and hs to the state at s and returns its hash. With
// insert, pieces not in their tables are added; without, their ids are
// noPiece and complete is false (the state is not stored).
func (d *coder) encode(s unsafe.Pointer, insert bool) (h uint64, complete bool) {
	c := d.c
	complete = true
	for i := range c.lay.pieces {
		if d.parent != nil && d.samePiece(i, s) {
			d.vec[i] = d.pvec[i]
			d.hs[i] = c.tabs[i].hashes[d.pvec[i]]
			continue
		}
		img := d.image(i, s)
		h := maphash.Bytes(c.seed, img)
		id, ok := c.tabs[i].find(img, h)
		if !ok {
			if insert {
				id = c.tabs[i].add(img, h)
			} else {
				complete = false
			}
		}
		d.vec[i], d.hs[i] = id, h
	}
	return hashVec(d.hs), complete
}

// samePiece reports whether piece i of the state at s is the parent's.
func (d *coder) samePiece(i int, s unsafe.Pointer) bool {
	for _, r := range d.c.lay.pieces[i].runs {
		if !bytes.Equal(bytesAt(s, r.off, r.n), bytesAt(d.parent, r.off, r.n)) {
			return false
		}
	}
	return true
}

// storeMode is the mode opt asks for, FLUSHPROOF_STORE deciding StoreAuto.
func storeMode(opt Options) StoreMode {
	if opt.Store != StoreAuto {
		return opt.Store
	}
	switch os.Getenv(storeEnv) {
	case "whole":
		return StoreWhole
	case "compact":
		return StoreCompact
	}
	return StoreAuto
}

// newStore returns the store a search of S keeps its states in.
func newStore[S comparable](mode StoreMode) store[S] {
	if mode == StoreWhole {
		return store[S]{}
	}
	lay := layoutOf[S]()
	if lay == nil || mode == StoreAuto && lay.size < compactMinSize {
		return store[S]{}
	}
	return store[S]{col: newCollapsed(lay)}
}

// store keeps a search's states: whole, or collapsed (col).
type store[S comparable] struct {
	whole stateStore[S]
	col   *collapsed
}

// len is the number of states kept.
func (st *store[S]) len() int {
	if st.col != nil {
		return st.col.vecs.n
	}
	return st.whole.n
}

// get writes state id into *dst.
func (st *store[S]) get(id int32, dst *S) {
	if st.col != nil {
		st.col.decode(id, unsafe.Pointer(dst))
		return
	}
	*dst = *st.whole.at(id)
}

// resize grows the store to n states.
func (st *store[S]) resize(n int) {
	if st.col != nil {
		st.col.vecs.resize(n)
		return
	}
	st.whole.resize(n)
}

// perState is what the store takes for a state besides new pieces: its
// value, or its vector.
func (st *store[S]) perState() int64 {
	if st.col != nil {
		return 4 * int64(st.col.vecs.k)
	}
	return int64(unsafe.Sizeof(*new(S)))
}

// newPieceBytes estimates what the pieces new with n more states take,
// from how many pieces the states so far brought (at least one new piece
// a state until a thousand states were kept); 0 for a whole store.
func (st *store[S]) newPieceBytes(n int) int64 {
	c := st.col
	if c == nil {
		return 0
	}
	var b int64
	kept := max(c.vecs.n, 1)
	for i := range c.tabs {
		t := &c.tabs[i]
		rate := float64(t.index.n)/float64(kept) + 0.05
		if kept < 1000 {
			rate = 1
		}
		b += int64(rate*float64(n)+1) * int64(t.size+8+16)
	}
	return b
}

// growth is what the store's tables may allocate while it gets n more
// states: a chunk of vectors or states, and for collapsed states the new
// pieces, a chunk of each table and the doubling of each index that may
// fill past three quarters.
func (st *store[S]) growth(n int) int64 {
	g := int64(n+chunkLen) * st.perState()
	c := st.col
	if c == nil {
		return g
	}
	kept := max(c.vecs.n, 1)
	for i := range c.tabs {
		t := &c.tabs[i]
		more := n
		if kept >= 1000 {
			more = int(float64(t.index.n)/float64(kept)*float64(n)*2) + 64
		}
		if t.index.full(more) {
			g += int64(max(16, 2*len(t.index.slots))) * 8
		}
		g += int64(more+pieceChunk)*int64(t.size) + int64(sliceGrowth(len(t.hashes), cap(t.hashes), more, 8))
	}
	return g
}

// bytes is what the store holds: the states' values or vectors, and the
// pieces' tables.
func (st *store[S]) bytes() int64 {
	c := st.col
	if c == nil {
		var b int64
		for _, ch := range st.whole.chunks {
			b += int64(cap(ch)) * int64(unsafe.Sizeof(*new(S)))
		}
		return b
	}
	var b int64
	for _, ch := range c.vecs.chunks {
		b += int64(cap(ch)) * 4
	}
	for i := range c.tabs {
		b += c.tabs[i].bytes()
	}
	return b
}

package explore

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The collapsed store (Options.Store) must give the result of the store
// that keeps states whole: the same numbering, states, parents, labels,
// statistics, verdict and counterexample, sequentially and in parallel.

// sameStores explores sys with states kept whole, sequentially, and
// collapsed with 1, 2 and 3 workers (every level of at least minLevel
// states in parallel), and requires the same result (Result.Diff).
func sameStores[S comparable](t *testing.T, sys System[S], opt Options, minLevel int, what string) *Result[S] {
	t.Helper()
	opt.ParallelMinLevel = minLevel
	opt.Workers, opt.Store = 1, StoreWhole
	whole := Explore(sys, opt)
	require.False(t, whole.Compact, what)
	for _, w := range []int{1, 2, 3} {
		opt.Workers, opt.Store = w, StoreCompact
		r := Explore(sys, opt)
		require.True(t, r.Compact, "%s: not collapsed", what)
		require.NoError(t, whole.Diff(r), "%s, collapsed, %d workers", what, w)
	}
	return whole
}

// wideState spreads a graph's state over fields of several pieces, with
// padding and a blank field, which wide's Next fills with garbage: ==
// does not look at them, and neither must the collapsed store.
type wideState struct {
	a uint8 // s & 0xff
	// 3 bytes of padding
	b uint32    // s>>8 & 0xff
	c [70]uint8 // each s>>16
	d bool      // s is odd
	// 1 byte of padding
	e [40]uint16 // each s>>12 & 0xf
	f int64      // 7
	_ uint32     // not compared
	g [30]int8   // each s & 3
	// 2 bytes of padding
}

func toWide(s uint32, junk uint32) wideState {
	w := wideState{a: uint8(s), b: s >> 8 & 0xff, d: s&1 == 1, f: 7}
	for i := range w.c {
		w.c[i] = uint8(s >> 16)
	}
	for i := range w.e {
		w.e[i] = uint16(s >> 12 & 0xf)
	}
	for i := range w.g {
		w.g[i] = int8(s & 3)
	}
	scribble(unsafe.Pointer(&w), junk)
	return w
}

func (w wideState) node() uint32 { return uint32(w.a) | w.b<<8 | uint32(w.c[0])<<16 }

// scribble writes junk into the bytes of a wideState at p that are
// padding or blank fields.
func scribble(p unsafe.Pointer, junk uint32) {
	for _, b := range wideJunk {
		*(*byte)(unsafe.Add(p, b)) = byte(mix(junk + uint32(b)))
	}
}

// wideJunk are the offsets of wideState's bytes that == does not compare.
var wideJunk = func() []uintptr {
	t := reflect.TypeFor[wideState]()
	used := make([]bool, t.Size())
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Name != "_" {
			for b := f.Offset; b < f.Offset+f.Type.Size(); b++ {
				used[b] = true
			}
		}
	}
	var out []uintptr
	for b, u := range used {
		if !u {
			out = append(out, uintptr(b))
		}
	}
	return out
}()

// wide is a graph whose states are wideStates with junk in their padding.
type wide struct{ graph }

func (g wide) Init() []wideState {
	var out []wideState
	for i, s := range g.graph.Init() {
		out = append(out, toWide(s, uint32(i)))
	}
	return out
}
func (g wide) Next(s wideState, yield func(Label, wideState)) {
	n := s.node()
	g.graph.Next(n, func(l Label, t uint32) { yield(l, toWide(t, n^uint32(l.Actor))) })
}
func (g wide) Check(s wideState) error       { return g.graph.Check(s.node()) }
func (g wide) Unfinished(s wideState) uint64 { return g.graph.Unfinished(s.node()) }

// symWide: wide with symGraph's symmetry.
type symWide struct{ wide }

func (g symWide) Next(s wideState, yield func(Label, wideState)) {
	g.wide.Next(toWide(s.node()&^1, 0), yield)
}
func (g symWide) Check(s wideState) error       { return g.wide.Check(toWide(s.node()&^1, 0)) }
func (g symWide) Unfinished(s wideState) uint64 { return g.wide.Unfinished(toWide(s.node()&^1, 0)) }
func (symWide) Canonical(s wideState) wideState { return toWide(s.node()&^1, 1) }

func TestCompactLayout(t *testing.T) {
	lay := layoutOf[wideState]()
	require.NotNil(t, lay)
	assert.Equal(t, int(unsafe.Sizeof(wideState{})), lay.size)
	// Every field but the blank one, each byte once, in pieces of at
	// most pieceMax bytes; no padding.
	var covered []uint32
	total := 0
	for _, p := range lay.pieces {
		assert.LessOrEqual(t, p.size, pieceMax)
		n := 0
		for _, r := range p.runs {
			for b := r.off; b < r.off+r.n; b++ {
				covered = append(covered, b)
			}
			n += int(r.n)
		}
		assert.Equal(t, p.size, n)
		total += n
	}
	assert.Equal(t, 1+4+70+1+80+8+30, total)
	assert.Greater(t, len(lay.pieces), 1)
	typ := reflect.TypeFor[wideState]()
	var want []uint32
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i); f.Name != "_" {
			for b := f.Offset; b < f.Offset+f.Type.Size(); b++ {
				want = append(want, uint32(b))
			}
		}
	}
	assert.Equal(t, want, covered)

	// What == does not compare by bytes, or what refers to memory, is
	// kept whole.
	type withPointer struct {
		a int
		p *int
	}
	type withString struct{ s [1]string }
	type withBlankPointer struct {
		a int
		_ *int
	}
	type nested struct {
		x [3]struct {
			a uint8
			b uint64
		}
		y [4][5]int16
	}
	assert.Nil(t, layoutOf[floatState]())
	assert.Nil(t, layoutOf[withPointer]())
	assert.Nil(t, layoutOf[withString]())
	assert.Nil(t, layoutOf[withBlankPointer]())
	assert.Nil(t, layoutOf[any]())
	assert.Nil(t, layoutOf[struct{}]())
	assert.NotNil(t, layoutOf[nested]())
	assert.NotNil(t, layoutOf[uint32]())
	assert.False(t, Explore[floatState](floaty{}, Options{Store: StoreCompact}).Compact)
	// StoreAuto collapses large states only.
	assert.False(t, Explore[[2]int](grid{n: 3, bad: none, noStep: none}, Options{}).Compact)
	assert.True(t, Explore[[2]int](grid{n: 3, bad: none, noStep: none}, Options{Store: StoreCompact}).Compact)
	assert.True(t, Explore[wideState](wide{graph{n: 100}}, Options{}).Compact)
	assert.False(t, Explore[wideState](wide{graph{n: 100}}, Options{Store: StoreWhole}).Compact)
}

// floaty is a system over a state with floats: kept whole.
type floaty struct{}

type floatState struct {
	a int
	f [2]float32
}

func (floaty) Actors() []string                         { return []string{"a"} }
func (floaty) Init() []floatState                       { return []floatState{{}} }
func (floaty) Next(floatState, func(Label, floatState)) {}
func (floaty) Describe(Label) string                    { return "" }
func (floaty) Check(floatState) error                   { return nil }
func (floaty) Unfinished(floatState) uint64             { return 0 }

// TestCompactPaddingIgnored: states that differ only in padding and blank
// fields are one state, as == says, and have one vector.
func TestCompactPaddingIgnored(t *testing.T) {
	a, b := toWide(12345, 1), toWide(12345, 2)
	require.True(t, a == b)
	require.NotEqual(t, unsafe.Slice((*byte)(unsafe.Pointer(&a)), unsafe.Sizeof(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b)), unsafe.Sizeof(b)),
		"the test needs states whose bytes differ")
	c := newCollapsed(layoutOf[wideState]())
	d := newCoder(c)
	ha, _ := d.encode(unsafe.Pointer(&a), true)
	va := append([]uint32(nil), d.vec...)
	hb, complete := d.encode(unsafe.Pointer(&b), false)
	require.True(t, complete)
	assert.Equal(t, va, d.vec)
	assert.Equal(t, ha, hb)
	// Decoded, it is the same state.
	id := c.vecs.push(va)
	var out wideState
	c.decode(id, unsafe.Pointer(&out))
	assert.True(t, a == out)
	assert.Equal(t, uint32(12345), out.node())

	// A whole search: as many states as the graph has, with the junk in
	// every state's padding different from its parent's.
	g := graph{n: 5000}
	r := Explore[uint32](g, Options{Workers: 1})
	for _, w := range []int{1, 2} {
		rw := Explore[wideState](wide{g}, Options{Workers: w, ParallelMinLevel: 1, Store: StoreCompact})
		require.True(t, rw.Compact)
		assert.Equal(t, r.Stats.States, rw.Stats.States)
		assert.Equal(t, r.Transitions, rw.Transitions)
	}
}

func TestCompactSameAsWhole(t *testing.T) {
	for name, tc := range map[string]struct {
		sys System[[2]int]
		opt Options
	}{
		"grid":         {grid{n: 2, bad: none, noStep: none}, Options{}},
		"cex":          {grid{n: 5, bad: [2]int{2, 3}, noStep: none}, Options{}},
		"deadlock":     {grid{n: 3, bad: none, noStep: [2]int{1, 1}}, Options{}},
		"big cex":      {grid{n: 300, bad: [2]int{170, 150}, noStep: none}, Options{Liveness: true}},
		"big deadlock": {grid{n: 300, bad: none, noStep: [2]int{100, 123}}, Options{}},
		"big budget":   {grid{n: 300, bad: none, noStep: none}, Options{MaxStates: 9000}},
	} {
		sameStores(t, tc.sys, tc.opt, 1, name)
	}
	for _, opt := range []Options{{}, {Liveness: true}} {
		sameStores[spinState](t, spin{}, opt, 1, fmt.Sprintf("spin %+v", opt))
	}
	for _, g := range []star{{n: 20000}, {n: 20000, bad: 1 + mix(30001)%20000}} {
		for _, opt := range []Options{{}, {MaxStates: 5}, {Liveness: true}} {
			sameStores[uint32](t, g, opt, 1, fmt.Sprintf("%+v %+v", g, opt))
		}
	}
	kinds := map[ViolationKind]int{}
	for _, threshold := range []int{1, 4096} {
		for i, g := range []graph{
			{n: 15000},
			{n: 15000, bad: 2000},
			{n: 15000, dead: 3000, wait: 2},
			{n: 15000, dead: 20, wait: 1000},
			{n: 15000, trap: 30},
			{n: 15000, trap: 3000, bad: 7000},
		} {
			opts := []Options{{}, {MaxStates: 9000}, {Liveness: true, Obligations: true}}
			if threshold > 1 {
				opts = opts[:1] // sequential and parallel levels mixed
			}
			for _, opt := range opts {
				what := fmt.Sprintf("threshold %d, graph %d %+v, %+v", threshold, i, g, opt)
				for _, r := range []*Result[wideState]{
					sameStores[wideState](t, wide{g}, opt, threshold, "wide "+what),
					sameStores[wideState](t, symWide{wide{g}}, opt, threshold, "symmetric wide "+what),
				} {
					if r.Violation != nil {
						kinds[r.Violation.Kind]++
					}
				}
				sameStores[uint32](t, g, opt, threshold, what)
			}
		}
	}
	assert.NotZero(t, kinds[Safety], "%v", kinds)
	assert.NotZero(t, kinds[Deadlock], "%v", kinds)
	assert.NotZero(t, kinds[BlockedForever], "%v", kinds)
}

// TestCompactMemoryAccounting: the collapsed store's growth estimate
// covers what it allocates between two polls.
func TestCompactMemoryAccounting(t *testing.T) {
	e := &explorer[wideState]{r: &Result[wideState]{}}
	e.r.states = newStore[wideState](StoreCompact)
	st := &e.r.states
	c := st.col
	d := newCoder(c)
	for s := uint32(0); s < 200000; s += pollStates {
		before := st.bytes()
		est := st.growth(pollStates)
		for i := s; i < s+pollStates; i++ {
			w := toWide(mix(i), 0)
			d.encode(unsafe.Pointer(&w), true)
			c.vecs.push(d.vec)
		}
		require.LessOrEqual(t, st.bytes()-before, est, "at %d states", s)
	}
}

package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLitmusSCOutcomes: under SC, MP has exactly the three interleaving
// outcomes; a check that Outcomes explores every execution.
func TestLitmusSCOutcomes(t *testing.T) {
	got, err := Litmus{Model: SC, Threads: [2][]LitmusOp{
		{{Kind: LitStore, Loc: 0, Val: 1}, {Kind: LitStore, Loc: 1, Val: 1}},
		{{Kind: LitLoad, Loc: 1, Reg: 0}, {Kind: LitLoad, Loc: 0, Reg: 1}},
	}}.Outcomes(2)
	require.NoError(t, err)
	assert.Equal(t, []string{"r0=0 r1=0", "r0=0 r1=1", "r0=1 r1=1"}, got)
	_, err = Litmus{Model: SC, Threads: [2][]LitmusOp{{{Kind: LitLoad, Loc: MaxLocations}}}}.Outcomes(1)
	assert.Error(t, err)
}

func TestMemoryCompactsDeadStores(t *testing.T) {
	const x = 0
	readers := [MaxLocations]uint8{x: 0b01}
	m := New(Relaxed, readers)
	var err error
	for v := int64(1); v <= 20; v++ { // far more than maxStores: old ones die
		m, err = m.Store(1, x, v)
		require.NoError(t, err)
		if v%3 == 0 {
			_, m = m.LoadNewest(0, x)
		}
	}
	loads := m.Load(0, x)
	assert.LessOrEqual(t, len(loads), 3, "only stores since the reader's last look are live")
	assert.Equal(t, int64(20), loads[len(loads)-1].Val)
}

// TestLitmusRMWsOnOneLocation: two threads' read-modify-writes on one
// location are atomic under every model (Documentation/atomic_t.txt: a
// value-returning RMW reads the value just before its own write): two
// increments return 1 and 2 in some order; of two cmpxchg(0 -> 1) exactly
// one succeeds; an increment racing a cmpxchg(0 -> 1) either comes first
// (the cmpxchg then fails) or sees its 1. No model lets both read 0.
func TestLitmusRMWsOnOneLocation(t *testing.T) {
	const x = 0
	inc := func(reg int) LitmusOp { return LitmusOp{Kind: LitIncReturn, Loc: x, Reg: reg} }
	cas := func(reg int) LitmusOp { return LitmusOp{Kind: LitCmpxchg, Loc: x, Val: 1, Reg: reg} }
	for _, tc := range []struct {
		name   string
		t0, t1 LitmusOp
		want   []string
	}{
		{"inc_return twice", inc(0), inc(1), []string{"r0=1 r1=2", "r0=2 r1=1"}},
		{"cmpxchg twice", cas(0), cas(1), []string{"r0=0 r1=1", "r0=1 r1=0"}},
		{"inc_return against cmpxchg", inc(0), cas(1), []string{"r0=1 r1=0", "r0=2 r1=1"}},
	} {
		for _, m := range Models() {
			got, err := Litmus{Model: m, Threads: [2][]LitmusOp{{tc.t0}, {tc.t1}}}.Outcomes(2)
			require.NoError(t, err, "%s under %v", tc.name, m)
			assert.Equal(t, tc.want, got, "%s under %v", tc.name, m)
		}
	}
}

// TestReadersAreChecked: the readers of a location are a declaration the
// memory holds the caller to, because it drops the stores no reader can
// read: a plain load by a thread that is not a reader panics, SetReaders
// only narrows, and a thread becomes a reader only by an acquire from one.
func TestReadersAreChecked(t *testing.T) {
	const x, a, b, lock = 0, 0, 1, 2
	for _, model := range Models() {
		m := New(model, [MaxLocations]uint8{x: 1 << lock})
		assert.Panics(t, func() { m.Load(a, x) }, "%v: a load by a thread that is not a reader", model)
		assert.Panics(t, func() { m.SetReaders(x, 1<<a|1<<lock) }, "%v: SetReaders adds a reader", model)
		assert.Panics(t, func() { m.AddReader(x, a, b) }, "%v: an acquire from a thread that is not a reader", model)
		v, _ := m.LoadNewest(a, x)
		assert.Equal(t, int64(0), v, "%v: LoadNewest needs no declaration", model)
		m.AddReader(x, a, lock)
		assert.Equal(t, uint8(1<<a|1<<lock), m.Readers(x))
		assert.NotPanics(t, func() { m.Load(a, x) }, "%v", model)
		m.DropReader(lock)
		assert.Equal(t, uint8(1<<a), m.Readers(x))
	}
}

// TestAddReaderIsExact: under Relaxed a thread that was no reader (its
// view raised by compaction) and becomes one by an acquire reads exactly
// what it would have read had every store been kept: the stores from the
// lock's view on.
func TestAddReaderIsExact(t *testing.T) {
	const x, w, r, lock = 0, 0, 1, 2
	m := New(Relaxed, [MaxLocations]uint8{x: 1 << lock})
	var err error
	m, err = m.Store(w, x, 1)
	require.NoError(t, err)
	m.JoinView(lock, w, x) // w releases the lock after storing 1
	m, err = m.Store(w, x, 2)
	require.NoError(t, err)
	m, err = m.Store(w, x, 3)
	require.NoError(t, err)
	m.AddReader(x, r, lock) // r acquires: it may read 1, 2 or 3, never 0
	var got []int64
	for _, l := range m.Load(r, x) {
		got = append(got, l.Val)
	}
	assert.Equal(t, []int64{1, 2, 3}, got)
}

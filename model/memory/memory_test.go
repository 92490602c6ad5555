package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

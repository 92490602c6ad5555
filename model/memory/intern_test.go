package memory

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInternConcurrent: goroutines interning the same values at once get
// one id per value, and every id gives back its value; the zero value is
// id 0.
func TestInternConcurrent(t *testing.T) {
	const n, workers = 1000, 4 // the first four chunks (64, 128, 256, 512 values)
	value := func(i int) lkExtra {
		var x lkExtra
		x.glob = vw(i)
		x.cur[1] = vw(i * 7)
		x.mview[2][3] = 1
		return x
	}
	ids := make([][]lkID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[w] = make([]lkID, n)
			for k := range n {
				i := (k + w*n/workers) % n // each worker from its own start
				x := value(i)
				ids[w][i] = lkPut(0, &x)
			}
		}()
	}
	wg.Wait()
	seen := map[lkID]int{}
	for i := range n {
		for w := 1; w < workers; w++ {
			require.Equal(t, ids[0][i], ids[w][i], "value %d", i)
		}
		require.Equal(t, value(i), lkGet(0, ids[0][i]))
		_, dup := seen[ids[0][i]]
		require.False(t, dup, "value %d shares an id", i)
		seen[ids[0][i]] = i
	}
	zero := lkExtra{}
	assert.Equal(t, lkID(0), lkPut(0, &zero))
	assert.Equal(t, zero, lkGet(0, 0))
}

// TestScopes: a scope's memories intern in tables of their own; once the
// scope is given back, its memories panic rather than read another
// scope's values, and the slot comes back with a new generation; a scope
// nothing holds is given back.
func TestScopes(t *testing.T) {
	a, b := NewScope(), NewScope()
	ma := a.New(LKMM, [MaxLocations]uint8{0b11, 0b11})
	mb := b.New(LKMM, [MaxLocations]uint8{0b11, 0b11})
	step := func(m Memory) Memory {
		cs, err := m.Stores(0, 0, 1)
		require.NoError(t, err)
		return cs[0].Mem
	}
	na, nb := step(ma), step(mb)
	assert.NotZero(t, na.ext)
	assert.NotEqual(t, na, nb, "the same step in two scopes: equal contents, different scopes")
	assert.Equal(t, lkGet(na.scope, na.ext), lkGet(nb.scope, nb.ext))
	assert.Equal(t, lkID(1), na.ext, "a fresh scope hands out ids from 1")

	a.Release()
	assert.Panics(t, func() { _ = na.Load(1, 0) }, "a memory of a scope given back")
	c := NewScope()
	assert.Equal(t, a.id&(maxScopes-1), c.id&(maxScopes-1), "the slot is reused")
	assert.NotEqual(t, a.id, c.id, "with a new generation")
	assert.Panics(t, func() { _ = na.Load(1, 0) }, "still refused: the generation differs")
	assert.NotPanics(t, func() { _ = nb.Load(1, 0) })
	b.Release()
	c.Release()

	d := NewScope()
	id := d.id
	d = nil
	require.Eventually(t, func() bool {
		runtime.GC()
		t := scopes.tabs[id&(maxScopes-1)].Load()
		return t == nil || t.id != id
	}, 5*time.Second, 10*time.Millisecond, "a scope nothing holds is given back")
	_ = d
}

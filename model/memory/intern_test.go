package memory

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInternConcurrent: goroutines interning the same values at once get
// one id per value, and every id gives back its value; the zero value is
// id 0.
func TestInternConcurrent(t *testing.T) {
	const n, workers = 3 * lkChunk, 4 // more than one chunk
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
				ids[w][i] = lkPut(&x)
			}
		}()
	}
	wg.Wait()
	seen := map[lkID]int{}
	for i := range n {
		for w := 1; w < workers; w++ {
			require.Equal(t, ids[0][i], ids[w][i], "value %d", i)
		}
		require.Equal(t, value(i), lkGet(ids[0][i]))
		_, dup := seen[ids[0][i]]
		require.False(t, dup, "value %d shares an id", i)
		seen[ids[0][i]] = i
	}
	zero := lkExtra{}
	assert.Equal(t, lkID(0), lkPut(&zero))
	assert.Equal(t, zero, lkGet(0))
}

package impl

import (
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWordIncReturnDistinct(t *testing.T) {
	const goroutines, incs = 32, 1000
	var w Word
	seen := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range incs {
				seen[g] = append(seen[g], w.IncReturn())
			}
		})
	}
	wg.Wait()

	all := slices.Concat(seen...)
	slices.Sort(all)
	for i, v := range all {
		require.EqualValues(t, i+1, v, "IncReturn values are 1..N, each once")
	}
	assert.EqualValues(t, goroutines*incs, w.Load())
}

func TestWordCompareAndSwap(t *testing.T) {
	cases := []struct {
		name           string
		start, old, nw int64
		wantOK         bool
		wantAfter      int64
	}{
		{"matches", 5, 5, 9, true, 9},
		{"differs", 5, 4, 9, false, 5},
		{"same value", 5, 5, 5, true, 5},
		{"zero value", 0, 0, -1, true, -1},
		{"negative", -3, -3, 3, true, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w Word
			w.Store(c.start)
			assert.Equal(t, c.wantOK, w.CompareAndSwap(c.old, c.nw))
			assert.Equal(t, c.wantAfter, w.Load())
		})
	}
}

// TestWordCompareAndSwapOneWinner races goroutines to move a Word from 0 to
// their own id: exactly one succeeds, and the Word holds its id.
func TestWordCompareAndSwapOneWinner(t *testing.T) {
	for range 100 {
		var w Word
		var winners Word
		var wg sync.WaitGroup
		for id := int64(1); id <= 8; id++ {
			wg.Go(func() {
				if w.CompareAndSwap(0, id) {
					winners.IncReturn()
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, winners.Load())
		require.NotZero(t, w.Load())
	}
}

// TestFenceStoreBuffering runs the store-buffering litmus test (SB in
// tools/memory-model/litmus-tests, "SB+fencembonceonces") on Words with
// Fence.Full between each thread's store and load. With smp_mb() in both
// threads the outcome r0 == 0 && r1 == 0 is forbidden; over sync/atomic it
// is forbidden even without the fence, which is why Full can be a no-op.
func TestFenceStoreBuffering(t *testing.T) {
	rounds := 10000
	if testing.Short() {
		rounds = 1000
	}
	var x, y, round, arrived Word
	r0 := make([]int64, rounds+1)
	r1 := make([]int64, rounds+1)
	wait := func(cond func() bool) {
		for spins := 0; !cond(); spins++ {
			if spins%64 == 63 {
				runtime.Gosched()
			}
		}
	}
	side := func(store, load *Word, out []int64) {
		var fence Fence
		for r := 1; r <= rounds; r++ {
			wait(func() bool { return round.Load() >= int64(r) })
			store.Store(1)
			fence.Full()
			out[r] = load.Load()
			arrived.IncReturn()
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { side(&x, &y, r0) })
	wg.Go(func() { side(&y, &x, r1) })
	forbidden := 0
	for r := 1; r <= rounds; r++ {
		x.Store(0)
		y.Store(0)
		round.Store(int64(r))
		wait(func() bool { return arrived.Load() == int64(2*r) })
		if r0[r] == 0 && r1[r] == 0 {
			forbidden++
		}
	}
	wg.Wait()
	assert.Zero(t, forbidden, "rounds in which both loads missed both stores, of %d", rounds)
}

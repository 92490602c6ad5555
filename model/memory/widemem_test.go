package memory

import (
	"fmt"
	"slices"
	"testing"

	"github.com/flushproof/flushproof/internal/mutate"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The operations the differential test draws.
const (
	wideOpLoad = iota
	wideOpLoadNewest
	wideOpStore
	wideOpStoreVisible
	wideOpFence
	wideOpIncReturn
	wideOpCAS
	wideOpDrain
	wideOpCount
)

// wideAgree asserts that m and w let every thread read the same values of
// every location, in the same order, and buffer stores in the same threads.
func wideAgree(t *rapid.T, m Memory, w *Wide, threads, locs int, step string) {
	for th := 0; th < threads; th++ {
		for loc := 0; loc < locs; loc++ {
			var want []int64
			for _, l := range m.Load(th, loc) {
				want = append(want, l.Val)
			}
			require.Equal(t, want, slices.Clone(w.Readable(th, loc)),
				"%s: readable values of thread %d, location %d", step, th, loc)
		}
	}
	var want []int
	for th := 0; th < threads; th++ {
		if m.Buffered(th) {
			want = append(want, th)
		}
	}
	require.Equal(t, want, w.Buffered(), "%s: threads with buffered stores", step)
}

// TestWideMemoryMatchesMemory runs random operation sequences on a Memory and
// a Wide side by side: the two must agree on every result and on what
// every thread may read after every step. Operations that would take Memory
// past its bounds are skipped on both.
func TestWideMemoryMatchesMemory(t *testing.T) {
	var all []int
	for op := range wideOpCount {
		all = append(all, op)
	}
	for _, model := range Models() {
		t.Run(model.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				threads := rapid.IntRange(2, 3).Draw(t, "threads")
				locs := rapid.IntRange(2, 3).Draw(t, "locs")
				wideRun(t, model, threads, locs, rapid.IntRange(0, 25).Draw(t, "ops"), rapid.SampledFrom(all))
			})
		})
	}
}

// TestWideMemoryMatchesMemoryLong is the same under Relaxed with runs long
// enough (and loads and fences frequent enough to keep Memory within its
// bounds) that Wide drops dead stores, which it does in batches.
func TestWideMemoryMatchesMemoryLong(t *testing.T) {
	ops := rapid.SampledFrom([]int{
		wideOpStore, wideOpStore, wideOpStore, wideOpLoad, wideOpLoad,
		wideOpLoadNewest, wideOpFence, wideOpIncReturn, wideOpCAS,
	})
	compacted := 0
	rapid.Check(t, func(t *rapid.T) {
		w, stores := wideRun(t, Relaxed, 2, 1, rapid.IntRange(300, 400).Draw(t, "ops"), ops)
		if len(w.vals[0]) < 1+stores {
			compacted++
		}
	})
	assert.Positive(t, compacted, "no run compacted WideMemory's history")
}

// wideRun applies n operations drawn from ops to a Memory and a Wide
// of threads threads and locs locations under model, asserting after each
// that they agree. It returns the Wide and the number of stores made.
func wideRun(t *rapid.T, model Model, threads, locs, n int, ops *rapid.Generator[int]) (*Wide, int) {
	var readers [MaxLocations]uint8
	for l := range readers {
		readers[l] = uint8(1<<threads - 1) // every thread of the test reads every location
	}
	m := New(model, readers)
	w := NewWide(model, threads, locs)
	wideAgree(t, m, w, threads, locs, "initially")

	val := rapid.Int64Range(0, 4)
	stores := 0
	for i := 0; i < n; i++ {
		op := ops.Draw(t, "op")
		th := rapid.IntRange(0, threads-1).Draw(t, "thread")
		loc := rapid.IntRange(0, locs-1).Draw(t, "loc")
		var step string
		switch op {
		case wideOpLoad:
			loads := m.Load(th, loc)
			choice := rapid.IntRange(0, len(loads)-1).Draw(t, "choice")
			step = fmt.Sprintf("op %d: T%d Load(%d) choice %d", i, th, loc, choice)
			got := w.Load(th, loc, choice)
			require.Equal(t, loads[choice].Val, got, "%s: value", step)
			m = loads[choice].Mem
		case wideOpLoadNewest:
			step = fmt.Sprintf("op %d: T%d LoadNewest(%d)", i, th, loc)
			var want int64
			l := m.LoadNewest(th, loc)
			require.Len(t, l, 1, step)
			want, m = l[0].Val, l[0].Mem
			require.Equal(t, want, w.LoadNewest(th, loc), "%s: value", step)
		case wideOpStore, wideOpStoreVisible:
			v := val.Draw(t, "val")
			visible := op == wideOpStoreVisible
			step = fmt.Sprintf("op %d: T%d Store(%d, %d) visible=%v", i, th, loc, v, visible)
			var next Memory
			var err error
			if visible {
				next, err = m.StoreVisible(th, loc, v)
			} else {
				next, err = m.Store(th, loc, v)
			}
			if err != nil {
				t.Logf("%s: skipped: %v", step, err)
				continue
			}
			m, stores = next, stores+1
			if visible {
				w.StoreVisible(th, loc, v)
			} else {
				w.Store(th, loc, v)
			}
		case wideOpFence:
			step = fmt.Sprintf("op %d: T%d Fence", i, th)
			m = m.Fence(th)
			w.Fence(th)
		case wideOpIncReturn:
			step = fmt.Sprintf("op %d: T%d IncReturn(%d)", i, th, loc)
			want, next, err := m.IncReturn(th, loc)
			if err != nil {
				t.Logf("%s: skipped: %v", step, err)
				continue
			}
			m, stores = next, stores+1
			require.Equal(t, want, w.IncReturn(th, loc), "%s: value", step)
		case wideOpCAS:
			old := rapid.Int64Range(0, 3).Draw(t, "old")
			nv := val.Draw(t, "new")
			step = fmt.Sprintf("op %d: T%d CompareAndSwap(%d, %d, %d)", i, th, loc, old, nv)
			ok, cur, next, err := m.CompareAndSwap(th, loc, old, nv)
			if err != nil {
				t.Logf("%s: skipped: %v", step, err)
				continue
			}
			m = next
			wok, wcur := w.CompareAndSwap(th, loc, old, nv)
			require.Equal(t, ok, wok, "%s: ok", step)
			require.Equal(t, cur, wcur, "%s: cur", step)
			if ok {
				stores++
			}
		case wideOpDrain:
			buffered := w.Buffered()
			if len(buffered) == 0 {
				continue
			}
			d := rapid.SampledFrom(buffered).Draw(t, "drain")
			step = fmt.Sprintf("op %d: drain T%d", i, d)
			found := false
			m.Steps(func(st int, next Memory) {
				if st == d {
					m, found = next, true
				}
			})
			require.True(t, found, "%s: Memory has no step for the thread", step)
			w.Drain(d)
		}
		t.Log(step)
		wideAgree(t, m, w, threads, locs, step)
	}
	return w, stores
}

// TestWideMemoryBeyondMemoryBounds: Wide takes more threads, more
// locations, more live stores and larger values than Memory, and a fence
// makes the latest value visible.
func TestWideMemoryBeyondMemoryBounds(t *testing.T) {
	const threads, locs, incs = 16, 20, 1000
	require.Greater(t, threads, MaxThreads)
	require.Greater(t, locs, MaxLocations)
	for _, model := range Models() {
		t.Run(model.String(), func(t *testing.T) {
			w := NewWide(model, threads, locs)
			var want [locs]int64
			for i := 0; i < incs; i++ {
				th, loc := i%threads, (i/threads+i)%locs
				want[loc]++
				require.Equal(t, want[loc], w.IncReturn(th, loc), "inc %d: T%d loc %d", i, th, loc)
			}
			for th := 0; th < threads; th++ {
				w.Fence(th)
				for loc := 0; loc < locs; loc++ {
					assert.Equal(t, []int64{want[loc]}, w.Readable(th, loc), "T%d loc %d after fence", th, loc)
					assert.Equal(t, want[loc], w.LoadNewest(th, loc), "T%d loc %d", th, loc)
				}
			}

			// A store by the last thread: after its fence, every thread's
			// LoadNewest sees it (under TSO not before: it waits in the
			// buffer).
			const last, loc = threads - 1, locs - 1
			w.Store(last, loc, 5000)
			if model == TSO {
				assert.Equal(t, []int{last}, w.Buffered())
				assert.Equal(t, want[loc], w.LoadNewest(0, loc), "buffered store is not visible")
			}
			w.Fence(last)
			assert.Empty(t, w.Buffered())
			for th := 0; th < threads; th++ {
				w.Fence(th)
				assert.Equal(t, int64(5000), w.LoadNewest(th, loc), "T%d after fence", th)
			}
		})
	}
}

// TestWideMemoryMatchesMemoryMutated: Memory and Wide implement each
// memory mutation the same way, so a mutation test that weakens memory
// weakens it alike for the explorer and for the model world.
func TestWideMemoryMatchesMemoryMutated(t *testing.T) {
	var all []int
	for op := range wideOpCount {
		all = append(all, op)
	}
	for _, mut := range []mutate.Mutation{mutate.FenceWeak, mutate.RMWStale} {
		t.Run(mut.String(), func(t *testing.T) {
			defer mutate.Set(t, mut)()
			for _, model := range Models() {
				rapid.Check(t, func(t *rapid.T) {
					threads := rapid.IntRange(2, 3).Draw(t, "threads")
					locs := rapid.IntRange(2, 3).Draw(t, "locs")
					wideRun(t, model, threads, locs, rapid.IntRange(0, 25).Draw(t, "ops"), rapid.SampledFrom(all))
				})
			}
		})
	}
}

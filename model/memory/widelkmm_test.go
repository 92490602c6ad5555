package memory

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/flushproof/flushproof/internal/mutate"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The operations the LKMM differential test draws.
const (
	lkOpLoad = iota
	lkOpLoadNewest
	lkOpStore
	lkOpFence
	lkOpInc        // atomic64_inc_return
	lkOpCmpxchg    // cmpxchg, fully ordered when it stores
	lkOpIncOnce    // atomic_inc
	lkOpCmpxchgRlx // cmpxchg_relaxed
	lkOpSettle
	lkOpForget // the thread ends (Memory.DropReader, Wide.Forget)
	lkOpCount
)

// lkAgree asserts that m and w have the same pending barriers and give
// every thread the same readable values of every location and the same
// places for a store to it.
func lkAgree(t *rapid.T, m Memory, w *Wide, threads, locs int, step string) {
	var pending []int
	for th := 0; th < threads; th++ {
		if m.post&(1<<th) != 0 {
			pending = append(pending, th)
		}
	}
	require.Equal(t, pending, w.Pending(), "%s: pending barriers", step)
	for th := 0; th < threads; th++ {
		if w.gone[th] {
			continue // it ended: nothing more to ask of it
		}
		for loc := 0; loc < locs; loc++ {
			var want []int64
			for _, l := range m.Load(th, loc) {
				if first, _ := altParts(l.Alt); len(first) == 0 {
					want = append(want, l.Val)
				}
			}
			require.Equal(t, want, slices.Clone(w.Readable(th, loc)),
				"%s: readable values of thread %d, location %d", step, th, loc)
			cs, err := m.Stores(th, loc, 1)
			places, werr := w.StoreChoices(th, loc)
			if err != nil && !errors.Is(err, ErrUnordered) {
				continue // Memory's bound
			}
			require.Equal(t, errors.Is(err, ErrUnordered), errors.Is(werr, ErrUnordered), "%s: store by thread %d to %d refused", step, th, loc)
			var wantPlaces []int
			for _, c := range cs {
				if first, k := altParts(c.Alt); len(first) == 0 {
					wantPlaces = append(wantPlaces, k)
				}
			}
			require.Equal(t, wantPlaces, places, "%s: places of a store by thread %d to %d", step, th, loc)
			for _, ordered := range []bool{true, false} {
				lkAgreeRMW(t, m, w, th, loc, ordered, step)
			}
		}
	}
}

// lkAgreeRMW asserts that an increment by th of loc reads the same stores
// in m and w when no other thread's pending barrier completes first.
func lkAgreeRMW(t *rapid.T, m Memory, w *Wide, th, loc int, ordered bool, step string) {
	inc := func(v int64) (int64, bool) { return v + 1, true }
	var rs []RMWResult
	var err error
	if ordered {
		rs, err = m.RMW(th, loc, inc)
	} else {
		rs, err = m.RMWUnordered(th, loc, inc)
	}
	if err != nil {
		return // Memory's bound, or refused (the store test above compares that)
	}
	var want []int
	for _, r := range rs {
		if first, k := altParts(r.Alt); len(first) == 0 {
			want = append(want, k)
		}
	}
	got, err := w.RMWChoices(th, loc, ordered, false, inc)
	require.NoError(t, err, step)
	require.Equal(t, want, got, "%s: stores an increment by thread %d of %d (ordered %v) may read", step, th, loc, ordered)
}

// altParts splits a memory.Alt: the threads whose pending barriers
// completed first, in order, and how many stores are newer than the one
// read or made.
func altParts(a Alt) (first []int, newer int) {
	for k := 0; k < altThreads; k++ {
		if u := int(a>>(4*k)) & 0xf; u != 0 {
			first = append(first, u-1)
		}
	}
	return first, int(a >> 12)
}

// completeAll lets the pending barriers of threads us take effect in w,
// in order: what Memory did before the result taken.
func completeAll(w *Wide, us []int) {
	for _, u := range us {
		w.Complete(u)
	}
}

// index is the position of k in ks (it must be there).
func index(t *rapid.T, ks []int, k int, what string) int {
	i := slices.Index(ks, k)
	if i < 0 {
		t.Fatalf("%s: Wide has no result with %d stores newer (it has %v)", what, k, ks)
	}
	return i
}

// TestWideLKMMMatchesMemory runs random operation sequences under LKMM on
// a Memory without its reductions and on a Wide side by side, taking the
// same result of every operation in both (where Memory completes other
// threads' pending barriers before a barrier, Wide completes them as
// steps of their own first): the two must agree on the results, on the
// values read and on lkAgree after every step. Operations that would take
// Memory past its bounds are skipped on both.
func TestWideLKMMMatchesMemory(t *testing.T) {
	rapid.Check(t, lkWideRun)
}

// TestWideLKMMMatchesMemoryMutated: the same under the memory mutations.
func TestWideLKMMMatchesMemoryMutated(t *testing.T) {
	for _, mut := range []mutate.Mutation{mutate.FenceWeak, mutate.RMWStale} {
		t.Run(mut.String(), func(t *testing.T) {
			defer mutate.Set(t, mut)()
			rapid.Check(t, lkWideRun)
		})
	}
}

func lkWideRun(t *rapid.T) {
	threads := rapid.IntRange(2, 4).Draw(t, "threads")
	locs := rapid.IntRange(1, 3).Draw(t, "locs")
	lkWideOps(t, threads, locs, rapid.IntRange(0, 30).Draw(t, "ops"), rapid.IntRange(0, lkOpCount-1))
}

// TestWideLKMMMatchesMemoryLong is the same with runs long enough (and
// loads and barriers frequent enough to keep Memory within its bounds)
// that Wide drops old stores, which it does in batches.
func TestWideLKMMMatchesMemoryLong(t *testing.T) {
	ops := rapid.SampledFrom([]int{lkOpStore, lkOpStore, lkOpLoadNewest, lkOpLoadNewest, lkOpLoad,
		lkOpFence, lkOpInc, lkOpIncOnce, lkOpCmpxchg, lkOpSettle})
	compacted := 0
	rapid.Check(t, func(t *rapid.T) {
		w, stores := lkWideOps(t, 2, 1, rapid.IntRange(300, 400).Draw(t, "ops"), ops)
		if len(w.lk.st[0]) < 1+stores {
			compacted++
		}
	})
	assert.Positive(t, compacted, "no run compacted Wide's stores")
}

// lkWideOps applies n operations drawn from ops to an unreduced Memory and
// a Wide under LKMM, asserting after each that they agree. It returns the
// Wide and the number of stores made.
func lkWideOps(t *rapid.T, threads, locs, n int, ops *rapid.Generator[int]) (*Wide, int) {
	stores := 0
	var readers [MaxLocations]uint8
	for l := range readers {
		readers[l] = uint8(1<<threads - 1)
	}
	m := New(LKMM, readers)
	m.Unreduced()
	w := NewWide(LKMM, threads, locs)
	if rapid.Bool().Draw(t, "any order") {
		m.AllowUnordered()
		w.AllowUnordered()
	}
	lkAgree(t, m, w, threads, locs, "initially")
	val := rapid.Int64Range(0, 3)
	for i := 0; i < n; i++ {
		op := ops.Draw(t, "op")
		th := rapid.IntRange(0, threads-1).Draw(t, "thread")
		loc := rapid.IntRange(0, locs-1).Draw(t, "loc")
		step := fmt.Sprintf("op %d: T%d", i, th)
		choose := func(k int) int { return rapid.IntRange(0, k-1).Draw(t, "choice") }
		if w.gone[th] {
			continue // it ended
		}
		switch op {
		case lkOpForget:
			live := 0
			for _, g := range w.gone {
				if !g {
					live++
				}
			}
			if live == 1 {
				continue // one thread keeps running
			}
			step += " ends"
			m.DropReader(th)
			w.Forget(th)
		case lkOpLoad:
			loads := m.Load(th, loc)
			c := choose(len(loads))
			first, newer := altParts(loads[c].Alt)
			step += fmt.Sprintf(" load %d after the barriers of %v, %d stores newer", loc, first, newer)
			completeAll(w, first)
			n := len(w.Readable(th, loc))
			require.Less(t, newer, n, step)
			require.Equal(t, loads[c].Val, w.Load(th, loc, n-1-newer), "%s: value", step)
			m = loads[c].Mem
		case lkOpLoadNewest:
			step += fmt.Sprintf(" load newest %d", loc)
			ls := m.LoadNewest(th, loc)
			c := choose(len(ls))
			first, _ := altParts(ls[c].Alt)
			step += fmt.Sprintf(" after the barriers of %v", first)
			completeAll(w, first)
			require.Equal(t, ls[c].Val, w.LoadNewest(th, loc), "%s: value", step)
			m = ls[c].Mem
		case lkOpStore:
			v := val.Draw(t, "val")
			cs, err := m.Stores(th, loc, v)
			if err != nil && !errors.Is(err, ErrUnordered) {
				continue // Memory's bound
			}
			k, werr := w.StoreChoices(th, loc)
			require.Equal(t, errors.Is(err, ErrUnordered), errors.Is(werr, ErrUnordered), "%s: store refused", step)
			if err != nil {
				continue
			}
			c := choose(len(cs))
			first, nw := altParts(cs[c].Alt)
			step += fmt.Sprintf(" store %d to %d after the barriers of %v, %d stores newer", v, loc, first, nw)
			completeAll(w, first)
			k, _ = w.StoreChoices(th, loc)
			w.StoreAt(th, loc, v, false, index(t, k, nw, step))
			m, stores = cs[c].Mem, stores+1
		case lkOpFence:
			cs := m.Fences(th)
			c := choose(len(cs))
			first, _ := altParts(cs[c].Alt)
			step += fmt.Sprintf(" smp_mb after the barriers of %v", first)
			completeAll(w, first)
			w.Fence(th)
			m = cs[c].Mem
		case lkOpInc, lkOpCmpxchg, lkOpIncOnce, lkOpCmpxchgRlx:
			old, nv := val.Draw(t, "old"), val.Draw(t, "new")
			f := func(v int64) (int64, bool) { return v + 1, true }
			if op == lkOpCmpxchg || op == lkOpCmpxchgRlx {
				f = func(v int64) (int64, bool) { return nv, v == old }
			}
			ordered := op == lkOpInc || op == lkOpCmpxchg
			cond := op == lkOpCmpxchg || op == lkOpCmpxchgRlx
			var rs []RMWResult
			var err error
			switch {
			case ordered && cond:
				rs, err = m.RMWCond(th, loc, f)
			case ordered:
				rs, err = m.RMW(th, loc, f)
			default:
				rs, err = m.RMWOrdered(th, loc, f, RMWOrder{Cond: cond})
			}
			if err != nil && !errors.Is(err, ErrUnordered) {
				continue
			}
			k, werr := w.RMWChoices(th, loc, ordered, cond, f)
			require.Equal(t, errors.Is(err, ErrUnordered), errors.Is(werr, ErrUnordered), "%s: RMW refused", step)
			if err != nil {
				continue
			}
			c := choose(len(rs))
			first, newer := altParts(rs[c].Alt)
			step += fmt.Sprintf(" RMW (op %d) on %d after the barriers of %v, %d stores newer", op, loc, first, newer)
			completeAll(w, first)
			k, _ = w.RMWChoices(th, loc, ordered, cond, f)
			o, nw, stored := w.RMWAt(th, loc, ordered, cond, f, index(t, k, newer, step))
			require.Equal(t, rs[c].Old, o, "%s: old", step)
			require.Equal(t, rs[c].Stored, stored, "%s: stored", step)
			if stored {
				require.Equal(t, rs[c].New, nw, "%s: new", step)
				stores++
			}
			m = rs[c].Mem
		case lkOpSettle:
			step += " settles"
			cs := m.Settle(th)
			c := choose(len(cs))
			first, _ := altParts(cs[c].Alt)
			step += fmt.Sprintf(" after the barriers of %v", first)
			completeAll(w, first)
			w.Settle(th)
			m = cs[c].Mem
		}
		t.Log(step)
		lkAgree(t, m, w, threads, locs, step)
	}
	return w, stores
}

// TestWideLKMMBeyondMemoryBounds: under LKMM Wide takes more threads,
// locations, live stores and pending barriers than Memory, and larger
// values: increments that read the newest store count up, and after every
// pending barrier and a barrier of its own each thread sees the count.
func TestWideLKMMBeyondMemoryBounds(t *testing.T) {
	const threads, locs, incs = 16, 20, 3000
	w := NewWide(LKMM, threads, locs)
	inc := func(v int64) (int64, bool) { return v + 1, true }
	var want [locs]int64
	maxPending := 0
	for i := 0; i < incs; i++ {
		th, loc := i%threads, (i/threads+i)%locs
		ks, err := w.RMWChoices(th, loc, true, false, inc)
		require.NoError(t, err)
		require.Equal(t, 0, ks[len(ks)-1], "the last result reads the newest store")
		want[loc]++
		_, got, stored := w.RMWAt(th, loc, true, false, inc, len(ks)-1)
		require.True(t, stored)
		require.Equal(t, want[loc], got, "inc %d: T%d loc %d", i, th, loc)
		maxPending = max(maxPending, len(w.Pending()))
	}
	require.Greater(t, maxPending, altThreads, "more pending barriers than Memory can order")
	require.Greater(t, want[0], int64(127), "values beyond Memory's int8")
	for _, u := range w.Pending() {
		w.Complete(u)
	}
	for th := 0; th < threads; th++ {
		w.Fence(th)
		for loc := 0; loc < locs; loc++ {
			require.Equal(t, []int64{want[loc]}, w.Readable(th, loc), "T%d loc %d after the barriers", th, loc)
		}
	}
}

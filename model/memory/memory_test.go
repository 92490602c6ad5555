package memory

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
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
			m = m.LoadNewest(0, x)[0].Mem
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
		assert.Equal(t, int64(0), m.LoadNewest(a, x)[0].Val, "%v: LoadNewest needs no declaration", model)
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

// TestLKMMFencesEveryOrder: under LKMM a barrier has one result for each
// sequence in which other threads' pending barriers (after their fully
// ordered RMWs) complete before it: with two pending, none first, either
// one, or both in either order (5); the results are told apart by Alt.
// With more pending than Alt can name it panics rather than drop orders.
// (Without reductions: TestLKMMSubsumption has what they leave out.)
func TestLKMMFencesEveryOrder(t *testing.T) {
	const x = 0
	inc := func(old int64) (int64, bool) { return old + 1, true }
	pending := func(n int) Memory {
		m := New(LKMM, [MaxLocations]uint8{x: 1<<MaxThreads - 1})
		m.Unreduced()
		for u := 1; u <= n; u++ {
			rs, err := m.RMW(u, x, inc)
			require.NoError(t, err)
			require.Len(t, rs, orders(u-1), "thread %d's RMW: its barrier after every order of the %d pending ones", u, u-1)
			require.Equal(t, Alt(0), rs[0].Alt&0xfff, "the first result completes none first")
			m = rs[0].Mem // every barrier stays pending
		}
		require.Equal(t, uint8(1<<(n+1)-2), m.post)
		return m
	}
	cs := pending(2).Fences(0)
	require.Len(t, cs, orders(2))
	require.Equal(t, 5, orders(2))
	alts := map[Alt]bool{}
	for _, c := range cs {
		alts[c.Alt] = true
	}
	assert.Len(t, alts, 5, "each order has its own Alt")
	assert.Equal(t, "after the barrier of T2, then T1 took effect", Alt(3|2<<4).Text(func(u int) string { return fmt.Sprintf("T%d", u) }, false))
	assert.Len(t, pending(3).Fences(0), orders(3))
	assert.Panics(t, func() { pending(4).Fences(0) })
	assert.Equal(t, []Choice{{pending(1), 0}}, pending(1).Settle(0), "Settle of a thread with nothing pending")
	assert.NotEqual(t, pending(1), pending(1).Settle(1)[0].Mem)
	assert.Len(t, pending(2).Settle(2), orders(1), "a settle is a barrier: the others' pending ones may complete first")
}

// orders is the number of sequences of distinct elements of an n-set,
// the empty one included: sum over k of n!/(n-k)!.
func orders(n int) int {
	total, p := 1, 1
	for k := 1; k <= n; k++ {
		p *= n - k + 1
		total += p
	}
	return total
}

// TestLKMMSubsumption: the two results of pending barriers that the
// reduced search leaves out (see Subsumption in lkmm.go). Threads 1 and 2
// increment x with fully ordered RMWs, both barriers after them pending
// (thread 2 read thread 1's store); then thread 0 runs smp_mb, with or
// without a store to y before it that thread 3 may read.
func TestLKMMSubsumption(t *testing.T) {
	const x, y = 0, 1
	inc := func(old int64) (int64, bool) { return old + 1, true }
	setup := func(reduced, stored bool) Memory {
		m := New(LKMM, [MaxLocations]uint8{x: 0b111, y: 0b1001}) // thread 3 may read y
		if !reduced {
			m.Unreduced()
		}
		if stored {
			cs, err := m.Stores(0, y, 1)
			require.NoError(t, err)
			require.Len(t, cs, 1)
			m = cs[0].Mem
		}
		for u := 1; u <= 2; u++ {
			rs, err := m.RMW(u, x, inc)
			require.NoError(t, err)
			m = rs[0].Mem // the one where its barrier went first
			require.Equal(t, int64(u), rs[0].New)
		}
		require.Equal(t, uint8(0b110), m.post, "both barriers pending")
		return m
	}
	find := func(cs []Choice, alt Alt) Memory {
		for _, c := range cs {
			if c.Alt == alt {
				return c.Mem
			}
		}
		t.Fatalf("no result with Alt %#x", alt)
		return Memory{}
	}
	// Thread 0 has seen y = 1, which no pending barrier publishes: every
	// order stays. After "thread 2's, then thread 0's" the global view has
	// thread 2's increment, which covers all thread 1 has seen, so thread
	// 1's barrier would publish nothing new: it completes at once.
	full, red := setup(false, true).Fences(0), setup(true, true).Fences(0)
	assert.Len(t, full, 5)
	assert.Len(t, red, 5)
	after2 := Alt(3) // thread 2's barrier first (thread+1)
	assert.Equal(t, uint8(0b010), find(full, after2).post)
	assert.Equal(t, uint8(0), find(red, after2).post, "thread 1's barrier publishes nothing new")
	// Thread 0 has seen nothing: a result where a pending barrier went
	// first differs from "thread 0's first" only in thread 0's bigger
	// view, so only that one stays.
	full, red = setup(false, false).Fences(0), setup(true, false).Fences(0)
	assert.Len(t, full, 5)
	require.Len(t, red, 1)
	assert.Equal(t, Alt(0), red[0].Alt)
}

// TestLKMMNormalize: views a barrier takes in only joined with the global
// view are forgotten where the global view covers them. Thread 0 stores x
// and y with smp_mb between them or after both, then smp_mb again: y's
// message view then holds x in the first case only, but the global view
// covers x in both, so the reduced memories are equal.
func TestLKMMNormalize(t *testing.T) {
	const x, y = 0, 1
	run := func(reduced, mbBetween bool) Memory {
		m := New(LKMM, [MaxLocations]uint8{x: 0b11, y: 0b11}) // thread 1 may read both
		if !reduced {
			m.Unreduced()
		}
		store := func(loc int) {
			cs, err := m.Stores(0, loc, 1)
			require.NoError(t, err)
			m = cs[0].Mem // at the end of modification order
		}
		fence := func() {
			cs := m.Fences(0)
			require.Len(t, cs, 1)
			m = cs[0].Mem
		}
		store(x)
		if mbBetween {
			fence()
		}
		store(y)
		fence()
		if !mbBetween {
			fence()
		}
		return m
	}
	assert.Equal(t, run(true, true), run(true, false))
	assert.NotEqual(t, run(false, true), run(false, false))
}

// TestLKMMLoadNewestAfterSettle: a LoadNewest whose thread's pending
// barrier completes first, raising its view so that the oldest store is
// dropped, still reads (and leaves the thread's view at) the newest store.
// Found by TestWideLKMMMatchesMemory: the index was taken before the drop.
func TestLKMMLoadNewestAfterSettle(t *testing.T) {
	const x = 0
	m := New(LKMM, [MaxLocations]uint8{x: 0b11})
	m.Unreduced() // else thread 1's barrier, which would publish nothing new, completes at once
	rs, err := m.RMW(1, x, func(old int64) (int64, bool) { return old + 1, true })
	require.NoError(t, err)
	m = rs[0].Mem // thread 1's barrier pending
	cs, err := m.Stores(0, x, 2)
	require.NoError(t, err)
	m = cs[0].Mem          // after thread 1's store
	m = m.Fences(0)[0].Mem // thread 0's barrier first: the global view has its store
	require.Equal(t, uint8(0b10), m.post)
	ls := m.LoadNewest(1, x)
	require.Len(t, ls, 1, "thread 0 has no pending barrier")
	v, m := ls[0].Val, ls[0].Mem
	assert.Equal(t, int64(2), v)
	var got []int64
	for _, l := range m.Load(1, x) {
		got = append(got, l.Val)
	}
	assert.Equal(t, []int64{2}, got)
}

// TestViewLanes: the views' all-at-once comparison and join agree with
// location by location ones on every pair of views of in-range indices.
func TestViewLanes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		draw := func(name string) vw {
			var v vw
			for l := 0; l < MaxLocations; l++ {
				v = v.with(l, uint8(rapid.IntRange(0, MaxStores-1).Draw(t, name)))
			}
			return v
		}
		a, b := draw("a"), draw("b")
		for l := 0; l < MaxLocations; l++ {
			le := a.le(b)>>(laneBits*uint(l))&laneMask == laneMask
			require.Equal(t, a.at(l) <= b.at(l), le, "location %d", l)
			require.Equal(t, max(a.at(l), b.at(l)), a.join(b).at(l), "location %d", l)
		}
	})
}

// TestLKMMDependencies: under LKMM a store after a load of another
// location with no barrier between is refused unless it depends on that
// location's loads; a dependency on one location does not cover another,
// nor a load made after the store; smp_mb covers all.
func TestLKMMDependencies(t *testing.T) {
	const x, y, z = 0, 1, 2
	inc := func(old int64) (int64, bool) { return old + 1, true }
	m := New(LKMM, [MaxLocations]uint8{x: 1, y: 1, z: 1})
	m = m.Load(0, x)[0].Mem
	assert.Panics(t, func() { _, _ = m.StoresDep(0, y, 1, 1<<x) }, "a dependency without UseOrderings")
	m.UseOrderings()
	_, err := m.Stores(0, y, 1)
	require.ErrorIs(t, err, ErrUnordered, "a store after an unfenced load of x")
	_, err = m.RMWUnordered(0, y, inc)
	require.ErrorIs(t, err, ErrUnordered, "an unordered RMW after an unfenced load of x")
	_, err = m.StoresDep(0, y, 1, 1<<z)
	require.ErrorIs(t, err, ErrUnordered, "a dependency on z does not order the load of x")
	cs, err := m.StoresDep(0, y, 1, 1<<x)
	require.NoError(t, err, "a store that depends on the load of x")
	_, err = m.RMWOrdered(0, y, inc, RMWOrder{Deps: 1 << x})
	require.NoError(t, err, "an unordered RMW that depends on the load of x")
	_, err = cs[0].Mem.Stores(0, z, 1)
	require.ErrorIs(t, err, ErrUnordered, "the dependency covered one store only")
	cs, err = m.Stores(0, x, 1)
	require.NoError(t, err, "a store to the location loaded: ordered by coherence")
	m = m.Load(0, y)[0].Mem
	_, err = m.StoresDep(0, z, 1, 1<<x)
	require.ErrorIs(t, err, ErrUnordered, "the load of y is not depended on")
	_, err = m.StoresDep(0, z, 1, 1<<x|1<<y)
	require.NoError(t, err)
	for _, c := range m.Fences(0) {
		_, err = c.Mem.Stores(0, z, 1)
		require.NoError(t, err, "smp_mb orders every earlier load")
	}
	for _, model := range Models() {
		m := New(model, [MaxLocations]uint8{x: 1, y: 1})
		m.UseOrderings()
		m = m.Load(0, x)[0].Mem
		_, err := m.StoresDep(0, y, 1, 1<<x)
		assert.NoError(t, err, "%v runs in program order", model)
	}
}

// TestLKMMDependentStorePlacement: a store that depends on a load goes
// after the stores that load's message view holds (S+mb+data: P0 stores
// a=2, smp_mb, b=1; P1 reads b=1 and stores a from it: its store cannot
// go before a=2), and a plain store does not (it is refused); with
// AllowUnordered the store without dependency may go before a=2.
func TestLKMMDependentStorePlacement(t *testing.T) {
	const a, b = 0, 1
	places := func(m Memory, deps LocSet) []int64 {
		var finals []int64
		cs, err := m.StoresDep(1, a, 1, deps)
		require.NoError(t, err)
		for _, c := range cs {
			finals = append(finals, int64(c.Mem.Newest(a)))
		}
		return finals
	}
	for _, anyOrder := range []bool{false, true} {
		m := New(LKMM, [MaxLocations]uint8{a: 0b11, b: 0b11})
		m.UseOrderings()
		if anyOrder {
			m.AllowUnordered()
		}
		cs, err := m.Stores(0, a, 2)
		require.NoError(t, err)
		m = cs[0].Mem.Fences(0)[0].Mem
		cs, err = m.Stores(0, b, 1)
		require.NoError(t, err)
		m = cs[0].Mem
		var read bool
		for _, l := range m.Load(1, b) {
			if l.Val != 1 {
				continue
			}
			read = true
			assert.Equal(t, []int64{1}, places(l.Mem, 1<<b), "a store that depends on the load of b=1 goes after a=2")
			if anyOrder {
				assert.Equal(t, []int64{1, 2}, places(l.Mem, 0), "without the dependency it may go before a=2")
			}
		}
		require.True(t, read)
	}
}

// TestLKMMOrderingViewsStayZero: without UseOrderings a memory has no
// ordering views (nil when opened, so that an opened memory stays small to
// copy): no operation such a memory has touches them, or it would panic
// on the nil pointer, over random sequences of every one.
func TestLKMMOrderingViewsStayZero(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := New(LKMM, [MaxLocations]uint8{0: 0b111, 1: 0b111})
		m.AllowUnordered()
		inc := func(old int64) (int64, bool) { return old + 1, old < 5 }
		for i := 0; i < 12; i++ {
			th := rapid.IntRange(0, 2).Draw(rt, "thread")
			loc := rapid.IntRange(0, 1).Draw(rt, "loc")
			var ms []Memory
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				for _, l := range m.Load(th, loc) {
					ms = append(ms, l.Mem)
				}
			case 1:
				cs, err := m.Stores(th, loc, int64(i))
				if err != nil {
					return
				}
				for _, c := range cs {
					ms = append(ms, c.Mem)
				}
			case 2, 3:
				rmw := m.RMW
				if rapid.Bool().Draw(rt, "unordered") {
					rmw = m.RMWUnordered
				}
				rs, err := rmw(th, loc, inc)
				if err != nil {
					return
				}
				for _, r := range rs {
					ms = append(ms, r.Mem)
				}
			case 4:
				for _, c := range m.Fences(th) {
					ms = append(ms, c.Mem)
				}
			}
			m = ms[rapid.IntRange(0, len(ms)-1).Draw(rt, "result")]

		}
	})
}

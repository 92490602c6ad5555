package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLKMMFork: a release run on a fork of its thread (Fork) carries what
// the thread did before the fork and nothing the thread did after it: an
// acquire of the release may still read y's older value when the thread
// stored y after the fork, and may not when it stored y before the
// release in one stream. The fork reads the thread's stores as its own,
// is a reader of the thread's locations, and Join then Free give its
// events to the thread and free its slot.
func TestLKMMFork(t *testing.T) {
	const x, y, z = 0, 1, 2
	const p0, p1, fork = 0, 1, 6
	newMem := func() Memory {
		m := New(LKMM, [MaxLocations]uint8{x: 0b11, y: 0b11, z: 0b11})
		m.UseOrderings()
		return m
	}
	// p1's acquire of z=1, then its values of y.
	ys := func(m Memory) []int64 {
		var out []int64
		for _, a := range m.LoadAcquire(p1, z) {
			if a.Val != 1 {
				continue
			}
			for _, l := range a.Mem.Load(p1, y) {
				out = append(out, l.Val)
			}
		}
		return out
	}
	one := func(cs []Choice, err error) Memory {
		t.Helper()
		require.NoError(t, err)
		require.NotEmpty(t, cs)
		return cs[len(cs)-1].Mem // the store newest in co
	}

	// One stream: y=1, then the release of z: p1 sees y=1.
	m := newMem()
	m = one(m.Stores(p0, y, 1))
	m = one(m.StoresRelease(p0, z, 1))
	assert.Equal(t, []int64{1}, ys(m), "in one stream the release carries y")

	// Forked: x=1, fork, y=1 on the thread, the release on the fork.
	m = newMem()
	m = one(m.Stores(p0, x, 1))
	f := m.Fork(p0, fork, false)
	assert.Equal(t, p0, f.Forked(fork))
	assert.Equal(t, uint8(1<<p0|1<<p1|1<<fork), f.Readers(x), "the fork reads what its thread reads")
	assert.Equal(t, f.ThreadKey(p0, x, y, z), f.ThreadKey(fork, x, y, z), "the fork starts as its thread")
	assert.Panics(t, func() { f.Fork(p0, fork, false) }, "a slot that is a fork")
	f = one(f.Stores(p0, y, 1))
	loads := f.Load(fork, x)
	require.Len(t, loads, 1, "the fork has seen its thread's store")
	assert.Equal(t, int64(1), loads[0].Val)
	f = one(f.StoresRelease(fork, z, 1))
	assert.ElementsMatch(t, []int64{0, 1}, ys(f), "the release on the fork does not carry the store the thread made after it")

	// Join and Free: the thread has the release's store in view, and the
	// slot is free again.
	f = f.Join(p0, fork, false, true).Free(fork)
	assert.Equal(t, -1, f.Forked(fork))
	assert.Equal(t, uint8(1<<p0|1<<p1), f.Readers(z))
	zs := f.Load(p0, z)
	require.Len(t, zs, 1, "after the join the thread has seen its release")
	assert.Equal(t, int64(1), zs[0].Val)
}

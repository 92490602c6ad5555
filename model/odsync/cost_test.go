package odsync

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/spec"
)

// emptyFromHistory reads a call's command history as a device with one
// "cache holds a write" bit would: a plain write (or the data of an
// emulated FUA write) sets it, a flush that runs clears it, and a flush
// that finds it clear is empty. A single task waits for every command
// before the next, so each write has completed before the next command.
// It is a second reading of the history, independent of spec.Contract's
// coverage, which Cost.EmptyFlushes is counted from.
func emptyFromHistory(dev spec.Config, cmds []spec.Event) (flushes, empty int) {
	cached := false
	for _, e := range cmds {
		switch e.Kind {
		case spec.WriteSubmit:
			if dev.VolatileCache && !(e.FUA && dev.NativeFUA) {
				cached = true
			}
		case spec.WriteDataDone: // the post-flush, after the data went into the cache
			flushes++
			if !cached {
				empty++
			}
			cached = false
		case spec.FlushSubmit:
			if !dev.VolatileCache {
				continue // stripped: never reaches the device
			}
			flushes++
			if !cached {
				empty++
			}
			cached = false
		}
	}
	return flushes, empty
}

// TestCostEmptyFlushes pins how many of a write()'s flushes find nothing
// cached, per variant, device configuration and path, and checks every
// variant's count against a plain reading of its command history. The
// baseline's O_DSYNC write on a cache pays one empty flush: with native
// FUA the data never sat in the cache, with emulated FUA the post-flush
// has just emptied it. The patch removes exactly that flush.
func TestCostEmptyFlushes(t *testing.T) {
	fua, emu, none := spec.CacheFUA, spec.CacheEmulatedFUA, spec.NoCache
	type counts struct{ writes, flushes, empty int }
	cases := []struct {
		v    Variant
		dev  spec.Config
		path Path
		want counts
	}{
		{Baseline, fua, PureDirect, counts{1, 1, 1}},
		{Baseline, emu, PureDirect, counts{1, 2, 1}},
		{Baseline, none, PureDirect, counts{1, 0, 0}},
		{Patched, fua, PureDirect, counts{1, 0, 0}},
		{Patched, emu, PureDirect, counts{1, 1, 0}},
		{Patched, none, PureDirect, counts{1, 0, 0}},
		{Baseline, fua, FallbackAll, counts{1, 1, 0}},
		{Baseline, emu, FallbackAll, counts{1, 1, 0}},
		{Baseline, fua, ShortDirect, counts{2, 1, 0}},
		{Baseline, emu, ShortDirect, counts{2, 2, 0}},
		{Patched, fua, ShortDirect, counts{2, 1, 0}},
		{Patched, emu, ShortDirect, counts{2, 2, 0}},
	}
	for _, tc := range cases {
		c, err := CallCost(tc.v, tc.dev, tc.path)
		require.NoError(t, err)
		got := counts{c.FUAWrites + c.PlainWrites(), c.Flushes, c.EmptyFlushes}
		assert.Equal(t, tc.want, got, "%v %v %v: writes, flushes, empty flushes (%s)", tc.v, tc.dev, tc.path, commandList(c.Commands))
	}

	costs, err := Costs()
	require.NoError(t, err)
	for _, c := range costs {
		flushes, empty := emptyFromHistory(c.Device, c.Commands)
		assert.Equal(t, flushes, c.Flushes, "%v %v %v: flushes in the history (%s)", c.Variant, c.Device, c.Path, commandList(c.Commands))
		assert.Equal(t, empty, c.EmptyFlushes, "%v %v %v: empty flushes in the history (%s)", c.Variant, c.Device, c.Path, commandList(c.Commands))
		assert.Equal(t, c.Flushes, c.DirtyFlushes()+c.EmptyFlushes)
	}
}

// TestCostLatencyEmptyFlush: an empty flush is priced as EmptyFlush, or as
// Flush where that is zero, so that latencies without it keep their
// figures.
func TestCostLatencyEmptyFlush(t *testing.T) {
	base, err := CallCost(Baseline, spec.CacheEmulatedFUA, PureDirect)
	require.NoError(t, err)
	lat := Latency{CachedWrite: 100 * time.Microsecond, Flush: 200 * time.Microsecond}
	assert.Equal(t, 500*time.Microsecond, base.Latency(lat), "write + 2 flushes, the empty one priced as Flush")
	lat.EmptyFlush = 50 * time.Microsecond
	assert.Equal(t, 350*time.Microsecond, base.Latency(lat), "write + flush + empty flush")
	assert.InDelta(t, 1e6/350, base.IOPS(lat), 1e-6)

	fuaBase, err := CallCost(Baseline, spec.CacheFUA, PureDirect)
	require.NoError(t, err)
	lat.FUAWrite = 30 * time.Microsecond
	assert.Equal(t, 80*time.Microsecond, fuaBase.Latency(lat), "native FUA: FUA write + empty flush")

	// The patch's latencies have no EmptyFlush: the table's figures are unchanged.
	assert.Equal(t, 16578*time.Microsecond, base.Latency(DefaultLatency))
}

// TestSequenceCost: user space's commands, one after the other, counted as
// CallCost counts the kernel's.
func TestSequenceCost(t *testing.T) {
	w := spec.Event{Kind: spec.WriteSubmit}
	wFUA := spec.Event{Kind: spec.WriteSubmit, FUA: true}
	f := spec.Event{Kind: spec.FlushSubmit}
	type counts struct{ fua, plain, flushes, empty, stripped, trips int }
	cases := []struct {
		name string
		dev  spec.Config
		cmds []spec.Event
		want counts
	}{
		{"plain write", spec.CacheEmulatedFUA, []spec.Event{w}, counts{0, 1, 0, 0, 0, 1}},
		{"plain write", spec.NoCache, []spec.Event{w}, counts{0, 1, 0, 0, 0, 1}},
		{"write + fdatasync", spec.CacheFUA, []spec.Event{w, f}, counts{0, 1, 1, 0, 0, 2}},
		{"write + fdatasync", spec.CacheEmulatedFUA, []spec.Event{w, f}, counts{0, 1, 1, 0, 0, 2}},
		{"write + fdatasync", spec.NoCache, []spec.Event{w, f}, counts{0, 1, 0, 0, 1, 1}},
		{"write + 2 fdatasync", spec.CacheEmulatedFUA, []spec.Event{w, f, f}, counts{0, 1, 2, 1, 0, 3}},
		{"flushes alone", spec.CacheFUA, []spec.Event{f, f}, counts{0, 0, 2, 2, 0, 2}},
		{"FUA write", spec.CacheFUA, []spec.Event{wFUA}, counts{1, 0, 0, 0, 0, 1}},
		{"FUA write", spec.CacheEmulatedFUA, []spec.Event{wFUA}, counts{0, 1, 1, 0, 0, 2}},
		{"FUA write + flush", spec.CacheFUA, []spec.Event{wFUA, f}, counts{1, 0, 1, 1, 0, 2}},
	}
	for _, tc := range cases {
		c, err := SequenceCost(tc.dev, tc.cmds)
		require.NoError(t, err, "%s on %v", tc.name, tc.dev)
		got := counts{c.FUAWrites, c.PlainWrites(), c.Flushes, c.EmptyFlushes, c.StrippedFlushes, c.RoundTrips}
		assert.Equal(t, tc.want, got, "%s on %v (%s)", tc.name, tc.dev, commandList(c.Commands))
	}

	// A FUA write issued alone is the patched kernel's O_DSYNC write on the
	// pure direct path, and a FUA write + flush the baseline's.
	for _, dev := range spec.Configs() {
		for _, tc := range []struct {
			v    Variant
			cmds []spec.Event
		}{{Patched, []spec.Event{wFUA}}, {Baseline, []spec.Event{wFUA, f}}} {
			seq, err := SequenceCost(dev, tc.cmds)
			require.NoError(t, err)
			call, err := CallCost(tc.v, dev, PureDirect)
			require.NoError(t, err)
			seq.Variant, seq.Path = call.Variant, call.Path
			assert.Equal(t, call, seq, "%v on %v", tc.v, dev)
		}
	}

	_, err := SequenceCost(spec.CacheFUA, []spec.Event{{Kind: spec.WriteComplete}})
	assert.Error(t, err, "only writes and flushes submitted")
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var seedLatency = FsyncLatency{Write: 50 * time.Microsecond, Flush: 2 * time.Millisecond, Think: time.Millisecond, Jitter: 0.5}

func simulate(t *testing.T, v FsyncVariant, runs int, lat FsyncLatency) FsyncTiming {
	t.Helper()
	var tot FsyncTiming
	for seed := uint64(0); seed < uint64(runs); seed++ {
		r, err := SimulateFsync(FsyncConfig{Variant: v, Memory: SC, Tasks: 4, Fsyncs: 30, LogForce: true}, lat, seed)
		require.NoError(t, err)
		tot.Fsyncs += r.Fsyncs
		tot.Skipped += r.Skipped
		tot.Flushes += r.Flushes
		tot.Unsafe += r.Unsafe
	}
	return tot
}

// TestSimulateFsync: the timed runs follow the model's own transitions, so
// every task finishes; baseline never skips; the real variants never return
// with a write that is not durable; the read-before-writeback mutant does
// when fsyncs have nothing to log (fdatasync after overwrites), as the
// seed's replays found (15 of 528 lost).
func TestSimulateFsync(t *testing.T) {
	// fdatasync after overwrites, writes slower than flushes: the window in
	// which another task's flush is numbered after a too-early S but
	// submitted before the write completed is wide.
	overwrite := FsyncLatency{Write: 3 * time.Millisecond, Flush: time.Millisecond, Think: time.Millisecond, Jitter: 0.5, Overwrite: 1}
	base := simulate(t, Baseline, 5, seedLatency)
	assert.Equal(t, 5*4*30, base.Fsyncs)
	assert.Zero(t, base.Skipped)
	for _, v := range []FsyncVariant{Patched, Improved, PlainStoreCompleted} {
		r := simulate(t, v, 5, seedLatency)
		assert.Positive(t, r.Skipped, "%v: the append workload shares flushes", v)
		w := simulate(t, v, 5, overwrite)
		assert.Zero(t, w.Unsafe, "%v", v)
		assert.Equal(t, 5*4*30, r.Fsyncs, "%v", v)
		assert.Zero(t, r.Unsafe, "%v", v)
		assert.GreaterOrEqual(t, r.Flushes, r.Fsyncs-r.Skipped, "%v: an fsync that did not skip flushed", v)
	}
	mut := simulate(t, ReadBeforeWriteback, 5, overwrite)
	assert.Positive(t, mut.Unsafe, "reading S before the writeback must lose fsynced writes")
	one, err := SimulateFsync(FsyncConfig{Variant: ReadBeforeWriteback, Memory: SC, Tasks: 4, Fsyncs: 30, LogForce: true}, overwrite, 1)
	require.NoError(t, err)
	require.NotEmpty(t, one.Exposed)
	assert.Positive(t, one.CrashReplays(500, 1), "some crash points fall in an exposure window")
	safe, err := SimulateFsync(FsyncConfig{Variant: Patched, Memory: SC, Tasks: 4, Fsyncs: 30, LogForce: true}, overwrite, 1)
	require.NoError(t, err)
	assert.Empty(t, safe.Exposed)
	assert.Zero(t, safe.CrashReplays(500, 1))
	_, err = SimulateFsync(FsyncConfig{Variant: Patched, Memory: SC, Tasks: 2, Fsyncs: 1, FlushFailures: true}, seedLatency, 1)
	assert.Error(t, err)
}

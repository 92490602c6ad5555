package flushseq

import (
	"testing"
	"time"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var seedLatency = Latency{Write: 50 * time.Microsecond, Flush: 2 * time.Millisecond, Think: time.Millisecond, Jitter: 0.5}

func simulate(t *testing.T, v Variant, runs int, lat Latency) Timing {
	t.Helper()
	var tot Timing
	for seed := uint64(0); seed < uint64(runs); seed++ {
		r, err := Simulate(v, 4, 30, memory.SC, lat, seed)
		require.NoError(t, err)
		tot.Fsyncs += r.Fsyncs
		tot.Skipped += r.Skipped
		tot.Flushes += r.Flushes
		tot.Unsafe += r.Unsafe
	}
	return tot
}

// TestSimulateFsync: every task of a timed run finishes; baseline never skips; the real variants never return
// with a write that is not durable; the read-before-writeback mutant does
// when fsyncs have nothing to log (fdatasync after overwrites), as the
// patch's replays found (15 of 528 lost).
func TestSimulateFsync(t *testing.T) {
	// fdatasync after overwrites, writes slower than flushes: the window in
	// which another task's flush is numbered after a too-early S but
	// submitted before the write completed is wide.
	overwrite := Latency{Write: 3 * time.Millisecond, Flush: time.Millisecond, Think: time.Millisecond, Jitter: 0.5, Overwrite: 1}
	base := simulate(t, Baseline, 5, seedLatency)
	assert.Equal(t, 5*4*30, base.Fsyncs)
	assert.Zero(t, base.Skipped)
	for _, v := range []Variant{Patched, Improved, GroupCommit, BenignPlainStore} {
		r := simulate(t, v, 5, seedLatency)
		assert.Positive(t, r.Skipped, "%v: the append workload shares flushes", v)
		w := simulate(t, v, 5, overwrite)
		assert.Zero(t, w.Unsafe, "%v", v)
		assert.Equal(t, 5*4*30, r.Fsyncs, "%v", v)
		assert.Zero(t, r.Unsafe, "%v", v)
		assert.GreaterOrEqual(t, r.Flushes, r.Fsyncs-r.Skipped, "%v: an fsync that did not skip flushed", v)
	}
	mut := simulate(t, MutantReadBeforeWriteback, 5, overwrite)
	assert.Positive(t, mut.Unsafe, "reading S before the writeback must lose fsynced writes")
	one, err := Simulate(MutantReadBeforeWriteback, 4, 30, memory.SC, overwrite, 1)
	require.NoError(t, err)
	require.NotEmpty(t, one.Exposed)
	assert.Positive(t, one.CrashReplays(500, 1), "some crash points fall in an exposure window")
	safe, err := Simulate(Patched, 4, 30, memory.SC, overwrite, 1)
	require.NoError(t, err)
	assert.Empty(t, safe.Exposed)
	assert.Zero(t, safe.CrashReplays(500, 1))
	_, err = Simulate(Patched, 0, 1, memory.SC, seedLatency, 1)
	assert.Error(t, err)
	// Eight writers, as the patch ran, under every memory model.
	for _, m := range memory.Models() {
		r, err := Simulate(Patched, 8, 20, m, seedLatency, 2)
		require.NoError(t, err)
		assert.Equal(t, 8*20, r.Fsyncs, "%v", m)
		assert.Zero(t, r.Unsafe, "%v", m)
		assert.Positive(t, r.Skipped, "%v", m)
	}
}

// preflushCode: each task writes its block once with REQ_PREFLUSH|REQ_FUA
// and "returns".
type preflushCode struct{ returned int }

func (c *preflushCode) WorldConfig(tasks int, m memory.Model) world.Config {
	return world.Config{Memory: m, Tasks: tasks, Words: 2, Blocks: tasks, WordNames: WordNames}
}

func (c *preflushCode) Run(w *world.World, ch world.Chooser) (world.Outcome, error) {
	return w.Run(ch, func(t *world.Task) {
		d := t.Device()
		data := make([]byte, d.BlockSize())
		data[0] = 1
		if err := d.WriteAt(data, int64(t.ID()*d.BlockSize()), spec.Preflush|spec.FUA); err != nil {
			w.Fail(err)
			return
		}
		c.returned++
		t.Reached(Milestone{Step: Returned})
	})
}

func (c *preflushCode) Acked(int) []byte { return nil }
func (c *preflushCode) Counts() Counts   { return Counts{Returned: c.returned} }

// TestSimulatePreflushWrite: the timed chooser treats a write's preflush as
// the device's step, a flush's latency long, and sends the data only after
// it (blk-flush.c): a REQ_PREFLUSH|REQ_FUA write takes flush + write.
func TestSimulatePreflushWrite(t *testing.T) {
	lat := Latency{Write: 50 * time.Microsecond, Flush: 2 * time.Millisecond}
	code := &preflushCode{}
	r, err := SimulateCode(code, 1, memory.SC, lat, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, r.Fsyncs)
	assert.Equal(t, 1, r.Flushes, "the preflush is a flush")
	assert.Equal(t, lat.Flush+lat.Write, r.Elapsed)
}

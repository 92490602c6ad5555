package flushseq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// TestSkipShareSyncerValidated: the Syncer rows run impl.Syncer through a
// driver of their own; its runs in the model world (random schedules, every
// memory model, flush failures) must be runs of the explorer's state
// machine of the policy's variant, milestones included, so that the shares
// the rows print are those of the proven protocol.
func TestSkipShareSyncerValidated(t *testing.T) {
	variants := map[impl.Policy]Variant{impl.SkipIfFlushedSince: Patched, impl.Join: Improved,
		impl.GroupCommit: GroupCommit}
	for p, v := range variants {
		t.Run(p.String(), func(t *testing.T) {
			returned := 0
			for seed := uint64(0); seed < 60; seed++ {
				m := memory.Models()[seed%3]
				tasks := 1 + int(seed%3)
				code := &syncerCode{policy: p, fsyncs: 2}
				wc := code.WorldConfig(tasks, m)
				wc.FlushFailures = seed%2 == 1
				w, err := world.New(wc)
				require.NoError(t, err)
				_, err = code.Run(w, world.NewRandomChooser(seed))
				require.NoError(t, err)
				cfg := Config{Variant: v, Memory: m, Tasks: tasks, Fsyncs: 2, FlushFailures: wc.FlushFailures}
				res, err := ValidateTrace(cfg, w.Trace())
				require.NoError(t, err, "seed %d\n%s", seed, w.Format(0))
				assert.False(t, res.Lost, "seed %d", seed)
				n := code.Counts()
				assert.Zero(t, n.Unsafe, "seed %d", seed)
				assert.Equal(t, tasks*2, n.Returned+n.Failed, "seed %d: every Sync returned", seed)
				returned += n.Returned
			}
			assert.Positive(t, returned)
		})
	}
}

// TestSkipShareSyncerRows: the Syncer rows under the latency model. Always
// never skips and flushes once per Sync; group commit shares flushes; no
// policy returns a write that is not durable. The negative control (the
// sequence sampled before the write) must be caught by the same counting,
// or a zero in NOT DURABLE AT RETURN would prove nothing.
func TestSkipShareSyncerRows(t *testing.T) {
	lat := Latency{Write: 50 * time.Microsecond, Flush: 2 * time.Millisecond, Think: time.Millisecond, Jitter: 0.5}
	rows := map[string]skipShareRow{}
	for _, c := range skipShareCases {
		if _, ok := c.code(1).(*syncerCode); !ok {
			continue
		}
		row, err := skipShareRun(c, 8, 10, 3, 100, lat, func() string { return "" })
		require.NoError(t, err)
		assert.Equal(t, 3*8*10, row.Fsyncs, c.name)
		assert.Zero(t, row.NotDurable, c.name)
		assert.Zero(t, row.CrashesLosing, c.name)
		assert.GreaterOrEqual(t, row.Flushes, row.Fsyncs-row.Skipped, "%s: a Sync that did not skip flushed", c.name)
		rows[c.name] = row
	}
	require.Len(t, rows, len(impl.Policies()))
	assert.Zero(t, rows["impl.Syncer always"].Skipped)
	assert.Equal(t, rows["impl.Syncer always"].Fsyncs, rows["impl.Syncer always"].Flushes)
	assert.Positive(t, rows["impl.Syncer group-commit"].Skipped)

	// Writes slower than flushes: a flush numbered after an early sample
	// but submitted before the write completed is likely.
	slow := Latency{Write: 3 * time.Millisecond, Flush: time.Millisecond, Think: time.Millisecond, Jitter: 0.5}
	unsafe, exposed := 0, 0
	for seed := uint64(0); seed < 5; seed++ {
		r, err := SimulateCode(&syncerCode{policy: impl.SkipIfFlushedSince, fsyncs: 30, sampleBeforeWrite: true}, 4, memory.SC, slow, seed)
		require.NoError(t, err)
		unsafe += r.Unsafe
		exposed += len(r.Exposed)
	}
	assert.Positive(t, unsafe, "sampling before the write must return writes that are not durable")
	assert.Positive(t, exposed, "and leave windows in which a crash loses them")
}

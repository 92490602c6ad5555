package world_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/model/world/worldtest"
)

// failedFlushSeen is a task whose asynchronous flush has nothing to make
// durable, so its success and its failure leave the device as it was:
// only the task's own record of the flush's end (ended, failed) tells the
// two states apart. The task asserts the flush did not fail, which a
// flush that may fail breaks.
func failedFlushSeen(w *world.World) func(t *world.Task) {
	return func(t *world.Task) {
		d := t.Device()
		d.SubmitFlush()
		err := d.WaitFlush()
		t.Assert(err == nil, "the flush failed: %v", err)
	}
}

// TestAsyncFlushFailureIsReached: the search reaches the run in which the
// asynchronous flush fails (the key keeps its end and its error). Under
// the mutation world-key-no-flush-end the state after the failure meets
// the one after the success, which the search reached first, and the
// failure is never seen: SAFE.
func TestAsyncFlushFailureIsReached(t *testing.T) {
	cfgs := []world.Config{
		{Memory: memory.SC, Tasks: 1, Blocks: 1, FlushFailures: true},
		{Memory: memory.SC, Tasks: 2, Blocks: 1, FlushFailures: true},
	}
	for _, cfg := range cfgs {
		r, err := worldtest.Search(cfg, failedFlushSeen, worldtest.Options{})
		require.NoError(t, err)
		require.Error(t, r.Err, "%d tasks: the failed flush must be reached", cfg.Tasks)
		assert.Contains(t, r.Err.Error(), "the flush failed")
		assert.Contains(t, r.Timeline, "fails (EIO)")
	}
	// A subtest, so that the build without the mutations (where Set
	// skips) still runs the checks above for both configurations.
	t.Run("world-key-no-flush-end", func(t *testing.T) {
		defer mutate.Set(t, mutate.WorldKeyNoFlushEnd)()
		for _, cfg := range cfgs {
			r, err := worldtest.Search(cfg, failedFlushSeen, worldtest.Options{})
			require.NoError(t, err)
			assert.NoError(t, r.Err, "%d tasks, world-key-no-flush-end: the failure's state meets the success's", cfg.Tasks)
			assert.True(t, r.Safe)
		}
	})
}

// TestAsyncFlushMisuseFailsTheRun: at most one asynchronous flush per task
// at a time, and a WaitFlush needs one outstanding; a program that breaks
// either fails the run naming the call, rather than waiting on another
// flush's end or forever.
func TestAsyncFlushMisuseFailsTheRun(t *testing.T) {
	cfg := world.Config{Memory: memory.SC, Tasks: 1, Blocks: 1}
	twice := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			t.Device().SubmitFlush()
			t.Device().SubmitFlush()
			_ = t.Device().WaitFlush()
			t.Assert(true, "")
		}
	}
	r, err := worldtest.Search(cfg, twice, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "task 0 called SubmitFlush with its earlier asynchronous flush not yet waited for")

	unsubmitted := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			_ = t.Device().WaitFlush()
			t.Assert(true, "")
		}
	}
	r, err = worldtest.Search(cfg, unsubmitted, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "task 0 called WaitFlush with no asynchronous flush outstanding")

	// Submit, wait, submit again, wait: fine; and a flush submitted and
	// never waited for is fine too.
	inTurn := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			for range 2 {
				t.Device().SubmitFlush()
				t.Assert(t.Device().WaitFlush() == nil, "a flush failed")
			}
			t.Device().SubmitFlush()
		}
	}
	worldtest.Check(t, cfg, inTurn, worldtest.Options{})
}

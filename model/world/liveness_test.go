package world_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/model/world/worldtest"
)

// TestWorldtestReportsBlockedForever: task 0 waits on the wait queue for a
// change nobody makes, while task 1 spins forever. No state is a deadlock
// (task 1 always has a step), so a deadlock check alone passes; worldtest
// checks liveness by default and names the task blocked forever.
func TestWorldtestReportsBlockedForever(t *testing.T) {
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Blocks: 1}
	prog := func(w *world.World) func(t *world.Task) {
		ready := false
		return func(t *world.Task) {
			if t.ID() == 0 {
				t.Assert(true, "")
				t.WaitQueue().Wait(func() bool { return ready })
				return
			}
			for {
				t.Checkpoint()
				if t.Choose("spin", "spin again") == 2 {
					t.WaitQueue().Wake(func() { ready = true }) // never: Choose returns 0 or 1
				}
			}
		}
	}
	r, err := worldtest.Search(cfg, prog, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err, "task 0 never returns")
	t.Logf("%v\n%s", r.Err, r.Timeline)
	assert.Contains(t, r.Err.Error(), "task 0 has not returned and no schedule lets it return")

	r, err = worldtest.Search(cfg, prog, worldtest.Options{NoLiveness: true})
	require.NoError(t, err)
	assert.NoError(t, r.Err, "deadlocks alone: no state is one")
	assert.True(t, r.Safe)
}

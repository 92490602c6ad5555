package odsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/spec"
)

// A task whose flush ends without waking it (mutate.WaiterNeverWakes) is
// stuck in its wait for the flush: the explorer must report it.
func TestWaiterNeverWakesAfterFlush(t *testing.T) {
	for _, v := range []Variant{Baseline, Patched} {
		c := StandardConfig(v, spec.CacheFUA)
		t.Run(c.Row().Name(), func(t *testing.T) {
			sys, err := NewSystem(c)
			require.NoError(t, err)
			v, end, stuck := exploretest.LostWakeup[State](t, sys)
			waiters := 0
			for task := 0; task < c.Tasks; task++ {
				if tk := end.task[task]; tk.pc == pcFlushWait && end.flive&(1<<(tk.wait-1)) == 0 {
					waiters++ // its flush ended, and it still waits
					assert.NotZero(t, stuck&(1<<task), "%s waits for a flush that ended but is not named\n%s", sys.Actors()[task], v.Timeline())
				}
			}
			assert.NotZero(t, waiters, "the path ends with a task waiting for a flush that ended\n%s", v.Timeline())
		})
	}
}

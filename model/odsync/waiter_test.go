package odsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
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
			opt := explore.Options{Liveness: true}

			clean := explore.Explore[State](sys, opt)
			require.Nil(t, clean.Violation, "without the mutation every write() returns")
			require.True(t, clean.Exhausted)

			defer mutate.Set(mutate.WaiterNeverWakes)()
			r := exploretest.SameWithWorkers[State](t, sys, opt, 1, "a waiter that never wakes")
			end, stuck := exploretest.NeverReturns[State](t, sys, r)
			waiters := 0
			for task := 0; task < c.Tasks; task++ {
				if tk := end.task[task]; tk.pc == pcFlushWait && end.flive&(1<<(tk.wait-1)) == 0 {
					waiters++ // its flush ended, and it still waits
					assert.NotZero(t, stuck&(1<<task), "%s waits for a flush that ended but is not named\n%s", sys.Actors()[task], r.Violation.Timeline())
				}
			}
			assert.NotZero(t, waiters, "the path ends with a task waiting for a flush that ended\n%s", r.Violation.Timeline())
		})
	}
}

package flushseq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/memory"
)

// A joiner whose re-check finds the joined flush failed and then has no
// step (mutate.WaiterNeverWakes) is stuck at the re-check, a step no
// hand-kept list of waiting steps named: the explorer must see it.
func TestWaiterNeverWakesAfterFailedJoin(t *testing.T) {
	for _, v := range []Variant{Improved, GroupCommit} {
		t.Run(v.String(), func(t *testing.T) {
			c := Config{Variant: v, Memory: memory.SC, Tasks: 2, Fsyncs: 1, FlushFailures: true}
			sys, err := NewSystem(c)
			require.NoError(t, err)
			opt := explore.Options{Liveness: true}

			clean := explore.Explore[State](sys, opt)
			require.Nil(t, clean.Violation, "without the mutation every fsync returns")
			require.True(t, clean.Exhausted)

			defer mutate.Set(mutate.WaiterNeverWakes)()
			r := exploretest.SameWithWorkers[State](t, sys, opt, 1, v.String()+" with a waiter that never wakes")
			end, stuck := exploretest.NeverReturns[State](t, sys, r)
			joiners := 0
			for task := 0; task < c.Tasks; task++ {
				if end.task[task].pc == pcJoinRecheck {
					joiners++
					assert.NotZero(t, stuck&(1<<task), "%s is stuck at the re-check but not named\n%s", sys.Actors()[task], r.Violation.Timeline())
				}
			}
			assert.Equal(t, 1, joiners, "one task ends at the re-check after its join\n%s", r.Violation.Timeline())
			assert.Contains(t, r.Violation.Timeline(), "fails (EIO)", "the joined flush failed")
		})
	}
}

package flushseq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			lost, end, stuck := exploretest.LostWakeup[State](t, sys)
			joiners := 0
			for task := 0; task < c.Tasks; task++ {
				if end.task[task].pc == pcJoinRecheck {
					joiners++
					assert.NotZero(t, stuck&(1<<task), "%s is stuck at the re-check but not named\n%s", sys.Actors()[task], lost.Timeline())
				}
			}
			assert.Equal(t, 1, joiners, "one task ends at the re-check after its join\n%s", lost.Timeline())
			assert.Contains(t, lost.Timeline(), "fails (EIO)", "the joined flush failed")
		})
	}
}

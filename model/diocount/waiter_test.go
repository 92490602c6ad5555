package diocount

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/memory"
)

// Truncate asleep in inode_dio_wait whose wake-up is lost
// (mutate.WaiterNeverWakes) never frees the blocks: the explorer must
// report it.
func TestWaiterNeverWakesInDIOWait(t *testing.T) {
	for _, k := range []Kind{SyncDIO, AIO} {
		c := StandardConfig(Patched, memory.SC, k, k)
		t.Run(c.Row().Name(), func(t *testing.T) {
			sys, err := NewSystem(c)
			require.NoError(t, err)
			opt := explore.Options{Liveness: true}

			clean := explore.Explore[State](sys, opt)
			require.Nil(t, clean.Violation, "without the mutation truncate and every writer return")
			require.True(t, clean.Exhausted)

			defer mutate.Set(mutate.WaiterNeverWakes)()
			r := exploretest.SameWithWorkers[State](t, sys, opt, 1, "a waiter that never wakes")
			end, stuck := exploretest.NeverReturns[State](t, sys, r)
			assert.Equal(t, truncSleep, end.trunc, "the path ends with truncate asleep\n%s", r.Violation.Timeline())
			assert.Zero(t, end.mem.Newest(locCount), "with nothing left to wait for\n%s", r.Violation.Timeline())
			assert.NotZero(t, stuck&(1<<sys.truncActor()), "truncate is not named\n%s", r.Violation.Timeline())
		})
	}
}

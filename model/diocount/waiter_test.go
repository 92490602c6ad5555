package diocount

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			v, end, stuck := exploretest.LostWakeup[State](t, sys)
			assert.Equal(t, truncSleep, end.trunc, "the path ends with truncate asleep\n%s", v.Timeline())
			assert.Zero(t, end.mem.Newest(locCount), "with nothing left to wait for\n%s", v.Timeline())
			assert.NotZero(t, stuck&(1<<sys.truncActor()), "truncate is not named\n%s", v.Timeline())
		})
	}
}

package iowq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore/exploretest"
)

// A worker waiting for the inode's hash whose wake-up is lost
// (mutate.WaiterNeverWakes) never gets its write: the explorer must
// report it.
func TestWaiterNeverWakesOnHash(t *testing.T) {
	c := StandardConfig(Hashed, XFS, false)
	sys, err := NewSystem(c)
	require.NoError(t, err)
	v, end, stuck := exploretest.LostWakeup[State](t, sys)
	waiters := 0
	for w := range c.Workers {
		if end.pc[w] == pcPick && sys.blocked(end, w) == blockedHash {
			waiters++
			assert.NotZero(t, stuck&(1<<w), "%s waits for the hash but is not named\n%s", sys.Actors()[w], v.Timeline())
		}
	}
	assert.NotZero(t, waiters, "the path ends with a worker waiting for the hash\n%s", v.Timeline())
}

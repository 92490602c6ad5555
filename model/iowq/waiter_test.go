package iowq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
)

// A worker waiting for the inode's hash whose wake-up is lost
// (mutate.WaiterNeverWakes) never gets its write: the explorer must
// report it.
func TestWaiterNeverWakesOnHash(t *testing.T) {
	c := StandardConfig(Hashed, XFS, false)
	sys, err := NewSystem(c)
	require.NoError(t, err)
	opt := explore.Options{Liveness: true}

	clean := explore.Explore[State](sys, opt)
	require.Nil(t, clean.Violation, "without the mutation every worker finishes")
	require.True(t, clean.Exhausted)

	defer mutate.Set(mutate.WaiterNeverWakes)()
	r := exploretest.SameWithWorkers[State](t, sys, opt, 1, "a waiter that never wakes")
	end, stuck := exploretest.NeverReturns[State](t, sys, r)
	waiters := 0
	for w := range c.Workers {
		if end.pc[w] == pcPick && sys.blocked(end, w) == blockedHash {
			waiters++
			assert.NotZero(t, stuck&(1<<w), "%s waits for the hash but is not named\n%s", sys.Actors()[w], r.Violation.Timeline())
		}
	}
	assert.NotZero(t, waiters, "the path ends with a worker waiting for the hash\n%s", r.Violation.Timeline())
}

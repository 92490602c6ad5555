package jbd2

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/spec"
)

// The committer waiting for its commit block, whose end does not wake it
// (mutate.WaiterNeverWakes), never returns: the explorer must report it.
func TestWaiterNeverWakesOnCommitBlock(t *testing.T) {
	for _, v := range []Variant{Barrier, AsyncCommit} {
		c := StandardConfig(v, spec.CacheFUA)
		// The catalog's async_commit row without failures (with them it is
		// unsafe: commit.c ignores the flush's error).
		c.Failures = v != AsyncCommit
		t.Run(c.Row().Name(), func(t *testing.T) {
			sys, err := NewSystem(c)
			require.NoError(t, err)
			v, end, stuck := exploretest.LostWakeup[State](t, sys)
			assert.Equal(t, pcCommitWait, end.pc, "the path ends with the committer waiting for the commit block\n%s", v.Timeline())
			assert.Zero(t, end.live&(1<<sys.commitBlock(int(end.txn))), "whose write ended\n%s", v.Timeline())
			assert.Equal(t, uint64(1)<<actorJbd2, stuck, "%s", v.Timeline())
		})
	}
}

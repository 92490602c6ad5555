package world_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/implcheck"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// TestFlushSeqDiamonds: impl.FlushSeq at 2 tasks x 2 fsyncs with flush
// EIO, under SC and LKMM: every independent pair of steps commutes
// (world.CommuteCheck), and the log says how many of the search's
// transitions close a diamond of independent steps, the replays a
// partial-order reduction could save.
func TestFlushSeqDiamonds(t *testing.T) {
	for _, m := range []memory.Model{memory.SC, memory.LKMM} {
		c := implcheck.FlushSeq{Tasks: 2, Fsyncs: 2, Memory: m}
		s, err := world.NewSearch(c.Config(), c.Program(), world.SearchOptions{})
		require.NoError(t, err)
		r := s.Explore(explore.Options{Workers: 1})
		require.True(t, r.Exhausted)
		cs, err := world.CommuteCheck(s)
		require.NoError(t, err)
		t.Logf("%v: %d states, %d transitions, %d pairs enabled together, %d independent; %d transitions (%.0f %%) close a diamond",
			m, r.States, cs.Transitions, cs.Pairs, cs.Independent, cs.Diamonds, 100*float64(cs.Diamonds)/float64(cs.Transitions))
	}
}

package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/spec"
)

func TestParallelExploreDevice(t *testing.T) {
	for _, bug := range []Bug{Correct, FlushCoversInFlight, CrashRevertsDurable} {
		w := StandardWorkload(spec.CacheFUA, bug)
		s, err := NewSystem(w)
		require.NoError(t, err)
		what := fmt.Sprintf("device %v %v", spec.CacheFUA, bug)
		r := exploretest.SameWithWorkers[State](t, s, explore.Options{Liveness: true}, 256, what)
		if bug == Correct {
			// Pinned by TestDeviceStateCountStandard.
			assert.Equal(t, 130364, r.States)
			assert.Equal(t, 192375, r.Transitions)
			assert.True(t, r.Exhausted)
		}
		if bug == Correct {
			// CheckSound with the default number of workers.
			d, err := CheckSound(w, explore.Options{Liveness: true})
			require.NoError(t, err)
			exploretest.Same(t, r, d, what+", CheckSound")
		}
	}
	// The completeness system interns device states as it goes: it is
	// searched sequentially whatever Workers says (the race detector would
	// see it otherwise), with the same result.
	w := StandardWorkload(spec.Config{VolatileCache: true, NativeFUA: true}, Correct)
	seq, err := CheckComplete(w, explore.Options{Workers: 1})
	require.NoError(t, err)
	par, err := CheckComplete(w, explore.Options{Workers: 2})
	require.NoError(t, err)
	assert.Equal(t, 24464, par.States)
	assert.Equal(t, seq.Stats.States, par.States)
	assert.Equal(t, seq.Transitions, par.Transitions)
}

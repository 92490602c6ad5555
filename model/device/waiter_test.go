package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/spec"
)

// withoutCrash is a device system whose crash step is hidden. A crash ends
// every task (Unfinished is 0 after it), and it is enabled in every state
// before it, so with it no task can ever be blocked forever: the tasks'
// own liveness is only seen without it.
type withoutCrash struct{ *System }

func (w withoutCrash) Next(st State, yield func(explore.Label, State)) {
	w.System.Next(st, func(l explore.Label, n State) {
		if spec.Kind(l.Kind) != spec.Crash {
			yield(l, n)
		}
	})
}

// A task whose command ended without waking it (mutate.WaiterNeverWakes)
// never submits its next one: the explorer must report it.
func TestWaiterNeverWakesOnCommand(t *testing.T) {
	for name, w := range map[string]Workload{
		"writer":  {Config: spec.CacheFUA, Writers: [][]WriteOp{{{Blocks: 1}, {Blocks: 1, FUA: true}}}, Failures: true},
		"flusher": {Config: spec.CacheFUA, Writers: [][]WriteOp{{{Blocks: 1}}}, Flushes: 2},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := NewSystem(w)
			require.NoError(t, err)
			sys := withoutCrash{s}
			v, end, stuck := exploretest.LostWakeup[State](t, sys)
			waiters := 0
			for task := range s.actors[:len(s.actors)-1] {
				if end.wait[task] != 0 && s.ended(&end, task) && s.Unfinished(end)&(1<<task) != 0 {
					waiters++ // its command ended, it has more, and it still waits
					assert.NotZero(t, stuck&(1<<task), "%s waits for a command that ended but is not named\n%s", s.actors[task], v.Timeline())
				}
			}
			assert.NotZero(t, waiters, "the path ends with a task waiting for a command that ended\n%s", v.Timeline())
		})
	}
}

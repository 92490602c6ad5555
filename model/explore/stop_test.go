package explore

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A search that a budget or Options.Stop ends early is not exhausted and
// says why, whatever the number of workers.
func TestExploreStopReasons(t *testing.T) {
	big := grid{n: 400, bad: none, noStep: none} // 160,801 states
	for _, workers := range []int{1, 2} {
		for _, tc := range []struct {
			name string
			opt  Options
			want string
		}{
			{"states", Options{MaxStates: 1000}, StopStates},
			{"memory", Options{MaxMemory: 1}, StopMemory},
			{"stop at once", Options{Stop: func() string { return "interrupted" }}, "interrupted"},
			{"stop later", Options{Stop: stopAfter(3, "interrupted")}, "interrupted"},
			{"liveness, stop later", Options{Liveness: true, Stop: stopAfter(3, "interrupted")}, "interrupted"},
		} {
			tc.opt.Workers, tc.opt.ParallelMinLevel = workers, 64
			r := Explore[[2]int](big, tc.opt)
			assert.Nil(t, r.Violation, "%s, %d workers", tc.name, workers)
			assert.False(t, r.Exhausted, "%s, %d workers: a search cut short proves nothing", tc.name, workers)
			assert.Equal(t, tc.want, r.Stopped, "%s, %d workers", tc.name, workers)
			assert.Less(t, r.States, 160801, "%s, %d workers", tc.name, workers)
		}
		r := Explore[[2]int](big, Options{Workers: workers, ParallelMinLevel: 64, Stop: func() string { return "" }, MaxMemory: 1 << 40})
		assert.True(t, r.Exhausted, "%d workers: hooks that never fire change nothing", workers)
		assert.Empty(t, r.Stopped)
		assert.Equal(t, 160801, r.States)
	}
}

// stopAfter is a Stop hook that answers why from its n-th call on.
func stopAfter(n int, why string) func() string {
	calls := 0
	return func() string {
		calls++
		if calls >= n {
			return why
		}
		return ""
	}
}

// The memory limit stops a search before the runtime holds more than the
// limit: the search counts the next doubling of its tables. 2.25 million
// states of a grid need about 100 MiB kept whole, and about as much
// collapsed (a piece a state: the grid's states share nothing); the limit
// allows 24 MiB more than the test holds before.
func TestExploreStopsBeforeTheMemoryLimit(t *testing.T) {
	for _, store := range []StoreMode{StoreWhole, StoreCompact} {
		for _, workers := range []int{1, 2} {
			debug.FreeOSMemory()
			var g memGauge
			g.init()
			limit := g.held() + 24<<20
			r := Explore[[2]int](grid{n: 1500, bad: none, noStep: none}, Options{Workers: workers, MaxMemory: limit, Store: store})
			t.Logf("store %d, %d workers: stopped at %d states, %d MiB held of a limit of %d MiB", store, workers, r.States, g.held()>>20, limit>>20)
			require.Equal(t, store == StoreCompact, r.Compact)
			require.Equal(t, StopMemory, r.Stopped, "%d workers", workers)
			assert.False(t, r.Exhausted)
			assert.Greater(t, r.States, 100000, "%d workers: the search ran until close to the limit", workers)
			assert.LessOrEqual(t, g.held(), limit, "%d workers: the search stopped before the limit", workers)
		}
	}
}

// With Liveness the backward search runs after the forward one; a stop
// asked for there is honoured too.
func TestExploreStopDuringLiveness(t *testing.T) {
	calls := 0
	r := Explore[spinState](spin{}, Options{Liveness: true, Stop: func() string {
		calls++
		if calls > 2 { // the start, the liveness poll: then in blockedForever
			return "interrupted"
		}
		return ""
	}})
	assert.Nil(t, r.Violation)
	assert.False(t, r.Exhausted)
	assert.Equal(t, "interrupted", r.Stopped)
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// reduceMutations are tried by TestReductionsKeepVerdicts: each memory
// operation weakened (smp_mb, the fully ordered read-modify-writes, the
// view a lock hands on), and the protocol mutations of the rows that have
// reductions. Whether each changes some verdict is logged; the memory
// ones a reduced row uses must.
var reduceMutations = []struct {
	m          mutate.Mutation
	mustChange bool // some reduced row's verdict changes
}{
	{mutate.FenceWeak, true},
	{mutate.RMWStale, true},
	{mutate.JoinViewLost, true}, // only the diocount rows take a lock; under LKMM their memory reduces (explore.InnerReducer)
	{mutate.JoinNoFallback, true},
	{mutate.WaiterNeverWakes, true},
}

// TestReductionsKeepVerdicts runs every row of the verdict table with and
// without state reductions (explore.Options.NoReduce) at its bound: the
// verdicts and the counterexample lengths must be equal. It does so again
// under each mutation above, for the rows whose search used a reduction: a
// reduction that assumed what a barrier does (resetting a view to the
// newest store where a barrier was expected, say) hides the weakened
// barrier's bug in the reduced search only, and the two then disagree.
func TestReductionsKeepVerdicts(t *testing.T) {
	var reduced []verdict.Row
	t.Run("none", func(t *testing.T) {
		start := time.Now()
		rows := Rows(false, false)
		for _, r := range rows {
			red, _, ok := compareReduced(t, r, true)
			if red.Reduced {
				reduced = append(reduced, r)
			}
			if ok {
				assert.True(t, red.Expected(), "%s: %s", r.Name(), red.Result())
				assert.NotEmpty(t, red.Judged, "%s: no obligations counted", r.Name())
				if red.Violation == nil {
					assert.Empty(t, red.Vacuous(), "%s: a SAFE row whose obligations no state judged (%v)", r.Name(), red.Judged)
				}
			}
		}
		t.Logf("%d rows, %d with reductions searched again without them, in %v",
			len(rows), len(reduced), time.Since(start).Round(time.Millisecond))
		assert.NotEmpty(t, reduced)
	})
	for _, tc := range reduceMutations {
		t.Run(tc.m.String(), func(t *testing.T) {
			defer mutate.Set(t, tc.m)()
			start := time.Now()
			changed := 0
			for _, r := range reduced {
				red, _, _ := compareReduced(t, r, false)
				if !red.Expected() {
					changed++
				}
			}
			t.Logf("%v: %d reduced rows searched with and without reductions in %v; %d verdicts not as expected",
				tc.m, len(reduced), time.Since(start).Round(time.Millisecond), changed)
			if tc.mustChange {
				assert.Positive(t, changed, "%v changes some reduced row (else this run weakens nothing)", tc.m)
			}
		})
	}
}

// compareReduced searches row r with its reductions and, if it used any,
// again without them, and asserts the two agree. ok is false if a search
// failed (reported).
func compareReduced(t *testing.T, r verdict.Row, judge bool) (red, full verdict.Verdict, ok bool) {
	t.Helper()
	red, err := r.Check(explore.Options{Liveness: true, Obligations: judge})
	if !assert.NoError(t, err, r.Name()) {
		return red, full, false
	}
	if !red.Reduced {
		return red, red, true // no reduction: the search without them is this one
	}
	full, err = r.Check(explore.Options{Liveness: true, NoReduce: true, Obligations: judge})
	if !assert.NoError(t, err, r.Name()) {
		return red, full, false
	}
	require.False(t, full.Reduced, r.Name())
	require.False(t, red.Outcome == verdict.Unknown || full.Outcome == verdict.Unknown, r.Name())
	assert.Equal(t, full.Word(), red.Word(), "%s: verdict with and without reductions", r.Name())
	if full.Violation != nil && red.Violation != nil {
		assert.Equal(t, full.Violation.Kind, red.Violation.Kind, r.Name())
		assert.Len(t, red.Violation.Path, len(full.Violation.Path), "%s: counterexample length", r.Name())
	}
	assert.LessOrEqual(t, red.Stats.States, full.Stats.States, r.Name())
	if judge && full.Violation == nil && red.Violation == nil {
		assert.Equal(t, full.Vacuous(), red.Vacuous(), "%s: obligations never judged with and without reductions", r.Name())
	}
	return red, full, true
}

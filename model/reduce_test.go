package model

import (
	"go/build"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// memoryMutations weaken one memory operation each: smp_mb, the fully
// ordered read-modify-writes, the view a lock hands on.
var memoryMutations = []mutate.Mutation{mutate.FenceWeak, mutate.RMWStale, mutate.JoinViewLost}

// TestReductionsKeepVerdicts runs every row of the verdict table with and
// without state reductions (explore.Options.NoReduce) at its bound: the
// verdicts and the counterexample lengths must be equal. It does so again
// with each memory operation weakened: a reduction that assumed what a
// barrier does (resetting a view to the newest store where a barrier was
// expected, say) hides the weakened barrier's bug in the reduced search
// only, and the two searches then disagree.
func TestReductionsKeepVerdicts(t *testing.T) {
	for _, mut := range append([]mutate.Mutation{mutate.None}, memoryMutations...) {
		t.Run(mut.String(), func(t *testing.T) {
			defer mutate.Set(mut)()
			start := time.Now()
			var rows, reduced, smaller, unexpected int
			for _, p := range Protocols() {
				if mut != mutate.None && p.Name == "device" {
					continue // no CPU memory: TestDeviceModelHasNoMemory
				}
				for _, r := range p.Rows() {
					if r.Proof {
						continue
					}
					red, err := r.Check(explore.Options{Liveness: true})
					require.NoError(t, err, r.Name())
					rows++
					if !red.Reduced {
						// No reduction was used: the search without them is
						// the same search.
						if !red.Expected() {
							unexpected++
						}
						continue
					}
					reduced++
					full, err := r.Check(explore.Options{Liveness: true, NoReduce: true})
					require.NoError(t, err, r.Name())
					require.False(t, full.Reduced, r.Name())
					require.False(t, red.Truncated || full.Truncated, r.Name())
					assert.Equal(t, full.Word(), red.Word(), "%s: verdict with and without reductions", r.Name())
					if full.Violation != nil && red.Violation != nil {
						assert.Equal(t, full.Violation.Kind, red.Violation.Kind, r.Name())
						assert.Len(t, red.Violation.Path, len(full.Violation.Path), "%s: counterexample length", r.Name())
					}
					assert.LessOrEqual(t, red.Stats.States, full.Stats.States, r.Name())
					if red.Stats.States < full.Stats.States {
						smaller++
					}
					if !red.Expected() {
						unexpected++
					}
				}
			}
			t.Logf("%v: %d rows, %d of them with reductions, searched again without: %v; %d smaller with them; %d verdicts not as expected",
				mut, rows, reduced, time.Since(start).Round(time.Millisecond), smaller, unexpected)
			assert.Positive(t, smaller, "the reductions reduce somewhere")
			if mut == mutate.None {
				assert.Zero(t, unexpected, "the table as it is")
				assert.Equal(t, len(Rows(false)), rows, "every row")
			} else {
				assert.Positive(t, unexpected, "%v changes some verdict (else this test weakens nothing)", mut)
			}
		})
	}
}

// TestDeviceModelHasNoMemory: the device rows are left out of the runs with
// weakened memory because the device model does not use package memory.
func TestDeviceModelHasNoMemory(t *testing.T) {
	pkg, err := build.ImportDir("device", 0)
	require.NoError(t, err)
	assert.NotContains(t, pkg.Imports, "github.com/flushproof/flushproof/model/memory")
	assert.Equal(t, "device", deviceProtocolName(), "the catalog name skipped above")
}

func deviceProtocolName() string {
	var p verdict.Protocol
	for _, q := range Protocols() {
		if q.Doc == "docs/semantics.md" || q.Name == "device" {
			p = q
		}
	}
	return p.Name
}

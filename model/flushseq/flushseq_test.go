package flushseq

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushSeqSymmetryKeepsVerdicts: symmetry reduction changes how many
// states are stored, never the verdict or the length of the shortest
// counterexample, and its counterexamples are real paths that replay.
func TestFlushSeqSymmetryKeepsVerdicts(t *testing.T) {
	for _, v := range Variants() {
		if v == MutantDAXSkips {
			continue // DAX breaks the symmetry; the reduction is off there
		}
		for _, m := range Models() {
			cfg := Config{Variant: v, Memory: m, Tasks: 3, Fsyncs: 1, FlushFailures: v == MutantAdvanceOnFailure}
			sys, err := NewSystem(cfg)
			require.NoError(t, err)
			r := explore.Explore[State](sys, explore.Options{})
			f := explore.Explore[State](sys, explore.Options{NoReduce: true})
			require.Equal(t, f.Violation == nil, r.Violation == nil, "%v %v", v, m)
			if f.Violation == nil {
				assert.Less(t, r.States, f.States, "%v %v: the reduction must reduce", v, m)
				continue
			}
			assert.Len(t, r.Violation.Path, len(f.Violation.Path), "%v %v", v, m)
			s, err := explore.Replay[State](sys, r.Violation.Path)
			require.NoError(t, err)
			assert.EqualError(t, sys.Check(s), r.Violation.Err.Error())
		}
	}
}

func TestNewFsyncSystemRejectsBadConfigs(t *testing.T) {
	for _, c := range []Config{
		{Variant: Patched, Memory: memory.SC, Tasks: 0, Fsyncs: 1},
		{Variant: Patched, Memory: memory.SC, Tasks: 5, Fsyncs: 1},
		{Variant: Patched, Memory: memory.Relaxed, Tasks: 4, Fsyncs: 4}, // more live stores than Relaxed keeps
		{Variant: Patched, Memory: memory.SC, Tasks: 4, Fsyncs: 31},     // flush numbers past int8
		{Variant: 99, Memory: memory.SC, Tasks: 2, Fsyncs: 1},
		{Variant: Patched, Memory: 0, Tasks: 2, Fsyncs: 1},
	} {
		_, err := NewSystem(c)
		assert.Error(t, err, "%+v", c)
	}
}

func TestLabelsDetermineSteps(t *testing.T) {
	for _, v := range Variants() {
		for _, m := range Models() {
			cfg := Config{Variant: v, Memory: m, Tasks: 2, Fsyncs: 1, FlushFailures: true, LogForce: true}
			sys, err := NewSystem(cfg)
			require.NoError(t, err)
			require.NoError(t, explore.LabelsDetermine[State](sys))
		}
	}
	ds, err := device.NewSystem(device.Workload{Config: spec.CacheEmulatedFUA, Writers: [][]device.WriteOp{{{Blocks: 3, FUA: true}}, {{Blocks: 1}}}, Flushes: 1, Failures: true})
	require.NoError(t, err)
	require.NoError(t, explore.LabelsDetermine[device.State](ds))
}

// TestSkipLabelsReadTrue: every skip or no-skip step, in every variant,
// prints the comparison the variant makes, and the comparison holds for the
// values printed ("completed=0 >= S=0: skip flush" for the >= mutant; the
// label once said "completed=0 > S=0", false as printed).
func TestSkipLabelsReadTrue(t *testing.T) {
	holds := map[string]func(c, s int) bool{
		">": func(c, s int) bool { return c > s }, "<=": func(c, s int) bool { return c <= s },
		">=": func(c, s int) bool { return c >= s }, "<": func(c, s int) bool { return c < s },
	}
	for _, v := range Variants() {
		cfg := Config{Variant: v, Memory: memory.SC, Tasks: 2, Fsyncs: 1, FlushFailures: true}
		sys, err := NewSystem(cfg)
		require.NoError(t, err)
		r := explore.Explore[State](sys, explore.Options{MaxStates: 200000, NoReduce: true})
		seen := map[string]bool{}
		for id := 0; id < r.Len(); id++ {
			sys.Next(r.State(id), func(l explore.Label, _ State) {
				if l.Kind != kSkip && l.Kind != kNoSkip {
					return
				}
				text := sys.Describe(l)
				var c, s int
				var op, what string
				_, err := fmt.Sscanf(text, "completed=%d %s S=%d: %s", &c, &op, &s, &what)
				require.NoError(t, err, "%v: %q", v, text)
				require.Contains(t, holds, op, "%v: %q", v, text)
				assert.True(t, holds[op](c, s), "%v: %q is false as printed", v, text)
				assert.Equal(t, l.Kind == kSkip, what == "skip", "%v: %q", v, text)
				seen[op] = true
			})
		}
		if v == MutantGreaterEqual {
			assert.True(t, seen[">="], "the >= mutant skips on >=")
			assert.False(t, seen[">"], "the >= mutant never prints >")
		} else if v != Baseline && v != MutantDAXSkips {
			assert.True(t, seen[">"] || seen["<="], "%v: skip checks were explored", v)
			assert.False(t, seen[">="], "%v never prints >=", v)
		}
	}
}

// TestDAXTaskFlushesInEveryVariant: a DAX task never skips (the patch), so
// it always flushes itself, numbered the way its variant numbers flushes.
// The number-after-submit mutant once sent it to number a flush it never
// submitted, and it waited forever (a deadlock, not the mutant's bug).
func TestDAXTaskFlushesInEveryVariant(t *testing.T) {
	for _, v := range Variants() {
		for _, tasks := range []int{1, 2} {
			c := Config{Variant: v, Memory: memory.SC, Tasks: tasks, Fsyncs: 1, DAX: 1}
			sys, err := NewSystem(c)
			require.NoError(t, err)
			r := explore.Explore[State](sys, explore.Options{Liveness: true})
			if r.Violation != nil {
				assert.Equal(t, explore.Safety, r.Violation.Kind, "%v, %d tasks: %v", v, tasks, r.Violation)
			}
			if tasks == 1 && v != MutantDAXSkips {
				assert.Nil(t, r.Violation, "%v: one DAX task alone is safe", v)
			}
		}
	}
}

// TestRelaxedNumberingOneSided: the flush sequence with the barrier on the
// reader's side only (smp_mb before reading S kept, the numbering
// inc_return_relaxed) is UNSAFE under LKMM, waking from sleep or not, and
// its counterexample has a task read a stale S after its smp_mb; under SC,
// TSO and Relaxed it is SAFE. The increment after the load of completed is
// not refused: it depends on that load.
func TestRelaxedNumberingOneSided(t *testing.T) {
	for _, m := range Models() {
		for _, sleeps := range []bool{false, true} {
			c := StandardConfig(MutantRelaxedNumber, m)
			c.WaiterSleeps = sleeps
			sys, err := NewSystem(c)
			require.NoError(t, err)
			r := explore.Explore[State](sys, explore.Options{})
			require.Empty(t, r.Stopped)
			if m != memory.LKMM {
				assert.Nil(t, r.Violation, "%v, waiter sleeps %v", m, sleeps)
				continue
			}
			require.NotNil(t, r.Violation, "waiter sleeps %v", sleeps)
			stale := false
			for _, st := range r.Violation.Path {
				stale = stale || (st.Label.Kind == kReadS && strings.Contains(st.Text, "stale"))
			}
			assert.True(t, stale, "waiter sleeps %v: the counterexample reads a stale S", sleeps)
		}
	}
}

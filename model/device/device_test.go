package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

func countCrashed(r *explore.Result[State]) int {
	n := 0
	for i := 0; i < r.Len(); i++ {
		s := r.State(i)
		if s.dev.Crashed() {
			n++
		}
	}
	return n
}

// TestDeviceStateCountByHand: one writer with one write to b0, nothing else,
// in cache+fua. Before the crash the product state is one of: nothing
// submitted, W1 in flight, W1 landed, W1 completed (4); with failures, also
// W1 failed before landing and W1 failed after landing (the device's cand
// differs), 6. Every pre-crash state has exactly one crash successor, which
// differs from it only in the crash flag, so the totals double: 8 and 12.
func TestDeviceStateCountByHand(t *testing.T) {
	for _, tc := range []struct {
		failures bool
		states   int
	}{{false, 8}, {true, 12}} {
		r, err := CheckSound(Workload{Config: spec.CacheFUA, Writers: [][]WriteOp{{{Blocks: 1}}}, Failures: tc.failures}, explore.Options{Liveness: true})
		require.NoError(t, err)
		require.Nil(t, r.Violation)
		assert.Equal(t, tc.states, r.States, "failures=%v", tc.failures)
		assert.Equal(t, tc.states/2, countCrashed(r))
	}
}

// TestDeviceStateCountStandard pins the full state space of the device alone
// at the standard bound (2 writers x 2 blocks, one flush, failures on), so
// that an accidental change of semantics is noticed. Why these numbers:
//   - the state is (device, contract monitor, task progress);
//   - exactly half the states are crash states: each pre-crash state has one
//     crash successor that differs from it only in the crash flag (checked);
//   - emulated FUA has more states because each FUA write passes through a
//     post-flush state (data done) and may fail there;
//   - without a cache, flushes cannot fail and FUA is stripped, so there are
//     fewer states than with a cache;
//   - the device keeps the landing order per block only (what a crash
//     depends on), so landings on different blocks commute: keeping one
//     global landing order instead gave 183856 / 660080 / 130370 states for
//     the same behaviour (same verdicts, same history classes);
//   - the number of distinct visible histories (the completeness search's
//     states) does not depend on how the device represents landing at all.
//
// If a semantic change moves these numbers on purpose, update them and say
// why in the commit.
func TestDeviceStateCountStandard(t *testing.T) {
	for _, tc := range []struct {
		cfg                 spec.Config
		states, transitions int
		depth, historyClass int
	}{
		{spec.CacheFUA, 130364, 192375, 15, 24464},
		{spec.CacheEmulatedFUA, 430764, 658407, 17, 113880},
		{spec.NoCache, 92654, 131697, 15, 17190},
	} {
		t.Run(tc.cfg.String(), func(t *testing.T) {
			if testing.Short() && tc.states > 200000 {
				t.Skip("large space; run without -short")
			}
			w := StandardWorkload(tc.cfg, Correct)
			r, err := CheckSound(w, explore.Options{Liveness: true})
			require.NoError(t, err)
			require.Nil(t, r.Violation)
			require.True(t, r.Exhausted)
			assert.Equal(t, tc.states, r.States)
			assert.Equal(t, tc.transitions, r.Transitions)
			assert.Equal(t, tc.depth, r.MaxDepth)
			assert.Equal(t, tc.states/2, countCrashed(r), "half the states are crash states")
			c, err := CheckComplete(w, explore.Options{})
			require.NoError(t, err)
			require.Nil(t, c.Violation)
			assert.Equal(t, tc.historyClass, c.States, "distinct visible histories (landing closed)")
			t.Logf("%v: sound %v; complete %v", tc.cfg, r.Stats, c.Stats)
		})
	}
}

// TestDeviceVerdicts: the correct device is SAFE in every config (the
// false-positive control); every negative control is UNSAFE with a
// counterexample that replays from its explorer path.
func TestDeviceVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("explores about 1.6 million states; run without -short")
	}
	var vs []verdict.Verdict
	for _, r := range Rows() {
		v, err := r.Check(explore.Options{})
		require.NoError(t, err, r.Name())
		vs = append(vs, v)
	}
	require.Len(t, vs, 6)
	want := map[string]string{
		"bug-flush-covers-in-flight":    "incomplete device: after this history the contract allows b0 = initial",
		"bug-emulated-fua-no-postflush": "durable by its FUA completion (emulated: post-flush)) must survive",
		"bug-crash-reverts-durable":     "durable by flush F1) must survive",
	}
	for _, v := range vs {
		assert.True(t, v.Expected(), "%s on %s: %s", v.Model, v.Config, v.Result())
		if !v.Negative {
			assert.Equal(t, verdict.Safe, v.Outcome, "%s on %s", v.Model, v.Config)
			continue
		}
		require.NotNil(t, v.Violation, v.Model)
		assert.Contains(t, v.Violation.Err.Error(), want[v.Model])
		replayDeviceViolation(t, v)
	}
}

// replayDeviceViolation follows the counterexample's labels again and checks
// that the violation comes back.
func replayDeviceViolation(t *testing.T, v verdict.Verdict) {
	t.Helper()
	cfg, err := spec.ParseConfig(v.Config)
	require.NoError(t, err)
	var bug Bug
	for _, b := range Bugs() {
		if b.String() == v.Model {
			bug = b
		}
	}
	w := StandardWorkload(cfg, bug)
	ds, err := NewSystem(w)
	require.NoError(t, err)
	if s, err := explore.Replay[State](ds, v.Violation.Path); err == nil && ds.Check(s) != nil {
		assert.Equal(t, v.Violation.Err.Error(), ds.Check(s).Error())
		return
	}
	cs, err := NewCompletenessSystem(w)
	require.NoError(t, err)
	s, err := explore.Replay[HistoryClass](cs, v.Violation.Path)
	require.NoError(t, err, "the counterexample path must replay")
	require.Error(t, cs.Check(s), "the replayed state must break the invariant again")
	assert.Equal(t, v.Violation.Err.Error(), cs.Check(s).Error())
}

func ev(k spec.Kind, id int) spec.Event { return spec.Event{Kind: k, ID: id} }
func sub(id int, blocks uint8, fua bool) spec.Event {
	return spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: blocks, FUA: fua}
}

func TestExplain(t *testing.T) {
	// W1 completes while F1 is in flight: a crash may lose it.
	h := []spec.Event{sub(1, 1, false), ev(spec.FlushSubmit, 1), ev(spec.WriteComplete, 1), ev(spec.FlushComplete, 1), ev(spec.Crash, 0)}
	devs, err := Explain(spec.CacheFUA, Correct, h)
	require.NoError(t, err)
	assert.Equal(t, "{initial W1}", CrashUnion(devs, 0).String())
	devs, err = Explain(spec.CacheFUA, FlushCoversInFlight, h)
	require.NoError(t, err)
	assert.Equal(t, "{W1}", CrashUnion(devs, 0).String(), "the wrong device hides the loss")

	// Overlapping writes may land in either order; a read pins one.
	h = []spec.Event{sub(1, 1, false), sub(2, 1, false), ev(spec.WriteComplete, 1), ev(spec.WriteComplete, 2)}
	devs, err = Explain(spec.CacheFUA, Correct, append(h, spec.Event{Kind: spec.Read, Blocks: 1, Value: 1}))
	require.NoError(t, err)
	for _, d := range devs {
		assert.Equal(t, 1, d.ReadValue(0))
	}
	_, err = Explain(spec.CacheFUA, Correct, append(h, spec.Event{Kind: spec.Read, Blocks: 1, Value: 0}))
	assert.ErrorContains(t, err, "no landing order of the device explains it")

	_, err = Explain(spec.CacheFUA, Correct, []spec.Event{sub(1, 1, false), ev(spec.WriteLand, 1)})
	assert.ErrorContains(t, err, "landing is the device's choice")
}

func TestDeviceRejectsDisabledSteps(t *testing.T) {
	d := New(spec.CacheFUA, Correct)
	d, err := d.Apply(sub(1, 1, false))
	require.NoError(t, err)
	_, err = d.Apply(ev(spec.WriteComplete, 1))
	assert.Error(t, err, "a write completes only after it landed")
	_, err = d.Apply(ev(spec.WriteDataDone, 1))
	assert.Error(t, err, "native FUA has no post-flush")
	nc := New(spec.NoCache, Correct)
	nc, err = nc.Apply(ev(spec.FlushSubmit, 1))
	require.NoError(t, err)
	_, err = nc.Apply(ev(spec.FlushFail, 1))
	assert.Error(t, err, "an empty flush without a cache cannot fail")
}

func TestNewDeviceSystemRejectsBadWorkloads(t *testing.T) {
	_, err := NewSystem(Workload{Config: spec.CacheFUA})
	assert.ErrorContains(t, err, "0 tasks")
	_, err = NewSystem(Workload{Config: spec.CacheFUA, Writers: [][]WriteOp{{{Blocks: 0}}}})
	assert.ErrorContains(t, err, "without blocks")
	_, err = NewSystem(Workload{Config: spec.CacheFUA, Writers: [][]WriteOp{{{Blocks: 1}}}, Flushes: spec.MaxFlushes + 1})
	assert.ErrorContains(t, err, "flushes")
}

package jbd2_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/jbd2"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// TestJbd2VerdictTable is the verdict table of the jbd2 journal commit: every
// variant on every device configuration, a crash at any point. barrier is
// SAFE everywhere, nobarrier and mutant-drop-preflush UNSAFE on a volatile
// cache and SAFE without one (the false-positive controls), async-commit
// UNSAFE only with a failed flush on a volatile cache, the no-checksum
// mutant UNSAFE everywhere. Each counterexample must replay, and its crash
// image must be one the operational device (device.Device, over every
// landing order) can leave after the same history.
func TestJbd2VerdictTable(t *testing.T) {
	var table []verdict.Verdict
	for _, c := range jbd2.Checks() {
		t.Run(c.Row().Name(), func(t *testing.T) {
			v, err := jbd2.Check(c, explore.Options{Liveness: true})
			require.NoError(t, err)
			table = append(table, v)
			require.NotEqual(t, verdict.Unknown, v.Outcome)
			if !c.ExpectUnsafe() {
				assert.Equal(t, verdict.Safe, v.Outcome, "expected SAFE, got:\n%s", exploretest.Timeline(v))
				return
			}
			require.NotNil(t, v.Violation, "not caught")
			assert.Equal(t, explore.Safety, v.Violation.Kind)
			t.Logf("counterexample:\n%s", v.Violation.Timeline())
			var bad *jbd2.BadRecovery
			require.True(t, errors.As(v.Violation.Err, &bad), "not a recovery failure: %v", v.Violation.Err)
			assert.Equal(t, c.Variant != jbd2.AsyncCommit, bad.Partial, "caught for the wrong reason: %v", bad)

			sys, err := jbd2.NewSystem(c)
			require.NoError(t, err)
			s, err := explore.Replay[jbd2.State](sys, v.Violation.Path)
			require.NoError(t, err, "the counterexample path must replay")
			assert.EqualError(t, sys.Check(s), v.Violation.Err.Error())

			var h []spec.Event
			for _, st := range v.Violation.Path {
				h = append(h, sys.DeviceEvents(st.Label)...)
			}
			devs, err := device.Explain(c.Device, device.Correct, append(h, spec.Event{Kind: spec.Crash}))
			require.NoError(t, err)
			for b := 0; b < c.Transactions*(c.Blocks+1); b++ {
				want := 0
				if bad.Image&(1<<b) != 0 {
					want = b + 1
				}
				assert.True(t, device.CrashUnion(devs, b).Has(want), "device.Device cannot leave b%d = %s after %v", b, spec.ContentName(want), h)
			}
		})
	}
	var b strings.Builder
	require.NoError(t, verdict.WriteTable(&b, table))
	t.Logf("verdict table:\n%s", b.String())
}

func TestJbd2Rows(t *testing.T) {
	rows := jbd2.Rows()
	checks := append(jbd2.Checks(), jbd2.ProofChecks()...)
	require.Len(t, rows, len(checks))
	names := map[string]bool{}
	for i, r := range rows {
		assert.Equal(t, i >= len(jbd2.Checks()), r.Proof, r.Name())
		assert.True(t, strings.HasPrefix(r.Name(), "jbd2 "+checks[i].Variant.String()+" "+checks[i].Device.String()+" "), r.Name())
		assert.Equal(t, checks[i].ExpectUnsafe(), r.Negative, r.Name())
		assert.False(t, names[r.Name()], "duplicate row %q", r.Name())
		names[r.Name()] = true
	}
	for _, i := range []int{0, len(rows) - 1} {
		v, err := rows[i].Check(explore.Options{})
		require.NoError(t, err)
		want, err := jbd2.Check(checks[i], explore.Options{})
		require.NoError(t, err)
		assert.Equal(t, want.Outcome, v.Outcome)
		assert.Equal(t, want.Stats.States, v.Stats.States)
	}
}

// TestJbd2AnyBound: at every bound the log holds (1 to 4 transactions,
// at most 8 log blocks), with or without EIO, the exhaustive verdict is
// what ExpectUnsafe derives from the configuration.
func TestJbd2AnyBound(t *testing.T) {
	rapidctl.Check(t, 200, func(rt *rapid.T) {
		txns := rapid.IntRange(1, 4).Draw(rt, "transactions")
		c := jbd2.Config{
			Variant:      rapid.SampledFrom(jbd2.Variants()).Draw(rt, "variant"),
			Device:       rapid.SampledFrom(spec.Configs()).Draw(rt, "device"),
			Transactions: txns,
			Blocks:       rapid.IntRange(1, spec.MaxBlocks/txns-1).Draw(rt, "journal blocks"),
			Failures:     rapid.Bool().Draw(rt, "EIO"),
		}
		v, err := jbd2.Check(c, explore.Options{})
		require.NoError(rt, err)
		require.NotEqual(rt, verdict.Unknown, v.Outcome)
		assert.Equal(rt, !c.ExpectUnsafe(), v.Outcome == verdict.Safe, "%s:\n%s", c.Row().Name(), exploretest.Timeline(v))
	})
}

package props

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestHarnessBlkFlushSeq: the flush sequencing of block/blk-flush.c as a
// kernel C harness (examples/blk-flush-seq/blk-flush-seq.c): two tasks
// write their blocks and share REQ_PREFLUSH flushes through the flush
// queue, a daemon issues and ends each flush, flushes may fail. No
// built-in model has this protocol, so each row is held to the harness's
// own Expect line: every row of the harness SAFE, every row of the
// harness with mutant-join-running-flush.patch (a request that arrives
// while a flush is in flight is ended by that flush) UNSAFE, under SC,
// TSO and LKMM (the header's default models) on cache+fua.
func TestHarnessBlkFlushSeq(t *testing.T) {
	const dir = "blk-flush-seq"
	h := filepath.Join("..", "examples", dir, "blk-flush-seq.c")
	configs := []string{"LKMM cache+fua", "SC cache+fua", "TSO cache+fua"}
	for _, c := range []struct {
		patches []string
		want    string
	}{
		{want: "SAFE"},
		{patches: []string{"mutant-join-running-flush.patch"}, want: "UNSAFE"},
	} {
		var patches []string
		for _, p := range c.patches {
			patches = append(patches, filepath.Join(filepath.Dir(h), p))
		}
		label := strings.Join(append([]string{dir + "/blk-flush-seq.c"}, c.patches...), " + ")
		ps, err := kernelc.ReadPatches(patches, []string{h}, func(s string) { t.Errorf("%s: %s", label, s) })
		require.NoError(t, err, label)
		tt, err := kernelc.ReadFile(h, ps, func(s string) { t.Logf("%s: %s", label, s) })
		require.NoError(t, err, label)
		d, err := durable.Read(h, tt)
		require.NoError(t, err, label)

		rows := d.Rows(nil, false)
		var got []string
		for _, r := range rows {
			got = append(got, r.Config)
		}
		sort.Strings(got)
		require.Equal(t, configs, got, "%s: the rows of the header's models and device", label)

		for _, r := range rows {
			v, err := r.Check(explore.Options{MaxStates: 20_000_000, Liveness: true, Obligations: true})
			require.NoError(t, err, "%s %s", label, r.Config)
			require.NotEqual(t, verdict.Unknown, v.Outcome, "%s %s: the search was cut short", label, r.Config)
			assert.Equal(t, c.want, v.Word(), "%s %s", label, r.Config)
			assert.Equal(t, c.want == "UNSAFE", r.Negative, "%s %s: the Expect line", label, r.Config)
			assert.True(t, v.Expected(), "%s %s: %s, not as expected", label, r.Config, v.Word())
			if c.want == "UNSAFE" {
				require.NotNil(t, v.Violation, "%s %s: no counterexample", label, r.Config)
				assert.Equal(t, explore.Safety, v.Violation.Kind, "%s %s: a safety violation", label, r.Config)
				assert.Contains(t, v.Violation.Error(), "assert_durable(b, 1) fails", "%s %s", label, r.Config)
			}
			checkJudged(t, v.Name(), v)
			t.Logf("%-60s %-16s %-7s %8d states", label, r.Config, v.Word(), v.Stats.States)
		}
	}
}

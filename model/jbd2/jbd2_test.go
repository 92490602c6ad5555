package jbd2

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

func TestJbd2NewSystemRejectsBadConfigs(t *testing.T) {
	for _, c := range []Config{
		{Variant: 0, Device: spec.CacheFUA, Transactions: 1, Blocks: 1},
		{Variant: 99, Device: spec.CacheFUA, Transactions: 1, Blocks: 1},
		{Variant: Barrier, Device: spec.CacheFUA, Transactions: 0, Blocks: 1},
		{Variant: Barrier, Device: spec.CacheFUA, Transactions: 5, Blocks: 1},
		{Variant: Barrier, Device: spec.CacheFUA, Transactions: 1, Blocks: 0},
		{Variant: Barrier, Device: spec.CacheFUA, Transactions: 2, Blocks: 4}, // 10 log blocks
	} {
		_, err := NewSystem(c)
		assert.Error(t, err, "%+v", c)
	}
	_, err := NewSystem(Config{Variant: Barrier, Device: spec.CacheFUA, Transactions: 4, Blocks: 1})
	assert.NoError(t, err, "eight log blocks fit")
}

// TestJbd2LabelsDetermineSteps: one label leads to one state, and every
// label renders as a step of the code.
func TestJbd2LabelsDetermineSteps(t *testing.T) {
	for _, v := range Variants() {
		for _, dev := range spec.Configs() {
			for _, flag := range []bool{false, true} {
				c := StandardConfig(v, dev)
				c.PreflushAsFlush = flag
				sys, err := NewSystem(c)
				require.NoError(t, err)
				require.NoError(t, explore.LabelsDetermine[State](sys))
				r := explore.Explore[State](sys, explore.Options{MaxStates: 10000})
				for i := 0; i < r.Len(); i++ {
					sys.Next(r.State(i), func(l explore.Label, _ State) {
						if d := sys.Describe(l); d == "" || strings.HasPrefix(d, "step ") {
							t.Fatalf("%v %v: label %+v renders as %q", v, dev, l, d)
						}
					})
				}
			}
		}
	}
}

// TestJbd2Recover pins do_one_pass on hand-made images of two transactions
// of two journal blocks (T1: b0 descriptor, b1 metadata, b2 commit; T2:
// b3, b4, b5).
func TestJbd2Recover(t *testing.T) {
	cases := []struct {
		img             Image
		plain, checksum uint8
	}{
		{0b000000, 0, 0},
		{0b000111, 1, 1},
		{0b111111, 3, 3},
		{0b000101, 1, 0}, // T1 torn: replayed without checksums, discarded with
		{0b000011, 0, 0}, // no commit block
		{0b000110, 0, 0}, // no descriptor: the end of the log
		{0b111101, 3, 0}, // T1 torn ends the replay before T2
		{0b101111, 3, 1}, // T2 torn
		{0b111000, 0, 0}, // T2 alone is never reached
	}
	for _, tc := range cases {
		for _, v := range []Variant{MutantAsyncNoChecksum, AsyncCommit} {
			sys, err := NewSystem(StandardConfig(v, spec.CacheFUA))
			require.NoError(t, err)
			want := tc.plain
			if v.checksum() {
				want = tc.checksum
			}
			assert.Equal(t, want, sys.Recover(tc.img), "%v, image %06b", v, tc.img)
		}
	}
}

// TestJbd2Verdicts: every row's verdict is what its configuration expects,
// each UNSAFE verdict for the reason its variant must be caught for.
func TestJbd2Verdicts(t *testing.T) {
	for _, c := range append(Checks(), ProofChecks()...) {
		v, err := Check(c, explore.Options{})
		require.NoError(t, err)
		require.NotEqual(t, verdict.Unknown, v.Outcome, c.Row().Name())
		if !c.ExpectUnsafe() {
			assert.Equal(t, verdict.Safe, v.Outcome, "%s: expected SAFE:\n%v", c.Row().Name(), v.Violation)
			continue
		}
		require.NotNil(t, v.Violation, "%s: not caught", c.Row().Name())
		var bad *BadRecovery
		require.True(t, errors.As(v.Violation.Err, &bad), "%s: %v", c.Row().Name(), v.Violation.Err)
		switch c.Variant {
		case AsyncCommit:
			assert.False(t, bad.Partial, "checksums never let a torn transaction through")
			assert.Contains(t, v.Violation.Timeline(), "fail (EIO)", "the ignored flush error")
		default:
			assert.True(t, bad.Partial, "%s: %v", c.Row().Name(), bad)
		}
	}
}

// observation is what a state of the barrier variant shows: what the
// committer has returned, and what a crash now may leave on each log block.
type observation struct {
	acked   uint8
	aborted bool
	crash   string
}

// observations explores sys and collects what its states show.
func observations(t *testing.T, sys *System) map[observation]bool {
	t.Helper()
	r := explore.Explore[State](sys, explore.Options{})
	require.True(t, r.Exhausted)
	out := map[observation]bool{}
	n := sys.Config().Transactions * sys.Config().blocksPer()
	for i := 0; i < r.Len(); i++ {
		st := r.State(i)
		var sets []string
		for b := range n {
			sets = append(sets, st.CrashSet(b).String())
		}
		out[observation{st.acked, st.aborted, strings.Join(sets, " ")}] = true
	}
	return out
}

// TestJbd2PreflushFlagMatchesTwoSteps: the commit block's REQ_PREFLUSH |
// REQ_FUA fed to spec.Contract as one write with spec.Event.Preflush (the
// rows) and as the two commands blk-flush.c sends for it (an empty flush,
// then the FUA data write once it completed: Config.PreflushAsFlush) give
// the same verdicts and the same crash images after the same commits, in
// every state. A contract that let the preflush write's data land before
// its preflush completed would show images the two steps never do (the
// commit block on the disk, a journal block lost) and make barrier UNSAFE.
func TestJbd2PreflushFlagMatchesTwoSteps(t *testing.T) {
	for _, dev := range []spec.Config{spec.CacheFUA, spec.CacheEmulatedFUA} {
		for _, fail := range []bool{false, true} {
			for _, blocks := range []int{1, 2} {
				c := StandardConfig(Barrier, dev)
				c.Failures, c.Blocks = fail, blocks
				two := c
				two.PreflushAsFlush = true
				name := fmt.Sprintf("%v EIO=%v blocks=%d", dev, fail, blocks)

				v, err := Check(c, explore.Options{})
				require.NoError(t, err)
				vTwo, err := Check(two, explore.Options{})
				require.NoError(t, err)
				assert.Equal(t, verdict.Safe, v.Outcome, "%s: the flag: %v", name, v.Violation)
				assert.Equal(t, verdict.Safe, vTwo.Outcome, "%s: two steps: %v", name, vTwo.Violation)

				sys, err := NewSystem(c)
				require.NoError(t, err)
				sysTwo, err := NewSystem(two)
				require.NoError(t, err)
				assert.Equal(t, observations(t, sysTwo), observations(t, sys), name)
			}
		}
	}
}

// TestJbd2BarrierIsNotVacuous: the barrier variant is SAFE although the
// check has work to do: transactions are committed, the journal aborts on
// EIO, and while the commit block's preflush is in flight a crash may still
// lose a journal block (the flush is what saves the transaction).
func TestJbd2BarrierIsNotVacuous(t *testing.T) {
	for _, dev := range []spec.Config{spec.CacheFUA, spec.CacheEmulatedFUA} {
		sys, err := NewSystem(StandardConfig(Barrier, dev))
		require.NoError(t, err)
		r := explore.Explore[State](sys, explore.Options{})
		require.True(t, r.Exhausted)
		require.Nil(t, r.Violation)
		var both, aborted, atRisk bool
		for i := 0; i < r.Len(); i++ {
			st := r.State(i)
			both = both || (st.Acked(0) && st.Acked(1))
			aborted = aborted || st.Aborted()
			if st.pre != 0 {
				for b := range 2 {
					atRisk = atRisk || st.CrashSet(int(st.txn)*3+b).Initial
				}
			}
		}
		assert.True(t, both, "%v: both transactions committed", dev)
		assert.True(t, aborted, "%v: an abort", dev)
		assert.True(t, atRisk, "%v: the preflush never mattered", dev)
	}
}

// TestJbd2StateCounts pins the size of the standard rows.
func TestJbd2StateCounts(t *testing.T) {
	want := map[string]int{
		"jbd2 barrier cache+fua 2 transactions x 2 journal blocks, EIO":          41,
		"jbd2 barrier cache+emulated-fua 2 transactions x 2 journal blocks, EIO": 47,
		"jbd2 barrier no-cache 2 transactions x 2 journal blocks, EIO":           35,
		"jbd2 async-commit no-cache 2 transactions x 2 journal blocks, EIO":      127,
		"jbd2 async-commit cache+fua 2 transactions x 2 journal blocks":          27,
	}
	seen := 0
	for _, c := range Checks() {
		n, ok := want[c.Row().Name()]
		if !ok {
			continue
		}
		seen++
		v, err := Check(c, explore.Options{})
		require.NoError(t, err)
		assert.Equal(t, n, v.Stats.States, c.Row().Name())
	}
	assert.Equal(t, len(want), seen)
}

func TestJbd2SameWithWorkers(t *testing.T) {
	for _, v := range []Variant{Barrier, AsyncCommit} {
		sys, err := NewSystem(StandardConfig(v, spec.CacheEmulatedFUA))
		require.NoError(t, err)
		exploretest.SameWithWorkers[State](t, sys, explore.Options{}, 1, v.String())
	}
}

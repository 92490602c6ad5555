package hwbench

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ratePairs builds pairs from {fio IOPS, hwbench IOPS}, each over a second.
func ratePairs(rates ...[2]int64) []FIOPair {
	ps := make([]FIOPair, len(rates))
	for i, r := range rates {
		ps[i] = FIOPair{FIO: SliceRate{Ops: r[0], Duration: time.Second}, Hwbench: SliceRate{Ops: r[1], Duration: time.Second}}
	}
	return ps
}

// cleanPairs: fio steady at 1000, ratios 0.95, 1, 1.02, 0.98, 1.05.
var cleanPairs = ratePairs([2]int64{1000, 950}, [2]int64{1000, 1000}, [2]int64{1000, 1020}, [2]int64{1000, 980}, [2]int64{1000, 1050})

// driftPairs: pairs 1 and 3 ran 7x slower on both sides, with ratios
// (0.5, 0.6) that would pull the median of all five down to 1.0; the
// other three have ratios 1, 1.04 and 1.1.
var driftPairs = ratePairs([2]int64{1000, 1000}, [2]int64{140, 70}, [2]int64{1000, 1040}, [2]int64{150, 90}, [2]int64{1000, 1100})

func TestFIOCleanPairsMeaningful(t *testing.T) {
	c := FIOComparison{Pairs: cleanPairs, Asked: 5}
	assert.Zero(t, c.Drifted())
	assert.Empty(t, c.DriftedPairs())
	assert.InDelta(t, 1.0, c.Ratio(), 1e-12)
	// Distances from 1: 0.05, 0, 0.02, 0.02, 0.05; their median is 0.02.
	assert.InDelta(t, 0.02, c.Spread(), 1e-12)
	assert.False(t, c.Noisy())
	assert.False(t, c.Reran())
	assert.True(t, c.Meaningful())
	assert.Equal(t, "ok", c.Verdict())
	assert.False(t, c.needsRerun())
}

func TestFIODriftedPairsLeftOut(t *testing.T) {
	c := FIOComparison{Pairs: driftPairs, Asked: 5}
	assert.Equal(t, []int{1, 3}, c.DriftedPairs())
	assert.Equal(t, 2, c.Drifted())
	assert.InDeltaSlice(t, []float64{1, 1.04, 1.1}, c.Ratios(), 1e-12)
	assert.InDelta(t, 1.04, c.Ratio(), 1e-12, "the median of the three kept pairs, not 1.0 of all five")
	lo, hi := c.RatioRange()
	assert.InDelta(t, 1.0, lo, 1e-12)
	assert.InDelta(t, 1.1, hi, 1e-12)
	assert.InDelta(t, 0.04/1.04, c.Spread(), 1e-12)
	assert.False(t, c.Noisy(), "the kept pairs agree")
	assert.False(t, c.Meaningful(), "drifted, not rerun")
	assert.Equal(t, "not meaningful: drifted", c.Verdict())
	assert.True(t, c.needsRerun())

	// Run again with five clean pairs: the drifted ones stay counted and
	// left out, and the rerun's pairs decide.
	c.Pairs = append(c.Pairs, ratePairs([2]int64{1000, 1000}, [2]int64{1000, 1040}, [2]int64{1000, 1100}, [2]int64{1000, 1020}, [2]int64{1000, 1060})...)
	assert.True(t, c.Reran())
	assert.Equal(t, []int{1, 3}, c.DriftedPairs())
	assert.Len(t, c.Ratios(), 8)
	assert.InDelta(t, 1.04, c.Ratio(), 1e-12) // 1, 1, 1.02, 1.04, 1.04, 1.06, 1.1, 1.1
	assert.True(t, c.Meaningful())
	assert.Equal(t, "ok", c.Verdict())
	assert.False(t, c.needsRerun(), "only once")

	// A pair that drifts in the rerun too: still drifted.
	c.Pairs[7] = ratePairs([2]int64{100, 100})[0]
	assert.Equal(t, []int{1, 3, 7}, c.DriftedPairs())
	assert.Equal(t, "not meaningful: drifted", c.Verdict())
	assert.False(t, c.Meaningful())
}

// Drift needs both sides, in the same direction, past FIODriftFactor.
func TestFIODriftNeedsBothSides(t *testing.T) {
	for _, c := range []struct {
		name    string
		odd     [2]int64 // the third pair's rates; the others are {1000, 1000}
		drifted bool
	}{
		{"both 7x slower", [2]int64{143, 143}, true},
		{"both 3x faster", [2]int64{3000, 3000}, true},
		{"fio alone 7x slower", [2]int64{143, 1000}, false},
		{"hwbench alone 7x slower", [2]int64{1000, 143}, false},
		{"opposite ways", [2]int64{143, 3000}, false},
		{"both 1.9x slower", [2]int64{526, 526}, false},
		{"both 2.1x slower", [2]int64{476, 476}, true},
		{"both stalled", [2]int64{0, 0}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := ratePairs([2]int64{1000, 1000}, [2]int64{1000, 1000}, c.odd, [2]int64{1000, 1000}, [2]int64{1000, 1000})
			fc := FIOComparison{Pairs: ps}
			if c.drifted {
				assert.Equal(t, []int{2}, fc.DriftedPairs())
				assert.InDelta(t, 1.0, fc.Ratio(), 1e-12)
			} else {
				assert.Empty(t, fc.DriftedPairs())
			}
		})
	}
	// Two pairs: the median is their mean, so the slower drifted when it
	// ran over 3x slower on both sides.
	assert.Equal(t, []int{1}, FIOComparison{Pairs: ratePairs([2]int64{1000, 1000}, [2]int64{300, 300})}.DriftedPairs())
	assert.Empty(t, FIOComparison{Pairs: ratePairs([2]int64{1000, 1000}, [2]int64{350, 350})}.DriftedPairs())
}

func TestFIONoisyPairs(t *testing.T) {
	// The spread: pair ratios from 0.13 to 5.8, fio steady.
	wild := FIOComparison{Pairs: ratePairs([2]int64{1000, 130}, [2]int64{1000, 500}, [2]int64{1000, 1000}, [2]int64{1000, 2400}, [2]int64{1000, 5800}), Asked: 5}
	assert.Zero(t, wild.Drifted(), "fio did not move: hwbench's swings are noise, not drift")
	assert.InDelta(t, 0.87, wild.Spread(), 1e-12) // distances 0.87, 0.5, 0, 1.4, 4.8
	assert.True(t, wild.Noisy())
	assert.False(t, wild.Meaningful())
	assert.Equal(t, "not meaningful: noisy", wild.Verdict())

	// One stray pair does not make a set noisy: the spread is a median.
	stray := FIOComparison{Pairs: ratePairs([2]int64{1000, 1000}, [2]int64{1000, 1020}, [2]int64{1000, 980}, [2]int64{1000, 1010}, [2]int64{1000, 5800})}
	assert.InDelta(t, 1.01, stray.Ratio(), 1e-12)
	assert.InDelta(t, 0.01/1.01, stray.Spread(), 1e-12)
	assert.True(t, stray.Meaningful())
	_, hi := stray.RatioRange()
	assert.InDelta(t, 5.8, hi, 1e-12, "the range still shows it")

	// Either side of the threshold: half the pairs 10 % or 20 % away.
	within := FIOComparison{Pairs: ratePairs([2]int64{1000, 900}, [2]int64{1000, 1000}, [2]int64{1000, 1100})}
	assert.InDelta(t, 0.1, within.Spread(), 1e-12)
	assert.False(t, within.Noisy())
	beyond := FIOComparison{Pairs: ratePairs([2]int64{1000, 800}, [2]int64{1000, 1000}, [2]int64{1000, 1200})}
	assert.InDelta(t, 0.2, beyond.Spread(), 1e-12)
	assert.True(t, beyond.Noisy())

	// Both noisy and drifted.
	both := FIOComparison{Pairs: append(ratePairs([2]int64{100, 100}), beyond.Pairs...)}
	assert.Equal(t, []int{0}, both.DriftedPairs())
	assert.Equal(t, "not meaningful: noisy, drifted", both.Verdict())
}

func TestFIOTooFewPairs(t *testing.T) {
	one := FIOComparison{Pairs: ratePairs([2]int64{1000, 900}), Asked: 1}
	assert.InDelta(t, 0.9, one.Ratio(), 1e-12)
	assert.True(t, math.IsNaN(one.Spread()))
	assert.False(t, one.Noisy())
	assert.Equal(t, "not meaningful: too few pairs", one.Verdict())
	assert.True(t, one.needsRerun())

	// fio did nothing in most pairs: the median ratio is infinite and the
	// spread too.
	stalled := FIOComparison{Pairs: ratePairs([2]int64{0, 1000}, [2]int64{0, 1000}, [2]int64{1000, 1000})}
	assert.True(t, math.IsInf(stalled.Spread(), 1))
	assert.Equal(t, "not meaningful: noisy", stalled.Verdict())

	none := FIOComparison{Hwbench: Result{Ops: 90, Duration: time.Second}, FIO: Result{Ops: 100, Duration: time.Second}}
	assert.InDelta(t, 0.9, none.Ratio(), 1e-12)
	assert.False(t, none.Meaningful())
	assert.Equal(t, "not meaningful: no pairs", none.Verdict())
}

// fakePairs hands out canned pairs in order and counts the calls.
type fakePairs struct {
	pairs  []FIOPair
	calls  int
	failAt int // the call (from 1) that fails, 0 for none
	cancel func()
	stopAt int // the call after which cancel is called, 0 for none
}

var errFakeFIO = errors.New("fio failed")

func (f *fakePairs) next(i int) (FIOPair, error) {
	f.calls++
	if i != f.calls-1 {
		return FIOPair{}, errors.New("pair index out of step")
	}
	if f.calls == f.failAt {
		return FIOPair{}, errFakeFIO
	}
	if f.calls == f.stopAt {
		f.cancel()
	}
	return f.pairs[i], nil
}

func TestFIOPairsRerun(t *testing.T) {
	noisy := ratePairs([2]int64{1000, 700}, [2]int64{1000, 1000}, [2]int64{1000, 1400}, [2]int64{1000, 600}, [2]int64{1000, 1500})
	slowRerun := ratePairs([2]int64{1000, 1000}, [2]int64{130, 130}, [2]int64{1000, 1000}, [2]int64{1000, 1000}, [2]int64{1000, 1000})
	for _, c := range []struct {
		name     string
		pairs    []FIOPair // enough for 10 calls
		calls    int
		reran    bool
		drifted  []int
		verdict  string
		firstBad string // the first round's verdict, when rerun
	}{
		{"clean", slicesConcat(cleanPairs, cleanPairs), 5, false, nil, "ok", ""},
		{"drift then clean", slicesConcat(driftPairs, cleanPairs), 10, true, []int{1, 3}, "ok", "not meaningful: drifted"},
		{"noisy then quiet", slicesConcat(noisy, ratePairs([2]int64{1000, 1000}, [2]int64{1000, 1000}, [2]int64{1000, 1000}, [2]int64{1000, 1000}, [2]int64{1000, 1000})), 10, true, nil, "ok", "not meaningful: noisy"},
		{"noisy throughout", slicesConcat(noisy, noisy), 10, true, nil, "not meaningful: noisy", "not meaningful: noisy"},
		{"drift again in the rerun", slicesConcat(driftPairs, slowRerun), 10, true, []int{1, 3, 6}, "not meaningful: drifted", "not meaningful: drifted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &fakePairs{pairs: c.pairs}
			var first []FIOComparison
			got, err := runFIOPairs(context.Background(), 5, src.next, func(f FIOComparison) { first = append(first, f) })
			require.NoError(t, err)
			assert.Equal(t, c.calls, src.calls, "pairs run")
			assert.Len(t, got.Pairs, c.calls)
			assert.Equal(t, 5, got.Asked)
			assert.Equal(t, c.reran, got.Reran())
			assert.Equal(t, c.drifted, got.DriftedPairs())
			assert.Equal(t, c.verdict, got.Verdict())
			if !c.reran {
				assert.Empty(t, first, "no rerun announced")
				return
			}
			require.Len(t, first, 1, "the rerun is announced once")
			assert.Len(t, first[0].Pairs, 5)
			assert.Equal(t, c.firstBad, first[0].Verdict())
		})
	}

	t.Run("one pair asked", func(t *testing.T) {
		src := &fakePairs{pairs: cleanPairs}
		got, err := runFIOPairs(context.Background(), 1, src.next, nil)
		require.NoError(t, err)
		assert.Equal(t, 2, src.calls, "one pair has no spread: a second is run")
		assert.Equal(t, "ok", got.Verdict())
	})
	t.Run("failure", func(t *testing.T) {
		src := &fakePairs{pairs: slicesConcat(driftPairs, cleanPairs), failAt: 7}
		got, err := runFIOPairs(context.Background(), 5, src.next, nil)
		assert.ErrorIs(t, err, errFakeFIO)
		assert.Equal(t, 7, src.calls, "nothing run after the failure")
		assert.Len(t, got.Pairs, 6)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		src := &fakePairs{pairs: cleanPairs, cancel: cancel, stopAt: 2}
		got, err := runFIOPairs(ctx, 5, src.next, nil)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 2, src.calls)
		assert.Len(t, got.Pairs, 2)
	})
}

func slicesConcat(a, b []FIOPair) []FIOPair { return append(append([]FIOPair(nil), a...), b...) }

// The text table and report.md give every ratio its spread, pair count,
// drifted pairs and verdict; only meaningful ratios count for the target.
func TestFIOSpreadInTables(t *testing.T) {
	side := func(tool string, ops int64) Result {
		return Result{Tool: tool, Ops: ops, Duration: time.Second, Latency: NewLatencyHistogram()}
	}
	rerun := FIOComparison{Name: "S1 rerun", Hwbench: side("hwbench", 9000), FIO: side("fio", 9000),
		Pairs: slicesConcat(driftPairs, cleanPairs), Asked: 5}
	noisy := FIOComparison{Name: "S1 noisy", Hwbench: side("hwbench", 5000), FIO: side("fio", 5000),
		Pairs: ratePairs([2]int64{1000, 130}, [2]int64{1000, 500}, [2]int64{1000, 1000}, [2]int64{1000, 2400}, [2]int64{1000, 5800}), Asked: 5}
	r := Report{FIO: []FIOComparison{rerun, noisy}}

	var b strings.Builder
	require.NoError(t, WriteTables(&b, r))
	rows := map[string][]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "S1" {
			rows[f[1]] = f[2:]
		}
	}
	// hwbench IOPS, fio IOPS, ratio, spread, pair ratios, pairs, drifted,
	// 4 latencies, verdict.
	require.Len(t, rows["rerun"], 12, b.String())
	assert.Equal(t, []string{"9000", "9000", "1.010", "3.0%", "0.950-1.100", "5+5", "2"}, rows["rerun"][:7])
	assert.Equal(t, "ok", rows["rerun"][11])
	assert.Equal(t, []string{"5000", "5000", "1.000", "87.0%", "0.130-5.800", "5", "0"}, rows["noisy"][:7])
	assert.Equal(t, []string{"not", "meaningful:", "noisy"}, rows["noisy"][11:])
	assert.Contains(t, b.String(), "over 2x slower or faster than their medians")
	assert.Contains(t, b.String(), "spread above 15 %")

	assert.Equal(t, "spread 3.0 %, range 0.950-1.100, 5+5 pairs, 2 drifted (2, 4)", fioPairsSummary(rerun), "progress line")
	assert.Equal(t, "spread 87.0 %, range 0.130-5.800, 5 pairs, 0 drifted", fioPairsSummary(noisy), "progress line")

	var md strings.Builder
	writeFIOSection(&md, r.FIO)
	assert.Contains(t, md.String(), "| case | hwbench IOPS | fio IOPS | hwbench/fio | spread | pair range | pairs | drifted | verdict | within 10 % |\n")
	assert.Contains(t, md.String(), "| S1 rerun | 9000 | 9000 | 1.010 | 3.0 % | 0.950–1.100 | 5 + 5 | 2 | ok | yes |\n")
	assert.Contains(t, md.String(), "| S1 noisy | 5000 | 5000 | 1.000 | 87.0 % | 0.130–5.800 | 5 | 0 | not meaningful: noisy | – |\n")
	assert.Contains(t, md.String(), "\n1 of 1 meaningful ratios within 10 %; 1 of 2 not meaningful.\n")
}

func TestFIOCaseDriftNote(t *testing.T) {
	hw := Result{Scenario: "S1", Group: "seq 4 KiB", Variant: "plain", Ops: 12000, Duration: time.Second}
	slow := caseDriftNote(hw, Result{Ops: 1700, Duration: time.Second})
	assert.Contains(t, slow, "S1: seq 4 KiB: plain: hwbench ran 7.1x slower in its fio pairs (1700 IOPS) than in the case's own measurement (12000 IOPS)")
	assert.Contains(t, caseDriftNote(hw, Result{Ops: 30000, Duration: time.Second}), "2.5x faster")
	assert.Empty(t, caseDriftNote(hw, Result{Ops: 7000, Duration: time.Second}), "1.7x slower is not drift")
	assert.Empty(t, caseDriftNote(hw, Result{}), "no pairs' rate")
}

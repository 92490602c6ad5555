package odsync_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

var (
	odCacheFUA = spec.Config{VolatileCache: true, NativeFUA: true}
	odCacheEmu = spec.Config{VolatileCache: true}
	odNoCache  = spec.Config{}
)

// TestODSyncVerdicts is the verdict table of O_DIRECT|O_DSYNC writes to a
// block device ("block: skip redundant flush for O_DSYNC direct writes"):
// every variant on every device configuration, explored exhaustively with a
// crash at any point. The baseline and the patched kernel must be SAFE; each
// mutant UNSAFE where its bug loses acknowledged data and SAFE where it
// cannot (the false-positive controls: no volatile cache). Each
// counterexample must replay, must name the mechanism that lost the data,
// and must be a crash outcome the operational device (device.Device, over
// every landing order) can really produce for the same history.
func TestODSyncVerdicts(t *testing.T) {
	var table []verdict.Verdict
	for _, c := range odsync.Checks() {
		t.Run(c.Row().Name(), func(t *testing.T) {
			v, err := odsync.Check(c, explore.Options{Liveness: true})
			require.NoError(t, err)
			table = append(table, v)
			require.NotEqual(t, verdict.Unknown, v.Outcome)
			if !c.ExpectUnsafe() {
				assert.Equal(t, verdict.Safe, v.Outcome, "expected SAFE, got:\n%s", exploretest.Timeline(v))
				return
			}
			require.NotNil(t, v.Violation, "the negative control was not caught")
			assert.Equal(t, explore.Safety, v.Violation.Kind)
			t.Logf("counterexample:\n%s", v.Violation.Timeline())
			var loss *odsync.Loss
			require.True(t, errors.As(v.Violation.Err, &loss), "not a lost acknowledged write: %v", v.Violation.Err)
			assert.Contains(t, loss.Why, odsyncExpectedWhy(c), "caught for the wrong reason")

			sys, err := odsync.NewSystem(c)
			require.NoError(t, err)
			s, err := explore.Replay[odsync.State](sys, v.Violation.Path)
			require.NoError(t, err, "the counterexample path must replay")
			assert.EqualError(t, sys.Check(s), v.Violation.Err.Error())

			h := append(exploretest.Collect(v.Violation.Path, sys.DeviceEvent), spec.Event{Kind: spec.Crash})
			devs, err := device.Explain(c.Device, device.Correct, h)
			require.NoError(t, err)
			assert.True(t, device.CrashUnion(devs, loss.Block).Has(loss.Content),
				"model.Device cannot leave %s on b%d after this history", spec.ContentName(loss.Content), loss.Block)
		})
	}
	var b strings.Builder
	require.NoError(t, verdict.WriteTable(&b, table))
	t.Logf("verdict table:\n%s", b.String())
}

// odsyncExpectedWhy is the mechanism each mutant must be caught by.
func odsyncExpectedWhy(c odsync.Config) string {
	switch {
	case c.Variant == odsync.MutantFallbackDirty:
		return "only in the page cache"
	case c.Variant == odsync.MutantDropFUA:
		return "a plain write that carried it, completed into the volatile write cache"
	case c.Variant == odsync.MutantSkipSyncOnFallback && !c.Device.VolatileCache:
		return "a plain write that carried it, failed with EIO"
	case c.Variant == odsync.MutantSkipSyncOnFallback:
		return "a plain write that carried it, completed into the volatile write cache"
	}
	return "(no counterexample expected)"
}

func TestODSyncRows(t *testing.T) {
	rows := odsync.Rows()
	checks := append(odsync.Checks(), odsync.ProofChecks()...)
	require.Len(t, rows, len(checks))
	names := map[string]bool{}
	for i, r := range rows {
		assert.Equal(t, i >= len(odsync.Checks()), r.Proof, "%s: only the proof bound's rows are marked Proof", r.Name())
		assert.True(t, strings.HasPrefix(r.Name(), "odsync "+checks[i].Variant.String()+" "+checks[i].Device.String()+" "), r.Name())
		assert.False(t, names[r.Name()], "duplicate row %q", r.Name())
		names[r.Name()] = true
	}
	// The rows compute the verdicts of their own scenarios.
	for _, i := range []int{0, len(rows) - 1} {
		v, err := rows[i].Check(explore.Options{})
		require.NoError(t, err)
		want, err := odsync.Check(checks[i], explore.Options{})
		require.NoError(t, err)
		assert.Equal(t, want.Bound, v.Bound)
		assert.Equal(t, want.Outcome, v.Outcome)
		assert.Equal(t, want.Stats.States, v.Stats.States)
	}
}

// odsyncLarge draws a scenario beyond the exhaustive bounds: one or two
// writers, as many write()s as the contract's history holds (5 to 16 per
// writer), 1 to 3 blocks each, with or without EIO and the flusher thread.
func odsyncLarge(t *rapid.T, v odsync.Variant, dev spec.Config) odsync.Config {
	tasks := rapid.IntRange(1, 2).Draw(t, "tasks")
	blocks := rapid.IntRange(1, 3).Draw(t, "blocks")
	writes := min(16, spec.MaxWrites/(tasks*blocks), spec.MaxFlushes/tasks)
	return odsync.Config{Variant: v, Device: dev, Tasks: tasks, Writes: writes, Blocks: blocks,
		Failures: rapid.Bool().Draw(t, "EIO"), Writeback: rapid.Bool().Draw(t, "background write-back")}
}

// odsyncWalkStats counts what the random walks exercised, so that a walk
// that never reaches the interesting paths cannot pass silently.
type odsyncWalkStats struct {
	runs, returned, skipped, fallback, eio, background, deviceFailures, postFlushes, longRuns int
}

func (w *odsyncWalkStats) add(sys *odsync.System, path []explore.Label) {
	w.runs++
	returns := 0
	for _, l := range path {
		d := sys.Describe(l)
		switch {
		case strings.Contains(d, "returns -EIO"):
			w.eio++
		case strings.Contains(d, "returns"):
			if strings.Contains(d, "write() #") {
				w.returned++
				returns++
			}
			if strings.Contains(d, "generic_write_sync skipped") {
				w.skipped++
			}
		case strings.Contains(d, "blkdev_buffered_write"):
			w.fallback++
		case strings.Contains(d, "wb_workfn"):
			w.background++
		}
		if e, ok := sys.DeviceEvent(l); ok {
			switch e.Kind {
			case spec.WriteFail, spec.FlushFail:
				w.deviceFailures++
			case spec.WriteDataDone:
				w.postFlushes++
			}
		}
	}
	if returns > 4 {
		w.longRuns++
	}
}

// TestODSyncWalk runs random schedules of the real variants (and of the
// mutants where they are SAFE) at bounds the exhaustive search does not
// reach; the obligation is checked in every state. 1000 runs per row by
// default (200 under -short); -rapid.checks=N for more.
func TestODSyncWalk(t *testing.T) {
	type row struct {
		v    odsync.Variant
		dev  spec.Config
		noIO bool // without EIO: skip-sync-on-fallback is SAFE without a cache only then
	}
	var rows []row
	for _, v := range []odsync.Variant{odsync.Baseline, odsync.Patched} {
		for _, dev := range spec.Configs() {
			rows = append(rows, row{v: v, dev: dev})
		}
	}
	rows = append(rows, row{v: odsync.MutantDropFUA, dev: odNoCache}, row{v: odsync.MutantSkipSyncOnFallback, dev: odNoCache, noIO: true})
	for _, r := range rows {
		t.Run(r.v.String()+"/"+r.dev.String(), func(t *testing.T) {
			st := &odsyncWalkStats{}
			rapidctl.Check(t, 1000, func(rt *rapid.T) {
				c := odsyncLarge(rt, r.v, r.dev)
				if r.noIO {
					c.Failures = false
				}
				sys, err := odsync.NewSystem(c)
				require.NoError(rt, err)
				path, _ := exploretest.Walk(rt, sys, 5000)
				st.add(sys, path)
			})
			require.NotZero(t, st.runs)
			assert.NotZero(t, st.returned, "no write() returned")
			assert.NotZero(t, st.fallback, "the fallback was never taken")
			assert.NotZero(t, st.background, "the flusher never wrote a page")
			assert.NotZero(t, st.longRuns, "no run went past the exhaustive bound")
			if r.v != odsync.Baseline {
				assert.NotZero(t, st.skipped, "the sync was never skipped")
			}
			if !r.noIO {
				assert.NotZero(t, st.eio, "no write() returned -EIO")
				assert.NotZero(t, st.deviceFailures, "the device never failed")
			}
			if r.dev.EmulatesFUA() {
				assert.NotZero(t, st.postFlushes, "no emulated-FUA post-flush")
			}
			t.Logf("%+v", *st)
		})
	}
}

// TestODSyncWalkMutants: the random walk must catch every mutant where it
// is unsafe, and the failure must replay from the seed rapid printed.
func TestODSyncWalkMutants(t *testing.T) {
	type row struct {
		v      odsync.Variant
		dev    spec.Config
		shared bool // two writers with EIO: the lost AS_EIO needs both
	}
	var rows []row
	for _, v := range []odsync.Variant{odsync.MutantSkipSyncOnFallback, odsync.MutantDropFUA, odsync.MutantFallbackDirty} {
		for _, dev := range []spec.Config{odCacheFUA, odCacheEmu} {
			rows = append(rows, row{v: v, dev: dev})
		}
	}
	rows = append(rows, row{v: odsync.MutantFallbackDirty, dev: odNoCache}, row{v: odsync.MutantSkipSyncOnFallback, dev: odNoCache, shared: true})
	for _, r := range rows {
		t.Run(r.v.String()+"/"+r.dev.String(), func(t *testing.T) {
			f := rapidctl.Expect(t, 300, func(rt *rapid.T) {
				c := odsyncLarge(rt, r.v, r.dev)
				if r.shared {
					c.Tasks, c.Writes, c.Failures = 2, 5, true
				}
				sys, err := odsync.NewSystem(c)
				require.NoError(rt, err)
				exploretest.Walk(rt, sys, 5000)
			})
			assert.Contains(t, f.Output, "acknowledged data lost")
			t.Logf("caught; replays with -rapid.seed=%s", f.Seed)
		})
	}
}

// TestODSyncCostTable checks the cost model against the patch's description
// and measurements: the patch removes exactly one PREFLUSH from the pure
// direct path and nothing else; with emulated FUA the baseline is a write
// and two flushes, the patched kernel a write and one flush; without a cache
// nothing changes; and with the patch's latencies the predicted IOPS move
// from about 120 to about 7,500.
func TestODSyncCostTable(t *testing.T) {
	cost := func(v odsync.Variant, dev spec.Config, p odsync.Path) odsync.Cost {
		t.Helper()
		c, err := odsync.CallCost(v, dev, p)
		require.NoError(t, err)
		return c
	}
	for _, dev := range spec.Configs() {
		base := cost(odsync.Baseline, dev, odsync.PureDirect)
		patched := cost(odsync.Patched, dev, odsync.PureDirect)
		assert.Equal(t, base.Flushes+base.StrippedFlushes, patched.Flushes+patched.StrippedFlushes+1,
			"%v: the patch removes one PREFLUSH per write()", dev)
		assert.Equal(t, base.FUAWrites, patched.FUAWrites, "%v", dev)
		assert.Equal(t, base.PlainWrites(), patched.PlainWrites(), "%v", dev)
		for _, p := range []odsync.Path{odsync.FallbackAll, odsync.ShortDirect} {
			b, q := cost(odsync.Baseline, dev, p), cost(odsync.Patched, dev, p)
			b.Variant, q.Variant = 0, 0
			assert.Equal(t, b, q, "%v %v: the fallback path is unchanged by the patch", dev, p)
		}
	}

	fua := [2]odsync.Cost{cost(odsync.Baseline, odCacheFUA, odsync.PureDirect), cost(odsync.Patched, odCacheFUA, odsync.PureDirect)}
	assert.Equal(t, [2]int{1, 1}, [2]int{fua[0].FUAWrites, fua[1].FUAWrites})
	assert.Equal(t, [2]int{1, 0}, [2]int{fua[0].Flushes, fua[1].Flushes})
	assert.Equal(t, [2]int{2, 1}, [2]int{fua[0].RoundTrips, fua[1].RoundTrips})

	emu := [2]odsync.Cost{cost(odsync.Baseline, odCacheEmu, odsync.PureDirect), cost(odsync.Patched, odCacheEmu, odsync.PureDirect)}
	assert.Equal(t, [2]int{1, 1}, [2]int{emu[0].PlainWrites(), emu[1].PlainWrites()}, "emulated FUA: the data is a plain write")
	assert.Equal(t, [2]int{2, 1}, [2]int{emu[0].Flushes, emu[1].Flushes}, "emulated FUA: write + 2 flushes vs write + 1 flush")
	assert.Equal(t, [2]int{1, 1}, [2]int{emu[0].PostFlushes, emu[1].PostFlushes})

	none := [2]odsync.Cost{cost(odsync.Baseline, odNoCache, odsync.PureDirect), cost(odsync.Patched, odNoCache, odsync.PureDirect)}
	assert.Equal(t, [2]int{0, 0}, [2]int{none[0].Flushes, none[1].Flushes}, "no cache: the flush is stripped")
	assert.Equal(t, 1, none[0].StrippedFlushes)
	assert.Equal(t, none[0].Latency(odsync.DefaultLatency), none[1].Latency(odsync.DefaultLatency))

	seq, rnd := odsync.DefaultLatency, odsync.PatchRandomLatency
	assert.InEpsilon(t, 119.7, fua[0].IOPS(seq), 0.01, "the patch: sequential baseline")
	assert.InEpsilon(t, 7497.0, fua[1].IOPS(seq), 0.01, "the patch: sequential patched")
	assert.InEpsilon(t, 156.1, fua[0].IOPS(rnd), 0.01, "the patch: random baseline")
	assert.InEpsilon(t, 666.4, fua[1].IOPS(rnd), 0.01, "the patch: random patched")
	assert.Greater(t, fua[1].IOPS(seq)/fua[0].IOPS(seq), 50.0, "one flush fewer, where a flush costs milliseconds")
	assert.InEpsilon(t, 2.0, emu[1].IOPS(seq)/emu[0].IOPS(seq), 0.02, "emulated FUA: one flush of two")
	assert.True(t, math.IsInf(cost(odsync.MutantFallbackDirty, odCacheFUA, odsync.FallbackAll).IOPS(seq), 1),
		"a write() left in the page cache costs the device nothing")

	var out bytes.Buffer
	require.NoError(t, odsync.WriteCostTable(&out, seq))
	lines := strings.Split(out.String(), "\n")
	assert.True(t, strings.HasPrefix(lines[0], "VARIANT"), lines[0])
	rows := 0
	for _, l := range lines {
		for _, v := range odsync.Variants() {
			if strings.HasPrefix(l, v.String()+" ") {
				rows++
			}
		}
	}
	assert.Equal(t, len(odsync.Variants())*len(spec.Configs())*len(odsync.Paths()), rows)
	assert.Regexp(t, `cache\+fua +baseline 1 flush\(es\) +119\.7 IOPS, patched 0 flush\(es\) +7518\.8 IOPS: x62\.83`, out.String())
	t.Logf("cost table:\n%s", out.String())

	assert.Error(t, odsync.WriteCostTable(failingWriter{}, seq), "a write error must be reported")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestODSyncCompactSameAsWhole: the rows of the table on the first device
// configuration (every variant at both bounds), searched with the states
// collapsed (the default for State) and whole, sequentially and in
// parallel, are one search each: the same states in the same order, the
// same verdict and counterexample.
func TestODSyncCompactSameAsWhole(t *testing.T) {
	for _, c := range odsync.Checks() {
		if c.Device != spec.Configs()[0] {
			continue
		}
		sys, err := odsync.NewSystem(c)
		require.NoError(t, err)
		r := exploretest.SameWithStores[odsync.State](t, sys, explore.Options{Liveness: true}, 1, c.Row().Name())
		require.Equal(t, c.ExpectUnsafe(), r.Violation != nil, c.Row().Name())
	}
}

package hwbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/spec"
)

// TestCalibrateTempFile runs the calibration's loops on a temporary file
// (and on -device, if given): every figure is positive, and the flushes
// they issue are the ones they say (two per empty-flush op, one per
// flush-after-write op, none per write).
func TestCalibrateTempFile(t *testing.T) {
	devices := []string{""}
	if *flagDevice != "" {
		devices = append(devices, *flagDevice)
	}
	for _, dev := range devices {
		cfg := Config{Duration: 100 * time.Millisecond, Scenarios: []string{"S1"}}.withDefaults()
		tg := openTestTarget(t, dev, cfg)
		e := &scenarioEnv{t: tg, cfg: cfg, io: ioSize(tg.Logical)}
		cal := e.newCalibration()
		assert.Equal(t, tg.IsBlockDevice(), cal.BlockDevice)
		assert.Equal(t, cfg.Duration, cal.Each)
		for pi, p := range s1Patterns {
			cases := e.s1CalCases(pi, p)
			rs, err := alternate(context.Background(), cfg, "calibration", cases)
			require.NoError(t, err, tg.Path)
			assert.Zero(t, rs[0].Flushes, "a write loop does not flush")
			assert.Equal(t, rs[1].Ops, rs[1].Flushes, "a flush per write")
			assert.Equal(t, 2*rs[2].Ops, rs[2].Flushes, "two flushes per empty-flush op")
			require.NoError(t, cal.addPattern(p, rs))
		}
		require.Len(t, cal.Patterns, 2)
		for i, p := range cal.Patterns {
			assert.Equal(t, s1Patterns[i], p.Pattern)
		}
		for _, f := range cal.calibrationFigures() {
			assert.Positive(t, f.Ops, "%s %s: ops", tg.Path, f.What)
			assert.Positive(t, f.Mean, "%s %s: mean", tg.Path, f.What)
			assert.Positive(t, f.Median, "%s %s: median", tg.Path, f.What)
		}
		for _, p := range s1Patterns {
			lat, ok := cal.Latency(p)
			require.True(t, ok, p)
			assert.Positive(t, lat.CachedWrite, p)
			assert.Positive(t, lat.Flush, p)
			assert.Positive(t, lat.EmptyFlush, p)
		}
		var b strings.Builder
		require.NoError(t, cal.writeText(&b))
		assert.Contains(t, b.String(), "empty flush, seq run")
		t.Logf("%s:%s", tg.Path, b.String())
	}
	assert.Error(t, (&Calibration{}).addPattern("seq", []Result{{Ops: 1}, {Ops: 1}, {Ops: 0}}), "a loop that did nothing")
}

// TestCalibrationInRun: Run calibrates before S1, and the report carries
// the calibration to the tables and report.md.
func TestCalibrationInRun(t *testing.T) {
	cfg := Config{Duration: 50 * time.Millisecond, Scenarios: []string{"S1"}}
	tg := openTestTarget(t, "", cfg)
	rep, err := Run(context.Background(), tg, cfg)
	require.NoError(t, err)
	require.NotNil(t, rep.Calibration)
	if !tg.IsBlockDevice() {
		assert.Empty(t, rep.Calibration.Predictions, "a file: no prediction")
	}
	var b strings.Builder
	require.NoError(t, WriteTables(&b, rep))
	assert.Contains(t, b.String(), "calibration (each command timed alone")
	var md strings.Builder
	writeReportHeader(&md, rep)
	assert.Contains(t, md.String(), "## Calibration")
}

// fixedCalibration is a calibration with fixed prices: write 100 µs, flush
// after a write 200 µs, empty flush 50 µs (random: write 150 µs).
func fixedCalibration(dev spec.Config) *Calibration {
	fig := func(what string, d time.Duration) CalibrationFigure {
		return CalibrationFigure{What: what, Ops: 1, Mean: d, Median: d}
	}
	return &Calibration{
		Config: dev, Known: true, BlockDevice: true, Each: time.Second,
		Patterns: []CalibrationPattern{
			{Pattern: "seq", Write: fig("write, seq", 100*time.Microsecond), Flush: fig("flush after a seq write", 200*time.Microsecond),
				EmptyFlush: fig("empty flush, seq run", 50*time.Microsecond)},
			{Pattern: "random", Write: fig("write, random", 150*time.Microsecond), Flush: fig("flush after a random write", 200*time.Microsecond),
				EmptyFlush: fig("empty flush, random run", 50*time.Microsecond)},
		},
	}
}

// measuredS1 is S1's three columns measured at the given IOPS (one second
// each), O_DSYNC with devFlushes device flushes per op (< 0: not counted).
func measuredS1(plain, dsync, wsync int64, devFlushes float64) []Result {
	rs := []Result{{Ops: plain}, {Ops: dsync}, {Ops: wsync}}
	for i := range rs {
		rs[i].Duration = time.Second
		rs[i].Variant = s1Variants[i].name
	}
	if devFlushes >= 0 {
		rs[1].Extra = map[string]float64{ExtraDeviceFlushesPerOp: devFlushes}
	}
	return rs
}

// TestS1PredictionArithmetic prices S1's columns with fixed latencies: on
// emulated FUA the unpatched O_DSYNC write is a write, a flush and an
// empty flush (100 + 200 + 50 µs), write + fdatasync a write and a flush
// (300 µs), plain a write (100 µs); the error is predicted / measured - 1.
func TestS1PredictionArithmetic(t *testing.T) {
	lat := odsync.Latency{CachedWrite: 100 * time.Microsecond, MediaWrite: 100 * time.Microsecond,
		Flush: 200 * time.Microsecond, EmptyFlush: 50 * time.Microsecond}
	latencies := func(ps []s1Price) []time.Duration {
		var out []time.Duration
		for _, p := range ps {
			out = append(out, p.latency)
		}
		return out
	}
	us := time.Microsecond

	emu, err := s1Prices(spec.CacheEmulatedFUA, odsync.Baseline, lat, true)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{100 * us, 350 * us, 300 * us}, latencies(emu))
	assert.Equal(t, "1 write", emu[0].model)
	assert.Equal(t, "unpatched O_DSYNC write(): 1 write + 1 flush + 1 empty flush", emu[1].model)
	assert.Equal(t, "1 write + 1 flush", emu[2].model)

	patched, err := s1Prices(spec.CacheEmulatedFUA, odsync.Patched, lat, true)
	require.NoError(t, err)
	assert.Equal(t, 300*us, patched[1].latency, "patched: the write and its post-flush, as write + fdatasync")

	fua, err := s1Prices(spec.CacheFUA, odsync.Baseline, lat, false)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{100 * us, 0, 300 * us}, latencies(fua), "native FUA: no FUA price, no O_DSYNC prediction")
	assert.NotEmpty(t, fua[1].why)
	assert.Equal(t, "unpatched O_DSYNC write(): 1 FUA write + 1 empty flush", fua[1].model)

	none, err := s1Prices(spec.NoCache, odsync.Baseline, lat, true)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{100 * us, 100 * us, 100 * us}, latencies(none), "no cache: flushes stripped")
	assert.Equal(t, "1 write (1 flush stripped)", none[2].model)

	// From the calibration to the error, seq (write 100 µs).
	cal := fixedCalibration(spec.CacheEmulatedFUA)
	preds, note, err := cal.predictS1("seq", measuredS1(10000, 2500, 4000, 2))
	require.NoError(t, err)
	assert.Empty(t, note, "2 device flushes per O_DSYNC write: the unpatched kernel")
	require.Len(t, preds, 3)
	wantIOPS := []float64{10000, 1e6 / 350, 1e6 / 300}
	wantErr := []float64{0, 1e6/350/2500 - 1, 1e6/300/4000 - 1} // 0, +14.3 %, -16.7 %
	for i, p := range preds {
		assert.Equal(t, "seq", p.Pattern)
		assert.Equal(t, s1Variants[i].name, p.Case)
		assert.InDelta(t, wantIOPS[i], p.PredictedIOPS(), 1e-6, p.Case)
		e, ok := p.RelError()
		require.True(t, ok, p.Case)
		assert.InDelta(t, wantErr[i], e, 1e-9, p.Case)
	}
	assert.Equal(t, "+14.3%", preds[1].errorText())
	assert.Equal(t, "-16.7%", preds[2].errorText())

	// Random: its own write price (150 µs).
	preds, _, err = cal.predictS1("random", measuredS1(1, 1, 1, -1))
	require.NoError(t, err)
	assert.Equal(t, 400*us, preds[1].Predicted, "150 + 200 + 50 µs")

	// The empty flush priced as a flush after a write, as before it was
	// counted, would predict 450 µs: the arithmetic tells them apart.
	lat.EmptyFlush = 0
	old, err := s1Prices(spec.CacheEmulatedFUA, odsync.Baseline, lat, true)
	require.NoError(t, err)
	assert.Equal(t, 500*us, old[1].latency)

	// A kernel that sends the patched model's flush count is predicted as patched.
	preds, note, err = cal.predictS1("seq", measuredS1(10000, 3300, 3300, 1))
	require.NoError(t, err)
	assert.Contains(t, note, "patched")
	assert.Equal(t, 300*us, preds[1].Predicted)
	assert.True(t, strings.HasPrefix(preds[1].Model, "patched O_DSYNC write()"), preds[1].Model)

	// Native FUA: the FUA write is not calibrated.
	nat := fixedCalibration(spec.CacheFUA)
	assert.False(t, nat.FUAPriced())
	l, ok := nat.Latency("seq")
	require.True(t, ok)
	assert.Zero(t, l.FUAWrite)
	preds, _, err = nat.predictS1("seq", measuredS1(10000, 2500, 4000, 1))
	require.NoError(t, err)
	assert.Zero(t, preds[1].Predicted)
	_, ok = preds[1].RelError()
	assert.False(t, ok, "no error without a prediction")
	assert.Contains(t, nat.FUANote(), "not calibrated")

	// A file, or unknown queue settings: nothing predicted.
	file := fixedCalibration(spec.CacheEmulatedFUA)
	file.BlockDevice = false
	preds, why, err := file.predictS1("seq", measuredS1(1, 1, 1, -1))
	require.NoError(t, err)
	assert.Empty(t, preds)
	assert.Contains(t, why, "file")
	_, _, err = cal.predictS1("seq", measuredS1(1, 1, 1, -1)[:2])
	assert.Error(t, err, "three columns")

	// The tables print the predictions with their errors.
	cal.Predictions, _, err = cal.predictS1("seq", measuredS1(10000, 2500, 4000, 2))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, WriteTables(&b, Report{Device: "x", Calibration: cal}))
	assert.Contains(t, b.String(), "S1 predicted vs measured (cache+emulated-fua")
	assert.Contains(t, b.String(), "+14.3%")
	var md strings.Builder
	writeReportHeader(&md, Report{Calibration: cal})
	assert.Contains(t, md.String(), "| seq | O_DSYNC (RWF_DSYNC) | unpatched O_DSYNC write(): 1 write + 1 flush + 1 empty flush | 350 µs |")
	t.Logf("\n%s", b.String())
}

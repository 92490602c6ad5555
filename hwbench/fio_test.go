package hwbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixtures are fio 3.33's output for the command lines FIOJob.args
// builds, run on a temporary file on ext4 in a VM:
//
//	fio-plain-seq.json: Name "plain-seq", RW "write", 4 KiB, Direct,
//	    Size 16 MiB, Runtime 300ms.
//	fio-fdatasync-rand-2jobs.json: Name "fdatasync-rand", RW "randwrite",
//	    4 KiB, Direct, Sync "fdatasync", NumJobs 2, Size 4 MiB,
//	    Offset 1 MiB, Runtime 300ms.
//
// Those two are plain json, with percentiles only. The slice fixtures are
// fio 3.33's json+ output (with latency histograms), three runs in a row
// of the same job as a fio reference runs it in pairs, on a temporary file
// on ext4 in a VM here:
//
//	fio-slice-plain-seq-{1,2,3}.json: as fio-plain-seq.json, Runtime 100ms.
//	fio-slice-fdatasync-rand-2jobs-{1,2,3}.json: as
//	    fio-fdatasync-rand-2jobs.json, Runtime 100ms.

// needFIO skips the test where fio is not installed, saying so on stderr,
// or fails it if -fio=true was given.
func needFIO(t *testing.T) {
	t.Helper()
	if _, ok := FIOPath(); !ok {
		unavailable(t, flagSet("fio") && *flagFIO, "fio is not installed (not found on $PATH)")
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// assertLatency checks that got is want to the histogram's precision.
func assertLatency(t *testing.T, h *hdrhistogram.Histogram, want, got int64, what string) {
	t.Helper()
	assert.Truef(t, h.ValuesAreEquivalent(want, got), "%s: got %d, want %d", what, got, want)
}

func TestFIOParsePlainFixture(t *testing.T) {
	r, err := parseFIOOutput(readFixture(t, "fio-plain-seq.json"))
	require.NoError(t, err)

	assert.Equal(t, "fio", r.Tool)
	assert.Equal(t, "reference", r.Role)
	assert.Equal(t, "plain-seq", r.Variant)
	assert.Equal(t, int64(6021), r.Ops)
	assert.Equal(t, 301*time.Millisecond, r.Duration)
	assert.InDelta(t, 20003.322259, r.Extra[FIOExtraIOPS], 1e-6)
	assert.InDelta(t, 49.608888557, r.Extra[FIOExtraClatMean], 1e-9)
	assert.NotContains(t, r.Extra, FIOExtraSyncLatMean)
	assert.InDelta(t, 6021/0.301, r.IOPS(), 1e-6)

	h := r.Latency
	require.NotNil(t, h)
	assert.Equal(t, int64(6021), h.TotalCount())
	for _, c := range []struct {
		pct  float64
		want int64
	}{
		{50, 47360}, {90, 57600}, {99, 86528}, {99.9, 337920}, {99.99, 2768896},
	} {
		assertLatency(t, h, c.want, int64(r.Percentile(c.pct)), fmt.Sprintf("p%v", c.pct))
	}
	assertLatency(t, h, 29994, h.Min(), "min")
	assertLatency(t, h, 2776113, h.Max(), "max")
	// The rebuilt mean is near fio's, not equal to it.
	assert.InEpsilon(t, 49608.888557, float64(r.Mean()), 0.03)
}

func TestFIOParseFdatasyncFixture(t *testing.T) {
	r, err := parseFIOOutput(readFixture(t, "fio-fdatasync-rand-2jobs.json"))
	require.NoError(t, err)

	assert.Equal(t, "fdatasync-rand", r.Variant)
	assert.Equal(t, int64(3692), r.Ops)
	assert.Equal(t, 303*time.Millisecond, r.Duration)
	assert.InDelta(t, 12184.818482, r.Extra[FIOExtraIOPS], 1e-6)
	assert.InDelta(t, 64.385196641, r.Extra[FIOExtraClatMean], 1e-9)
	assert.InDelta(t, 98.288976158, r.Extra[FIOExtraSyncLatMean], 1e-9)
	assert.InDelta(t, 232.448, r.Extra[FIOExtraSyncLatP99], 1e-9)

	h := r.Latency
	assert.Equal(t, int64(3692), h.TotalCount())
	assertLatency(t, h, 55040, int64(r.Percentile(50)), "p50")
	assertLatency(t, h, 126464, int64(r.Percentile(99)), "p99")
	assertLatency(t, h, 7438336, int64(r.Percentile(99.99)), "p99.99")
	assertLatency(t, h, 12859, h.Min(), "min")
	assertLatency(t, h, 7440913, h.Max(), "max")
	assert.InEpsilon(t, 64385.196641, float64(r.Mean()), 0.1)
}

// countsAround is the number of values recorded below v's bucket and up
// to the end of it.
func countsAround(h *hdrhistogram.Histogram, v int64) (below, through int64) {
	for _, b := range h.Distribution() {
		switch {
		case b.To < v:
			below += b.Count
			through += b.Count
		case b.From <= v:
			through += b.Count
		}
	}
	return below, through
}

func TestFIOHistogramFromPercentiles(t *testing.T) {
	l := fioLat{
		Min: 10_000, Max: 500_000, N: 1000,
		Percentile: map[string]float64{
			"50.000000":  20_000,
			"90.000000":  30_000,
			"99.000000":  40_000,
			"100.000000": 600_000, // fio's bucket midpoint, above the max
		},
	}
	h, err := histogramFromFIO(l)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), h.TotalCount())
	// 1 write at the min and 499 over (10, 20] µs, 400 over (20, 30] µs,
	// 90 over (30, 40] µs, 9 over (40, 500] µs (clamped from 600 µs) and
	// 1 at the max.
	assertLatency(t, h, 10_000, h.Min(), "min")
	assertLatency(t, h, 500_000, h.Max(), "max")
	for _, c := range []struct {
		pct   float64
		value int64
		below int64
	}{
		{50, 20_000, 500}, {90, 30_000, 900}, {99, 40_000, 990}, {100, 500_000, 1000},
	} {
		assertLatency(t, h, c.value, h.ValueAtQuantile(c.pct), fmt.Sprintf("p%v", c.pct))
		// The rank of the percentile is reached in the value's bucket
		// (which may hold values of the next gap too, since a bucket
		// spans 512 ns up to 1 ms).
		below, through := countsAround(h, c.value)
		assert.Lessf(t, below, c.below, "below %d", c.value)
		assert.GreaterOrEqualf(t, through, c.below, "through %d", c.value)
	}
	between := h.ValueAtQuantile(50.1)
	assert.True(t, between > 20_100 && between < 30_000, "p50.1 = %d", between)
	between = h.ValueAtQuantile(99.5)
	assert.True(t, between > 40_100 && between < 500_000, "p99.5 = %d", between)
	// Spread evenly, the mean is near that of the gaps' midpoints:
	// (10 + 499*15 + 400*25 + 90*35 + 9*270 + 500) / 1000 µs.
	assert.InEpsilon(t, 23_595.0, h.Mean(), 0.02)

	empty, err := histogramFromFIO(fioLat{})
	require.NoError(t, err)
	assert.Zero(t, empty.TotalCount())

	_, err = histogramFromFIO(fioLat{N: 1, Percentile: map[string]float64{"x": 1}})
	assert.ErrorContains(t, err, `bad percentile "x"`)
}

func TestFIOParseErrors(t *testing.T) {
	plain := string(readFixture(t, "fio-plain-seq.json"))
	for _, c := range []struct {
		name, out, want string
	}{
		{"no JSON", "fio: something went wrong\n", "no JSON"},
		{"broken JSON", `{"jobs": [`, "reading fio's JSON output"},
		{"no jobs", `{"jobs": []}`, "0 jobs"},
		{"two jobs", `{"jobs": [{}, {}]}`, "2 jobs"},
		{"job error", strings.Replace(plain, `"error" : 0`, `"error" : 5`, 1), "failed with error 5"},
		{"bad percentile", strings.Replace(plain, `"50.000000"`, `"fifty"`, 1), `bad percentile "fifty"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseFIOOutput([]byte(c.out))
			assert.ErrorContains(t, err, c.want)
		})
	}
	// Notes before the JSON document are skipped.
	r, err := parseFIOOutput([]byte("note: something\n" + plain))
	require.NoError(t, err)
	assert.Equal(t, int64(6021), r.Ops)
}

// sliceRuns parses the three runs of a slice fixture.
func sliceRuns(t *testing.T, name string) []fioRun {
	t.Helper()
	var runs []fioRun
	for i := 1; i <= 3; i++ {
		run, err := parseFIORun(readFixture(t, fmt.Sprintf("fio-slice-%s-%d.json", name, i)))
		require.NoError(t, err)
		runs = append(runs, run)
	}
	return runs
}

// binPercentile is percentile p of the I/Os in fio's buckets bins, counted
// here independently of the histogram: the middle of the first bucket at
// which the running count reaches p % of them (at least one).
func binPercentile(t *testing.T, bins map[int64]int64, p float64) int64 {
	t.Helper()
	var keys []int64
	var n int64
	for k, c := range bins {
		keys = append(keys, k)
		n += c
	}
	slices.Sort(keys)
	rank := max(1, int64(math.Round(p/100*float64(n))))
	var cum int64
	for _, k := range keys {
		cum += bins[k]
		if cum >= rank {
			return k
		}
	}
	t.Fatalf("no percentile %v in %d I/Os", p, n)
	return 0
}

// countAt is the count of the histogram's bucket holding v.
func countAt(h *hdrhistogram.Histogram, v int64) int64 {
	for _, b := range h.Distribution() {
		if b.From <= v && v <= b.To {
			return b.Count
		}
	}
	return 0
}

// sumBins adds up the runs' buckets of one latency summary.
func sumBins(t *testing.T, runs []fioRun, lat func(fioRun) fioLat) map[int64]int64 {
	t.Helper()
	sum := map[int64]int64{}
	for _, r := range runs {
		require.NotEmpty(t, lat(r).Bins, "json+ fixtures have histograms")
		for k, c := range lat(r).Bins {
			v, err := strconv.ParseInt(k, 10, 64)
			require.NoError(t, err)
			sum[v] += c
		}
	}
	return sum
}

// TestFIOMergeSlices merges the three json+ runs of each slice fixture:
// ops and runtimes add up, the histogram is the sum of fio's buckets (so
// its percentiles are the summed buckets' percentiles), the exact means
// are weighted by the counts.
func TestFIOMergeSlices(t *testing.T) {
	for _, c := range []struct {
		name     string
		ops      []int64
		clatMean []float64 // fio's mean completion latency per run, ns
		clatN    []int64
		syncMean []float64
		syncN    []int64
	}{
		{name: "plain-seq", ops: []int64{1281, 1330, 1363},
			clatMean: []float64{77148.589383, 74452.511278, 73089.256053}, clatN: []int64{1281, 1330, 1363}},
		{name: "fdatasync-rand-2jobs", ops: []int64{538, 551, 590},
			clatMean: []float64{195320.115242, 196817.114338, 180019.588136}, clatN: []int64{538, 551, 590},
			syncMean: []float64{175628.128492, 165974.48, 158528.142615}, syncN: []int64{537, 550, 589}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := sliceRuns(t, c.name)
			r, err := mergeFIORuns(runs)
			require.NoError(t, err)
			var ops, n int64
			var weighted float64
			for i := range c.ops {
				ops += c.ops[i]
				n += c.clatN[i]
				weighted += c.clatMean[i] * float64(c.clatN[i])
				assert.Equal(t, SliceRate{Ops: c.ops[i], Duration: 101 * time.Millisecond}, runs[i].Rate(), "run %d", i+1)
			}
			assert.Equal(t, "fio", r.Tool)
			assert.Equal(t, ops, r.Ops)
			assert.Equal(t, 303*time.Millisecond, r.Duration)
			assert.InDelta(t, float64(ops)/0.303, r.IOPS(), 1e-6)
			assert.Equal(t, 3.0, r.Extra[FIOExtraRuns])
			assert.InDelta(t, weighted/float64(n)/1e3, r.Extra[FIOExtraClatMean], 1e-9)

			bins := sumBins(t, runs, func(r fioRun) fioLat { return r.Clat })
			require.Equal(t, n, r.Latency.TotalCount())
			for v, count := range bins {
				assert.Equal(t, count, countAt(r.Latency, v), "bucket at %d ns", v)
			}
			for _, p := range []float64{1, 50, 90, 99, 99.9, 100} {
				assertLatency(t, r.Latency, binPercentile(t, bins, p), int64(r.Percentile(p)), fmt.Sprintf("p%v", p))
			}

			if c.syncN == nil {
				assert.NotContains(t, r.Extra, FIOExtraSyncLatMean)
				assert.NotContains(t, r.Extra, FIOExtraSyncLatP99)
				return
			}
			var sn int64
			var sw float64
			for i := range c.syncN {
				sn += c.syncN[i]
				sw += c.syncMean[i] * float64(c.syncN[i])
			}
			assert.InDelta(t, sw/float64(sn)/1e3, r.Extra[FIOExtraSyncLatMean], 1e-9)
			syncBins := sumBins(t, runs, func(r fioRun) fioLat { return r.Sync })
			sh := NewLatencyHistogram()
			assertLatency(t, sh, binPercentile(t, syncBins, 99), int64(r.Extra[FIOExtraSyncLatP99]*1e3), "sync p99")
		})
	}
}

// Runs without histograms (plain json) are merged by their rebuilt
// histograms: the same run twice keeps its percentiles, doubles its
// counts, and the sync p99 then comes from the merged histogram.
func TestFIOMergeWithoutHistograms(t *testing.T) {
	one, err := parseFIORun(readFixture(t, "fio-fdatasync-rand-2jobs.json"))
	require.NoError(t, err)
	require.Empty(t, one.Clat.Bins)
	single, err := mergeFIORuns([]fioRun{one})
	require.NoError(t, err)
	double, err := mergeFIORuns([]fioRun{one, one})
	require.NoError(t, err)
	assert.Equal(t, 2*single.Ops, double.Ops)
	assert.Equal(t, 2*single.Duration, double.Duration)
	assert.Equal(t, 2*single.Latency.TotalCount(), double.Latency.TotalCount())
	for _, p := range []float64{50, 99, 99.99} {
		assert.Equal(t, single.Percentile(p), double.Percentile(p), "p%v", p)
	}
	assert.InDelta(t, single.Extra[FIOExtraClatMean], double.Extra[FIOExtraClatMean], 1e-9)
	assert.InDelta(t, single.Extra[FIOExtraSyncLatMean], double.Extra[FIOExtraSyncLatMean], 1e-9)
	// One run: fio's own p99 (232.448 µs); two: the merged rebuilt
	// histogram's, the same to its resolution.
	assert.InDelta(t, 232.448, single.Extra[FIOExtraSyncLatP99], 1e-9)
	assertLatency(t, NewLatencyHistogram(), 232448, int64(double.Extra[FIOExtraSyncLatP99]*1e3), "sync p99 of two runs")

	_, err = mergeFIORuns(nil)
	assert.ErrorContains(t, err, "no fio run")
}

func TestFIOMergeRefusesInconsistentHistogram(t *testing.T) {
	runs := sliceRuns(t, "plain-seq")
	runs[1].Clat.N++
	_, err := mergeFIORuns(runs)
	assert.ErrorContains(t, err, "run 2")
	assert.ErrorContains(t, err, "its count N is 1331")

	runs = sliceRuns(t, "plain-seq")
	runs[0].Clat.Bins = map[string]int64{"soon": 1281}
	_, err = mergeFIORuns(runs)
	assert.ErrorContains(t, err, `bad histogram bucket "soon"`)
}

// TestFIOPairRatios: the ratio reported is the median of the pairs'
// hwbench/fio ratios, the range their extremes, here over the canned fio
// runs and hwbench slices of a given rate. (Drifted pairs, left out of
// both, are fio_drift_test.go's.)
func TestFIOPairRatios(t *testing.T) {
	runs := sliceRuns(t, "plain-seq") // 1281, 1330, 1363 writes in 101 ms each
	hw := []SliceRate{
		{Ops: 1281, Duration: 101 * time.Millisecond}, // ratio 1
		{Ops: 665, Duration: 101 * time.Millisecond},  // 0.5
		{Ops: 2726, Duration: 101 * time.Millisecond}, // 2
	}
	var c FIOComparison
	for i, run := range runs {
		c.Pairs = append(c.Pairs, FIOPair{FIO: run.Rate(), Hwbench: hw[i]})
	}
	assert.InDeltaSlice(t, []float64{0.5, 1, 2}, c.Ratios(), 1e-12)
	assert.InDelta(t, 1.0, c.Ratio(), 1e-12, "median of three")
	lo, hi := c.RatioRange()
	assert.InDelta(t, 0.5, lo, 1e-12)
	assert.InDelta(t, 2.0, hi, 1e-12)
	// The median is not the ratio of the sums, which one slow or fast
	// pair would pull: (1281+665+2726)/(1281+1330+1363) = 1.176.
	c.Hwbench = Result{Ops: 1281 + 665 + 2726, Duration: 303 * time.Millisecond}
	c.FIO = Result{Ops: 1281 + 1330 + 1363, Duration: 303 * time.Millisecond}
	assert.InDelta(t, 1.176, c.wholeRatio(), 1e-3)

	// An even count: the mean of the middle two. (fio at its usual rate:
	// hwbench alone 4x faster is a ratio, not drift.)
	c.Pairs = append(c.Pairs, FIOPair{FIO: SliceRate{Ops: 13000, Duration: time.Second}, Hwbench: SliceRate{Ops: 52000, Duration: time.Second}})
	assert.InDelta(t, 1.5, c.Ratio(), 1e-12)
	lo, hi = c.RatioRange()
	assert.InDelta(t, 0.5, lo, 1e-12)
	assert.InDelta(t, 4.0, hi, 1e-12)

	// A fio slice with nothing done, hwbench's at its usual rate, is an
	// infinite ratio, kept; a pair with nothing on either side has no
	// ratio, and is a drifted pair (both sides stalled), left out.
	c.Pairs = append(c.Pairs,
		FIOPair{FIO: SliceRate{Duration: time.Second}, Hwbench: SliceRate{Ops: 13000, Duration: time.Second}},
		FIOPair{FIO: SliceRate{Duration: time.Second}, Hwbench: SliceRate{Duration: time.Second}})
	assert.Len(t, c.Ratios(), 5)
	assert.Equal(t, []int{5}, c.DriftedPairs())
	assert.InDelta(t, 2.0, c.Ratio(), 1e-12)
	_, hi = c.RatioRange()
	assert.True(t, math.IsInf(hi, 1))

	// Without pairs: the whole results' ratio, 0 without fio figures.
	whole := FIOComparison{Hwbench: Result{Ops: 90, Duration: time.Second}, FIO: Result{Ops: 100, Duration: time.Second}}
	assert.InDelta(t, 0.9, whole.Ratio(), 1e-12)
	lo, hi = whole.RatioRange()
	assert.Equal(t, lo, hi)
	assert.Zero(t, FIOComparison{}.Ratio())
}

func validFIOJob(path string) FIOJob {
	return FIOJob{
		Name: "test", Path: path, RW: "write", BlockSize: 4096,
		Size: 1 << 20, Runtime: 300 * time.Millisecond,
	}
}

func TestFIOJobValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*FIOJob)
		want string
	}{
		{"empty path", func(j *FIOJob) { j.Path = "" }, "empty path"},
		{"stdout", func(j *FIOJob) { j.Path = "-" }, "stdout"},
		{"trailing space", func(j *FIOJob) { j.Path += " " }, "white space"},
		{"backslash", func(j *FIOJob) { j.Path += `\:x` }, "backslash"},
		{"newline", func(j *FIOJob) { j.Path += "\nx" }, "control character"},
		{"unknown rw", func(j *FIOJob) { j.RW = "read" }, `unknown rw "read"`},
		{"empty rw", func(j *FIOJob) { j.RW = "" }, `unknown rw ""`},
		{"unknown sync", func(j *FIOJob) { j.Sync = "fsync" }, `unknown sync "fsync"`},
		{"zero block size", func(j *FIOJob) { j.BlockSize = 0 }, "block size 0 is not positive"},
		{"zero size", func(j *FIOJob) { j.Size = 0 }, "size 0 is not positive"},
		{"size below a block", func(j *FIOJob) { j.Size = 512 }, "less than one block"},
		{"negative offset", func(j *FIOJob) { j.Offset = -4096 }, "offset -4096 is negative"},
		{"unaligned offset", func(j *FIOJob) { j.Offset = 100 }, "not a multiple of the block size"},
		{"negative jobs", func(j *FIOJob) { j.NumJobs = -1 }, "-1 jobs"},
		{"zero runtime", func(j *FIOJob) { j.Runtime = 0 }, "runtime 0s"},
		{"sub-ms runtime", func(j *FIOJob) { j.Runtime = time.Microsecond }, "less than 1ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := validFIOJob(filepath.Join(t.TempDir(), "f"))
			c.edit(&j)
			_, err := RunFIO(context.Background(), j)
			assert.ErrorContains(t, err, c.want)
		})
	}
	assert.NoError(t, validFIOJob("/x").validate())
}

func TestFIOTargetChecks(t *testing.T) {
	dir := t.TempDir()
	needFIO(t)
	// A missing file is not created (nor its directory).
	missing := filepath.Join(dir, "sub", "f")
	_, err := RunFIO(context.Background(), validFIOJob(missing))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.NoDirExists(t, filepath.Join(dir, "sub"))
	// A directory is refused.
	_, err = RunFIO(context.Background(), validFIOJob(dir))
	assert.ErrorContains(t, err, "neither a regular file nor a block device")
}

func TestFIOMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, ok := FIOPath()
	assert.False(t, ok)
	_, err := RunFIO(context.Background(), validFIOJob(filepath.Join(t.TempDir(), "f")))
	assert.ErrorContains(t, err, "fio is not installed")
}

func TestFIOArgs(t *testing.T) {
	has := func(args []string, want ...string) {
		t.Helper()
		for _, w := range want {
			assert.Contains(t, args, w)
		}
	}
	j := validFIOJob("/tmp/a:b")
	j.Direct = true
	a := j.args()
	has(a, "--output-format=json+", "--name=test", `--filename=/tmp/a\:b`, "--rw=write",
		"--bs=4096", "--ioengine=psync", "--offset=0", "--size=1048576", "--time_based",
		"--runtime=300ms", "--numjobs=1", "--thread", "--allow_file_create=0", "--direct=1")
	for _, not := range []string{"--group_reporting", "--sync=dsync", "--fdatasync=1", "--norandommap"} {
		assert.NotContains(t, a, not)
	}

	j.Sync, j.RW, j.NumJobs, j.Offset, j.Direct = "dsync", "randwrite", 4, 8192, false
	a = j.args()
	has(a, "--sync=dsync", "--group_reporting", "--numjobs=4", "--rw=randwrite", "--norandommap", "--offset=8192")
	assert.NotContains(t, a, "--direct=1")

	j.Sync = "fdatasync"
	has(j.args(), "--fdatasync=1")
	assert.NotContains(t, j.args(), "--sync=dsync")
}

// directIOWorks reports whether dir's file system takes O_DIRECT.
func directIOWorks(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY|syscall.O_DIRECT, 0o600)
	if err != nil {
		return false
	}
	require.NoError(t, f.Close())
	require.NoError(t, os.Remove(f.Name()))
	return true
}

func TestFIOLive(t *testing.T) {
	needFIO(t)
	const (
		bs     = 4096
		offset = 64 << 10
		size   = 256 << 10
		tail   = 64 << 10
	)
	for _, c := range []struct {
		name, rw, sync string
		jobs           int
	}{
		{"plain", "write", "", 1},
		{"dsync", "write", "dsync", 1},
		{"fdatasync", "write", "fdatasync", 1},
		{"fdatasync random 2 jobs", "randwrite", "fdatasync", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The region fio may write is framed by bytes it must not touch.
			path := filepath.Join(dir, "target")
			const mark = 0xA5
			require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{mark}, offset+size+tail), 0o600))
			job := FIOJob{
				Name: c.name, Path: path, RW: c.rw, BlockSize: bs,
				Direct: directIOWorks(t, dir), Sync: c.sync, NumJobs: c.jobs,
				Size: size, Offset: offset, Runtime: 300 * time.Millisecond,
			}
			r, err := RunFIO(context.Background(), job)
			require.NoError(t, err)

			assert.Equal(t, "fio", r.Tool)
			assert.Equal(t, c.name, r.Variant)
			assert.Empty(t, r.Group, "RunFIO alone knows no group")
			assert.Equal(t, c.jobs, r.Threads)
			assert.Positive(t, r.Ops)
			assert.Positive(t, r.Duration)
			assert.Positive(t, r.Extra[FIOExtraIOPS])
			require.NotNil(t, r.Latency)
			assert.Equal(t, r.Ops, r.Latency.TotalCount())
			prev := time.Duration(0)
			for _, p := range []float64{50, 90, 99, 99.9, 99.99, 100} {
				v := r.Percentile(p)
				assert.GreaterOrEqualf(t, v, prev, "p%v", p)
				prev = v
			}
			assert.Positive(t, r.Percentile(50))
			if c.sync == "fdatasync" {
				assert.Positive(t, r.Extra[FIOExtraSyncLatMean])
				assert.Positive(t, r.Extra[FIOExtraSyncLatP99])
			} else {
				assert.NotContains(t, r.Extra, FIOExtraSyncLatMean)
			}

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Len(t, got, offset+size+tail)
			assert.Equal(t, bytes.Repeat([]byte{mark}, offset), got[:offset], "fio wrote before the region")
			assert.Equal(t, bytes.Repeat([]byte{mark}, tail), got[offset+size:], "fio wrote after the region")
			assert.NotEqual(t, bytes.Repeat([]byte{mark}, size), got[offset:offset+size], "fio wrote nothing")
		})
	}
}

// A short file is extended, not laid out again: what was there stays.
func TestFIOExtendsShortFile(t *testing.T) {
	needFIO(t)
	t.Parallel()
	path := filepath.Join(t.TempDir(), "short")
	const head = 8192
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{0x5A}, head), 0o600))
	job := validFIOJob(path)
	job.Offset, job.Size, job.Runtime = head, 64<<10, 100*time.Millisecond
	_, err := RunFIO(context.Background(), job)
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Len(t, got, head+64<<10)
	assert.Equal(t, bytes.Repeat([]byte{0x5A}, head), got[:head])
}

func TestFIOCancel(t *testing.T) {
	needFIO(t)
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	job := validFIOJob(path)
	job.Runtime = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := RunFIO(ctx, job)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "err = %v", err)
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestFIOFailureReportsStderr(t *testing.T) {
	needFIO(t)
	t.Parallel()
	// O_DIRECT writes of 100 bytes fail with EINVAL; fio's complaint
	// must reach the caller.
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	job := validFIOJob(path)
	job.BlockSize, job.Size, job.Direct = 100, 8192, true
	_, err := RunFIO(context.Background(), job)
	assert.ErrorContains(t, err, "fio on "+path)
	assert.ErrorContains(t, err, "Invalid argument")
}

// RunFIO needs fio and a file it may write; this example only compiles.
func ExampleRunFIO() {
	job := FIOJob{
		Name: "S1-seq-plain", Path: "/tmp/hwbench-target", RW: "write",
		BlockSize: 4096, Direct: true, Size: 64 << 20, Runtime: 2 * time.Second,
	}
	r, err := RunFIO(context.Background(), job)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("fio: %.0f IOPS, p99 %v\n", r.IOPS(), r.Percentile(99))
}

// The text table's fio section prints the pairs' median ratio, its
// spread and range, the pairs, the drifted pairs and the verdict; a
// comparison without pairs has no spread or range and is not meaningful.
func TestWriteTablesFIO(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteTables(&b, testReport(t)))
	out := b.String()
	assert.Contains(t, out, "ratio = hwbench IOPS / fio IOPS, the median of the pairs' ratios, drifted pairs left out")
	var s1, s2 string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "S1 seq plain"):
			s1 = line
		case strings.Contains(line, "S2 always flush"):
			s2 = line
		}
	}
	// Pair ratios 0.9, 0.952 and 1.2: distances 0.052, 0 and 0.248 from
	// 0.952, relative to it; their median is 0.055.
	assert.Equal(t, []string{"S1", "seq", "plain", "20000", "21000", "0.952", "5.5%", "0.900-1.200", "3", "0"}, strings.Fields(s1)[:10], s1)
	assert.True(t, strings.HasSuffix(s1, "  ok"), s1)
	assert.Equal(t, []string{"S2", "always", "flush", "809.0", "1618", "0.500", "-", "-", "0", "0"}, strings.Fields(s2)[:10], s2)
	assert.True(t, strings.HasSuffix(s2, "  not meaningful: no pairs"), s2)
}

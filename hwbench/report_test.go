package hwbench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latencies is a histogram holding n latencies of d for each (d, n) pair.
func latencies(t *testing.T, pairs ...any) *hdrhistogram.Histogram {
	t.Helper()
	h := NewLatencyHistogram()
	for i := 0; i < len(pairs); i += 2 {
		require.NoError(t, h.RecordValues(int64(pairs[i].(time.Duration)), int64(pairs[i+1].(int))))
	}
	return h
}

// Latencies below are chosen with the histogram's buckets in mind: a
// bucket is 512 ns wide up to 1 ms and 4096 ns wide around 8 ms, and a
// percentile is the top of its bucket, the mean made of bucket middles.
func testReport(t *testing.T) Report {
	t.Helper()
	ceiling := Result{
		Scenario: "S1", Group: "seq", Variant: "plain", Role: "ceiling", Tool: "hwbench", Threads: 1,
		Ops: 200_000, Duration: 10 * time.Second, Writes: 200_000,
		Latency: latencies(t, 50*time.Microsecond, 1000),
	}
	baseline := Result{
		Scenario: "S1", Group: "seq", Variant: "write+fdatasync", Role: "baseline", Tool: "hwbench", Threads: 1,
		Ops: 1200, Duration: 10 * time.Second, Writes: 1200, Flushes: 1200,
		// Percentiles 8,003,583 ns, mean 8,001,536 ns.
		Latency: latencies(t, 8*time.Millisecond, 1000),
		Extra:   map[string]float64{"efficiency": 0.5},
	}
	optimised := Result{
		Scenario: "S1", Group: "seq", Variant: "O_DSYNC | RWF_DSYNC", Role: "optimised", Tool: "hwbench", Threads: 1,
		Ops: 75_000, Duration: 10 * time.Second, Writes: 75_000, FUAWrites: 75_000,
		// p50 and p99 100,351 ns, p99.9 500,223 ns, mean 104,094 ns.
		Latency: latencies(t, 100*time.Microsecond, 990, 500*time.Microsecond, 10),
		Extra:   map[string]float64{"efficiency": 0.9, "skipped/sync": 0.25},
	}
	fioPlain := Result{
		Variant: "fio seq plain", Role: "reference", Tool: "fio", Threads: 1,
		Ops: 210_000, Duration: 10 * time.Second,
		Latency: latencies(t, 48*time.Microsecond, 1000),
	}
	always := Result{
		Scenario: "S2", Group: "16 writers", Variant: "always flush", Role: "baseline", Tool: "hwbench", Threads: 16,
		Ops: 8090, Duration: 10 * time.Second, Flushes: 8090,
		Latency: latencies(t, 19800*time.Microsecond, 100),
	}
	skip := Result{
		Scenario: "S2", Group: "16 writers", Variant: "skip if flushed since", Role: "optimised", Tool: "hwbench", Threads: 16,
		Ops: 41850, Duration: 10 * time.Second, Flushes: 10000,
		Latency: latencies(t, 3800*time.Microsecond, 100),
		Extra:   map[string]float64{"flushes/sync": 0.239},
	}
	fioAlways := Result{
		Scenario: "S2", Variant: "fio always flush", Role: "reference", Tool: "fio", Threads: 16,
		Ops: 16180, Duration: 10 * time.Second,
		Latency: latencies(t, 9*time.Millisecond, 100),
	}
	odd := Result{
		Scenario: "S3/../x y", Variant: "parallel", Role: "optimised", Tool: "hwbench", Threads: 8,
		Ops: 1000, Duration: time.Second, Latency: latencies(t, 200*time.Microsecond, 10),
	}
	counter := Result{
		Scenario: "S4", Variant: "counter once", Role: "optimised", Tool: "hwbench", Threads: 64,
		Ops: 5000, Duration: time.Second,
	}
	return Report{
		Device:    "/dev/loop3 (loop, direct I/O, over /tmp/x)",
		BlockSize: 4096,
		Started:   time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC),
		Results:   []Result{ceiling, baseline, optimised, always, skip, fioAlways, odd, counter},
		Comparisons: []Comparison{
			{Scenario: "S1", Name: "seq 4 KiB: write+fdatasync vs O_DSYNC", Baseline: baseline, Optimised: optimised},
			{Scenario: "S2", Name: "16 writers: always vs skip", Baseline: always, Optimised: skip},
		},
		FIO: []FIOComparison{
			// Pair ratios 0.9, 0.952 and 1.2: the median is reported.
			{Name: "S1 seq plain", Hwbench: ceiling, FIO: fioPlain, Pairs: []FIOPair{
				{FIO: SliceRate{Ops: 2100, Duration: 100 * time.Millisecond}, Hwbench: SliceRate{Ops: 1890, Duration: 100 * time.Millisecond}},
				{FIO: SliceRate{Ops: 2100, Duration: 100 * time.Millisecond}, Hwbench: SliceRate{Ops: 2520, Duration: 100 * time.Millisecond}},
				{FIO: SliceRate{Ops: 2100, Duration: 100 * time.Millisecond}, Hwbench: SliceRate{Ops: 2000, Duration: 100 * time.Millisecond}},
			}},
			{Name: "S2 always flush", Hwbench: always, FIO: fioAlways},
		},
		Notes: []string{"model predicts O_DSYNC slower on loop\nsecond line"},
	}
}

func readReport(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	require.NoError(t, err)
	return string(b)
}

func assertPlots(t *testing.T, dir, name string) {
	t.Helper()
	png, err := os.ReadFile(filepath.Join(dir, name+".png"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "%s.png is not a PNG", name)
	svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(svg, []byte("<?xml")) || bytes.HasPrefix(svg, []byte("<svg")),
		"%s.svg starts with %q", name, svg[:min(len(svg), 20)])
	assert.Contains(t, string(svg), "</svg>")
}

func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b") // created by WriteReport
	require.NoError(t, WriteReport(dir, testReport(t)))
	md := readReport(t, dir)

	for _, want := range []string{
		"# hwbench report\n",
		"- Device: /dev/loop3 (loop, direct I/O, over /tmp/x)\n",
		"- Started: 2026-11-30T06:00:00Z\n",
		"- Block size: 4096 bytes\n",
		"- Cases: 8\n",

		"## S1\n",
		"### seq 4 KiB: write+fdatasync vs O_DSYNC\n",
		"| | baseline | optimised | change |\n",
		"| case | seq: write+fdatasync | seq: O_DSYNC \\| RWF_DSYNC |  |\n",
		"| IOPS | 120.0 | 7500 | +6150.0 % |\n",
		"| mean latency | 8.00 ms | 104.1 µs | -98.7 % |\n",
		"| p50 latency | 8.00 ms | 100.4 µs | -98.7 % |\n",
		"| p99 latency | 8.00 ms | 100.4 µs | -98.7 % |\n",
		"| p99.9 latency | 8.00 ms | 500.2 µs | -93.8 % |\n",
		"| flushes/op | 1 | 0 | -100.0 % |\n",
		"| efficiency | 0.5 | 0.9 | +80.0 % |\n",
		"| skipped/sync | – | 0.25 |  |\n",
		"| seq: plain | ceiling | hwbench | 1 | 200000 | 20000 | 49.9 µs | 50.2 µs | 50.2 µs | 50.2 µs | 0 |\n",
		// The fio run of an S1 case without a scenario of its own.
		"| fio seq plain | reference | fio | 1 | 210000 | 21000 | 47.9 µs | 48.1 µs | 48.1 µs | 48.1 µs | – |\n",
		"![S1 latency CDF](S1.svg)\n",
		"[PNG](S1.png), [SVG](S1.svg)\n",

		"## S2\n",
		"| IOPS | 809.0 | 4185 | +417.3 % |\n",
		"| flushes/op | 1 | 0.239 | -76.1 % |\n",
		"| flushes/sync | – | 0.239 |  |\n",
		"[PNG](S2.png)",

		"## S3/../x y\n",
		"[PNG](S3_.._x_y.png)",

		"## S4\n",
		"| counter once | optimised | hwbench | 64 | 5000 | 5000 | – | – | – | – | 0 |\n",

		"## fio reference\n",
		"| case | hwbench IOPS | fio IOPS | hwbench/fio | spread | pair range | pairs | drifted | verdict | within 10 % |\n",
		"| S1 seq plain | 20000 | 21000 | 0.952 | 5.5 % | 0.900–1.200 | 3 | 0 | ok | yes |\n",
		// A comparison without pairs: the ratio of the whole results, not
		// judged against the target.
		"| S2 always flush | 809.0 | 1618 | 0.500 | – | – | 0 | 0 | not meaningful: no pairs | – |\n",
		"1 of 1 meaningful ratios within 10 %; 1 of 2 not meaningful.\n",

		"## Notes\n\n- model predicts O_DSYNC slower on loop\n  second line\n",
	} {
		assert.Contains(t, md, want)
	}
	// The fio S2 result is in Results already and listed once.
	assert.Equal(t, 1, strings.Count(md, "| fio always flush |"))
	// Scenarios in the order they first appear.
	assert.Less(t, strings.Index(md, "## S1"), strings.Index(md, "## S2"))
	assert.Less(t, strings.Index(md, "## S3"), strings.Index(md, "## S4"))

	for _, name := range []string{"S1", "S2", "S3_.._x_y"} {
		assertPlots(t, dir, name)
	}
	// S4 has no latencies, so no plot and no link.
	assert.NoFileExists(t, filepath.Join(dir, "S4.png"))
	assert.NoFileExists(t, filepath.Join(dir, "S4.svg"))
	assert.NotContains(t, md, "S4.svg")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1+3*2)
}

func TestWriteReportWithoutFIO(t *testing.T) {
	r := testReport(t)
	r.FIO, r.Notes = nil, nil
	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, r))
	md := readReport(t, dir)
	assert.Contains(t, md, "## fio reference\n\nNo fio reference in this run")
	assert.NotContains(t, md, "hwbench/fio")
	assert.NotContains(t, md, "fio seq plain")
	assert.NotContains(t, md, "## Notes")
	assertPlots(t, dir, "S1")
}

func TestWriteReportEmpty(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, Report{}))
	md := readReport(t, dir)
	assert.Contains(t, md, "- Device: (not recorded)\n")
	assert.Contains(t, md, "- Started: (not recorded)\n")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestWriteReportOverwritesOnlyItsFiles(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("keep"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ReportFile), []byte("old report"), 0o644))
	require.NoError(t, WriteReport(dir, testReport(t)))

	assert.NotContains(t, readReport(t, dir), "old report")
	b, err := os.ReadFile(other)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
}

func TestWriteReportErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	assert.ErrorContains(t, WriteReport(file, testReport(t)), "creating "+file)
	assert.ErrorContains(t, WriteReport(filepath.Join(file, "sub"), testReport(t)), "creating")
	assert.ErrorContains(t, WriteReport("", testReport(t)), "empty directory name")
}

func TestReportSafeFileNames(t *testing.T) {
	used := map[string]bool{}
	for _, c := range []struct{ id, want string }{
		{"S1", "S1"},
		{"s1", "s1-2"}, // file names may not differ by case alone
		{"../etc/passwd", "_._etc_passwd"},
		{".hidden", "_hidden"},
		{"", "scenario"},
		{"S 2:x", "S_2_x"},
		{"S_2_x", "S_2_x-2"},
	} {
		assert.Equal(t, c.want, uniqueName(safeFileName(c.id), used), "id %q", c.id)
	}
}

func TestReportLatencyCDF(t *testing.T) {
	r := Result{Latency: latencies(t, 10*time.Microsecond, 50, 100*time.Microsecond, 40, time.Millisecond, 10)}
	pts := latencyCDF(r)
	require.Len(t, pts, 4)
	assert.Equal(t, 0.0, pts[0].Y)
	assert.InDelta(t, 0.5, pts[1].Y, 1e-12)
	assert.InDelta(t, 0.9, pts[2].Y, 1e-12)
	assert.Equal(t, 1.0, pts[3].Y)
	for i := 1; i < len(pts); i++ {
		assert.Greater(t, pts[i].X, pts[i-1].X)
	}
	assert.InDelta(t, 10, pts[1].X, 0.6) // µs, to a 512 ns bucket
	assert.InDelta(t, 1000, pts[3].X, 1.1)

	assert.Nil(t, latencyCDF(Result{}))
	assert.Nil(t, latencyCDF(Result{Latency: NewLatencyHistogram()}))
	// Latencies below the resolution stay on a log axis.
	pts = latencyCDF(Result{Latency: latencies(t, 100*time.Nanosecond, 3)})
	assert.Equal(t, minPlotLatency, pts[0].X)
	assert.Positive(t, pts[1].X)
}

func ExampleWriteReport() {
	dir, err := os.MkdirTemp("", "hwbench-report")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	lat := func(d time.Duration) *hdrhistogram.Histogram {
		h := NewLatencyHistogram()
		_ = h.RecordValues(int64(d), 100)
		return h
	}
	base := Result{Scenario: "S1", Group: "seq 4 KiB", Variant: "write+fdatasync", Role: "baseline", Tool: "hwbench",
		Ops: 1000, Duration: time.Second, Flushes: 1000, Latency: lat(time.Millisecond)}
	opt := Result{Scenario: "S1", Group: "seq 4 KiB", Variant: "O_DSYNC", Role: "optimised", Tool: "hwbench",
		Ops: 4000, Duration: time.Second, Latency: lat(250 * time.Microsecond)}
	err = WriteReport(dir, Report{
		Device:      "/tmp/example",
		Results:     []Result{base, opt},
		Comparisons: []Comparison{{Scenario: "S1", Name: "seq 4 KiB", Baseline: base, Optimised: opt}},
	})
	if err != nil {
		panic(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| IOPS") || strings.HasPrefix(line, "![") {
			fmt.Println(line)
		}
	}
	// Output:
	// | IOPS | 1000 | 4000 | +300.0 % |
	// ![S1 latency CDF](S1.svg)
}

package hwbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmarks report what the scenarios measure as `go test -bench`
// lines, so that benchstat can compare runs (docs/hwbench.md):
//
//	go test ./hwbench -run '^$' -bench . -count 6 -device=loop > old.txt
//
// Each BenchmarkSn measures its scenario once per -count sample (alternated
// as in the tests, for -duration per case) and reports every case as a
// sub-benchmark (benchName): BenchmarkS1/group=seq_4_KiB/case=O_DSYNC_(RWF_DSYNC)/tool=hwbench with iops,
// mean-us, p50-us, p99-us, p99.9-us and the per-op counts. ns/op is the
// case's mean latency. b.N means nothing here: the figures come from the
// alternated run, not from timing b.N calls.

var bench struct {
	once   sync.Once
	target *Target
	err    error
	cfg    Config
}

// benchTarget opens the -device target once for all benchmarks; TestMain
// closes it.
func benchTarget(b *testing.B) (*Target, Config) {
	b.Helper()
	bench.once.Do(func() {
		bench.cfg = testConfig(b)
		bench.cfg.Progress = nil
		bench.target, bench.err = OpenTarget(TargetOptions{Path: *flagDevice, Destructive: *flagDestructive, OverwriteReadOnly: *flagReadOnly, Region: bench.cfg.Region()})
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.target, bench.cfg
}

func closeBenchTarget() {
	if bench.target != nil {
		if err := bench.target.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "hwbench:", err)
		}
	}
}

func BenchmarkS1(b *testing.B) { benchScenario(b, "S1") }
func BenchmarkS2(b *testing.B) { benchScenario(b, "S2") }
func BenchmarkS3(b *testing.B) { benchScenario(b, "S3") }
func BenchmarkS4(b *testing.B) { benchScenario(b, "S4") }

func benchScenario(b *testing.B, scenario string) {
	tg, cfg := benchTarget(b)
	cfg.Scenarios = []string{scenario}
	var runs []Report
	// sample returns the i-th measurement of the scenario, measuring it
	// if it has not been yet.
	sample := func(b *testing.B, i int) Report {
		for len(runs) <= i {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			rep, err := Run(ctx, tg, cfg)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			if *flagReport != "" {
				dir := fmt.Sprintf("%s/%s-%d", *flagReport, scenario, len(runs)+1)
				if err := WriteReport(dir, rep); err != nil {
					b.Fatal(err)
				}
			}
			runs = append(runs, rep)
		}
		return runs[i]
	}
	// Baselines first: benchstat -col /case takes the first column it
	// meets as the one the others are compared with.
	rs := slices.Clone(sample(b, 0).Results)
	slices.SortStableFunc(rs, func(a, b Result) int { return roleRank(a) - roleRank(b) })
	for _, r := range rs {
		name := benchName(r)
		// The testing package runs a sub-benchmark -count times, each
		// time with a *testing.B of its own (and each of those several
		// times, growing b.N): a new *testing.B is a new sample, and gets
		// a new measurement of the whole scenario.
		samples := map[*testing.B]int{}
		b.Run(name, func(b *testing.B) {
			i, ok := samples[b]
			if !ok {
				i = len(samples)
				samples[b] = i
			}
			rep := sample(b, i)
			for _, got := range rep.Results {
				if benchName(got) == name {
					reportMetrics(b, got)
					reportFIORatio(b, rep, got)
					return
				}
			}
			b.Fatalf("sample %d of %s has no case %s", i, scenario, name)
		})
	}
}

func roleRank(r Result) int {
	rank := map[string]int{"baseline": 0, "optimised": 1, "ceiling": 2, "reference": 3}[r.Role]
	if r.Tool == "fio" {
		rank += 10
	}
	return rank
}

// benchName is the sub-benchmark name of a case, in benchstat's key=value
// form: group=seq_4_KiB/case=write+fdatasync/tool=hwbench. So
// `benchstat -col /case` compares the cases of one run, `-col /tool`
// hwbench with fio, and `benchstat old.txt new.txt` two runs.
func benchName(r Result) string {
	clean := strings.NewReplacer(" + ", "+", ", ", "_", " ", "_", "/", "-", "=", "-").Replace
	return "group=" + clean(r.Group) + "/case=" + clean(r.Variant) + "/tool=" + r.Tool
}

// reportFIORatio reports the pairs' hwbench/fio ratio with a fio result.
func reportFIORatio(b *testing.B, rep Report, r Result) {
	if r.Tool != "fio" {
		return
	}
	for _, c := range rep.FIO {
		if c.FIO.sameCase(r) {
			lo, hi := c.RatioRange()
			b.ReportMetric(c.Ratio(), "hwbench/fio")
			b.ReportMetric(lo, "hwbench/fio-min")
			b.ReportMetric(hi, "hwbench/fio-max")
			return
		}
	}
}

// reportMetrics reports a case's figures, each in a unit of its own.
func reportMetrics(b *testing.B, r Result) {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(float64(r.Mean().Nanoseconds()), "ns/op")
	b.ReportMetric(r.IOPS(), "iops")
	b.ReportMetric(us(r.Mean()), "mean-us")
	b.ReportMetric(us(r.Percentile(50)), "p50-us")
	b.ReportMetric(us(r.Percentile(99)), "p99-us")
	b.ReportMetric(us(r.Percentile(99.9)), "p99.9-us")
	if r.Tool == "hwbench" {
		b.ReportMetric(r.FlushesPerOp(), "flushes/op")
	}
	for key, unit := range map[string]string{
		ExtraDeviceFlushesPerOp:  "dev-flushes/op",
		ExtraFUAWritesPerOp:      "fua-writes/op",
		ExtraSkippedPerSync:      "skipped/op",
		ExtraEfficiency:          "efficiency",
		ExtraCounterUpdatesPerOp: "counter-updates/op",
	} {
		if v, ok := r.Extra[key]; ok {
			b.ReportMetric(v, unit)
		}
	}
}

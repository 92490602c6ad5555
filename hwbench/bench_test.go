package hwbench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmarks run each case of a scenario as a `go test -bench`
// sub-benchmark, for benchstat (docs/hwbench.md):
//
//	go test ./hwbench -run '^$' -bench . -count 6 -device=loop > old.txt
//
// Each sub-benchmark (BenchmarkS1/group=seq_4_KiB/case=O_DSYNC_(RWF_DSYNC))
// runs exactly b.N operations of its case, shared among the case's
// workers, on a fresh copy of the case; the testing package times them,
// so ns/op is wall time per operation (for a case with several workers,
// the inverse of its throughput) and -benchtime means what it says. The
// other metrics (iops, latency percentiles, flushes and device flushes
// per op, S2's efficiency) are those of the same b.N operations.
//
// Unlike the tests, the cases of a comparison are not alternated slice by
// slice: the testing package runs each sub-benchmark's -count samples in a
// row. benchstat's spread over -count samples is the measure of noise
// here; the tests' tables are the place for a within-run comparison.

var bench struct {
	once   sync.Once
	target *Target
	err    error
	cfg    Config
}

// benchTarget opens the -device target once for all benchmarks; TestMain
// closes it. The first call prints the benchmark's configuration line,
// the -device flag as given: a key benchstat groups results by, the same
// across runs on the same target (the temporary image's path is not).
func benchTarget(b *testing.B) (*Target, Config) {
	b.Helper()
	bench.once.Do(func() {
		bench.cfg = testConfig(b)
		bench.cfg.Progress = nil
		bench.target, bench.err = OpenTarget(TargetOptions{Path: *flagDevice, Destructive: *flagDestructive, OverwriteReadOnly: *flagReadOnly, Region: bench.cfg.Region()})
		if bench.err == nil {
			bench.err = bench.cfg.validate(bench.target.Logical)
		}
		if bench.err == nil {
			fmt.Printf("hwbench-device: %s\n", benchDeviceKey(*flagDevice))
		}
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.target, bench.cfg.withDefaults()
}

// benchDeviceKey is the -device flag as a benchstat configuration value.
func benchDeviceKey(flag string) string {
	if flag == "" {
		return "temporary-file"
	}
	return strings.ReplaceAll(flag, " ", "_")
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

// benchCase is one case of a scenario: its identity, and a way to make a
// fresh copy of it.
type benchCase struct {
	res  Result
	make func() (*workload, error)
}

// benchCases are the scenario's hwbench cases, baselines first (benchstat
// -col /case takes the first column it meets as the one the others are
// compared with).
func benchCases(e *scenarioEnv, scenario string) ([]benchCase, error) {
	var cs []benchCase
	add := func(make func() (*workload, error)) error {
		w, err := make()
		if err != nil {
			return err
		}
		cs = append(cs, benchCase{res: w.res, make: make})
		return nil
	}
	var err error
	switch scenario {
	case "S1":
		for pi, pattern := range []string{"seq", "random"} {
			for vi := range s1Variants {
				err = add(func() (*workload, error) { return e.s1Case(pi, pattern, vi), nil })
			}
		}
	case "S2":
		if e.cfg.Think == ThinkOneFlush {
			return nil, fmt.Errorf("hwbench: -think=flush is measured within a test run; the benchmarks take -think as a duration")
		}
		groups := []time.Duration{0}
		if e.cfg.Think > 0 {
			groups = append(groups, e.cfg.Think)
		}
		for _, think := range groups {
			group := fmt.Sprintf("%d writers", e.cfg.Writers)
			if think > 0 {
				group = fmt.Sprintf("%d writers, think %v", e.cfg.Writers, think.Round(time.Microsecond))
			}
			for _, s := range e.s2Specs(think == 0) {
				err = add(func() (*workload, error) { return e.s2Case(group, s, think) })
			}
		}
	case "S3":
		for _, v := range s3Variants {
			err = add(func() (*workload, error) { return e.s3Case(e.s3Group(), v), nil })
		}
	case "S4":
		for _, kind := range s4Kinds {
			for _, v := range s4Variants {
				err = add(func() (*workload, error) { return e.s4Case(kind, v) })
			}
		}
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(cs, func(a, b benchCase) int { return roleRank(a.res) - roleRank(b.res) })
	return cs, nil
}

func benchScenario(b *testing.B, scenario string) {
	tg, cfg := benchTarget(b)
	e := &scenarioEnv{t: tg, cfg: cfg, io: ioSize(tg.Logical)}
	cases, err := benchCases(e, scenario)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		b.Run(benchName(c.res), func(b *testing.B) {
			w, err := c.make()
			if err != nil {
				b.Fatal(err)
			}
			w.prepare()
			b.ResetTimer()
			if _, err := w.runOps(int64(b.N)); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			r, err := w.result()
			if err != nil {
				b.Fatal(err)
			}
			if r.Ops != int64(b.N) {
				b.Fatalf("%s: %d operations run, b.N is %d", r.Case(), r.Ops, b.N)
			}
			reportMetrics(b, r)
		})
	}
}

func roleRank(r Result) int {
	return map[string]int{"baseline": 0, "optimised": 1, "ceiling": 2, "reference": 3}[r.Role]
}

// benchName is the sub-benchmark name of a case, in benchstat's key=value
// form: group=seq_4_KiB/case=write+fdatasync. So `benchstat -col /case`
// compares the cases of one run, and `benchstat old.txt new.txt` two runs.
func benchName(r Result) string {
	clean := strings.NewReplacer(" + ", "+", ", ", "_", " ", "_", "/", "-", "=", "-").Replace
	return "group=" + clean(r.Group) + "/case=" + clean(r.Variant)
}

// reportMetrics reports a case's figures besides ns/op (the testing
// package's own: wall time over b.N), each in a unit of its own.
func reportMetrics(b *testing.B, r Result) {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(r.IOPS(), "iops")
	b.ReportMetric(us(r.Mean()), "mean-us")
	b.ReportMetric(us(r.Percentile(50)), "p50-us")
	b.ReportMetric(us(r.Percentile(99)), "p99-us")
	b.ReportMetric(us(r.Percentile(99.9)), "p99.9-us")
	b.ReportMetric(r.FlushesPerOp(), "flushes/op")
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

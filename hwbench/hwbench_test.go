package hwbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags of `go test ./hwbench` (docs/hwbench.md). The defaults keep the
// suite short; measurements worth reading want -duration=5s or more.
var (
	flagDevice      = flag.String("device", "", `where to measure: "" (a temporary file; as root also a loop device), "loop" (a loop device over a sparse temporary file; root only), "slowflush:DURATION" (a loop device over a FUSE image whose flushes take DURATION; root only), or the path of a file or block device`)
	flagDestructive = flag.Bool("destructive", false, "allow overwriting a named device that carries a file system or partition table, or a named non-empty file (never a mounted or otherwise busy device, nor a file in use)")
	flagReadOnly    = flag.Bool("overwrite-readonly", false, "allow overwriting a named regular file without write permission bits (e.g. mode 0444); -destructive alone does not")
	flagDuration    = flag.Duration("duration", 300*time.Millisecond, "time per case, alternated in slices with the other cases of its comparison")
	flagSlice       = flag.Duration("slice", 0, "length of one alternation slice (0: duration/10, between 20ms and 250ms)")
	flagReport      = flag.String("report", "", "directory to write report.md and the latency CDF plots to")
	flagFIO         = flag.Bool("fio", true, "also run S1 and S2's baseline under fio, where fio is installed")
	flagWriters     = flag.Int("writers", 16, "S2: writers")
	flagS3Writers   = flag.Int("s3writers", 8, "S3: writers to one file")
	flagS4          = flag.Int("s4goroutines", 0, "S4: goroutines (0: 4 x GOMAXPROCS)")
	flagSpan        = flag.String("span", "64MiB", "bytes S1's writes range over, and the region of the device written (a multiple of 1MiB)")
	flagThink       = flag.String("think", "0", `S2: pause between a write's completion and the flush check (a duration, or "flush" for one measured flush time); 0 runs the tight loop only`)
	flagScenarios   = flag.String("scenarios", "S1,S2,S3,S4", "comma-separated scenarios to run")
)

// testConfig is the Config the flags describe.
func testConfig(t testing.TB) Config {
	t.Helper()
	span, err := parseBytes(*flagSpan)
	require.NoError(t, err, "-span")
	think := time.Duration(0)
	if *flagThink == "flush" {
		think = ThinkOneFlush
	} else {
		think, err = time.ParseDuration(*flagThink)
		require.NoError(t, err, "-think")
	}
	cfg := Config{
		Duration: *flagDuration, Slice: *flagSlice, Writers: *flagWriters, S3Writers: *flagS3Writers,
		S4Goroutines: *flagS4, Span: span, Think: think, FIO: *flagFIO,
		Scenarios: strings.Split(*flagScenarios, ","),
	}
	if *flagDevice != "" || testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	return cfg
}

// parseBytes reads "64MiB", "1GiB", "512KiB" or a number of bytes.
func parseBytes(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			var n int64
			if _, err := fmt.Sscanf(num, "%d", &n); err != nil || n <= 0 {
				return 0, fmt.Errorf("bad size %q (want e.g. 64MiB)", s)
			}
			return n * u.mult, nil
		}
	}
	return 0, fmt.Errorf("bad size %q", s)
}

// openTestTarget opens path as a target for cfg and closes it, removing
// whatever it created, at the end of the test (also if it fails or
// panics). It skips when a loop device cannot be had here.
func openTestTarget(t testing.TB, path string, cfg Config) *Target {
	t.Helper()
	tg, err := OpenTarget(TargetOptions{Path: path, Destructive: *flagDestructive, OverwriteReadOnly: *flagReadOnly, Region: cfg.Region()})
	if errors.Is(err, ErrLoopUnavailable) {
		t.Skipf("no loop device here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, tg.Close(), "close %s", tg.Path) })
	return tg
}

// TestScenarios runs every scenario on a temporary file and, as root, on a
// loop device, or on -device only, and checks what must hold on any
// machine. With -device the tables go to stdout (shown with -v, with
// -bench, or when testing from the package directory), else to the test
// log (-v).
func TestScenarios(t *testing.T) {
	devices := []string{"", "loop"}
	if *flagDevice != "" {
		devices = []string{*flagDevice}
	}
	for _, dev := range devices {
		name := dev
		if name == "" {
			name = "tempfile"
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			cfg := testConfig(t)
			tg := openTestTarget(t, dev, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			rep, err := Run(ctx, tg, cfg)
			require.NoError(t, err)
			checkReport(t, tg, cfg.withDefaults(), rep)

			var b strings.Builder
			require.NoError(t, WriteTables(&b, rep))
			if *flagDevice != "" {
				fmt.Fprintln(os.Stdout, b.String())
			} else {
				t.Log("\n" + b.String())
			}
			dir := *flagReport
			if dir != "" {
				dir = filepath.Join(dir, filepath.Base(name))
			} else {
				dir = t.TempDir() // the report is written anyway, to check it can be
			}
			require.NoError(t, WriteReport(dir, rep))
			_, err = os.Stat(filepath.Join(dir, "report.md"))
			assert.NoError(t, err, "report.md in %s", dir)
			if *flagReport != "" {
				t.Logf("report: %s", filepath.Join(dir, "report.md"))
			}
		})
	}
}

// checkReport asserts what must hold on any machine: counts consistent
// with each other, percentiles ordered, the policies' flush bounds. No
// timing is asserted.
func checkReport(t *testing.T, tg *Target, cfg Config, rep Report) {
	t.Helper()
	require.NotEmpty(t, rep.Results)
	cases := map[string]Result{}
	for _, r := range rep.Results {
		what := r.Scenario + " " + r.Case + " (" + r.Tool + ")"
		if r.Tool == "hwbench" {
			cases[r.Scenario+" "+r.Case] = r
		}
		assert.Positive(t, r.Ops, "%s: operations", what)
		assert.Positive(t, r.Duration, "%s: duration", what)
		if !assert.NotNil(t, r.Latency, what) {
			continue
		}
		if r.Tool == "hwbench" {
			assert.Equal(t, r.Ops, r.Latency.TotalCount(), "%s: one latency per operation", what)
		}
		p50, p99, p999 := r.Percentile(50), r.Percentile(99), r.Percentile(99.9)
		assert.LessOrEqual(t, p50, p99, "%s: p50 <= p99", what)
		assert.LessOrEqual(t, p99, p999, "%s: p99 <= p99.9", what)
		assert.LessOrEqual(t, p999, r.Percentile(100), "%s: p99.9 <= max", what)
		assert.LessOrEqual(t, r.Latency.Min(), r.Latency.Max(), what)
		assert.False(t, math.IsNaN(r.IOPS()) || math.IsInf(r.IOPS(), 0), "%s: IOPS %v", what, r.IOPS())
		if r.Tool != "hwbench" {
			continue
		}
		if f, ok := r.Extra[ExtraDeviceFlushesPerOp]; ok {
			assert.GreaterOrEqual(t, f, 0.0, what)
		}
		switch r.Scenario {
		case "S1":
			assert.Equal(t, r.Ops, r.Writes, "%s: a write per op", what)
			assert.Equal(t, 1, r.Threads, what)
			_, variant := splitCase(r.Case)
			switch variant {
			case s1Plain:
				assert.Zero(t, r.FUAWrites, what)
				assert.Zero(t, r.Flushes, what)
				if f, ok := r.Extra[ExtraDeviceFlushesPerOp]; ok {
					assert.Zero(t, f, "%s: plain writes make the block layer send no flush", what)
				}
			case s1DSync:
				assert.Equal(t, r.Ops, r.FUAWrites, "%s: every write FUA", what)
				assert.Zero(t, r.Flushes, what)
			case s1WriteSync:
				assert.Zero(t, r.FUAWrites, what)
				assert.Equal(t, r.Ops, r.Flushes, "%s: a flush per write", what)
			default:
				t.Errorf("%s: unknown S1 variant", what)
			}
		case "S2":
			assert.Equal(t, r.Ops, r.Writes, "%s: a write per sync", what)
			assert.Zero(t, r.FUAWrites, what)
			skipped, joined := r.Extra[ExtraSkippedPerSync], r.Extra[ExtraJoinedPerSync]
			// Flushes + skipped = syncs, as fractions of the syncs.
			assert.InDelta(t, 1.0, r.FlushesPerOp()+skipped, 1e-9, "%s: every sync flushed or skipped", what)
			assert.LessOrEqual(t, joined, skipped+1e-12, "%s: joined syncs are skipped ones", what)
			assert.LessOrEqual(t, r.Flushes, r.Ops, "%s: never more flushes than syncs", what)
			switch policyOf(r) {
			case "always":
				assert.Equal(t, r.Ops, r.Flushes, "%s: a flush per sync", what)
				assert.Zero(t, skipped, what)
			case "skip-if-flushed-since":
				assert.Zero(t, joined, "%s: skip-if-flushed-since never waits for a flush in flight", what)
			}
			if r.Role != "reference" {
				assert.Equal(t, cfg.Writers, r.Threads, what)
				if e, ok := r.Extra[ExtraEfficiency]; ok {
					assert.Positive(t, e, what)
				}
			}
		case "S3":
			assert.Equal(t, r.Ops, r.Writes, "%s: a write per op", what)
			assert.Zero(t, r.Flushes+r.FUAWrites, what)
			assert.Equal(t, cfg.S3Writers, r.Threads, what)
		case "S4":
			assert.Zero(t, r.Writes+r.Flushes, "%s: S4 writes nothing", what)
			assert.Equal(t, cfg.S4Goroutines, r.Threads, what)
		}
	}
	want := map[string]int{"S1": 2, "S2": 3, "S3": 1, "S4": 2}
	if cfg.Think != 0 {
		want["S2"] = 6
	}
	got := map[string]int{}
	for _, c := range rep.Comparisons {
		got[c.Scenario]++
		assert.Equal(t, c.Scenario, c.Baseline.Scenario, c.Name)
		assert.Equal(t, c.Scenario, c.Optimised.Scenario, c.Name)
		assert.Equal(t, "baseline", c.Baseline.Role, c.Name)
		assert.Equal(t, "optimised", c.Optimised.Role, c.Name)
		assert.False(t, math.IsNaN(c.Change()), c.Name)
		if c.Scenario == "S2" {
			// The claim of the seed that holds everywhere: sharing never
			// flushes more per sync than flushing every time.
			assert.LessOrEqual(t, c.Optimised.FlushesPerOp(), c.Baseline.FlushesPerOp(), "%s: flushes per sync", c.Name)
		}
	}
	for _, s := range cfg.Scenarios {
		assert.Equal(t, want[s], got[s], "%s comparisons", s)
	}
	for _, f := range rep.FIO {
		assert.Equal(t, "fio", f.FIO.Tool, f.Name)
		assert.Positive(t, f.Ratio(), f.Name)
	}
	if _, ok := FIOPath(); ok && cfg.FIO {
		n := 0
		for _, s := range cfg.Scenarios {
			n += map[string]int{"S1": 6, "S2": 1}[s]
		}
		for _, note := range rep.Notes {
			if strings.Contains(note, fioFailed) {
				t.Log(note) // fio's trouble, not hwbench's
				n--
			}
		}
		assert.Len(t, rep.FIO, n, "fio references")
	}
	assert.Contains(t, rep.Device, tg.Path)
}

// TestMain runs a helper process instead of the tests when asked
// (runHelperProcess), and closes the benchmarks' shared device after the
// last test.
func TestMain(m *testing.M) {
	if code, ok := runHelperProcess(); ok {
		os.Exit(code)
	}
	code := m.Run()
	closeBenchTarget()
	os.Exit(code)
}

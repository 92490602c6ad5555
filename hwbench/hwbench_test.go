package hwbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags of `go test ./hwbench` (docs/hwbench.md). The defaults keep the
// suite short; measurements worth reading want -duration=5s or more. Each
// sets the Config field of the same meaning, and a value out of range
// fails the test with Config.Validate's message, naming the flag.
var (
	flagDevice      = flag.String("device", "", `where to measure: "" (a temporary file; as root also a loop device), "loop" (a loop device over a sparse temporary file; root only), "slowflush:DURATION" (a loop device over a FUSE image whose flushes take DURATION; root only), or the path of a file or block device`)
	flagDestructive = flag.Bool("destructive", false, "allow overwriting a named device that carries a file system or partition table, or a named non-empty file (never a mounted or otherwise busy device, nor a file in use)")
	flagReadOnly    = flag.Bool("overwrite-readonly", false, "allow overwriting a named regular file without write permission bits (e.g. mode 0444); -destructive alone does not")
	flagDuration    = flag.Duration("duration", 300*time.Millisecond, "time per case, alternated in slices with the other cases of its comparison (10ms to 24h)")
	flagBudget      = flag.Duration("budget", 0, "the whole run's time, 1s to 24h, instead of -duration: each case gets the longest duration with which the run fits in it (0: none)")
	flagSlice       = flag.Duration("slice", 0, "length of one alternation slice, 1ms to -duration (0: duration/10, between 20ms and 250ms)")
	flagReport      = flag.String("report", "", "directory to write report.md and the latency CDF plots to")
	flagFIO         = flag.Bool("fio", true, "also run S1 and S2's baseline under fio, in turns with hwbench, where fio is installed (-fio=true given explicitly: fail if fio is not)")
	flagFIOPairs    = flag.Int("fiopairs", 0, "fio references: fio/hwbench slice pairs, 1 to 100, slices of duration/fiopairs at least 10ms (0: duration/400ms, 3 to 10)")
	flagWriters     = flag.Int("writers", defaultWriters, "S2: writers (1 to 1024)")
	flagS3Writers   = flag.Int("s3writers", defaultS3, "S3: writers to one file (1 to 1024)")
	flagS4          = flag.Int("s4goroutines", 0, "S4: goroutines, 1 to 1024 (0: 4 x GOMAXPROCS)")
	flagSpan        = flag.String("span", "64MiB", "bytes S1's writes range over, and the region of the device written (a multiple of 1MiB)")
	flagThink       = flag.String("think", "0", `S2: pause between a write's completion and the flush check, up to 1s, or "flush" for one measured flush time; 0 runs the tight loop only`)
	flagScenarios   = flag.String("scenarios", "S1,S2,S3,S4", "comma-separated scenarios to run, each at most once")
)

// flagSet reports whether the named flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// configFromFlags is the Config the flags describe, or an error naming the
// flag that is out of range. The flags whose default is a number of their
// own (-duration, -writers, -s3writers) refuse 0, which Config would take
// for its default: "-writers=0" is a mistake, not a request for 16.
func configFromFlags() (Config, error) {
	span, err := parseBytes(*flagSpan)
	if err != nil {
		return Config{}, fmt.Errorf("hwbench: -span: %w", err)
	}
	think := time.Duration(0)
	if *flagThink == "flush" {
		think = ThinkOneFlush
	} else {
		think, err = time.ParseDuration(*flagThink)
		if err != nil {
			return Config{}, fmt.Errorf("hwbench: -think: %w (want a duration up to 1s, or flush)", err)
		}
		if think < 0 {
			// Config.Think < 0 is ThinkOneFlush or refused; say so here
			// rather than let -think=-1ns mean "flush".
			return Config{}, fmt.Errorf("hwbench: -think=%v is negative: want 0 (no pause), a pause up to %v, or flush", think, maxThink)
		}
	}
	// Checked here in full, so that the message gives the flag's range
	// (Config's adds "or 0 for the default").
	if d := *flagDuration; d < minDuration || d > maxDuration {
		return Config{}, fmt.Errorf("hwbench: -duration=%v: want %v to %v", d, minDuration, maxDuration)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"writers", *flagWriters}, {"s3writers", *flagS3Writers}} {
		if f.v < 1 || f.v > maxThreads {
			return Config{}, fmt.Errorf("hwbench: -%s=%d: want 1 to %d", f.name, f.v, maxThreads)
		}
	}
	duration := *flagDuration
	if *flagBudget != 0 {
		if flagSet("duration") {
			return Config{}, fmt.Errorf("hwbench: -budget=%v and -duration=%v: give one of them; the budget sets the duration", *flagBudget, *flagDuration)
		}
		duration = 0
	}
	cfg := Config{
		Budget: *flagBudget, Duration: duration, Slice: *flagSlice, Writers: *flagWriters, S3Writers: *flagS3Writers,
		S4Goroutines: *flagS4, Span: span, Think: think, FIO: *flagFIO, FIOPairs: *flagFIOPairs,
		Scenarios: strings.Split(*flagScenarios, ","),
	}
	return cfg, cfg.Validate()
}

// testConfig is the Config the flags describe; a flag out of range fails
// the test with the reason.
func testConfig(t testing.TB) Config {
	t.Helper()
	cfg, err := configFromFlags()
	require.NoError(t, err, "the hwbench flags")
	if *flagDevice != "" || testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	return cfg
}

// unavailable says that something a test needs cannot be had here. If the
// user asked for it (a -device or -fio=true on the command line), the test
// fails with the reason; otherwise it is skipped, and the reason is also
// told to the user (tellUser), since go test prints a skip's message only
// with -v.
func unavailable(t testing.TB, asked bool, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if asked {
		t.Fatalf("asked for, but unavailable: %s", msg)
	}
	tellUser(fmt.Sprintf("%s: skipped: %s", t.Name(), msg))
	t.Skip(msg)
}

// tellUser prints line on stderr, and also where the user sees it when go
// test hides it. In package list mode (go test ./hwbench) the go command
// collects the test binary's stdout and stderr and prints them only if the
// package fails or with -v (cmd/go, "go help test"), so a line on the
// binary's stderr alone never shows in a passing run. Without -v it is
// therefore also appended to the stderr of the parent process when that
// is the go command (/proc/PPID/comm) and its stderr another file than
// ours (opened through /proc/PPID/fd/2 with O_APPEND, so a log file is
// added to, not overwritten; a terminal or pipe just gets the line). Run directly, or in
// the package directory, the two are the same file and the line is
// printed once. Where the parent's stderr cannot be opened (a socket, or a
// pipe another user created) the line stays on our stderr alone.
func tellUser(line string) {
	fmt.Fprintln(os.Stderr, line)
	if parent := goStderr(); parent != nil {
		fmt.Fprintln(parent, line)
	}
}

var (
	goStderrOnce sync.Once
	goStderrFile *os.File
)

// goStderr is the go command's stderr, opened as tellUser says, when this
// binary runs under go test without -v and that is another file than its
// own stderr; else nil. It is opened once and kept: the go command exits
// at SIGINT without printing what it collected, and what is written to
// the file held here still reaches the user.
func goStderr() *os.File {
	goStderrOnce.Do(func() {
		if testing.Verbose() {
			return // go test prints the binary's output, skip messages included
		}
		ppid := os.Getppid()
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid)); err != nil || strings.TrimSpace(string(comm)) != "go" {
			return // not run by the go command: our stderr is what the user sees
		}
		parent, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", ppid), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return // a socket, or no access: the line stays on our stderr
		}
		if same, err := sameOpenFile(parent, os.Stderr); err != nil || same {
			_ = parent.Close()
			return
		}
		goStderrFile = parent
	})
	return goStderrFile
}

// sameOpenFile reports whether a and b are the same file (device and inode).
func sameOpenFile(a, b *os.File) (bool, error) {
	ai, err := a.Stat()
	if err != nil {
		return false, err
	}
	bi, err := b.Stat()
	if err != nil {
		return false, err
	}
	return os.SameFile(ai, bi), nil
}

// parseBytes reads "64MiB", "1GiB", "512KiB" or a number of bytes.
func parseBytes(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n <= 0 || n > math.MaxInt64/u.mult {
				return 0, fmt.Errorf("bad size %q: want a positive number of bytes, or of KiB, MiB or GiB, e.g. 64MiB", s)
			}
			return n * u.mult, nil
		}
	}
	return 0, fmt.Errorf("bad size %q", s) // unreachable: "" matches every s
}

// openTestTarget opens path as a target for cfg and closes it, removing
// whatever it created, at the end of the test (also if it fails or
// panics). When a loop device cannot be had here, it fails the test if
// the user named the device (-device), and skips it otherwise.
func openTestTarget(t testing.TB, path string, cfg Config) *Target {
	t.Helper()
	tg, err := OpenTarget(TargetOptions{Path: path, Destructive: *flagDestructive, OverwriteReadOnly: *flagReadOnly, Region: cfg.Region()})
	if errors.Is(err, ErrLoopUnavailable) {
		unavailable(t, *flagDevice != "", "%v", err)
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
//
// fio: with -fio (the default) and fio installed, the fio references run
// on -device. In the default run (no -device) they run on the temporary
// file only, and in 2 pairs unless -fiopairs says otherwise: each is
// Config.FIOPairs fio runs with about a third of a second of start-up each
// (scenario_fio.go), and with the 3 pairs and two devices of a -duration
// of 300ms they would make the default run a third longer. That run
// checks that the references work, not what they measure. Without fio the
// run goes on without references and says so (tellUser); with -fio=true
// given explicitly it fails.
func TestScenarios(t *testing.T) {
	cfg0 := testConfig(t)
	if *flagDevice == "" && !flagSet("fiopairs") {
		cfg0.FIOPairs = min(2, cfg0.withDefaults().FIOPairs)
	}
	if _, ok := FIOPath(); !ok && cfg0.FIO {
		if flagSet("fio") {
			t.Fatal("asked for, but unavailable: -fio=true: fio is not installed (not found on $PATH)")
		}
		tellUser("TestScenarios: fio is not installed (not found on $PATH): no fio reference in this run")
	}
	devices := []string{"", "loop"}
	if *flagDevice != "" {
		devices = []string{*flagDevice}
	}
	runFor := checkTimeout(t, cfg0, len(devices))
	for i, dev := range devices {
		name := dev
		if name == "" {
			name = "tempfile"
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			cfg := cfg0
			if i > 0 && cfg.FIO {
				cfg.FIO = false
				t.Log("fio references: in the tempfile sub-test only (run -device=loop for them on a loop device)")
			}
			ctx, cancel := context.WithTimeout(context.Background(), runFor)
			defer cancel()
			goStderr() // opened while the go command lives, for reportInterrupted
			sig, stop := cancelOnSignal(ctx, cancel)
			t.Cleanup(stop) // the last cleanup: a signal does not cut the others short
			tg := openTestTarget(t, dev, cfg)
			rep, err := Run(ctx, tg, cfg)
			if s := sig(); s != nil {
				reportInterrupted(t, s, rep)
			}
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

// checkTimeout says how long TestScenarios will take on its targets (the
// first with fio references, the others without), fails it at once if
// that does not fit in go test's -timeout (which would kill the test
// binary midway, results lost), and returns how long to let one target's
// run go before calling it stuck.
func checkTimeout(t *testing.T, cfg Config, targets int) time.Duration {
	t.Helper()
	var longest, total time.Duration
	for i := range targets {
		c := cfg
		c.FIO = c.FIO && i == 0
		p, err := c.PlanRun()
		require.NoError(t, err, "the hwbench flags")
		total += p.Max
		longest = max(longest, p.Max)
		if *flagDevice != "" || testing.Verbose() {
			fmt.Fprintf(os.Stderr, "[hwbench] TestScenarios, target %d of %d: %v\n", i+1, targets, p)
			for _, l := range p.Scenarios {
				fmt.Fprintf(os.Stderr, "[hwbench]   %s\n", l)
			}
		}
	}
	// Setting up targets, fio's checks and the report take seconds; a
	// minute a target is ample.
	if err := fitsTimeout(total, targets, testTimeout()); err != nil {
		t.Fatal(err)
	}
	return 2*longest + 5*time.Minute
}

// fitsTimeout says whether a run of the given length on that many targets
// fits in go test's timeout (0: none), and if not which to pass.
func fitsTimeout(total time.Duration, targets int, timeout time.Duration) error {
	need := total + time.Duration(targets)*time.Minute
	if timeout > 0 && need > timeout {
		return fmt.Errorf("hwbench: this run takes up to %v (%d target(s)), more than go test's -timeout of %v, which would kill it midway: pass -timeout=%v (or -timeout=0), or ask for less with -duration, -budget or -scenarios",
			need.Round(time.Second), targets, timeout, need.Round(time.Minute)+time.Minute)
	}
	return nil
}

// testTimeout is go test's -timeout as the test binary got it (0: none).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0
	}
	d, _ := g.Get().(time.Duration)
	return d
}

// cancelOnSignal cancels a run at SIGINT or SIGTERM, so that the results
// finished so far are printed and the target cleaned up (the test's
// cleanups run as it ends) instead of the process dying with its target
// half written: a named file grown and not cut back, a loop device left
// attached. sig says which signal came, if one did. Until stop, later
// signals are taken and dropped, so that the cleanups finish; after it
// they act as usual.
func cancelOnSignal(ctx context.Context, cancel func()) (sig func() os.Signal, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var got os.Signal
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s
			mu.Unlock()
			cancel()
		case <-done:
		case <-ctx.Done():
		}
	}()
	sig = func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return sig, func() { signal.Stop(ch); close(done) }
}

// reportInterrupted prints the scenarios a signal let finish and ends the
// test; its cleanups then restore and release the target.
func reportInterrupted(t *testing.T, s os.Signal, rep Report) {
	t.Helper()
	var done []string
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if !seen[r.Scenario] {
			seen[r.Scenario] = true
			done = append(done, r.Scenario)
		}
	}
	var b strings.Builder
	if len(done) == 0 {
		fmt.Fprintf(&b, "hwbench: interrupted by %v before any scenario finished: no results\n", s)
	} else {
		fmt.Fprintf(&b, "hwbench: interrupted by %v: the results of the scenarios finished so far (%s)\n", s, strings.Join(done, ", "))
		_ = WriteTables(&b, rep)
	}
	where := "standard output"
	if parent := goStderr(); parent != nil {
		// go test exits at SIGINT without printing our output.
		fmt.Fprint(parent, b.String())
		where = "the go command's standard error"
	} else {
		fmt.Fprint(os.Stdout, b.String())
	}
	t.Fatalf("interrupted by %v; the results finished so far are on %s; the target is cleaned up now", s, where)
}

// checkReport asserts what must hold on any machine: counts consistent
// with each other, percentiles ordered, the policies' flush bounds. No
// timing is asserted.
func checkReport(t *testing.T, tg *Target, cfg Config, rep Report) {
	t.Helper()
	require.NotEmpty(t, rep.Results)
	for _, r := range rep.Results {
		what := r.Scenario + " " + r.Case() + " (" + r.Tool + ")"
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
			switch r.Variant {
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
			switch r.Variant {
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
					assert.LessOrEqual(t, e, 1+1e-9, "%s: a flush serves at most one sync per writer", what)
				}
				assert.Contains(t, r.Extra, ExtraFlushesPerSync, what)
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
			// The claim of the patch that holds everywhere: sharing never
			// flushes more per sync than flushing every time.
			assert.LessOrEqual(t, c.Optimised.FlushesPerOp(), c.Baseline.FlushesPerOp(), "%s: flushes per sync", c.Name)
		}
	}
	for _, s := range cfg.Scenarios {
		assert.Equal(t, want[s], got[s], "%s comparisons", s)
	}
	for _, f := range rep.FIO {
		assert.Equal(t, "fio", f.FIO.Tool, f.Name)
		assert.Equal(t, "hwbench", f.Hwbench.Tool, f.Name)
		assert.True(t, f.FIO.sameCase(f.Hwbench), "%s: fio %s %q %q, hwbench %s %q %q", f.Name,
			f.FIO.Scenario, f.FIO.Group, f.FIO.Variant, f.Hwbench.Scenario, f.Hwbench.Group, f.Hwbench.Variant)
		assert.Equal(t, cfg.FIOPairs, f.Asked, "%s: pairs asked for", f.Name)
		n := len(f.Pairs)
		assert.Contains(t, []int{cfg.FIOPairs, 2 * cfg.FIOPairs}, n, "%s: the pairs, or twice as many after a rerun", f.Name)
		assert.Equal(t, n == 2*cfg.FIOPairs, f.Reran(), "%s: a rerun doubles the pairs", f.Name)
		var fioOps, hwOps int64
		for _, p := range f.Pairs {
			fioOps += p.FIO.Ops
			hwOps += p.Hwbench.Ops
		}
		assert.Equal(t, f.FIO.Ops, fioOps, "%s: fio's ops are its slices'", f.Name)
		assert.Equal(t, f.Hwbench.Ops, hwOps, "%s: hwbench's ops are its slices'", f.Name)
		assert.Equal(t, float64(n), f.FIO.Extra[FIOExtraRuns], f.Name)
		lo, hi := f.RatioRange()
		assert.Positive(t, lo, f.Name)
		assert.LessOrEqual(t, lo, f.Ratio(), f.Name)
		assert.LessOrEqual(t, f.Ratio(), hi, f.Name)
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

// TestConfigValidateRanges: every Config field out of range is refused by
// Validate and by Run, and the error names the field, the flag that sets
// it and what is allowed. Zero values are the defaults.
func TestConfigValidateRanges(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"negative duration", Config{Duration: -time.Second}, []string{"Config.Duration (-duration) is -1s", "want 10ms to 24h0m0s"}},
		{"short duration", Config{Duration: 5 * time.Millisecond}, []string{"-duration", "10ms"}},
		{"long duration", Config{Duration: 25 * time.Hour}, []string{"-duration", "24h"}},
		{"negative slice", Config{Slice: -time.Second}, []string{"Config.Slice (-slice) is -1s", "want 1ms to the duration (2s)"}},
		{"short slice", Config{Slice: 500 * time.Microsecond}, []string{"-slice", "1ms"}},
		{"slice over duration", Config{Duration: time.Second, Slice: 2 * time.Second}, []string{"-slice", "to the duration (1s)"}},
		{"negative writers", Config{Writers: -1}, []string{"Config.Writers (-writers) is -1", "want 1 to 1024, or 0 for the default 16"}},
		{"too many writers", Config{Writers: 1025}, []string{"-writers", "1 to 1024"}},
		{"negative S3 writers", Config{S3Writers: -2}, []string{"Config.S3Writers (-s3writers) is -2", "0 for the default 8"}},
		{"negative S4 goroutines", Config{S4Goroutines: -1}, []string{"Config.S4Goroutines (-s4goroutines) is -1", "4 x GOMAXPROCS"}},
		{"too many S4 goroutines", Config{S4Goroutines: 5000}, []string{"-s4goroutines", "1 to 1024"}},
		{"negative span", Config{Span: -1 << 20}, []string{"Config.Span (-span)", "positive multiple of 1 MiB"}},
		{"unaligned span", Config{Span: 1<<20 + 4096}, []string{"-span", "multiple of 1 MiB"}},
		{"span too small for writers", Config{Span: 1 << 20, Writers: 512}, []string{"-span", "too small", "-writers"}},
		{"negative think", Config{Think: -5 * time.Millisecond}, []string{"Config.Think (-think) is -5ms", "up to 1s"}},
		{"long think", Config{Think: 2 * time.Second}, []string{"-think", "up to 1s"}},
		{"unknown scenario", Config{Scenarios: []string{"S5"}}, []string{"Config.Scenarios (-scenarios)", `unknown scenario "S5"`}},
		{"empty scenario", Config{Scenarios: []string{"S1", ""}}, []string{"-scenarios", `unknown scenario ""`}},
		{"scenario twice", Config{Scenarios: []string{"S1", "S1"}}, []string{"-scenarios", "S1 twice"}},
		{"negative fio pairs", Config{FIOPairs: -1}, []string{"Config.FIOPairs (-fiopairs) is -1", "1 to 100"}},
		{"too many fio pairs", Config{FIOPairs: 101}, []string{"-fiopairs", "1 to 100"}},
		{"fio slices too short", Config{FIO: true, Duration: 300 * time.Millisecond, FIOPairs: 31}, []string{"-fiopairs", "shorter than 10ms", "at most 30 pairs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			require.Error(t, err)
			for _, w := range c.want {
				assert.ErrorContains(t, err, w)
			}
			// Run refuses it before touching the device.
			_, err = Run(context.Background(), &Target{Path: "/nonexistent"}, c.cfg)
			assert.ErrorContains(t, err, c.want[0])
		})
	}
	for _, ok := range []Config{
		{},
		{Think: ThinkOneFlush},
		{Duration: minDuration, Slice: minDuration},
		{FIO: true, Duration: 300 * time.Millisecond, FIOPairs: 30},
		{FIO: false, Duration: 300 * time.Millisecond, FIOPairs: 100}, // pairs unused without fio
		{Writers: maxThreads, S3Writers: maxThreads, S4Goroutines: maxThreads, Span: 64 << 20},
	} {
		assert.NoError(t, ok.Validate(), "%+v", ok)
	}
	// Every default is valid, and the default pairs fit the duration.
	for _, d := range []time.Duration{minDuration, 25 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second, time.Hour} {
		cfg := Config{FIO: true, Duration: d}
		require.NoError(t, cfg.Validate(), "duration %v", d)
		def := cfg.withDefaults()
		assert.NoError(t, Config{FIO: true, Duration: d, FIOPairs: def.FIOPairs}.Validate(), "duration %v", d)
		assert.LessOrEqual(t, def.Slice, d)
	}
	assert.Equal(t, 3, Config{Duration: 300 * time.Millisecond}.withDefaults().FIOPairs)
	assert.Equal(t, 5, Config{Duration: 2 * time.Second}.withDefaults().FIOPairs)
	assert.Equal(t, 10, Config{Duration: time.Hour}.withDefaults().FIOPairs)
	assert.Equal(t, 2, Config{Duration: 25 * time.Millisecond}.withDefaults().FIOPairs)
}

// TestFlagsRefuseBadValues: each test flag out of range fails with an
// error naming it (testConfig turns that into a test failure), instead of
// being replaced by a default.
func TestFlagsRefuseBadValues(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"duration", "0", "-duration=0s: want 10ms to 24h"},
		{"duration", "-1s", "-duration=-1s: want 10ms to 24h"},
		{"duration", "1ms", "-duration"},
		{"slice", "-1s", "-slice"},
		{"slice", "1s", "-slice"}, // longer than -duration's 300ms
		{"writers", "0", "-writers=0: want 1 to 1024"},
		{"writers", "-1", "-writers=-1: want 1 to 1024"},
		{"writers", "2000", "-writers"},
		{"s3writers", "-2", "-s3writers=-2: want 1 to 1024"},
		{"s3writers", "0", "-s3writers=0"},
		{"s4goroutines", "-1", "-s4goroutines"},
		{"span", "-1MiB", "-span"},
		{"span", "0", "-span"},
		{"span", "1000001", "-span"},
		{"span", "lots", "-span"},
		{"span", "3MB", "-span: bad size \"3MB\""}, // not 3 bytes
		{"span", "1.5MiB", "-span"},
		{"span", "9999999999GiB", "-span"},
		{"think", "-1s", "-think=-1s is negative"},
		{"think", "-1ns", "-think=-1ns is negative"}, // not ThinkOneFlush
		{"think", "2s", "-think"},
		{"think", "soon", "-think"},
		{"fiopairs", "-1", "-fiopairs"},
		{"fiopairs", "101", "-fiopairs"},
		{"fiopairs", "31", "-fiopairs"}, // slices of 300ms/31 < 10ms
		{"scenarios", "S5", "-scenarios"},
		{"scenarios", "S1,", "-scenarios"},
		{"scenarios", "S1,S1", "-scenarios"},
	} {
		t.Run(c.flag+"="+c.value, func(t *testing.T) {
			f := flag.Lookup(c.flag)
			require.NotNil(t, f)
			// The defaults of the other flags, whatever this run was given.
			for _, name := range []string{"duration", "slice", "writers", "s3writers", "s4goroutines", "span", "think", "fiopairs", "scenarios", "fio"} {
				g := flag.Lookup(name)
				old := g.Value.String()
				require.NoError(t, g.Value.Set(g.DefValue))
				t.Cleanup(func() { require.NoError(t, g.Value.Set(old)) })
			}
			require.NoError(t, f.Value.Set(c.value))
			_, err := configFromFlags()
			assert.ErrorContains(t, err, c.want)
		})
	}
	// The defaults pass.
	for _, name := range []string{"duration", "slice", "writers", "s3writers", "s4goroutines", "span", "think", "fiopairs", "scenarios", "fio"} {
		g := flag.Lookup(name)
		old := g.Value.String()
		require.NoError(t, g.Value.Set(g.DefValue))
		t.Cleanup(func() { require.NoError(t, g.Value.Set(old)) })
	}
	_, err := configFromFlags()
	assert.NoError(t, err)
}

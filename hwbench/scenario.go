// The four scenarios (docs/hwbench.md), one per kernel patch, and Run,
// which measures them on one device in one run.
//
// Where the scenarios write, all inside [0, Config.Region()):
//
//	S1  one 4 KiB block at a time, sequentially or uniformly at random,
//	    anywhere in [0, Span)
//	S2  writer w rewrites its own block, at w * 4 KiB
//	S3  writer w writes sequentially through its own eighth of [0, Span)
//	S4  goroutine g reads its own block, at g * 4 KiB (and S4's copy case
//	    does no I/O)

package hwbench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/flushproof/flushproof/impl"
)

// Config says how long and with how many writers to run the scenarios.
// The zero value of each field means its default. Validate says which
// values are allowed; Run refuses a Config that does not validate, and
// never replaces a value out of range with a default.
type Config struct {
	// Duration is each case's total time, split into slices taken in turn
	// with the other cases of its comparison: 10ms to 24h (default 2s).
	Duration time.Duration
	// Slice is the length of one turn: 1ms to Duration (default:
	// Duration/10, at least 20ms and at most 250ms, and at most Duration).
	Slice time.Duration
	// Writers is S2's writers: 1 to 1024 (default 16).
	Writers int
	// S3Writers is S3's writers to one file: 1 to 1024 (default 8, as in
	// the patch).
	S3Writers int
	// S4Goroutines is S4's goroutines on the hot path: 1 to 1024 (default
	// 4 * GOMAXPROCS, at most 1024).
	S4Goroutines int
	// Span is the bytes S1's writes range over: a multiple of 1 MiB, at
	// least 1 MiB (default 64 MiB). It is also the region of the device
	// written, so it must hold a block for each S2 writer and S4
	// goroutine, and S3's writers a block each.
	Span int64
	// Think is S2's pause between a write's completion and the flush
	// check, standing for the log force of xfs_file_fsync in the patch's
	// workload: 0 (the default) runs the tight loop only; a duration up to
	// 1s also runs the policies with that pause; ThinkOneFlush pauses for
	// the median flush time measured in the same run. Other negative
	// values are refused.
	Think time.Duration
	// Scenarios to run, each of "S1" to "S4" at most once (default all).
	Scenarios []string
	// FIO runs the fio reference jobs for S1 and S2's baseline where fio
	// is installed, each in FIOPairs turns with the hwbench case.
	FIO bool
	// FIOPairs is how many fio slices, each followed by a hwbench slice of
	// the same case, a fio reference takes (FIOComparison): 1 to 100, each
	// slice Duration/FIOPairs long and at least 10ms (default:
	// Duration/400ms, at least 3 and at most 10, fewer where slices
	// would be shorter than 10ms). Only checked when FIO is set.
	FIOPairs int
	// Budget, if set, is the whole run's time instead: Duration is then
	// the longest with which the run's plan (Config.Plan), every fio
	// reference rerun included, fits in it. Budget and Duration are
	// exclusive. 1s to 24h.
	Budget time.Duration
	// Seed seeds S1's random offsets (default 1).
	Seed uint64
	// Progress, if set, receives a line per slice and per scenario.
	Progress io.Writer
	_        struct{}
}

// ThinkOneFlush is Config.Think's value for "as long as one flush takes".
const ThinkOneFlush = time.Duration(-1)

// IOSize is the size of every write and read: 4 KiB, as in the patches.
const IOSize = 4096

// Bounds of the Config fields, for Validate and its messages.
const (
	minDuration    = 10 * time.Millisecond
	maxDuration    = 24 * time.Hour
	minSlice       = time.Millisecond
	maxThreads     = 1024 // Writers, S3Writers, S4Goroutines: one OS thread each
	maxThink       = time.Second
	maxFIOPairs    = 100
	minFIOSlice    = 10 * time.Millisecond
	defaultWriters = 16
	defaultS3      = 8
	defaultSpan    = 64 << 20
)

// A go test flag sets each field (docs/hwbench.md); errors name both.
var configFlags = map[string]string{
	"Duration": "-duration", "Slice": "-slice", "Writers": "-writers", "S3Writers": "-s3writers",
	"S4Goroutines": "-s4goroutines", "Span": "-span", "Think": "-think", "Scenarios": "-scenarios",
	"FIOPairs": "-fiopairs", "Budget": "-budget",
}

// fieldError says that Config's field is out of range: "hwbench:
// Config.Writers (-writers) is -2: want 1 to 1024, or 0 for the default
// 16".
func fieldError(field string, format string, args ...any) error {
	return fmt.Errorf("hwbench: Config.%s (%s) %s", field, configFlags[field], fmt.Sprintf(format, args...))
}

// Validate reports the first field of c that is out of the range its doc
// comment gives, naming the field, the go test flag that sets it and the
// range. The zero value of every field is valid: it means the default.
// What depends on the device (its size, a block size above 4 KiB) is
// checked by Run.
func (c Config) Validate() error {
	if c.Duration != 0 && (c.Duration < minDuration || c.Duration > maxDuration) {
		return fieldError("Duration", "is %v: want %v to %v, or 0 for the default 2s", c.Duration, minDuration, maxDuration)
	}
	if c.Budget != 0 && (c.Budget < time.Second || c.Budget > maxDuration) {
		return fieldError("Budget", "is %v: want 1s to %v, or 0 for none", c.Budget, maxDuration)
	}
	if c.Budget != 0 && c.Duration != 0 {
		return fieldError("Budget", "is %v and Duration (-duration) %v: give one of them; the budget sets the duration", c.Budget, c.Duration)
	}
	d := c.withDefaults()
	if c.Slice != 0 && (c.Slice < minSlice || c.Slice > d.Duration) {
		return fieldError("Slice", "is %v: want %v to the duration (%v), or 0 for the default", c.Slice, minSlice, d.Duration)
	}
	for _, f := range []struct {
		field string
		v     int
		def   string
	}{
		{"Writers", c.Writers, strconv.Itoa(defaultWriters)},
		{"S3Writers", c.S3Writers, strconv.Itoa(defaultS3)},
		{"S4Goroutines", c.S4Goroutines, "4 x GOMAXPROCS"},
	} {
		if f.v < 0 || f.v > maxThreads {
			return fieldError(f.field, "is %d: want 1 to %d, or 0 for the default %s", f.v, maxThreads, f.def)
		}
	}
	if c.Span < 0 || c.Span%(1<<20) != 0 {
		return fieldError("Span", "is %d bytes: want a positive multiple of 1 MiB, or 0 for the default 64 MiB", c.Span)
	}
	if c.Think < 0 && c.Think != ThinkOneFlush || c.Think > maxThink {
		return fieldError("Think", "is %v: want 0 (no pause), a pause up to %v, or ThinkOneFlush (-think=flush)", c.Think, maxThink)
	}
	seen := map[string]bool{}
	for _, s := range c.Scenarios {
		if !slices.Contains([]string{"S1", "S2", "S3", "S4"}, s) {
			return fieldError("Scenarios", "has unknown scenario %q: want S1, S2, S3 or S4", s)
		}
		if seen[s] {
			return fieldError("Scenarios", "names %s twice", s)
		}
		seen[s] = true
	}
	if c.FIOPairs < 0 || c.FIOPairs > maxFIOPairs {
		return fieldError("FIOPairs", "is %d: want 1 to %d, or 0 for the default", c.FIOPairs, maxFIOPairs)
	}
	if c.FIO && c.FIOPairs > 0 && d.Duration/time.Duration(c.FIOPairs) < minFIOSlice {
		return fieldError("FIOPairs", "is %d: slices of %v / %d are shorter than %v; want at most %d pairs for this duration",
			c.FIOPairs, d.Duration, c.FIOPairs, minFIOSlice, d.Duration/minFIOSlice)
	}
	return d.fitsSpan(IOSize)
}

// fitsSpan checks that Span holds what the scenarios write with io bytes
// per write.
func (c Config) fitsSpan(io int) error {
	b := int64(io)
	switch {
	case int64(c.Writers)*b > c.Span || int64(c.S4Goroutines)*b > c.Span:
		return fieldError("Span", "%s is too small for %d writers (-writers) and %d goroutines (-s4goroutines) of a %d-byte block each", formatBytes(c.Span), c.Writers, c.S4Goroutines, io)
	case c.Span/int64(c.S3Writers) < b:
		return fieldError("Span", "%s is too small for %d S3 writers (-s3writers) of a %d-byte block each", formatBytes(c.Span), c.S3Writers, io)
	}
	return nil
}

// withDefaults replaces the fields that are zero by their defaults. Values
// out of range are left for Validate to refuse.
func (c Config) withDefaults() Config {
	if c.Duration == 0 {
		c.Duration = 2 * time.Second
	}
	if c.Slice == 0 {
		c.Slice = min(max(c.Duration/10, 20*time.Millisecond), 250*time.Millisecond, c.Duration)
	}
	if c.Writers == 0 {
		c.Writers = defaultWriters
	}
	if c.S3Writers == 0 {
		c.S3Writers = defaultS3
	}
	if c.S4Goroutines == 0 {
		c.S4Goroutines = min(4*runtime.GOMAXPROCS(0), maxThreads)
	}
	if c.Span == 0 {
		c.Span = defaultSpan
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{"S1", "S2", "S3", "S4"}
	}
	if c.FIOPairs == 0 {
		c.FIOPairs = max(1, min(max(int(c.Duration/(400*time.Millisecond)), 3), 10, int(c.Duration/minFIOSlice)))
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Region is how many bytes from the start of the device the scenarios
// write: Span, or its default. For a Config that does not validate it
// means nothing.
func (c Config) Region() int64 { return c.withDefaults().Span }

// validate checks c (with its defaults) for a device of the given logical
// block size: Validate, and a span that holds a block of that size for
// each writer.
func (c Config) validate(blockSize int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return c.withDefaults().fitsSpan(ioSize(blockSize))
}

func (c Config) slices() int { return max(1, int(c.Duration/c.Slice)) }

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		// "[hwbench]", not "hwbench:": go test -bench output with the tests in
		// it goes to benchstat, which reads a line "key: value" as
		// configuration, and these name temporary devices.
		fmt.Fprintf(c.Progress, "[hwbench] "+format+"\n", args...)
	}
}

// ioSize is 4 KiB, or the device's block size if that is larger.
func ioSize(blockSize int) int { return max(IOSize, blockSize) }

// Run measures the scenarios cfg selects on t and returns everything it
// measured: the results of every case in run order, the comparisons
// (baseline | optimised), the fio references and the notes to print with
// them.
func Run(ctx context.Context, t *Target, cfg Config) (Report, error) {
	if err := cfg.validate(t.Logical); err != nil {
		return Report{}, err
	}
	_, hasFIO := FIOPath()
	noFIO := cfg.FIO && !hasFIO
	cfg, err := cfg.resolve(hasFIO)
	if err != nil {
		return Report{}, err
	}
	cfg.progress("%s", cfg.Plan(cfg.FIO))
	if cfg.Span > t.Region {
		return Report{}, fmt.Errorf("hwbench: span %s is larger than the region %s opened on %s", formatBytes(cfg.Span), formatBytes(t.Region), t.Path)
	}
	rep := Report{Device: t.String(), FlushFigures: t.FlushFigures, BlockSize: t.Logical, Started: time.Now()}
	rep.Notes = append(rep.Notes, t.Notes...)
	if noFIO {
		rep.Notes = append(rep.Notes, "fio is not installed: no fio reference in this run")
	}
	if cfg.Budget > 0 {
		p := cfg.Plan(cfg.FIO)
		rep.Notes = append(rep.Notes, fmt.Sprintf("Budget %v: %v per case, so that the run fits even if every fio reference is rerun (%v).", cfg.Budget, cfg.Duration, p))
	}
	env := &scenarioEnv{t: t, cfg: cfg, io: ioSize(t.Logical)}
	if slices.Contains(cfg.Scenarios, "S1") {
		env.cal = env.newCalibration() // the device's prices for S1's prediction, measured as S1 runs
		rep.Calibration = env.cal
	}
	for _, s := range cfg.Scenarios {
		var (
			out outcome
			err error
		)
		cfg.progress("%s on %s", s, t.Path)
		switch s {
		case "S1":
			out, err = env.runS1(ctx)
		case "S2":
			out, err = env.runS2(ctx)
		case "S3":
			out, err = env.runS3(ctx)
		case "S4":
			out, err = env.runS4(ctx)
		}
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, out.results...)
		rep.Comparisons = append(rep.Comparisons, out.comparisons...)
		rep.FIO = append(rep.FIO, out.fio...)
		rep.Notes = append(rep.Notes, out.notes...)
	}
	return rep, nil
}

// scenarioEnv is what every scenario works with.
type scenarioEnv struct {
	t   *Target
	cfg Config
	io  int // bytes per write or read

	cal *Calibration // the calibration, if S1 runs (calibrate)

	s2One float64 // S2's writers x the single writer's syncs/s, once measured
}

// outcome is what one scenario adds to the report.
type outcome struct {
	results     []Result
	comparisons []Comparison
	fio         []FIOComparison
	notes       []string
}

func (o *outcome) add(rs ...Result) { o.results = append(o.results, rs...) }

// buffer returns an aligned I/O buffer holding pattern(owner).
func (e *scenarioEnv) buffer(owner int) []byte {
	b := impl.AlignedBuffer(e.io, e.t.File.MemoryAlignment())
	copy(b, pattern(e.io, owner))
	return b
}

// pattern is the data hwbench writes: n bytes that say who wrote them,
// each in 0x80-0xBF, so that no magic number of signatureChecks can
// appear in it and a device benchmarked once is not taken for a
// formatted one the next time.
func pattern(n, owner int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x80 | (owner+i)&0x3f)
	}
	return b
}

// counting returns a fresh counting view of the device, region-guarded.
func (e *scenarioEnv) counting() *impl.Counting { return impl.NewCounting(e.t.Device()) }

// The four scenarios of DESIGN.md, "hwbench", one per seed, and Run,
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
	"strings"
	"time"

	"github.com/flushproof/flushproof/impl"
)

// Config says how long and with how many writers to run the scenarios.
// The zero value of each field means its default.
type Config struct {
	// Duration is each case's total time, split into slices taken in turn
	// with the other cases of its comparison (default 2s).
	Duration time.Duration
	// Slice is the length of one turn (default: Duration/10, at most
	// 250ms, at least 20ms, and at least one slice).
	Slice time.Duration
	// Writers is S2's writers (default 16).
	Writers int
	// S3Writers is S3's writers to one file (default 8, as in the seed).
	S3Writers int
	// S4Goroutines is S4's goroutines on the hot path (default
	// 4 * GOMAXPROCS).
	S4Goroutines int
	// Span is the bytes S1's writes range over (default 64 MiB; a
	// multiple of 1 MiB). It is also the region of the device written.
	Span int64
	// Think is S2's pause between a write's completion and the flush
	// check, standing for the log force of xfs_file_fsync in the seed's
	// workload: 0 (the default) runs the tight loop only; a positive
	// duration also runs the policies with that pause; ThinkOneFlush
	// pauses for the median flush time measured in the same run.
	Think time.Duration
	// Scenarios to run, of "S1" to "S4" (default all).
	Scenarios []string
	// FIO runs the fio reference jobs for S1 and S2's baseline where fio
	// is installed.
	FIO bool
	// Seed seeds S1's random offsets (default 1).
	Seed uint64
	// Progress, if set, receives a line per slice and per scenario.
	Progress io.Writer
	_        struct{}
}

// ThinkOneFlush is Config.Think's value for "as long as one flush takes".
const ThinkOneFlush = time.Duration(-1)

// IOSize is the size of every write and read: 4 KiB, as in the seeds.
const IOSize = 4096

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = 2 * time.Second
	}
	if c.Slice <= 0 {
		c.Slice = min(max(c.Duration/10, 20*time.Millisecond), 250*time.Millisecond)
	}
	if c.Writers <= 0 {
		c.Writers = 16
	}
	if c.S3Writers <= 0 {
		c.S3Writers = 8
	}
	if c.S4Goroutines <= 0 {
		c.S4Goroutines = 4 * runtime.GOMAXPROCS(0)
	}
	if c.Span <= 0 {
		c.Span = 64 << 20
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{"S1", "S2", "S3", "S4"}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Region is how many bytes from the start of the device the scenarios
// write: Span.
func (c Config) Region() int64 { return c.withDefaults().Span }

func (c Config) validate(blockSize int) error {
	io := int64(ioSize(blockSize))
	switch {
	case c.Span%(1<<20) != 0:
		return fmt.Errorf("hwbench: span %d is not a multiple of 1 MiB", c.Span)
	case int64(c.Writers)*io > c.Span || int64(c.S4Goroutines)*io > c.Span:
		return fmt.Errorf("hwbench: span %s is too small for %d writers and %d goroutines of a block each", formatBytes(c.Span), c.Writers, c.S4Goroutines)
	case c.Span/int64(c.S3Writers) < io:
		return fmt.Errorf("hwbench: span %s is too small for %d S3 writers", formatBytes(c.Span), c.S3Writers)
	}
	for _, s := range c.Scenarios {
		if !slices.Contains([]string{"S1", "S2", "S3", "S4"}, s) {
			return fmt.Errorf("hwbench: unknown scenario %q (want S1, S2, S3 or S4)", s)
		}
	}
	return nil
}

func (c Config) slices() int { return max(1, int(c.Duration/c.Slice)) }

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "hwbench: "+format+"\n", args...)
	}
}

// ioSize is 4 KiB, or the device's block size if that is larger.
func ioSize(blockSize int) int { return max(IOSize, blockSize) }

// Run measures the scenarios cfg selects on t and returns everything it
// measured: the results of every case in run order, the comparisons
// (baseline | optimised), the fio references and the notes to print with
// them.
func Run(ctx context.Context, t *Target, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(t.Logical); err != nil {
		return Report{}, err
	}
	if cfg.Span > t.Region {
		return Report{}, fmt.Errorf("hwbench: span %s is larger than the region %s opened on %s", formatBytes(cfg.Span), formatBytes(t.Region), t.Path)
	}
	rep := Report{Device: t.String(), FlushFigures: t.FlushFigures, BlockSize: t.Logical, Started: time.Now()}
	rep.Notes = append(rep.Notes, t.Notes...)
	if cfg.FIO {
		if _, ok := FIOPath(); !ok {
			rep.Notes = append(rep.Notes, "fio is not installed: no fio reference in this run")
			cfg.FIO = false
		}
	}
	env := &scenarioEnv{t: t, cfg: cfg, io: ioSize(t.Logical)}
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

	s2Limit float64 // S2's device limit in syncs/s, once measured
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

// caseName joins a group and a variant: "seq: plain". The group ties a
// case to the comparison whose table shows it (table.go).
func caseName(group, variant string) string { return group + ": " + variant }

// splitCase is the inverse of caseName.
func splitCase(name string) (group, variant string) {
	g, v, ok := strings.Cut(name, ": ")
	if !ok {
		return "", name
	}
	return g, v
}

// fioFailed starts the note left when a fio reference job fails.
const fioFailed = "fio reference failed"

// fioReference runs job under fio and pairs it with the hwbench result.
func (e *scenarioEnv) fioReference(ctx context.Context, out *outcome, hw Result, job FIOJob) error {
	if !e.cfg.FIO {
		return nil
	}
	e.cfg.progress("%s: fio %s", hw.Scenario, job.Name)
	fr, err := RunFIO(ctx, job)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s fio reference %q: %w", hw.Scenario, job.Name, err)
		}
		// fio is the reference, not the subject: a fio that fails (an old
		// version, an option it lacks) costs the comparison, not the run.
		out.notes = append(out.notes, fmt.Sprintf("%s: %s %q: %v", hw.Scenario, fioFailed, job.Name, err))
		return nil
	}
	fr.Scenario, fr.Case, fr.Role, fr.Tool = hw.Scenario, hw.Case, "reference", "fio"
	out.add(fr)
	out.fio = append(out.fio, FIOComparison{Name: hw.Scenario + " " + hw.Case, Hwbench: hw, FIO: fr})
	return nil
}

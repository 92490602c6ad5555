package hwbench

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 µs to 60 s, with 3
// significant digits.
const (
	minLatency = int64(time.Microsecond)
	maxLatency = int64(60 * time.Second)
	latDigits  = 3
)

// NewLatencyHistogram returns an empty histogram for operation latencies.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatency, maxLatency, latDigits)
}

// Result is what one case of a scenario measured.
type Result struct {
	Scenario string // "S1" to "S4"
	Case     string // what ran, e.g. "seq 4 KiB O_DSYNC (RWF_DSYNC)"
	// Role is "baseline", "optimised", "ceiling" (not durable, the upper
	// bound) or "reference" (fio, or the device limit measured in the run).
	Role     string
	Threads  int
	Ops      int64         // operations completed
	Duration time.Duration // wall time of the case
	Latency  *hdrhistogram.Histogram
	// Device commands issued, where counted (impl.Counting).
	Writes, FUAWrites, Flushes int64
	// Extra holds scenario-specific figures by name, e.g. "flushes/sync",
	// "skipped/sync", "efficiency", "lock waits/op".
	Extra map[string]float64
	Tool  string // "hwbench" or "fio"
	_     struct{}
}

// IOPS is operations per second.
func (r Result) IOPS() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Duration.Seconds()
}

// Mean is the mean latency.
func (r Result) Mean() time.Duration {
	if r.Latency == nil || r.Latency.TotalCount() == 0 {
		return 0
	}
	return time.Duration(math.Round(r.Latency.Mean()))
}

// Percentile is the latency at percentile p (0 to 100).
func (r Result) Percentile(p float64) time.Duration {
	if r.Latency == nil || r.Latency.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Latency.ValueAtQuantile(p))
}

// FlushesPerOp is Flushes / Ops.
func (r Result) FlushesPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.Flushes) / float64(r.Ops)
}

// Comparison is a baseline and an optimised case of one scenario, measured
// in the same run on the same device, alternated.
type Comparison struct {
	Scenario  string
	Name      string // e.g. "seq 4 KiB: write+fdatasync vs O_DSYNC"
	Baseline  Result
	Optimised Result
}

// Change is the optimised IOPS relative to the baseline's, e.g. +0.25 for
// 25 % more.
func (c Comparison) Change() float64 {
	b := c.Baseline.IOPS()
	if b == 0 {
		return 0
	}
	return c.Optimised.IOPS()/b - 1
}

// Report is everything one hwbench run measured.
type Report struct {
	Device      string // what was measured, e.g. "/dev/loop3 (loop, direct I/O, over /tmp/x)"
	BlockSize   int
	Started     time.Time
	Results     []Result // every case, in run order
	Comparisons []Comparison
	// FIO pairs a hwbench case with the same job under fio, where fio
	// is installed.
	FIO []FIOComparison
	// Notes are remarks to print with the tables (e.g. the model's
	// prediction for S1).
	Notes []string
	// FlushFigures is Target.FlushFigures: when not "", nothing on the
	// device is durable and this says how to read its flush figures
	// (e.g. "meaningless on tmpfs"); the tables and report.md mark them.
	FlushFigures string
}

// FIOComparison is a hwbench result and fio's for the equivalent job.
type FIOComparison struct {
	Name    string
	Hwbench Result
	FIO     Result
}

// Ratio is hwbench IOPS / fio IOPS.
func (c FIOComparison) Ratio() float64 {
	f := c.FIO.IOPS()
	if f == 0 {
		return 0
	}
	return c.Hwbench.IOPS() / f
}

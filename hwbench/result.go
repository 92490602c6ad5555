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
	// Group is the comparison within the scenario that the case belongs
	// to: the workload its variants share, e.g. "seq 4 KiB" or
	// "16 writers". The cases of one group are measured in turns and shown
	// in one table; a fio result of RunFIO alone has none.
	Group string
	// Variant is what tells the cases of a group apart: the durability
	// policy or code path that ran, e.g. "O_DSYNC (RWF_DSYNC)",
	// "skip-if-flushed-since" or "parallel" (for a fio result, the job's
	// name until a scenario gives it its case's).
	Variant string
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

// Case is the case's display name, its group and variant: "seq 4 KiB:
// plain (not durable)", or the variant alone without a group. It is for
// people only: code that groups or pairs results compares Scenario, Group
// and Variant, never this name (a group or variant may hold ": ").
func (r Result) Case() string {
	if r.Group == "" {
		return r.Variant
	}
	return r.Group + ": " + r.Variant
}

// sameCase reports whether r and o are the same case of the same scenario
// (perhaps measured by different tools).
func (r Result) sameCase(o Result) bool {
	return r.Scenario == o.Scenario && r.Group == o.Group && r.Variant == o.Variant
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
	// Calibration is the device's command prices, measured before the
	// scenarios when S1 runs, and S1's predictions priced with them.
	Calibration *Calibration
	// FlushFigures is Target.FlushFigures: when not "", nothing on the
	// device is durable and this says how to read its flush figures
	// (e.g. "meaningless on tmpfs"); the tables and report.md mark them.
	FlushFigures string
}

// SliceRate is what one slice of a case completed: its operations in its
// time.
type SliceRate struct {
	Ops      int64
	Duration time.Duration
}

// IOPS is operations per second in the slice.
func (s SliceRate) IOPS() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Duration.Seconds()
}

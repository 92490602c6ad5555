package model

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/spec"
)

// Verdict is one row of `flushproof check`: a model, the bound that was
// explored, and SAFE (with statistics) or UNSAFE (with the shortest
// counterexample).
type Verdict struct {
	Model     string // e.g. "device", "bug-flush-covers-in-flight"
	Config    string // e.g. "cache+fua"
	Bound     string // what was explored exhaustively
	Negative  bool   // a negative control: expected UNSAFE
	Safe      bool   // the whole bounded space was explored and nothing broke
	Stats     Stats
	Violation *Violation // set when not Safe (nil if the budget ran out)
	Truncated bool       // the state budget ran out before the space was exhausted
	_         struct{}
}

// Expected reports whether the verdict is what the model is there for:
// SAFE for a real model, UNSAFE for a negative control.
func (v Verdict) Expected() bool {
	if v.Truncated {
		return false
	}
	return v.Safe != v.Negative
}

// Result renders the verdict word.
func (v Verdict) Result() string {
	switch {
	case v.Truncated:
		return "UNKNOWN (budget)"
	case v.Safe:
		return "SAFE"
	default:
		return "UNSAFE"
	}
}

// StandardDeviceWorkload is the bound the device is checked at: two writers
// that each write both blocks, the second write FUA (A: b0 then b1 FUA; B:
// b1 then b0 FUA), a flusher with one flush, EIO failures of any write or
// flush, and a crash at any point.
func StandardDeviceWorkload(cfg spec.Config, bug Bug) DeviceWorkload {
	return DeviceWorkload{
		Config: cfg,
		Bug:    bug,
		Writers: [][]WriteOp{
			{{Blocks: 1}, {Blocks: 2, FUA: true}},
			{{Blocks: 2}, {Blocks: 1, FUA: true}},
		},
		Flushes:  1,
		Failures: true,
	}
}

// Describe renders a workload as a bound.
func (w DeviceWorkload) Describe() string {
	writes := 0
	for _, ops := range w.Writers {
		writes += len(ops)
	}
	s := fmt.Sprintf("%d writers, %d writes, %d flush", len(w.Writers), writes, w.Flushes)
	if w.Failures {
		s += ", EIO"
	}
	return s + ", crash"
}

// DeviceVerdict checks a device workload in both directions: soundness (the
// product of device, contract monitor and tasks, every state) and then
// completeness (the subset construction over visible histories).
func DeviceVerdict(w DeviceWorkload, opt Options) (Verdict, error) {
	v := Verdict{Model: w.Bug.String(), Config: w.Config.String(), Bound: w.Describe(), Negative: w.Bug != Correct}
	sound, err := CheckDeviceSound(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = sound.Stats
	if sound.Violation != nil {
		v.Violation = sound.Violation
		return v, nil
	}
	if !sound.Exhausted {
		v.Truncated = true
		return v, nil
	}
	complete, err := CheckDeviceComplete(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = addStats(v.Stats, complete.Stats)
	if complete.Violation != nil {
		v.Violation = complete.Violation
		return v, nil
	}
	v.Truncated = !complete.Exhausted
	v.Safe = complete.Exhausted
	return v, nil
}

func addStats(a, b Stats) Stats {
	return Stats{
		States:      a.States + b.States,
		Transitions: a.Transitions + b.Transitions,
		MaxDepth:    max(a.MaxDepth, b.MaxDepth),
		Elapsed:     a.Elapsed + b.Elapsed,
	}
}

// DeviceCheck names one row of the device checks.
type DeviceCheck struct {
	Config spec.Config
	Bug    Bug
}

// DeviceChecks lists the rows: the correct device in every configuration,
// then each negative control in the configuration where its bug shows.
func DeviceChecks() []DeviceCheck {
	cacheFUA := spec.Config{VolatileCache: true, NativeFUA: true}
	cacheEmu := spec.Config{VolatileCache: true}
	var out []DeviceCheck
	for _, cfg := range spec.Configs() {
		out = append(out, DeviceCheck{cfg, Correct})
	}
	return append(out,
		DeviceCheck{cacheFUA, FlushCoversInFlight},
		DeviceCheck{cacheEmu, EmulatedFUANoPostFlush},
		DeviceCheck{cacheFUA, CrashRevertsDurable},
	)
}

// DeviceVerdicts checks every row of DeviceChecks at the standard bound.
func DeviceVerdicts(opt Options) ([]Verdict, error) {
	var out []Verdict
	for _, c := range DeviceChecks() {
		v, err := DeviceVerdict(StandardDeviceWorkload(c.Config, c.Bug), opt)
		if err != nil {
			return out, fmt.Errorf("check %v on %v: %w", c.Bug, c.Config, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Row is one row of the verdict table (`flushproof check`): its name, which
// -run matches, and how to compute its verdict.
type Row struct {
	Name  string
	Check func(Options) (Verdict, error)
}

// newVerdict is the verdict of a search: SAFE only if the bounded space was
// exhausted without a violation, UNKNOWN if the budget stopped it first.
func newVerdict[S comparable](model, config, bound string, negative bool, r *Result[S]) Verdict {
	return Verdict{
		Model:     model,
		Config:    config,
		Bound:     bound,
		Negative:  negative,
		Stats:     r.Stats,
		Violation: r.Violation,
		Safe:      r.Violation == nil && r.Exhausted,
		Truncated: r.Violation == nil && !r.Exhausted,
	}
}

// Expectation renders whether the verdict is the expected one: "yes" or
// "NO", marked when the row is a negative control.
func (v Verdict) Expectation() string {
	s := "yes"
	if !v.Expected() {
		s = "NO"
	}
	if v.Negative {
		s += " (negative control)"
	}
	return s
}

// WriteVerdictTable writes one line per verdict: model, config, bound,
// verdict, whether it is the expected one, and the search's statistics.
func WriteVerdictTable(w io.Writer, vs []Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tCONFIG\tBOUND\tVERDICT\tEXPECTED\tSTATES\tTRANSITIONS\tDEPTH\tTIME\tSTATES/S")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%v\t%.0f\n", v.Model, v.Config, v.Bound, v.Result(), v.Expectation(),
			v.Stats.States, v.Stats.Transitions, v.Stats.MaxDepth, v.Stats.Elapsed.Round(10*time.Microsecond), v.Stats.PerSecond())
	}
	return tw.Flush()
}

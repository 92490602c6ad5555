package device

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// StandardDeviceWorkload is the bound the device is checked at: two writers
// that each write both blocks, the second write FUA (A: b0 then b1 FUA; B:
// b1 then b0 FUA), a flusher with one flush, EIO failures of any write or
// flush, and a crash at any point.
func StandardWorkload(cfg spec.Config, bug Bug) Workload {
	return Workload{
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
func (w Workload) Describe() string {
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
func Check(w Workload, opt explore.Options) (verdict.Verdict, error) {
	v := verdict.Verdict{Model: w.Bug.String(), Config: w.Config.String(), Bound: w.Describe(), Negative: w.Bug != Correct}
	sound, err := CheckSound(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = sound.Stats
	if sound.Violation != nil {
		v.Violation = sound.Violation
		return v, nil
	}
	if !sound.Exhausted {
		v.Truncated, v.Unknown = true, sound.Stopped
		return v, nil
	}
	complete, err := CheckComplete(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = addStats(v.Stats, complete.Stats)
	if complete.Violation != nil {
		v.Violation = complete.Violation
		return v, nil
	}
	v.Truncated = !complete.Exhausted
	if v.Truncated {
		v.Unknown = complete.Stopped
	}
	v.Safe = complete.Exhausted
	return v, nil
}

func addStats(a, b explore.Stats) explore.Stats {
	return explore.Stats{
		States:      a.States + b.States,
		Transitions: a.Transitions + b.Transitions,
		MaxDepth:    max(a.MaxDepth, b.MaxDepth),
		Elapsed:     a.Elapsed + b.Elapsed,
	}
}

// DeviceCheck names one row of the device checks.
type CheckCase struct {
	Config spec.Config
	Bug    Bug
}

// DeviceChecks lists the rows: the correct device in every configuration,
// then each negative control in the configuration where its bug shows.
func Checks() []CheckCase {
	cacheFUA := spec.Config{VolatileCache: true, NativeFUA: true}
	cacheEmu := spec.Config{VolatileCache: true}
	var out []CheckCase
	for _, cfg := range spec.Configs() {
		out = append(out, CheckCase{cfg, Correct})
	}
	return append(out,
		CheckCase{cacheFUA, FlushCoversInFlight},
		CheckCase{cacheEmu, EmulatedFUANoPostFlush},
		CheckCase{cacheFUA, CrashRevertsDurable},
	)
}

// DeviceVerdicts checks every row of DeviceChecks at the standard bound.
func CheckAll(opt explore.Options) ([]verdict.Verdict, error) {
	var out []verdict.Verdict
	for _, c := range Checks() {
		v, err := Check(StandardWorkload(c.Config, c.Bug), opt)
		if err != nil {
			return out, fmt.Errorf("check %v on %v: %w", c.Bug, c.Config, err)
		}
		out = append(out, v)
	}
	return out, nil
}

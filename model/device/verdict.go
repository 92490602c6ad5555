package device

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// StandardWorkload is the bound the device is checked at: two writers
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

// Check checks a device workload in both directions: soundness (the
// product of device, contract monitor and tasks, every state) and then
// completeness (the subset construction over visible histories).
func Check(w Workload, opt explore.Options) (verdict.Verdict, error) {
	row := w.Row()
	v := verdict.Verdict{Model: row.Model, Config: row.Config, Bound: row.Bound, Negative: row.Negative}
	sound, err := CheckSound(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = sound.Stats
	v.Judged, v.JudgeErr = sound.Judged, sound.JudgeErr
	if sound.Violation != nil {
		v.Outcome, v.Violation = verdict.Unsafe, sound.Violation
		return v, nil
	}
	if !sound.Exhausted {
		v.Outcome, v.Unknown = verdict.Unknown, sound.Stopped
		return v, nil
	}
	complete, err := CheckComplete(w, opt)
	if err != nil {
		return v, err
	}
	v.Stats = addStats(v.Stats, complete.Stats)
	v.Judged = append(v.Judged, complete.Judged...)
	if v.JudgeErr == nil {
		v.JudgeErr = complete.JudgeErr
	}
	if complete.Violation != nil {
		v.Outcome, v.Violation = verdict.Unsafe, complete.Violation
		return v, nil
	}
	if !complete.Exhausted {
		v.Outcome, v.Unknown = verdict.Unknown, complete.Stopped
		return v, nil
	}
	v.Outcome = verdict.Safe
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

// CheckCase names one row of the device checks.
type CheckCase struct {
	Config spec.Config
	Bug    Bug
}

// Checks lists the rows: the correct device in every configuration,
// then each negative control in the configuration where its bug shows.
func Checks() []CheckCase {
	var out []CheckCase
	for _, cfg := range spec.Configs() {
		out = append(out, CheckCase{cfg, Correct})
	}
	return append(out,
		CheckCase{spec.CacheFUA, FlushCoversInFlight},
		CheckCase{spec.CacheEmulatedFUA, EmulatedFUANoPostFlush},
		CheckCase{spec.CacheFUA, CrashRevertsDurable},
	)
}

// Row is the workload's row of the verdict table: the device (or its bug),
// the configuration, the bound.
func (w Workload) Row() verdict.Row {
	return verdict.Row{Model: w.Bug.String(), Config: w.Config.String(), Bound: w.Describe(), Negative: w.Bug != Correct,
		Check: func(o explore.Options) (verdict.Verdict, error) { return Check(w, o) }}
}

// Rows are the device's rows of the verdict table: every Checks case at the
// standard bound.
func Rows() []verdict.Row {
	var out []verdict.Row
	for _, c := range Checks() {
		out = append(out, StandardWorkload(c.Config, c.Bug).Row())
	}
	return out
}

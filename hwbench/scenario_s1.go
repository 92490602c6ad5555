// S1 (the patch "block: skip redundant flush for O_DSYNC direct writes"):
// one thread, 4 KiB O_DIRECT writes, sequential and random, three ways:
//
//	plain                 pwrite(2): not durable, the ceiling
//	O_DSYNC (RWF_DSYNC)   pwritev2(2) with RWF_DSYNC (impl.DSyncWriter FUA):
//	                      what an O_DSYNC write costs on this kernel
//	write + fdatasync     pwrite(2), then fdatasync(2) (impl.DSyncWriter
//	                      WriteFlush): one flush per write
//
// The comparison is O_DSYNC (baseline) against write + fdatasync
// (optimised). On a block device with a volatile cache and emulated FUA
// (a loop device: queue/fua is 0) an unpatched kernel turns an O_DSYNC
// write into a write, the FUA post-flush and generic_write_sync's flush;
// the patch removes the last one, leaving a write and one flush, which is
// what write + fdatasync costs. So write + fdatasync is what the patched
// kernel would do there, and the model (odsync.CallCost) says how
// many flushes each costs on each device configuration. The notes and the
// tables print its prediction of every column, priced with the
// calibration measured in turns with the cases (calibrate.go), next to the
// measurement and the device's own flush count.

package hwbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/spec"
)

// The S1 variants.
const (
	s1Plain     = "plain (not durable)"
	s1DSync     = "O_DSYNC (RWF_DSYNC)"
	s1WriteSync = "write + fdatasync"
)

// s1Variant is one of S1's three ways to write.
type s1Variant struct {
	name, role string
	sync       string // the fio job's FIOJob.Sync
	write      func(dev spec.Device) func(p []byte, off int64) error
}

var s1Variants = []s1Variant{
	{s1Plain, "ceiling", "", func(dev spec.Device) func([]byte, int64) error {
		return func(p []byte, off int64) error { return dev.WriteAt(p, off, 0) }
	}},
	{s1DSync, "baseline", "dsync", func(dev spec.Device) func([]byte, int64) error {
		return impl.DSyncWriter{Dev: dev, Mode: impl.FUA}.WriteAt
	}},
	{s1WriteSync, "optimised", "fdatasync", func(dev spec.Device) func([]byte, int64) error {
		return impl.DSyncWriter{Dev: dev, Mode: impl.WriteFlush}.WriteAt
	}},
}

// s1Offsets returns the block offsets (in bytes) that variant vi of S1
// writes for pattern (pi: its index): "seq" wraps through [0, Span) from
// 0, "random" draws uniformly from it, with a seed of its own per pattern
// and variant. The calibration writes at the same offsets.
func (e *scenarioEnv) s1Offsets(pi int, pattern string, vi int) func() int64 {
	blocks := e.cfg.Span / int64(e.io)
	next := int64(0)
	rng := rand.New(rand.NewPCG(e.cfg.Seed+uint64(pi*10+vi), 0x5eed))
	return func() int64 {
		var blk int64
		if pattern == "seq" {
			blk = next
			next = (next + 1) % blocks
		} else {
			blk = rng.Int64N(blocks)
		}
		return blk * int64(e.io)
	}
}

// s1Case is variant vi of S1 for pattern (pi: its index, "seq" or
// "random"), as a fresh workload.
func (e *scenarioEnv) s1Case(pi int, pattern string, vi int) *workload {
	v := s1Variants[vi]
	group := pattern + " 4 KiB"
	cnt := e.counting()
	write := v.write(cnt)
	return &workload{
		res:      Result{Scenario: "S1", Group: group, Variant: v.name, Role: v.role, Threads: 1},
		count:    cnt,
		target:   e.t,
		blocking: true,
		newOp: func(int) opFunc {
			buf := e.buffer(vi)
			next := e.s1Offsets(pi, pattern, vi)
			return func(start time.Time) (time.Time, error) {
				return start, write(buf, next())
			}
		},
	}
}

func (e *scenarioEnv) runS1(ctx context.Context) (outcome, error) {
	var out outcome
	for pi, pattern := range s1Patterns {
		group := pattern + " 4 KiB"
		var cases []*workload
		for vi := range s1Variants {
			cases = append(cases, e.s1Case(pi, pattern, vi))
		}
		// The calibration's loops take turns with the cases (calibrate.go).
		all, err := alternate(ctx, e.cfg, "S1 "+group, append(cases, e.s1CalCases(pi, pattern)...))
		if err != nil {
			return out, err
		}
		rs := all[:len(s1Variants)]
		if err := e.cal.addPattern(pattern, all[len(s1Variants):]); err != nil {
			return out, err
		}
		out.add(rs...)
		dsync, wsync := rs[1], rs[2]
		out.comparisons = append(out.comparisons, Comparison{
			Scenario: "S1", Name: fmt.Sprintf("%s, 1 thread: %s vs %s", group, s1DSync, s1WriteSync),
			Baseline: dsync, Optimised: wsync,
		})
		note, err := e.s1ModelNote(pattern, rs)
		if err != nil {
			return out, err
		}
		out.notes = append(out.notes, note)

		rw := map[string]string{"seq": "write", "random": "randwrite"}[pattern]
		for vi, v := range s1Variants {
			job := FIOJob{
				Name: "S1-" + pattern + "-" + map[string]string{"": "plain", "dsync": "dsync", "fdatasync": "fdatasync"}[v.sync],
				Path: e.t.Path, RW: rw, BlockSize: e.io, Direct: e.t.File.Direct(), Sync: v.sync,
				NumJobs: 1, Size: e.cfg.Span, Offset: 0,
			}
			fresh := func() (*workload, error) { return e.s1Case(pi, pattern, vi), nil }
			if err := e.fioReference(ctx, &out, rs[vi], fresh, job); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// s1ModelNote puts the model's prediction for each of S1's columns
// (rs: plain, O_DSYNC, write + fdatasync), priced with the calibration
// alone (Calibration.predictS1), next to what S1 measured, with the error,
// and adds the predictions to the calibration for the tables. Where the
// model does not describe the target (a file), it lists the model's
// commands per configuration for reference.
func (e *scenarioEnv) s1ModelNote(pattern string, rs []Result) (string, error) {
	var b strings.Builder
	group := pattern + " 4 KiB"
	fmt.Fprintf(&b, "S1 %s, the model's prediction from the calibration alone (odsync cost tables, pure direct path): ", group)
	if e.cal == nil {
		b.WriteString("no calibration in this run, no prediction.")
		return b.String(), nil
	}
	preds, why, err := e.cal.predictS1(pattern, rs)
	if err != nil {
		return "", err
	}
	if len(preds) == 0 {
		b.WriteString(why)
		if !e.cal.BlockDevice {
			b.WriteString("; for reference, the model's O_DSYNC write() per configuration: ")
			for i, c := range spec.Configs() {
				base, err1 := odsync.CallCost(odsync.Baseline, c, odsync.PureDirect)
				patched, err2 := odsync.CallCost(odsync.Patched, c, odsync.PureDirect)
				if err1 != nil || err2 != nil {
					return "", fmt.Errorf("S1 model: %v %v", err1, err2)
				}
				if i > 0 {
					b.WriteString("; ")
				}
				fmt.Fprintf(&b, "%s: unpatched %s, patched %s", c, describeCost(base), describeCost(patched))
			}
		}
	} else {
		lat, _ := e.cal.Latency(pattern)
		fmt.Fprintf(&b, "%s; write %v, flush after a write %v, empty flush %v", e.cal.Config,
			lat.CachedWrite.Round(time.Microsecond), lat.Flush.Round(time.Microsecond), lat.EmptyFlush.Round(time.Microsecond))
		if why != "" {
			fmt.Fprintf(&b, "; %s", why)
		}
		for _, p := range preds {
			if p.Predicted <= 0 {
				fmt.Fprintf(&b, "; %s = %s: not predicted (%s), %s IOPS measured", p.Case, p.Model, p.Why, fmtRate(p.MeasuredIOPS))
				continue
			}
			fmt.Fprintf(&b, "; %s = %s: %s IOPS predicted, %s measured (%s)", p.Case, p.Model, fmtRate(p.PredictedIOPS()), fmtRate(p.MeasuredIOPS), p.errorText())
		}
		if noise, ok := preds[0].RelError(); ok {
			fmt.Fprintf(&b, " (plain is the calibrated write alone, the same command in another loop: its %+.1f%% is the noise between two loops)", noise*100)
		}
		e.cal.Predictions = append(e.cal.Predictions, preds...)
	}
	plain, dsync, wsync := rs[0], rs[1], rs[2]
	if f, ok := dsync.Extra[ExtraDeviceFlushesPerOp]; ok {
		fmt.Fprintf(&b, ". Device flushes per write measured (/sys/class/block/%s/stat): %s %.2f, %s %.2f, %s %.2f",
			e.t.Queue.Name, s1DSync, f, s1WriteSync, wsync.Extra[ExtraDeviceFlushesPerOp], s1Plain, plain.Extra[ExtraDeviceFlushesPerOp])
	}
	if e.cal.BlockDevice && e.cal.Known && e.cal.Config.VolatileCache && e.cal.Config.NativeFUA {
		fmt.Fprintf(&b, ". %s. With native FUA the patched kernel's O_DSYNC write is one FUA write and no flush: write + fdatasync is then not the patched kernel", e.cal.FUANote())
	}
	b.WriteString(".")
	return b.String(), nil
}

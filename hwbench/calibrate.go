// The calibration (docs/hwbench.md, "S1: calibration and prediction"):
// on the same target, hwbench times the device's commands one at a time,
// in loops of their own, none of them a scenario's case:
//
//	write        a plain 4 KiB O_DIRECT write, at S1's sequential or
//	             random offsets within the span
//	flush        a flush right after such a write, the flush timed alone:
//	             the cache holds the write
//	empty flush  a flush right after a flush, the second timed alone:
//	             nothing was written since
//
// The loops take their turns in S1's alternation, slice by slice with
// S1's cases of the same pattern: a calibration run as a phase before S1
// was off by as much as the device drifted between the two (a plain
// write, the same command as the calibrated one, measured 10 % to 53 %
// away from it in five loop-device runs here), while taking turns the
// calibration and the cases see the same device. S1 prices the odsync
// cost tables (odsync.CallCost, odsync.SequenceCost) with these figures
// only and puts the predicted IOPS of each of its columns next to what it
// measured, with the error: no figure of a case goes into a prediction.
// The plain column's error, the calibrated write against S1's plain case,
// is the noise floor: two loops of the same command.

package hwbench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/spec"
)

// s1Patterns are S1's write patterns, in the order S1 runs them.
var s1Patterns = []string{"seq", "random"}

// CalibrationFigure is one command timed alone, Ops times.
type CalibrationFigure struct {
	What   string // e.g. "write, seq"
	Ops    int64  // commands timed
	Mean   time.Duration
	Median time.Duration
	// DeviceFlushesPerCall is the flush requests the block layer sent the
	// driver per flush call (timed or not), where counted (HasDeviceFlushes:
	// a block device, and the measurement flushes): 1 where every flush,
	// empty or not, reaches the device, 0 where the block layer ends it
	// at once (no volatile cache).
	DeviceFlushesPerCall float64
	HasDeviceFlushes     bool
}

// CalibrationPattern is the figures of one of S1's write patterns.
type CalibrationPattern struct {
	Pattern    string            // "seq" or "random"
	Write      CalibrationFigure // a plain 4 KiB O_DIRECT write
	Flush      CalibrationFigure // a flush right after such a write
	EmptyFlush CalibrationFigure // a flush with nothing written since the previous flush
}

// Calibration is what the calibration measured on the target, and S1's
// predictions priced with it.
type Calibration struct {
	// Config is the model's device configuration that the queue settings
	// describe (QueueInfo.Config); Known says whether they describe one.
	Config spec.Config
	Known  bool
	// BlockDevice says the target is a block device, which the model
	// describes; on a file the file system decides what O_DSYNC costs.
	BlockDevice bool
	Each        time.Duration // each measurement's time, in turns with S1's cases
	Patterns    []CalibrationPattern
	// Predictions are S1's columns predicted from this calibration, added
	// by S1 as it runs.
	Predictions []S1Prediction
}

// pattern returns the figures of S1's write pattern p.
func (c *Calibration) pattern(p string) (CalibrationPattern, bool) {
	for _, cp := range c.Patterns {
		if cp.Pattern == p {
			return cp, true
		}
	}
	return CalibrationPattern{}, false
}

// FUAPriced reports whether the model's FUA writes have a price: not on a
// device with native FUA, where user space cannot issue a FUA write alone
// (RWF_DSYNC on an unpatched kernel adds generic_write_sync's flush), so
// the calibration leaves it out rather than invent it.
func (c *Calibration) FUAPriced() bool {
	return !(c.Known && c.Config.VolatileCache && c.Config.NativeFUA)
}

// Latency prices the model's commands for pattern p with the calibration:
// a write into the cache and a write without a cache cost the plain write,
// a flush the flush after a write, an empty flush the empty flush. A FUA
// write is priced only where FUA is not native: emulated, the model
// counts it as a write and a post-flush; without a cache it is a plain
// write. With native FUA it stays 0, and FUAPriced says so.
func (c *Calibration) Latency(p string) (odsync.Latency, bool) {
	cp, ok := c.pattern(p)
	if !ok {
		return odsync.Latency{}, false
	}
	lat := odsync.Latency{
		Name:        "calibrated on this target, " + p + " 4 KiB writes",
		CachedWrite: cp.Write.Mean,
		MediaWrite:  cp.Write.Mean,
		Flush:       cp.Flush.Mean,
		// Zero would mean "priced as Flush": a flush under the
		// histograms' resolution is priced as 1 ns.
		EmptyFlush: max(cp.EmptyFlush.Mean, 1),
	}
	if c.FUAPriced() {
		lat.FUAWrite = cp.Write.Mean
	}
	return lat, true
}

// FUANote says how the calibration prices a FUA write on the device, or
// why it does not.
func (c *Calibration) FUANote() string {
	switch {
	case !c.Known:
		return "the queue settings do not say whether the device has a volatile cache or native FUA: no model configuration, no prediction"
	case !c.Config.VolatileCache:
		return "no volatile cache (queue/write_cache: write through): the block layer strips FUA and flushes (block/blk-flush.c, blk_flush_policy; an empty flush bio is ended at once, block/blk-core.c), so a write costs the plain write and the model's flushes cost nothing"
	case c.Config.NativeFUA:
		return "native FUA (queue/fua = 1): the FUA write is not calibrated, since user space cannot issue one alone (RWF_DSYNC on an unpatched kernel adds generic_write_sync's flush), so the O_DSYNC column, which the model prices with it, is not predicted"
	}
	return "FUA emulated (queue/fua = 0): the block layer runs a FUA write as the write, then a post-flush (block/blk-flush.c, REQ_FSEQ_POSTFLUSH), which the model prices as a write and a flush after a write"
}

// S1Prediction is one S1 column predicted from the calibration, next to
// what S1 measured.
type S1Prediction struct {
	Pattern string // "seq" or "random"
	Case    string // the S1 variant, e.g. "O_DSYNC (RWF_DSYNC)"
	// Model is the commands the model prices for the case, e.g.
	// "unpatched O_DSYNC write(): 1 write + 1 flush + 1 empty flush".
	Model string
	// Predicted is the model's time per operation: its commands one after
	// the other, priced with the calibration. 0: not predicted, and Why
	// says why.
	Predicted    time.Duration
	Why          string
	MeasuredIOPS float64
	MeasuredMean time.Duration
}

// PredictedIOPS is one operation per Predicted, or 0 if not predicted.
func (p S1Prediction) PredictedIOPS() float64 {
	if p.Predicted <= 0 {
		return 0
	}
	return float64(time.Second) / float64(p.Predicted)
}

// RelError is predicted IOPS / measured IOPS - 1 (+0.10: the model
// predicted 10 % more than was measured); false if either is missing.
func (p S1Prediction) RelError() (float64, bool) {
	pred := p.PredictedIOPS()
	if pred == 0 || p.MeasuredIOPS <= 0 {
		return 0, false
	}
	return pred/p.MeasuredIOPS - 1, true
}

// errorText is the error in percent, or "-".
func (p S1Prediction) errorText() string {
	if e, ok := p.RelError(); ok {
		return fmt.Sprintf("%+.1f%%", e*100)
	}
	return "-"
}

// describeCost lists the commands of a cost: "1 write + 1 flush + 1 empty
// flush", "1 FUA write", "1 write (1 flush stripped)".
func describeCost(c odsync.Cost) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.FUAWrites, "FUA write")
	add(c.PlainWrites(), "write")
	add(c.DirtyFlushes(), "flush")
	add(c.EmptyFlushes, "empty flush")
	s := strings.Join(parts, " + ")
	if s == "" {
		s = "no device command"
	}
	if c.StrippedFlushes > 0 {
		s += fmt.Sprintf(" (%d flush stripped)", c.StrippedFlushes)
	}
	return s
}

// s1Price is the model's cost of one S1 column and its price.
type s1Price struct {
	model   string
	cost    odsync.Cost
	latency time.Duration // 0: not priced
	why     string
}

// s1Prices prices S1's columns, in the order of s1Variants, on a device
// of configuration dev with lat: plain is a write alone and write +
// fdatasync a write, then a flush (odsync.SequenceCost: what user space
// issues); O_DSYNC is the write() of the given variant of the kernel on
// the pure direct path (odsync.CallCost). A cost with FUA writes is not
// priced unless fuaPriced.
func s1Prices(dev spec.Config, dsync odsync.Variant, lat odsync.Latency, fuaPriced bool) ([]s1Price, error) {
	write := spec.Event{Kind: spec.WriteSubmit}
	flush := spec.Event{Kind: spec.FlushSubmit}
	plain, err := odsync.SequenceCost(dev, []spec.Event{write})
	if err != nil {
		return nil, err
	}
	call, err := odsync.CallCost(dsync, dev, odsync.PureDirect)
	if err != nil {
		return nil, err
	}
	wsync, err := odsync.SequenceCost(dev, []spec.Event{write, flush})
	if err != nil {
		return nil, err
	}
	kernel := "unpatched"
	if dsync == odsync.Patched {
		kernel = "patched"
	}
	out := []s1Price{
		{model: describeCost(plain), cost: plain},
		{model: kernel + " O_DSYNC write(): " + describeCost(call), cost: call},
		{model: describeCost(wsync), cost: wsync},
	}
	for i := range out {
		if out[i].cost.FUAWrites > 0 && !fuaPriced {
			out[i].why = "a FUA write has no calibrated price (native FUA)"
			continue
		}
		out[i].latency = out[i].cost.Latency(lat)
	}
	return out, nil
}

// dsyncVariant picks the kernel to predict the O_DSYNC column with: the
// unpatched one, unless the device flushes counted per O_DSYNC write
// (dsync's ExtraDeviceFlushesPerOp) match the patched model's count and
// not the unpatched one's. The note says so when it is the patched one.
func dsyncVariant(dev spec.Config, dsync Result) (odsync.Variant, string, error) {
	f, ok := dsync.Extra[ExtraDeviceFlushesPerOp]
	if !ok {
		return odsync.Baseline, "", nil
	}
	base, err := odsync.CallCost(odsync.Baseline, dev, odsync.PureDirect)
	if err != nil {
		return 0, "", err
	}
	patched, err := odsync.CallCost(odsync.Patched, dev, odsync.PureDirect)
	if err != nil {
		return 0, "", err
	}
	near := func(n int) bool { return math.Abs(f-float64(n)) < 0.25 }
	if near(patched.Flushes) && !near(base.Flushes) {
		return odsync.Patched, fmt.Sprintf("this kernel sent %.2f device flushes per O_DSYNC write, as the patched kernel's model does (%d, unpatched %d): the O_DSYNC column is predicted as the patched kernel's",
			f, patched.Flushes, base.Flushes), nil
	}
	return odsync.Baseline, "", nil
}

// predictS1 predicts S1's columns for pattern from the calibration alone
// and puts them next to measured (plain, O_DSYNC, write + fdatasync, as
// s1Variants). It predicts nothing (nil, and a reason) where the model
// does not describe the target: a file, or a device whose queue settings
// are unknown. note, if not "", says which kernel the O_DSYNC column is
// predicted as.
func (c *Calibration) predictS1(pattern string, measured []Result) (preds []S1Prediction, note string, err error) {
	if len(measured) != len(s1Variants) {
		return nil, "", fmt.Errorf("S1 prediction: %d results, want %d", len(measured), len(s1Variants))
	}
	switch {
	case !c.BlockDevice:
		return nil, "the model describes a raw block device, and this is a file, whose file system decides what O_DSYNC costs: no prediction", nil
	case !c.Known:
		return nil, c.FUANote(), nil
	}
	lat, ok := c.Latency(pattern)
	if !ok {
		return nil, fmt.Sprintf("no calibration for %s writes: no prediction", pattern), nil
	}
	v, note, err := dsyncVariant(c.Config, measured[1])
	if err != nil {
		return nil, "", err
	}
	prices, err := s1Prices(c.Config, v, lat, c.FUAPriced())
	if err != nil {
		return nil, "", err
	}
	for i, p := range prices {
		preds = append(preds, S1Prediction{
			Pattern: pattern, Case: s1Variants[i].name, Model: p.model, Predicted: p.latency, Why: p.why,
			MeasuredIOPS: measured[i].IOPS(), MeasuredMean: measured[i].Mean(),
		})
	}
	return preds, note, nil
}

// newCalibration is the target's calibration, measured as S1 runs
// (s1CalCases, addPattern).
func (e *scenarioEnv) newCalibration() *Calibration {
	cal := &Calibration{BlockDevice: e.t.IsBlockDevice(), Each: e.cfg.Duration}
	cal.Config, cal.Known = e.t.Queue.Config()
	return cal
}

// s1CalCases are the calibration's loops for S1's pattern pi, to take
// turns with S1's cases: the write, the flush after it, the empty flush.
func (e *scenarioEnv) s1CalCases(pi int, pattern string) []*workload {
	return []*workload{e.calWrite(pi, pattern), e.calFlushAfterWrite(pi, pattern), e.calEmptyFlush(pattern)}
}

// addPattern keeps the figures of s1CalCases' results for pattern.
func (c *Calibration) addPattern(pattern string, rs []Result) error {
	if len(rs) != 3 {
		return fmt.Errorf("hwbench calibration: %d results for %s, want 3", len(rs), pattern)
	}
	for _, r := range rs {
		if r.Ops == 0 {
			return fmt.Errorf("hwbench calibration: %s %s: nothing completed", pattern, r.Variant)
		}
	}
	c.Patterns = append(c.Patterns, CalibrationPattern{
		Pattern:    pattern,
		Write:      calibrationFigure("write, "+pattern, rs[0]),
		Flush:      calibrationFigure("flush after a "+pattern+" write", rs[1]),
		EmptyFlush: calibrationFigure("empty flush, "+pattern+" run", rs[2]),
	})
	return nil
}

func calibrationFigure(what string, r Result) CalibrationFigure {
	f := CalibrationFigure{What: what, Ops: r.Ops, Mean: r.Mean(), Median: r.Percentile(50)}
	if d, ok := r.Extra[ExtraDeviceFlushesPerOp]; ok && r.Flushes > 0 {
		f.DeviceFlushesPerCall = d * float64(r.Ops) / float64(r.Flushes)
		f.HasDeviceFlushes = true
	}
	return f
}

// calCase is a calibration measurement: one thread running op on a
// counting view of the target.
func (e *scenarioEnv) calCase(group, what string, newOp func(cnt *impl.Counting) opFunc) *workload {
	cnt := e.counting()
	return &workload{
		res:      Result{Scenario: "calibration", Group: group, Variant: what, Role: "calibration", Threads: 1},
		count:    cnt,
		target:   e.t,
		blocking: true,
		newOp:    func(int) opFunc { return newOp(cnt) },
	}
}

// calWrite times a plain write at the offsets of S1's plain case.
func (e *scenarioEnv) calWrite(pi int, pattern string) *workload {
	return e.calCase(pattern+" 4 KiB", "write", func(cnt *impl.Counting) opFunc {
		buf := e.buffer(0)
		next := e.s1Offsets(pi, pattern, 0)
		return func(start time.Time) (time.Time, error) {
			return start, cnt.WriteAt(buf, next(), 0)
		}
	})
}

// calFlushAfterWrite writes at the offsets of S1's write + fdatasync case,
// then times the flush alone.
func (e *scenarioEnv) calFlushAfterWrite(pi int, pattern string) *workload {
	return e.calCase(pattern+" 4 KiB", "flush after a write", func(cnt *impl.Counting) opFunc {
		buf := e.buffer(2)
		next := e.s1Offsets(pi, pattern, 2)
		return func(start time.Time) (time.Time, error) {
			if err := cnt.WriteAt(buf, next(), 0); err != nil {
				return start, err
			}
			from := time.Now()
			return from, cnt.Flush()
		}
	})
}

// calEmptyFlush flushes, then times a second flush, which finds nothing
// written since the first.
func (e *scenarioEnv) calEmptyFlush(pattern string) *workload {
	return e.calCase(pattern+" 4 KiB", "empty flush", func(cnt *impl.Counting) opFunc {
		return func(start time.Time) (time.Time, error) {
			if err := cnt.Flush(); err != nil {
				return start, err
			}
			from := time.Now()
			return from, cnt.Flush()
		}
	})
}

// calibrationFigures lists the figures in the order printed.
func (c *Calibration) calibrationFigures() []CalibrationFigure {
	var fs []CalibrationFigure
	for _, p := range c.Patterns {
		fs = append(fs, p.Write)
	}
	for _, p := range c.Patterns {
		fs = append(fs, p.Flush)
	}
	for _, p := range c.Patterns {
		fs = append(fs, p.EmptyFlush)
	}
	return fs
}

func (f CalibrationFigure) deviceFlushes() string {
	if !f.HasDeviceFlushes {
		return "-"
	}
	return fmtRatio(f.DeviceFlushesPerCall)
}

func (p S1Prediction) predictedText() (lat, iops string) {
	if p.Predicted <= 0 {
		return "-", "not predicted: " + p.Why
	}
	return fmtMicros(micros(p.Predicted)), fmtRate(p.PredictedIOPS())
}

// writeText prints the calibration and S1's predictions as text tables
// (WriteTables).
func (c *Calibration) writeText(w io.Writer) error {
	fmt.Fprintf(w, "\ncalibration (each command timed alone, in loops of its own, %v each, in turns with S1's cases)\n", c.Each)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tops\tmean (us)\tp50 (us)\tdevice flushes/flush call\t\n", 32, "")
	for _, f := range c.calibrationFigures() {
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s\t\n", 32, "  "+f.What, f.Ops, fmtMicros(micros(f.Mean)), fmtMicros(micros(f.Median)), f.deviceFlushes())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.BlockDevice {
		fmt.Fprintf(w, "  FUA: %s\n", c.FUANote())
	}
	if len(c.Predictions) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nS1 predicted vs measured (%s: the odsync cost tables priced with the calibration alone; error = predicted IOPS / measured - 1;\n  plain is the calibrated write alone, the same command as the case: its error is the noise between two loops)\n", c.Config)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PATTERN\tCASE\tMODEL\tPREDICTED (us)\tMEASURED MEAN (us)\tPREDICTED IOPS\tMEASURED IOPS\tERROR")
	for _, p := range c.Predictions {
		lat, iops := p.predictedText()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Pattern, p.Case, p.Model, lat,
			fmtMicros(micros(p.MeasuredMean)), iops, fmtRate(p.MeasuredIOPS), p.errorText())
	}
	return tw.Flush()
}

// writeMarkdown writes the calibration and S1's predictions as a section
// of report.md.
func (c *Calibration) writeMarkdown(md *strings.Builder) {
	md.WriteString("## Calibration\n\n")
	fmt.Fprintf(md, "Each command timed alone, in loops of its own, %v each, in turns with S1's cases.\n\n", c.Each)
	md.WriteString("| command | ops | mean | p50 | device flushes/flush call |\n|---|---:|---:|---:|---:|\n")
	for _, f := range c.calibrationFigures() {
		fmt.Fprintf(md, "| %s | %d | %s µs | %s µs | %s |\n", cell(f.What), f.Ops, fmtMicros(micros(f.Mean)), fmtMicros(micros(f.Median)), f.deviceFlushes())
	}
	md.WriteString("\n")
	if c.BlockDevice {
		fmt.Fprintf(md, "FUA: %s.\n\n", c.FUANote())
	}
	if len(c.Predictions) == 0 {
		return
	}
	fmt.Fprintf(md, "S1 predicted vs measured (%s): the odsync cost tables priced with the calibration alone; error = predicted IOPS / measured IOPS - 1. "+
		"Plain is the calibrated write alone, the same command as the case: its error is the noise between two loops.\n\n", c.Config)
	md.WriteString("| pattern | case | model | predicted | measured mean | predicted IOPS | measured IOPS | error |\n|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, p := range c.Predictions {
		lat, iops := p.predictedText()
		if lat != "-" {
			lat += " µs"
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s µs | %s | %s | %s |\n", p.Pattern, cell(p.Case), cell(p.Model), lat,
			fmtMicros(micros(p.MeasuredMean)), cell(iops), fmtRate(p.MeasuredIOPS), p.errorText())
	}
	md.WriteString("\n")
}

// The fio reference of a hwbench case, measured in pairs: a fio run of the
// same job for one slice, then the hwbench case for a slice of the same
// length, Config.FIOPairs times (A B A B ...), on the same device.
//
// Why pairs: fio run once after the hwbench case, minutes later on a busy
// machine, gave hwbench/fio ratios from 0.68 to 3.56 within one S1 run.
// Each pair's ratio compares two slices a fraction of a second apart, so
// a neighbour's load falls on both sides of it; the median of the pairs'
// ratios is the figure reported, with their smallest and largest as its
// spread (FIOComparison.Ratio, RatioRange).
//
// Each fio slice is a fio run of its own (time_based for the slice), and
// fio needs about a third of a second to start and stop (here: parsing,
// loading its engines, and a 100 ms wait before the first job starts),
// which is not in its runtime and so not in its figures, but is in the
// wall time of a run: a reference costs FIOPairs x (slice + ~0.35 s) of
// fio, plus FIOPairs slices of hwbench. The hwbench slices of the pairs
// run a fresh copy of the case; they are the comparison's Hwbench, not
// added to the case's own Result, which was measured in turns with the
// other cases of its comparison.

package hwbench

import (
	"context"
	"fmt"
	"time"
)

// fioFailed starts the note left when a fio reference job fails.
const fioFailed = "fio reference failed"

// fioReference measures job under fio in pairs with newCase, a fresh copy
// of the hwbench case hw, and adds the comparison to out. A fio that fails
// costs the comparison and leaves a note, not the run: fio is the
// reference, not the subject (an old version, an option it lacks).
func (e *scenarioEnv) fioReference(ctx context.Context, out *outcome, hw Result, newCase func() (*workload, error), job FIOJob) error {
	if !e.cfg.FIO {
		return nil
	}
	pairs := e.cfg.FIOPairs
	slice := e.cfg.Duration / time.Duration(pairs)
	job.Runtime = slice
	w, err := newCase()
	if err != nil {
		return err
	}
	e.cfg.progress("%s: fio %s and hwbench %s in turns, %d pairs of %v", hw.Scenario, job.Name, hw.Case(), pairs, slice)
	var (
		runs []fioRun
		ps   []FIOPair
	)
	for i := range pairs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s fio reference %q: %w", hw.Scenario, job.Name, err)
		}
		run, err := runFIO(ctx, job)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s fio reference %q: %w", hw.Scenario, job.Name, err)
			}
			out.notes = append(out.notes, fmt.Sprintf("%s: %s %q (pair %d of %d): %v", hw.Scenario, fioFailed, job.Name, i+1, pairs, err))
			return nil
		}
		got, err := w.runSlice(slice)
		if err != nil {
			return err
		}
		runs = append(runs, run)
		ps = append(ps, FIOPair{FIO: run.Rate(), Hwbench: got})
	}
	fr, err := mergeFIORuns(runs)
	if err != nil {
		out.notes = append(out.notes, fmt.Sprintf("%s: %s %q: %v", hw.Scenario, fioFailed, job.Name, err))
		return nil
	}
	hr, err := w.result()
	if err != nil {
		return err
	}
	fr.Scenario, fr.Group, fr.Variant, fr.Role, fr.Threads = hw.Scenario, hw.Group, hw.Variant, "reference", job.numJobs()
	out.add(fr)
	c := FIOComparison{Name: hw.Scenario + " " + hw.Case(), Hwbench: hr, FIO: fr, Pairs: ps}
	out.fio = append(out.fio, c)
	lo, hi := c.RatioRange()
	e.cfg.progress("%s: %s: hwbench/fio %.3f (%.3f-%.3f over %d pairs)", hw.Scenario, job.Name, c.Ratio(), lo, hi, len(ps))
	return nil
}

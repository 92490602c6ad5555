// The fio reference of a hwbench case, measured in pairs: a fio run of the
// same job for one slice, then the hwbench case for a slice of the same
// length, Config.FIOPairs times (A B A B ...), on the same device.
//
// Why pairs: fio run once after the hwbench case, minutes later on a busy
// machine, gave hwbench/fio ratios from 0.68 to 3.56 within one S1 run.
// Each pair's ratio compares two slices a fraction of a second apart, so
// a neighbour's load falls on both sides of it; the median of the pairs'
// ratios is the figure reported, with their spread, smallest and largest
// (FIOComparison.Ratio, Spread, RatioRange). A pair in which both sides ran
// far from their usual rates drifted and is left out; pairs that drifted
// or disagree (noisy) are run again, as many once more, and a ratio still
// noisy or drifted after that is marked not meaningful (fio_compare.go
// says how each is decided).
//
// Each fio slice is a fio run of its own (time_based for the slice), and
// fio needs about a third of a second to start and stop (here: parsing,
// loading its engines, and a 100 ms wait before the first job starts),
// which is not in its runtime and so not in its figures, but is in the
// wall time of a run: a reference costs FIOPairs x (slice + ~0.35 s) of
// fio, plus FIOPairs slices of hwbench, twice that when the pairs are
// run again. The hwbench slices of the pairs run a fresh copy of the case;
// they are the comparison's Hwbench, not added to the case's own Result,
// which was measured in turns with the other cases of its comparison.

package hwbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// fioFailed starts the note left when a fio reference job fails.
const fioFailed = "fio reference failed"

// fioReference measures job under fio in pairs with newCase, a fresh copy
// of the hwbench case hw, and adds the comparison to out; runFIOPairs
// decides how many pairs. A fio that fails costs the comparison and leaves
// a note, not the run: fio is the reference, not the subject (an old
// version, an option it lacks). When hwbench ran more than FIODriftFactor
// times slower or faster in the pairs than in the case's own measurement,
// a note says so: the machine changed between the two.
func (e *scenarioEnv) fioReference(ctx context.Context, out *outcome, hw Result, newCase func() (*workload, error), job FIOJob) error {
	if !e.cfg.FIO {
		return nil
	}
	asked := e.cfg.FIOPairs
	slice := e.cfg.Duration / time.Duration(asked)
	job.Runtime = slice
	w, err := newCase()
	if err != nil {
		return err
	}
	e.cfg.progress("%s: fio %s and hwbench %s in turns, %d pairs of %v", hw.Scenario, job.Name, hw.Case(), asked, slice)
	var runs []fioRun
	pair := func(i int) (FIOPair, error) {
		run, err := runFIO(ctx, job)
		if err != nil {
			if ctx.Err() != nil {
				return FIOPair{}, err
			}
			return FIOPair{}, &fioPairError{pair: i, err: err}
		}
		got, err := w.runSlice(slice)
		if err != nil {
			return FIOPair{}, err
		}
		runs = append(runs, run)
		return FIOPair{FIO: run.Rate(), Hwbench: got}, nil
	}
	rerun := func(first FIOComparison) {
		e.cfg.progress("%s: %s: %s after %d pairs (%s); running %d more pairs", hw.Scenario, job.Name,
			strings.Join(first.problems(), ", "), asked, fioPairsSummary(first), asked)
	}
	c, err := runFIOPairs(ctx, asked, pair, rerun)
	if err != nil {
		var pe *fioPairError
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s fio reference %q: %w", hw.Scenario, job.Name, err)
		case errors.As(err, &pe):
			of := asked
			if pe.pair >= asked {
				of = 2 * asked // in the rerun
			}
			out.notes = append(out.notes, fmt.Sprintf("%s: %s %q (pair %d of %d): %v", hw.Scenario, fioFailed, job.Name, pe.pair+1, of, pe.err))
			return nil
		}
		return err
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
	c.Name, c.Hwbench, c.FIO = hw.Scenario+" "+hw.Case(), hr, fr
	out.fio = append(out.fio, c)
	e.cfg.progress("%s: %s: hwbench/fio %.3f, %s: %s", hw.Scenario, job.Name, c.Ratio(), fioPairsSummary(c), c.Verdict())
	if note := caseDriftNote(hw, hr); note != "" {
		e.cfg.progress("%s", note)
		out.notes = append(out.notes, note)
	}
	return nil
}

// fioPairError is a fio run that failed in pair index pair (from 0).
type fioPairError struct {
	pair int
	err  error
}

func (e *fioPairError) Error() string { return fmt.Sprintf("pair %d: %v", e.pair+1, e.err) }
func (e *fioPairError) Unwrap() error { return e.err }

// runFIOPairs runs the pairs of a fio reference: asked pairs from pair
// (called with each pair's index from 0), then, if they drifted, are noisy
// or too few are kept (FIOComparison.Meaningful), asked pairs more, once,
// after telling rerun what the first ones were. It returns the pairs as a
// comparison with Pairs and Asked set, or the first error (a cancelled
// ctx's among them) with the pairs run until then.
func runFIOPairs(ctx context.Context, asked int, pair func(i int) (FIOPair, error), rerun func(first FIOComparison)) (FIOComparison, error) {
	c := FIOComparison{Asked: asked}
	more := func(n int) error {
		for range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, err := pair(len(c.Pairs))
			if err != nil {
				return err
			}
			c.Pairs = append(c.Pairs, p)
		}
		return nil
	}
	if err := more(asked); err != nil {
		return c, err
	}
	if c.needsRerun() {
		if rerun != nil {
			rerun(c)
		}
		if err := more(asked); err != nil {
			return c, err
		}
	}
	return c, nil
}

// fioPairsSummary is the spread and pairs of c in a few words, for the
// progress lines: "spread 3.1 %, range 0.950-1.100, 5 pairs, 0 drifted",
// with "5+5 pairs" after a rerun and the drifted pairs' numbers (from 1):
// "2 drifted (2, 4)".
func fioPairsSummary(c FIOComparison) string {
	lo, hi := c.RatioRange()
	s := fmt.Sprintf("spread %s, range %.3f-%.3f, %s pairs, %d drifted", fmtSpread(c.Spread()), lo, hi, fioPairCount(c), c.Drifted())
	if ds := c.DriftedPairs(); len(ds) > 0 {
		nums := make([]string, len(ds))
		for i, d := range ds {
			nums[i] = strconv.Itoa(d + 1)
		}
		s += " (" + strings.Join(nums, ", ") + ")"
	}
	return s
}

// fioPairCount is how many pairs c ran: "5", or "5+5" when Asked were run
// again.
func fioPairCount(c FIOComparison) string {
	if c.Reran() {
		return fmt.Sprintf("%d+%d", c.Asked, len(c.Pairs)-c.Asked)
	}
	return fmt.Sprint(len(c.Pairs))
}

// fmtSpread prints a Spread as a percentage: "3.1 %", "-" when unknown
// (too few pairs), "inf %" when one side did nothing.
func fmtSpread(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case math.IsInf(s, 1):
		return "inf %"
	}
	return fmt.Sprintf("%.1f %%", s*100)
}

// caseDriftNote is a note when hwbench's rate in the pairs (pairs) is more
// than FIODriftFactor times away from its rate in the case's own
// measurement (hw), else "". The pairs compare like with like either way;
// the note says that the case's table and its fio reference were measured
// on a machine that had changed in between.
func caseDriftNote(hw, pairs Result) string {
	h, p := hw.IOPS(), pairs.IOPS()
	if h <= 0 || p <= 0 {
		return ""
	}
	var how string
	switch {
	case p < h/FIODriftFactor:
		how = fmt.Sprintf("%.1fx slower", h/p)
	case p > h*FIODriftFactor:
		how = fmt.Sprintf("%.1fx faster", p/h)
	default:
		return ""
	}
	return fmt.Sprintf("%s: %s: hwbench ran %s in its fio pairs (%s IOPS) than in the case's own measurement (%s IOPS): "+
		"the machine changed between the two; the hwbench/fio ratio holds for the pairs, not for the case's figures in its table",
		hw.Scenario, hw.Case(), how, fmtRate(p), fmtRate(h))
}

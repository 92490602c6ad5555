// How long a run takes, said before it starts. A case runs for
// Config.Duration in all, in slices; a fio reference (scenario_fio.go)
// runs Config.FIOPairs fio slices and as many hwbench slices, Duration of
// each in all, and fio costs about fioStart more per slice to start and
// stop; a noisy or drifted reference runs its pairs once more at most.
// Setting up a target, the calibration and writing the report are not
// counted: they take seconds.

package hwbench

import (
	"fmt"
	"strings"
	"time"
)

// fioStart is what one fio process costs beyond its runtime (about a
// third of a second here, measured: parsing, loading its engines, and a
// 100 ms wait before the first job starts).
const fioStart = 350 * time.Millisecond

// Plan is what a run of a Config on one target will take.
type Plan struct {
	// Cases is the hwbench cases measured, each for Duration.
	Cases int
	// FIORefs is the fio references, each FIOPairs pairs of slices.
	FIORefs int
	// Duration and FIOPairs are the Config's, with defaults applied.
	Duration time.Duration
	FIOPairs int
	// Total is the time the cases and references take if no reference is
	// rerun; Max if every reference is.
	Total, Max time.Duration
	// Scenarios is a line per scenario: its cases and time.
	Scenarios []string
}

// scenarioShape is the cases and fio references of a scenario under c.
func (c Config) scenarioShape(s string) (cases, refs int) {
	switch s {
	case "S1":
		// seq and random, three ways each, and the calibration's three
		// loops for each in turns with them; fio for each case
		cases, refs = 12, 6
	case "S2":
		cases, refs = 5, 1 // one writer and four policies; fio for the baseline
		if c.Think != 0 {
			cases += 4 // the policies again, with the pause
		}
	case "S3":
		cases = 2
	case "S4":
		cases = 4
	}
	return cases, refs
}

// Plan says what a run of c will take, with fio references if fio is set
// (and c.FIO asks for them). c must validate.
func (c Config) Plan(fio bool) Plan {
	d := c.withDefaults()
	p := Plan{Duration: d.Duration, FIOPairs: d.FIOPairs}
	fio = fio && c.FIO
	refCost := 2*d.Duration + time.Duration(d.FIOPairs)*fioStart
	for _, s := range d.Scenarios {
		cases, refs := d.scenarioShape(s)
		if !fio {
			refs = 0
		}
		p.Cases += cases
		p.FIORefs += refs
		t := time.Duration(cases)*d.Duration + time.Duration(refs)*refCost
		line := fmt.Sprintf("%s: %d cases x %v", s, cases, d.Duration)
		if refs > 0 {
			line += fmt.Sprintf(", %d fio references x %d pairs", refs, d.FIOPairs)
		}
		p.Scenarios = append(p.Scenarios, fmt.Sprintf("%s: %v", line, t.Round(100*time.Millisecond)))
		p.Total += t
	}
	p.Max = p.Total + time.Duration(p.FIORefs)*refCost
	return p
}

// String is the plan in a line: "12 cases and 7 fio references: about
// 1m10s (at most 1m40s if every fio reference is rerun)".
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases of %v", p.Cases, p.Duration)
	if p.FIORefs > 0 {
		fmt.Fprintf(&b, " and %d fio references of %d pairs", p.FIORefs, p.FIOPairs)
	}
	fmt.Fprintf(&b, ": about %v", p.Total.Round(time.Second))
	if p.Max > p.Total {
		fmt.Fprintf(&b, " (at most %v if every fio reference is rerun)", p.Max.Round(time.Second))
	}
	return b.String()
}

// durationForBudget is the longest Duration (per case, to the
// millisecond) with which a run of c fits in budget even if every fio
// reference is rerun, or an error if not even the shortest Duration does.
// The plan's length grows with Duration (the default fio pairs with it),
// so a binary search finds it.
func (c Config) durationForBudget(budget time.Duration, fio bool) (time.Duration, error) {
	maxFor := func(d time.Duration) time.Duration {
		probe := c
		probe.Budget, probe.Duration = 0, d
		return probe.Plan(fio).Max
	}
	if m := maxFor(minDuration); m > budget {
		p := c
		p.Budget, p.Duration = 0, minDuration
		plan := p.Plan(fio)
		if fio && plan.FIORefs > 0 && time.Duration(2*plan.FIORefs*plan.FIOPairs)*fioStart >= budget {
			return 0, fmt.Errorf("hwbench: a budget of %v does not cover fio's start-up alone (%d fio runs of about %v): give more, or -fio=false", budget, 2*plan.FIORefs*plan.FIOPairs, fioStart)
		}
		return 0, fmt.Errorf("hwbench: a budget of %v is too small: the run takes up to %v with the shortest duration per case (%v; %v)", budget, m.Round(time.Millisecond), minDuration, plan)
	}
	lo, hi := minDuration/time.Millisecond, maxDuration/time.Millisecond // in ms; maxFor(lo) fits
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if maxFor(mid*time.Millisecond) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * time.Millisecond, nil
}

// resolve is c as a run uses it: no fio references without fio, the
// duration a budget gives, and the defaults. c must validate.
func (c Config) resolve(hasFIO bool) (Config, error) {
	c.FIO = c.FIO && hasFIO
	if c.Budget > 0 {
		d, err := c.durationForBudget(c.Budget, c.FIO)
		if err != nil {
			return c, err
		}
		if c.Slice > d {
			return c, fieldError("Slice", "is %v, longer than the %v per case that the budget of %v gives", c.Slice, d, c.Budget)
		}
		c.Duration = d
	}
	return c.withDefaults(), nil
}

// PlanRun is the plan of a run of c here: fio references where fio is
// installed, and the duration that c.Budget gives, if set.
func (c Config) PlanRun() (Plan, error) {
	if err := c.Validate(); err != nil {
		return Plan{}, err
	}
	_, hasFIO := FIOPath()
	r, err := c.resolve(hasFIO)
	if err != nil {
		return Plan{}, err
	}
	return r.Plan(r.FIO), nil
}

package diocount

import (
	"fmt"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"io"
	"text/tabwriter"
)

// Cost is what one direct write costs on i_dio_count, the cache line
// that every direct I/O to the inode shares (the patch measured the
// difference with 38 threads on two files on NVDIMM: +17.1 % read-only
// bandwidth).
type Cost struct {
	Variant Variant
	Kind    Kind
	Begins  int // inode_dio_begin: atomic_inc
	Ends    int // inode_dio_end: atomic_dec_and_test, fully ordered
	Paths   int // schedules of the write that were followed; they all agree
}

// RMWs is the number of read-modify-writes of the counter.
func (c Cost) RMWs() int { return c.Begins + c.Ends }

// CostOf counts the counter's read-modify-writes for one direct
// write of kind k under variant v. It follows every schedule of a single
// writer doing one write (the device's steps interleave with the writer's
// for AIO), without truncate, and counts the steps that change the
// counter's newest value by +1 and by -1. Every schedule must give the same
// counts, end with the counter at 0, and agree with the steps' own
// Op.CounterRMW.
func CostOf(v Variant, k Kind) (Cost, error) {
	cost := Cost{Variant: v, Kind: k}
	sys, err := NewSystem(Config{Variant: v, Memory: memory.SC, Writers: []Kind{k}, IOs: 1, NoTruncate: true})
	if err != nil {
		return cost, err
	}
	first := true
	var follow func(s State, begins, ends, depth int) error
	follow = func(s State, begins, ends, depth int) error {
		if err := sys.Check(s); err != nil {
			return err
		}
		if depth > 100 {
			return fmt.Errorf("a schedule of one direct write is longer than 100 steps")
		}
		steps := 0
		var stepErr error
		sys.Next(s, func(l explore.Label, t State) {
			steps++
			if stepErr != nil {
				return
			}
			delta := int(t.mem.Newest(locCount)) - int(s.mem.Newest(locCount))
			if want := Op(l.Kind).CounterRMW(); delta != want {
				stepErr = fmt.Errorf("step %q changes i_dio_count by %d, its op says %d", sys.Describe(l), delta, want)
				return
			}
			b, e := begins, ends
			switch delta {
			case 1:
				b++
			case -1:
				e++
			}
			stepErr = follow(t, b, e, depth+1)
		})
		if stepErr != nil || steps > 0 {
			return stepErr
		}
		if !sys.Done(s) || s.mem.Newest(locCount) != 0 {
			return fmt.Errorf("a schedule stops before the direct write is done")
		}
		cost.Paths++
		if first {
			cost.Begins, cost.Ends, first = begins, ends, false
		} else if begins != cost.Begins || ends != cost.Ends {
			return fmt.Errorf("schedules disagree: %d+%d and %d+%d read-modify-writes", cost.Begins, cost.Ends, begins, ends)
		}
		return nil
	}
	if err := follow(sys.Init()[0], 0, 0, 0); err != nil {
		return cost, fmt.Errorf("diocount cost of %v %v: %w", v, k, err)
	}
	return cost, nil
}

// Costs is CostOf for every variant and kind.
func Costs() ([]Cost, error) {
	var out []Cost
	for _, v := range Variants() {
		for _, k := range Kinds() {
			c, err := CostOf(v, k)
			if err != nil {
				return out, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// WriteCosts writes the cost table: per variant and kind, the
// read-modify-writes of i_dio_count per direct write, and the difference
// from the baseline.
func WriteCosts(w io.Writer) error {
	costs, err := Costs()
	if err != nil {
		return err
	}
	base := map[Kind]int{}
	for _, c := range costs {
		if c.Variant == Baseline {
			base[c.Kind] = c.RMWs()
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tI/O\tinode_dio_begin (atomic_inc)\tinode_dio_end (atomic_dec_and_test)\tRMWs PER I/O\tVS BASELINE\tSCHEDULES")
	for _, c := range costs {
		vs := "="
		if d := c.RMWs() - base[c.Kind]; d != 0 {
			vs = fmt.Sprintf("%+d (%+.0f%%)", d, 100*float64(d)/float64(base[c.Kind]))
		}
		fmt.Fprintf(tw, "%v\t%v\t%d\t%d\t%d\t%s\t%d\n", c.Variant, c.Kind, c.Begins, c.Ends, c.RMWs(), vs, c.Paths)
	}
	return tw.Flush()
}

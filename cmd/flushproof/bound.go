package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/verdict"
)

// boundFlags are check's -tasks and -ops: the bound of tasks x operations
// per task that the rows of the protocols that take one are explored at
// instead of their own (verdict.Bound).
type boundFlags struct {
	tasks, ops *int
}

func addBoundFlags(fs *flag.FlagSet) boundFlags {
	var takesT, takesO, not []string
	for _, p := range model.Protocols() {
		b := p.Bound
		if b == nil {
			not = append(not, p.Name)
			continue
		}
		takesT = append(takesT, fmt.Sprintf("%s %d to %d %s%s", p.Name, b.Tasks.Min, b.Tasks.Max, verdict.Plural(2, b.Task), fixed(b)))
		o := fmt.Sprintf("%s %d to %d %s", p.Name, b.Ops.Min, b.Ops.Max, verdict.Plural(2, b.Op))
		if b.Limit != "" {
			o += " (" + b.Limit + ")"
		}
		takesO = append(takesO, o)
	}
	return boundFlags{
		tasks: fs.Int("tasks", 0, fmt.Sprintf("with -ops: explore the built-in rows at `N` tasks x M operations per task instead of their own bounds, each named after it (\"3 tasks x 3 fsyncs\"): "+
			"%s. -proof and -long add their configurations at that bound. The rows of %s are left out: their bounds are not tasks x operations, and taking one would need changes to their models. Refused with FILEs",
			strings.Join(takesT, ", "), strings.Join(not, ", "))),
		ops: fs.Int("ops", 0, fmt.Sprintf("with -tasks: the `M` operations per task of the bound, each protocol's own: %s", strings.Join(takesO, ", "))),
	}
}

// given reports whether -tasks or -ops was given (fs parsed).
func (b boundFlags) given(fs *flag.FlagSet) (tasks, ops bool) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "tasks":
			tasks = true
		case "ops":
			ops = true
		}
	})
	return tasks, ops
}

// flagRange is the widest range of the protocols' for -tasks or -ops.
func flagRange(of func(*verdict.Bound) verdict.Range) verdict.Range {
	r := verdict.Range{Min: int(^uint(0) >> 1)}
	for _, p := range model.Protocols() {
		if p.Bound != nil {
			pr := of(p.Bound)
			r.Min, r.Max = min(r.Min, pr.Min), max(r.Max, pr.Max)
		}
	}
	return r
}

// boundRows lists the rows at tasks x ops that -run selects (filter, nil
// for all), the configurations of -proof and -long included when set.
// Every value a selected row cannot take is refused with a message that
// names the flag and the range, or the row (exit status 2); the rows of
// the protocols that take no such bound and that -run selects by their
// own names are left out, with a note on stderr. It returns the exit
// status, or -1 to go on.
func boundRows(tasks, ops int, proof, long bool, filter *regexp.Regexp, stderr io.Writer) ([]verdict.Row, int) {
	tr := flagRange(func(b *verdict.Bound) verdict.Range { return b.Tasks })
	or := flagRange(func(b *verdict.Bound) verdict.Range { return b.Ops })
	if code := usageError(stderr, "check", flagcheck.IntIn("tasks", tasks, tr.Min, tr.Max), flagcheck.IntIn("ops", ops, or.Min, or.Max)); code >= 0 {
		return nil, code
	}
	match := func(r verdict.Row) bool { return filter == nil || filter.MatchString(r.Name()) }
	var selected []verdict.Row
	var refused, notes []string
	for _, g := range model.AtBound(tasks, ops, proof, long) {
		p := g.Protocol
		if p.Bound == nil {
			n := 0
			for _, r := range model.ProtocolRows(p, proof, long) {
				if match(r) {
					n++
				}
			}
			if n > 0 {
				notes = append(notes, fmt.Sprintf("flushproof check: -tasks and -ops: left out %s's %d %s, whose bound is not tasks x operations: %s", p.Name, n, verdict.Plural(n, "row"), p.NoBound))
			}
			continue
		}
		var mine []verdict.Row
		for _, r := range g.Rows {
			if match(r) {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		b := p.Bound
		rows := fmt.Sprintf("-run selects %d of its rows (it can leave them out)", len(mine))
		switch {
		case !b.Tasks.Has(tasks):
			refused = append(refused, fmt.Sprintf("-tasks %d: %s takes %d to %d %s%s, and %s",
				tasks, p.Name, b.Tasks.Min, b.Tasks.Max, verdict.Plural(2, b.Task), fixed(b), rows))
			continue
		case !b.Ops.Has(ops):
			refused = append(refused, fmt.Sprintf("-ops %d: %s takes %d to %d %s per %s, and %s",
				ops, p.Name, b.Ops.Min, b.Ops.Max, verdict.Plural(2, b.Op), b.Task, rows))
			continue
		}
		var unfit []verdict.Row
		for _, r := range mine {
			if r.Unfit != nil {
				unfit = append(unfit, r)
			}
		}
		if len(unfit) > 0 {
			more := ""
			if len(unfit) > 1 {
				more = fmt.Sprintf(", and %d more %s of %s", len(unfit)-1, verdict.Plural(len(unfit)-1, "row"), p.Name)
			}
			refused = append(refused, fmt.Sprintf("-tasks %d -ops %d: row %q cannot take this bound: %v%s (%s; -run can leave them out)",
				tasks, ops, unfit[0].Name(), unfit[0].Unfit, more, b.Limit))
			continue
		}
		selected = append(selected, mine...)
	}
	if len(refused) > 0 {
		for _, s := range refused {
			fmt.Fprintf(stderr, "flushproof check: %s\n", s)
		}
		return nil, exitUsage
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, n)
	}
	return selected, -1
}

// fixed is what else a protocol's bound has, for a message: "" or " (each
// write() of 2 blocks)".
func fixed(b *verdict.Bound) string {
	if b.Fixed == "" {
		return ""
	}
	return " (" + b.Fixed + ")"
}

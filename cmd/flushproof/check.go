package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/flushproof/flushproof/model"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxStates := fs.Int("max-states", 0, "state budget per search (0 = none); a search cut short is reported UNKNOWN")
	only := fs.String("run", "", "only check the rows whose \"model config\" matches this regular expression")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	proof := fs.Bool("proof", false, "also explore the xfs flush-sequence protocol at 3 tasks x 2 fsyncs and O_DSYNC with two writers and background write-back (tens of seconds, gigabytes)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof check [flags]\n\nExplores every model at its bound; exit status 1 if a verdict is not the expected one\n(a real model UNSAFE, or a negative control not caught).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flushproof check: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *maxStates < 0 {
		fmt.Fprintf(stderr, "flushproof check: -max-states must be >= 0, got %d\n", *maxStates)
		return 2
	}
	var filter *regexp.Regexp
	if *only != "" {
		var err error
		if filter, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "flushproof check: bad -run pattern: %v\n", err)
			return 2
		}
	}
	opt := model.Options{MaxStates: *maxStates, Liveness: true}
	var report func(string) func(model.Stats)
	if !*quiet {
		report = progress(stderr)
	}
	verdicts, err := checks(opt, filter, report, *proof)
	if err != nil {
		fmt.Fprintf(stderr, "flushproof check: %v\n", err)
		return 2
	}
	if len(verdicts) == 0 {
		fmt.Fprintf(stderr, "flushproof check: no model matches -run %q\n", *only)
		return 2
	}
	printTable(stdout, verdicts)
	for _, v := range verdicts {
		if !v.Expected() {
			return 1
		}
	}
	return 0
}

// row is one line of the table: its name (what -run matches) and how to
// compute it.
type row struct {
	name  string
	check func(model.Options) (model.Verdict, error)
}

// rows lists every registered model. Later protocols add their rows here.
func rows(proof bool) []row {
	var out []row
	for _, w := range deviceWorkloads() {
		out = append(out, row{w.Bug.String() + " " + w.Config.String(),
			func(o model.Options) (model.Verdict, error) { return model.DeviceVerdict(w, o) }})
	}
	fsync := model.FsyncChecks()
	if proof {
		fsync = append(fsync, model.FsyncProofChecks()...)
	}
	for _, c := range fsync {
		out = append(out, row{fmt.Sprintf("xfs-flushseq %s %s %s", c.Variant, c.Memory, c.Describe()),
			func(o model.Options) (model.Verdict, error) { return model.FsyncVerdict(c, o) }})
	}
	odsync := model.ODSyncRows()
	if proof {
		for _, c := range model.ODSyncProofChecks() {
			odsync = append(odsync, model.Row{Name: model.ODSyncRowName(c),
				Check: func(o model.Options) (model.Verdict, error) { return model.ODSyncVerdict(c, o) }})
		}
	}
	for _, rs := range [][]model.Row{odsync, model.IOWQRows(), model.DIOCountRows()} {
		for _, r := range rs {
			out = append(out, row{r.Name, r.Check})
		}
	}
	return out
}

// checks runs the rows that filter selects; report, if set, gives the
// progress callback for a row.
func checks(opt model.Options, filter *regexp.Regexp, report func(string) func(model.Stats), proof bool) ([]model.Verdict, error) {
	var out []model.Verdict
	for _, r := range rows(proof) {
		if filter != nil && !filter.MatchString(r.name) {
			continue
		}
		if report != nil {
			opt.Progress = report(r.name)
		}
		v, err := r.check(opt)
		if err != nil {
			return out, fmt.Errorf("%s: %w", r.name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func deviceWorkloads() []model.DeviceWorkload {
	var ws []model.DeviceWorkload
	for _, pair := range model.DeviceChecks() {
		ws = append(ws, model.StandardDeviceWorkload(pair.Config, pair.Bug))
	}
	return ws
}

func printTable(w io.Writer, vs []model.Verdict) {
	model.WriteVerdictTable(w, vs)
	for _, v := range vs {
		if v.Violation == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s on %s (%s): UNSAFE, shortest counterexample (%d steps; model.Replay follows it again):\n", v.Model, v.Config, v.Bound, len(v.Violation.Path))
		fmt.Fprint(w, indent(v.Violation.Timeline()))
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// progress prints a line on stderr about once a second during long searches:
// rewritten in place on a terminal, one line each otherwise.
func progress(stderr io.Writer) func(string) func(model.Stats) {
	end := "\n"
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			end = "\r"
		}
	}
	return func(name string) func(model.Stats) {
		return func(s model.Stats) {
			fmt.Fprintf(stderr, "flushproof: %s: %d states, %d transitions, depth %d, %.0f states/s%s",
				name, s.States, s.Transitions, s.MaxDepth, s.PerSecond(), end)
		}
	}
}

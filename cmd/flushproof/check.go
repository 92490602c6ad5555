package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/internal/patchapply"
	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxStates := fs.Int("max-states", 0, "state budget per search, 0 to 2147483647 (0 = none); a search cut short is reported UNKNOWN (state budget)")
	var maxMem memoryFlag
	fs.Var(&maxMem, "max-memory", "stop a search before the memory in use would pass this `size` (2GiB, 512MiB...; 0 = no limit, else at least 16MiB): its row is UNKNOWN (memory) and the next row runs.\nDefault: 3/4 of the smallest of physical memory, the cgroup's limit and ulimit -v (less the Go runtime's reservations); never above GOMEMLIMIT")
	only := fs.String("run", "", "only check the rows whose name (\"model config bound\", the table's first column) matches this `regexp`")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	jsonOut := fs.Bool("json", false, "print JSON Lines instead of the table: a check.row object per row as it ends, then a check.summary (docs/cli.md)")
	noReduce := fs.Bool("no-reduce", false, "explore without any state reduction (symmetry, normalisation): every verdict and counterexample length must be the same, with more states")
	long := fs.Bool("long", false, "also explore impl.Syncer and impl.FlushSeq at 3 tasks x 2 operations with flush EIO in the model world, beside the flush sequence's state machine at that bound (47 rows; measured before WaitQueue.Wake was a scheduling point at about 81 minutes and 14 GiB here, and now far more: the Syncer's policies grew 18 to 204 times at 3 tasks x 1 sync, docs/world.md; pick rows with -run)")
	models := fs.String("model", "", "with FILEs: the memory `models` to check each file under, comma-separated: sc, tso, relaxed, lkmm, or all (default: the file's Models: line, else sc,tso,lkmm)")
	devices := fs.String("device", "", "with FILEs: the device `configs` to check, comma-separated (cache+fua, cache+emulated-fua, no-cache) or all; overrides each file's Device: line")
	failures := fs.String("failures", "", "with FILEs: which commands may fail with EIO (none, flush, write, flush,write); overrides each file's Failures: line")
	crash := fs.String("crash", "", "with FILEs: where the machine crashes (any, end, none); overrides each file's Crash: line")
	obligations := fs.Bool("obligations", false, "under each row, the states that judged each of its obligations (assertions, final condition, acknowledged writes); an obligation no state judged is listed after the table either way")
	noJudge := fs.Bool("no-judge", false, "do not count the states that judge each obligation (one more pass over each search's states): a SAFE whose assertions no state reached then goes unnoticed")
	var patches []string
	fs.Func("patch", "with FILEs: apply this unified diff (diff -u, git diff, a mailing list's patch) to the FILE it names before checking it, in memory (the file is not written); repeat for a series, applied in order. A hunk is placed as patch places it (offset, up to 2 lines of fuzz) or refused; the rows' model names gain +PATCH", func(s string) error {
		patches = append(patches, s)
		return nil
	})
	proof := fs.Bool("proof", false, "also explore the xfs flush-sequence protocol at 3 tasks x 2 fsyncs and O_DSYNC with two writers and background write-back (383 rows: about 7 minutes and 7 GiB here, a quarter of it impl.Submitter's parallel sub-block negative control)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: flushproof check [flags] [FILE...]

Explores every model at its bound and prints its row as soon as its search ends,
then the counterexamples and a summary line. With FILEs, checks those durability
litmus files instead (docs/own-patch.md): one row per memory model and device. Exit status: 0 every verdict as
expected, 1 a verdict not the expected one (a real model UNSAFE, or a negative
control not caught), 2 bad usage, 3 a search failed (an ERROR row), 4 some rows
UNKNOWN (a state or memory budget) and nothing else wrong, 130/143 interrupted
by SIGINT/SIGTERM (the finished rows are printed). See docs/cli.md.

flags:
`)
		fs.PrintDefaults()
		if m, rule := defaultMaxMemory(); m > 0 {
			fmt.Fprintf(stderr, "\n-max-memory defaults to %s here (%s).\n", formatBytes(m), rule)
		}
	}
	prof := addProfileFlags(fs)
	bf := addBoundFlags(fs)
	files, code := parseFlagsFiles(fs, args)
	if code >= 0 {
		return code
	}
	stopProfile, ok := prof.start(stderr, "check")
	if !ok {
		return exitUsage
	}
	defer stopProfile()
	if code := usageError(stderr, "check", flagcheck.IntIn("max-states", *maxStates, 0, math.MaxInt32)); code >= 0 {
		return code
	}
	var filter *regexp.Regexp
	if *only != "" {
		var err error
		if filter, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "flushproof check: -run must be a regular expression (RE2 syntax): %v\n", err)
			return exitUsage
		}
	}
	all := model.Rows(*proof, *long)
	tasksGiven, opsGiven := bf.given(fs)
	atBound := tasksGiven || opsGiven
	if atBound && tasksGiven != opsGiven {
		fmt.Fprintf(stderr, "flushproof check: -tasks and -ops go together: the bound is tasks x operations per task, give both (each row's own bound is used without either)\n")
		return exitUsage
	}
	if len(files) > 0 {
		if *proof || *long {
			fmt.Fprintf(stderr, "flushproof check: -proof and -long choose built-in rows; with FILEs the files are the rows\n")
			return exitUsage
		}
		if atBound {
			fmt.Fprintf(stderr, "flushproof check: -tasks and -ops set the bound of built-in rows; with FILEs the files' threads are the tasks\n")
			return exitUsage
		}
		if all, code = fileRows(files, fileOptions{*models, *devices, *failures, *crash, patches}, stderr); code >= 0 {
			return code
		}
	} else if *models != "" || *devices != "" || *failures != "" || *crash != "" || len(patches) > 0 {
		fmt.Fprintf(stderr, "flushproof check: -model, -device, -failures, -crash and -patch apply to FILEs, and none was given\n")
		return exitUsage
	}
	var selected []verdict.Row
	if atBound && len(files) == 0 {
		if selected, code = boundRows(*bf.tasks, *bf.ops, *proof, *long, filter, stderr); code >= 0 {
			return code
		}
	} else {
		for _, r := range all {
			if filter == nil || filter.MatchString(r.Name()) {
				selected = append(selected, r)
			}
		}
	}
	if len(selected) == 0 {
		hint := ""
		if atBound {
			hint = fmt.Sprintf(" at -tasks %d -ops %d (the rows' names have that bound, e.g. \"%d tasks x %d fsyncs\", and only protocols with a bound of tasks x operations have rows)", *bf.tasks, *bf.ops, *bf.tasks, *bf.ops)
		}
		fmt.Fprintf(stderr, "flushproof check: no row matches -run %q%s\n", *only, hint)
		return exitUsage
	}

	limit, rule := maxMem.bytes, "-max-memory"
	if !maxMem.set {
		limit, rule = defaultMaxMemory()
	} else if g := goMemLimit(); g > 0 && (limit == 0 || limit > g) {
		fmt.Fprintf(stderr, "flushproof check: -max-memory %s is above GOMEMLIMIT (%s): using GOMEMLIMIT\n", maxMem.String(), formatBytes(g))
		limit, rule = g, "GOMEMLIMIT"
	} else if m, what := machineMemory(); limit > m && m > 0 {
		fmt.Fprintf(stderr, "flushproof check: -max-memory %s is above %s (%s): the process may be killed before a search stops\n", maxMem.String(), what, formatBytes(m))
	}
	prev := debug.SetMemoryLimit(-1)
	if limit > 0 {
		// The garbage collector then works harder near the limit instead of
		// letting garbage push the heap over it.
		debug.SetMemoryLimit(limit)
	}
	defer debug.SetMemoryLimit(prev)

	in := catchInterrupts(stderr, true)
	defer in.release()
	as := watchAddressSpace()
	stop := func() string {
		if why := in.stop(); why != "" {
			return why
		}
		if as.short() {
			return explore.StopMemory
		}
		return ""
	}
	c := &checkRun{
		opt:         explore.Options{MaxStates: *maxStates, MaxMemory: limit, Liveness: true, Stop: stop, NoReduce: *noReduce, Obligations: !*noJudge},
		json:        *jsonOut,
		obligations: *obligations,
		intr:        in,
		limit:       limit,
		rule:        rule,
	}
	if !*quiet {
		c.progress = newProgressLine(stderr)
	}
	return c.run(selected, stdout, stderr)
}

// checkRun is one run of `flushproof check`.
type checkRun struct {
	opt         explore.Options
	json        bool
	obligations bool          // -obligations: each row's counts under it
	progress    *progressLine // nil with -q
	intr        *interrupts
	limit       int64  // -max-memory in effect, 0 = none
	rule        string // where it comes from
}

// freeAbove is how much memory a finished search may leave held before it
// is given back: a quarter of the limit, or 1 GiB without one.
func (c *checkRun) freeAbove() int64 {
	if c.limit > 0 {
		return c.limit / 4
	}
	return 1 << 30
}

// finished is a row whose search ended: its verdict, or the error or panic
// that ended it.
type finished struct {
	name string
	v    verdict.Verdict
	err  error
}

// run checks the rows one after the other, printing each as it ends, then
// the counterexamples, the errors and the summary; it returns the exit
// status.
func (c *checkRun) run(rows []verdict.Row, stdout, stderr io.Writer) int {
	start := time.Now()
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name()
	}
	table := verdict.NewTable(stdout, names)
	enc := jsonLines(stdout)
	if !c.json {
		table.WriteHeader()
	}
	var (
		done []finished
		t    tally
	)
	for _, r := range rows {
		if c.intr.stop() != "" {
			break
		}
		opt := c.opt
		if c.progress != nil {
			opt.Progress = c.progress.report(r.Name())
		}
		v, err := checkRow(r, opt, stderr)
		c.progress.clear()
		done = append(done, finished{r.Name(), v, err})
		t.add(v, err)
		if c.json {
			enc.Encode(verdict.NewRecord(r.Name(), v, err))
		} else {
			table.WriteRow(r.Name(), v, err)
			if c.obligations && err == nil {
				if len(v.Judged) > 0 && v.Outcome != verdict.Safe {
					fmt.Fprintf(stdout, "    (among the states found before the search ended)\n")
				}
				for _, j := range v.Judged {
					fmt.Fprintf(stdout, "    %s\n", j)
				}
			}
		}
		// Give a large search's memory back before the next one grows its
		// own. A small one's is left to be reused: returning it after
		// every row makes the whole table 50% slower (page faults, and a
		// garbage collector that starts again from a small heap).
		if heldBytes() > c.freeAbove() {
			debug.FreeOSMemory()
		}
		if v.Outcome == verdict.Unknown && v.Unknown == interruptReason {
			break
		}
	}
	code := t.exitCode()
	if ic := c.intr.exitCode(); ic != 0 {
		code = ic
	}
	s := checkSummary{Kind: "check.summary", Schema: 1, Rows: t.rows, Selected: len(rows),
		Safe: t.safe, UnsafeExpected: t.unsafeExpected, Unexpected: t.unexpected, Unknown: t.unknown, Errors: t.errors, NotApplicable: t.notApplicable,
		Vacuous:     t.vacuous,
		Interrupted: c.intr.signal() != nil, Signal: c.intr.signalName(),
		ElapsedNS: int64(time.Since(start)), PeakMemoryBytes: peakRSS(), MaxMemoryBytes: c.limit, NoReduce: c.opt.NoReduce, ExitCode: code}
	if c.json {
		enc.Encode(s)
		return code
	}
	for _, f := range done {
		if v := f.v; f.err == nil && v.Violation != nil {
			again := ""
			if v.Unreduced {
				again = "; found again without the symmetry reduction, which could not rebuild it"
			}
			fmt.Fprintf(stdout, "\n%s: %s, shortest counterexample (%d steps; explore.Replay follows it again%s):\n",
				v.Name(), v.Result(), len(v.Violation.Path), again)
			fmt.Fprint(stdout, indent(v.Violation.Timeline()))
		}
	}
	for _, f := range done {
		if f.err == nil {
			if text := vacuityText(f.v); text != "" {
				fmt.Fprintf(stdout, "\n%s: %s\n", f.name, text)
			}
		}
	}
	for _, f := range done {
		if f.err == nil && f.v.Outcome == verdict.Unknown {
			fmt.Fprintf(stdout, "\n%s: %s after %d states: %s\n", f.name, f.v.Result(), f.v.Stats.States, c.unknownHint(f.v.Unknown))
		}
	}
	for _, f := range done {
		if f.err == nil && f.v.Outcome == verdict.NA {
			fmt.Fprintf(stdout, "\n%s: N/A (one of -model all's models, so not an error): %s\n", f.name, f.v.NotApplicable)
		}
	}
	for _, f := range done {
		if f.err != nil {
			fmt.Fprintf(stdout, "\n%s: ERROR: %v\n", f.name, f.err)
		}
	}
	fmt.Fprintf(stdout, "\n%s\n", s.line(c.rule))
	return code
}

// vacuityText says, for a SAFE row, which of its
// obligations no state judged and what that means for its verdict; "" if
// there is nothing to say.
func vacuityText(v verdict.Verdict) string {
	if v.JudgeErr != nil {
		return "its obligations could not be counted: " + v.JudgeErr.Error()
	}
	if v.Outcome != verdict.Safe {
		return "" // UNSAFE, UNKNOWN or N/A: the counts cover the states found, the JUDGED column has them
	}
	never := v.Vacuous()
	if len(never) == 0 {
		if v.Negative && len(v.Judged) > 0 {
			return fmt.Sprintf("the negative control did not fire although every obligation was judged (%s): the bug is not reachable at this bound, or the row does not model it", judgedList(v.Judged))
		}
		return ""
	}
	what := "never judged at this bound (no state reached it)"
	if len(never) == len(v.Judged) {
		what = "none of its obligations was judged at this bound (no state reached one)"
	}
	list := "\n    " + strings.Join(never, "\n    ")
	switch {
	case v.Negative:
		return fmt.Sprintf("the negative control could not fire: %s:%s", what, list)
	}
	return fmt.Sprintf("warning: SAFE says nothing about these, %s:%s", what, list)
}

// judgedList renders the counts of judged obligations: "a: 3 states, b: 1 state".
func judgedList(js []explore.Judgment) string {
	var out []string
	for _, j := range js {
		out = append(out, j.String())
	}
	return strings.Join(out, "; ")
}

// unknownHint says what stopped a search cut short and how to let it go
// further.
func (c *checkRun) unknownHint(why string) string {
	switch why {
	case explore.StopStates:
		return fmt.Sprintf("the state budget (-max-states %d) stopped it; a larger -max-states (0: none) lets it go on", c.opt.MaxStates)
	case explore.StopMemory:
		return fmt.Sprintf("the memory limit (-max-memory %s) stopped it; a larger -max-memory (0: none) lets it go on if the machine has the memory, or check a smaller bound", formatBytes(c.opt.MaxMemory))
	case interruptReason:
		return "interrupted; the rows before it finished"
	}
	return "stopped: " + why
}

// checkRow runs one row's search; a panic in it becomes its error, so that
// the other rows still run.
func checkRow(r verdict.Row, opt explore.Options, stderr io.Writer) (v verdict.Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "flushproof check: %s: panic: %v\n%s", r.Name(), p, debug.Stack())
			v, err = verdict.Verdict{}, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.Check(opt)
}

// tally counts the finished rows by outcome; every row is in exactly one
// count.
type tally struct {
	rows, safe, unsafeExpected, unexpected, unknown, errors, notApplicable int
	// vacuous counts the SAFE rows (negative controls included) that
	// have an obligation no state judged (beside their outcome's count).
	vacuous int
}

func (t *tally) add(v verdict.Verdict, err error) {
	t.rows++
	if err == nil && v.Outcome == verdict.Safe && len(v.Vacuous()) > 0 {
		t.vacuous++
	}
	switch {
	case err != nil:
		t.errors++
	case v.Outcome == verdict.NA:
		t.notApplicable++
	case v.Outcome == verdict.Unknown:
		t.unknown++
	case !v.Expected():
		t.unexpected++
	case v.Outcome == verdict.Safe:
		t.safe++
	default:
		t.unsafeExpected++
	}
}

// exitCode: a verdict not as expected is a finding and comes first, then a
// failed search, then an incomplete one.
func (t tally) exitCode() int {
	switch {
	case t.unexpected > 0:
		return exitUnexpected
	case t.errors > 0:
		return exitFailed
	case t.unknown > 0:
		return exitIncomplete
	}
	return exitOK
}

// checkSummary is the last line of `flushproof check`, and its JSON object
// of kind "check.summary" (docs/cli.md).
type checkSummary struct {
	Kind            string `json:"kind"`
	Schema          int    `json:"schema"`
	Rows            int    `json:"rows"`     // rows finished (an interrupted row included)
	Selected        int    `json:"selected"` // rows -run selected
	Safe            int    `json:"safe"`
	UnsafeExpected  int    `json:"unsafe_expected"`
	Unexpected      int    `json:"unexpected"`
	Unknown         int    `json:"unknown"`
	Errors          int    `json:"errors"`
	NotApplicable   int    `json:"not_applicable"` // N/A rows: a model of -model all that cannot express the file
	Vacuous         int    `json:"vacuous"`        // SAFE rows with an obligation no state judged
	Interrupted     bool   `json:"interrupted"`
	Signal          string `json:"signal"`
	ElapsedNS       int64  `json:"elapsed_ns"`
	PeakMemoryBytes int64  `json:"peak_memory_bytes"`
	MaxMemoryBytes  int64  `json:"max_memory_bytes"`
	NoReduce        bool   `json:"no_reduce"` // -no-reduce: searched without state reductions
	ExitCode        int    `json:"exit_code"`
}

func (s checkSummary) line(rule string) string {
	head := "done"
	if s.Interrupted {
		head = "INTERRUPTED by " + s.Signal
	}
	if s.NoReduce {
		head += " without reductions"
	}
	limit := "no memory limit"
	if s.MaxMemoryBytes > 0 {
		limit = fmt.Sprintf("max-memory %s (%s)", formatBytes(s.MaxMemoryBytes), rule)
	}
	na := ""
	if s.NotApplicable > 0 {
		na = fmt.Sprintf(", %d N/A", s.NotApplicable)
	}
	if s.Vacuous > 0 {
		na += fmt.Sprintf("; %d %s with an obligation never judged (listed above)", s.Vacuous, verdict.Plural(s.Vacuous, "row"))
	}
	return fmt.Sprintf("%s: %d of %d rows in %v, peak memory %s, %s: %d SAFE, %d UNSAFE as expected, %d unexpected, %d UNKNOWN, %d errors%s",
		head, s.Rows, s.Selected, time.Duration(s.ElapsedNS).Round(time.Millisecond), formatBytes(s.PeakMemoryBytes), limit,
		s.Safe, s.UnsafeExpected, s.Unexpected, s.Unknown, s.Errors, na)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// progressLine prints a line on stderr about once a second during long
// searches: rewritten in place on a terminal (and wiped before a row is
// printed), one line each otherwise.
type progressLine struct {
	w     io.Writer
	tty   bool
	dirty bool
}

func newProgressLine(stderr io.Writer) *progressLine {
	p := &progressLine{w: stderr}
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progressLine) report(name string) func(explore.Stats) {
	return func(s explore.Stats) {
		end := "\n"
		if p.tty {
			end, p.dirty = "\r", true
		}
		fmt.Fprintf(p.w, "flushproof: %s: %d states, %d transitions, depth %d, %.0f states/s%s",
			name, s.States, s.Transitions, s.MaxDepth, s.PerSecond(), end)
	}
}

// clear wipes a progress line left on a terminal.
func (p *progressLine) clear() {
	if p != nil && p.dirty {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.dirty = false
	}
}

// fileOptions are check's flags for FILEs, as given ("" = the file's
// header decides), and the patches to apply to them.
type fileOptions struct {
	models, devices, failures, crash string
	patches                          []string
}

// fileRows reads durability litmus files into rows. A file that cannot be
// read or parsed, or a bad flag value, is reported (file:line:col for a
// file) with exit status 2; otherwise the code is -1.
func fileRows(files []string, o fileOptions, stderr io.Writer) ([]verdict.Row, int) {
	var ms []memory.Model // nil: each file's Models
	if o.models != "" {
		var err error
		if ms, err = durable.ParseModels(o.models); err != nil {
			fmt.Fprintf(stderr, "flushproof check: -model: %v\n", err)
			return nil, exitUsage
		}
	}
	patches, err := readPatches(o.patches, files, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "flushproof check: -patch: %v\n", err)
		return nil, exitUsage
	}
	var rows []verdict.Row
	for _, f := range files {
		t, err := readPatched(f, patches, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "flushproof check: %v\n", err)
			return nil, exitUsage
		}
		d, err := durable.Read(t.File, t)
		if err != nil {
			fmt.Fprintf(stderr, "flushproof check: %v\n", err)
			if errors.Is(err, litmus.ErrUnsupported) && litmus.MemoryOps(t) == nil {
				// No device, no crash to model: LKMM's reference has
				// what the explorer refused.
				fmt.Fprintf(stderr, "flushproof check: %s has no device statement: `flushproof litmus -model lkmm %s` answers its final condition under LKMM once every thread has finished, with no crash (its reference runs the whole language, with no bound of threads or locations)\n", f, f)
			}
			return nil, exitUsage
		}
		if o.devices != "" {
			if d.Devices, err = durable.ParseDevices(o.devices); err != nil {
				fmt.Fprintf(stderr, "flushproof check: -device: %v\n", err)
				return nil, exitUsage
			}
		}
		if o.failures != "" {
			if d.Failures, err = durable.ParseFailures(o.failures); err != nil {
				fmt.Fprintf(stderr, "flushproof check: -failures: %v\n", err)
				return nil, exitUsage
			}
		}
		if o.crash != "" {
			if d.Crash, err = durable.ParseCrash(o.crash); err != nil {
				fmt.Fprintf(stderr, "flushproof check: -crash: %v\n", err)
				return nil, exitUsage
			}
		}
		if err := d.Validate(); err != nil {
			fmt.Fprintf(stderr, "flushproof check: %v\n", err)
			return nil, exitUsage
		}
		rows = append(rows, d.Rows(ms, durable.IsAll(o.models))...)
	}
	return rows, -1
}

// readPatches reads the -patch files (kernelc.ReadPatches), telling
// stderr which of their file diffs are left out.
func readPatches(paths, files []string, stderr io.Writer) ([]*patchapply.Patch, error) {
	return kernelc.ReadPatches(paths, files, func(s string) { fmt.Fprintf(stderr, "flushproof check: %s\n", s) })
}

// readPatched reads the litmus file or harness f with the patches applied
// (kernelc.ReadFile), telling stderr where a hunk went with fuzz.
func readPatched(f string, patches []*patchapply.Patch, stderr io.Writer) (*litmus.Test, error) {
	return kernelc.ReadFile(f, patches, func(s string) { fmt.Fprintf(stderr, "flushproof check: %s\n", s) })
}

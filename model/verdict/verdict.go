package verdict

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/model/explore"
)

// Verdict is one row of `flushproof check`: a model, the bound that was
// explored, and SAFE (with statistics) or UNSAFE (with the shortest
// counterexample).
type Verdict struct {
	Model    string // e.g. "device", "bug-flush-covers-in-flight"
	Config   string // e.g. "cache+fua"
	Bound    string // what was explored exhaustively
	Negative bool   // a negative control: expected UNSAFE
	// Outcome is what the search concluded: Safe, Unsafe (with the
	// Violation), Unknown (stopped first, for the reason in Unknown) or NA
	// (with the reason in NotApplicable). The zero value is Unknown: a
	// verdict nobody set proves nothing.
	Outcome   Outcome
	Stats     explore.Stats
	Violation *explore.Violation // set when Unsafe
	// Unknown says why a search that did not finish stopped: StopStates,
	// StopMemory or the reason Options.Stop gave ("interrupted").
	Unknown string
	// Unreduced is set when the search's symmetry reduction could not
	// rebuild its counterexample as a real path and the row was searched
	// again without it (explore.Result.Unreduced): the verdict and the path
	// are those of the search without reductions.
	Unreduced bool
	// Reduced is set when the search used state reductions
	// (explore.Result.Reduced).
	Reduced bool
	// Runs is, for a search of the model world, how many times it ran the
	// program from the start to reach a state (world.Search.Runs); 0 for
	// the state machines, which copy states instead.
	Runs int64
	// NotApplicable says, for an NA verdict, why the row's memory model
	// cannot express its program (a lock under Relaxed, say), for a row
	// the user asked for only as one of every model ("-model all"):
	// nothing was searched; a model named on its own that cannot express
	// the program is an error instead.
	NotApplicable string
	// Judged counts, per obligation of the row's system (its assertions,
	// final condition, acknowledged writes: explore.Obligations), the
	// states that judged it, when the search was asked to count them
	// (explore.Options.Obligations); nil otherwise. An obligation no state
	// judged is vacuous at this bound: a SAFE says nothing about it.
	Judged []explore.Judgment
	// JudgeErr says why the obligations could not be counted.
	JudgeErr error
	_        struct{}
}

// Outcome is what a row's search concluded. Each verdict has exactly one.
type Outcome uint8

const (
	// Unknown: the search stopped before the bounded space was exhausted,
	// without a violation, or never ran. It proves nothing.
	Unknown Outcome = iota
	// Safe: the whole bounded space was explored and nothing broke.
	Safe
	// Unsafe: a violation was found (Verdict.Violation).
	Unsafe
	// NA: the row's memory model cannot express its program, for a row
	// asked for only as one of every model (Verdict.NotApplicable says
	// why); nothing was searched.
	NA
)

// String is the outcome's word: SAFE, UNSAFE or UNKNOWN.
func (o Outcome) String() string {
	switch o {
	case Safe:
		return "SAFE"
	case Unsafe:
		return "UNSAFE"
	case NA:
		return "N/A"
	}
	return "UNKNOWN"
}

// Vacuous names the obligations no state judged.
func (v Verdict) Vacuous() []string { return explore.Vacuous(v.Judged) }

// JudgedText renders the count of judged obligations for the table:
// "3/3", "2/3" when one was never judged, "-" when none were counted.
func (v Verdict) JudgedText() string {
	if v.JudgeErr != nil {
		return "error"
	}
	if len(v.Judged) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", len(v.Judged)-len(v.Vacuous()), len(v.Judged))
}

// Expected reports whether the verdict is what the model is there for:
// SAFE for a real model, UNSAFE for a negative control.
func (v Verdict) Expected() bool {
	switch v.Outcome {
	case NA:
		return true
	case Safe:
		return !v.Negative
	case Unsafe:
		return v.Negative
	}
	return false
}

// Word is the verdict alone: SAFE, UNSAFE, UNKNOWN or N/A.
func (v Verdict) Word() string {
	return v.Outcome.String()
}

// Result renders the verdict with, for UNKNOWN, the reason:
// "UNKNOWN (memory)", say.
func (v Verdict) Result() string {
	if v.Outcome != Unknown {
		return v.Word()
	}
	why := v.Unknown
	if why == "" {
		why = "stopped"
	}
	return "UNKNOWN (" + why + ")"
}

// Row is one row of the verdict table (`flushproof check`): what is checked
// (model, device or memory configuration, bound), what is expected, and how
// to compute the verdict. A protocol package builds its rows; the catalog
// lists every protocol's rows in the order of the table.
type Row struct {
	Model  string // the protocol and variant, e.g. "xfs-flushseq patched"
	Config string // the device or memory configuration, e.g. "Relaxed"
	Bound  string // what the search explores exhaustively
	// Negative marks a negative control: the check must find it UNSAFE.
	Negative bool
	// Proof marks a row explored only on request (`check -proof`): a larger
	// bound that takes tens of seconds and gigabytes.
	Proof bool
	// Long marks a row explored only on request (`check -long`): the
	// impl protocols at 3 tasks x 2 operations in the model world,
	// minutes a row.
	Long bool
	// Check runs the search. Its Verdict carries the row's Model, Config,
	// Bound and Negative (FromResult copies them).
	Check func(explore.Options) (Verdict, error)
	// Unfit says, for a row built at a bound asked for (Bound.Rows), why
	// its configuration cannot take that bound (a limit of the model
	// that depends on more than the tasks or the operations alone); nil
	// if it can. A command refuses to run such a row.
	Unfit error
}

// Name is the row's name, which `flushproof check -run` matches: model,
// configuration and bound, separated by spaces. Every row name is built
// here.
func (r Row) Name() string { return joinName(r.Model, r.Config, r.Bound) }

// Name is the name of the row the verdict is for (Row.Name).
func (v Verdict) Name() string { return joinName(v.Model, v.Config, v.Bound) }

// Plural is word for n of it, "s" added unless n is 1: the bounds rows
// describe ("1 task x 3 writes").
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// joinName joins the parts of a row's name that are not empty.
func joinName(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// FromResult is the verdict of row's search: SAFE only if the bounded space
// was exhausted without a violation, UNKNOWN if a budget or Options.Stop
// stopped it first, UNSAFE with the violation otherwise.
func FromResult[S comparable](row Row, r *explore.Result[S]) Verdict {
	v := Verdict{
		Model:     row.Model,
		Config:    row.Config,
		Bound:     row.Bound,
		Negative:  row.Negative,
		Stats:     r.Stats,
		Violation: r.Violation,
		Unreduced: r.Unreduced,
		Reduced:   r.Reduced,
		Judged:    r.Judged,
		JudgeErr:  r.JudgeErr,
	}
	switch {
	case r.Violation != nil:
		v.Outcome = Unsafe
	case r.Exhausted:
		v.Outcome = Safe
	default:
		v.Outcome, v.Unknown = Unknown, r.Stopped
	}
	return v
}

// Expectation renders whether the verdict is the expected one: "yes",
// "NO", or "unknown" for an UNKNOWN verdict, marked when the row is a
// negative control.
func (v Verdict) Expectation() string {
	s := "yes"
	switch {
	case v.Outcome == NA:
		s = "n/a"
	case v.Outcome == Unknown:
		s = "unknown"
	case !v.Expected():
		s = "NO"
	}
	if v.Negative {
		s += " (negative control)"
	}
	return s
}

// WriteTable writes one line per verdict: model, config, bound,
// verdict, whether it is the expected one, and the search's statistics.
func WriteTable(w io.Writer, vs []Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tCONFIG\tBOUND\tVERDICT\tEXPECTED\tJUDGED\tSTATES\tTRANSITIONS\tDEPTH\tTIME\tSTATES/S")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%v\t%.0f\n", v.Model, v.Config, v.Bound, v.Result(), v.Expectation(), v.JudgedText(),
			v.Stats.States, v.Stats.Transitions, v.Stats.MaxDepth, v.Stats.Elapsed.Round(10*time.Microsecond), v.Stats.PerSecond())
	}
	return tw.Flush()
}

// Table writes the verdict table a row at a time, each row as soon
// as its search has ended. Its first column is the row's name (model,
// config and bound: what `flushproof check -run` matches), as wide as the
// longest of the names given up front; the other columns have fixed
// widths, so the table stays aligned without waiting for the last row.
type Table struct {
	w         io.Writer
	nameWidth int
}

const verdictRowFormat = "%-*s  %-22s  %-22s  %6s  %10s  %11s  %5s  %10s  %9s\n"

// NewTable returns a table for rows with these names.
func NewTable(w io.Writer, names []string) *Table {
	t := &Table{w: w, nameWidth: len("MODEL CONFIG BOUND")}
	for _, n := range names {
		t.nameWidth = max(t.nameWidth, len(n))
	}
	return t
}

// WriteHeader writes the column names.
func (t *Table) WriteHeader() error {
	_, err := fmt.Fprintf(t.w, verdictRowFormat, t.nameWidth, "MODEL CONFIG BOUND", "VERDICT", "EXPECTED",
		"JUDGED", "STATES", "TRANSITIONS", "DEPTH", "TIME", "STATES/S")
	return err
}

// WriteRow writes the row of a search that ended; err is the error or
// panic that ended it instead of a verdict (an ERROR row).
func (t *Table) WriteRow(name string, v Verdict, err error) error {
	if err != nil {
		_, werr := fmt.Fprintf(t.w, verdictRowFormat, t.nameWidth, name, "ERROR", "NO", "-", "-", "-", "-", "-", "-")
		return werr
	}
	if v.Outcome == NA {
		_, werr := fmt.Fprintf(t.w, verdictRowFormat, t.nameWidth, name, v.Result(), v.Expectation(), "-", "-", "-", "-", "-", "-")
		return werr
	}
	s := v.Stats
	_, werr := fmt.Fprintf(t.w, verdictRowFormat, t.nameWidth, name, v.Result(), v.Expectation(), v.JudgedText(),
		fmt.Sprint(s.States), fmt.Sprint(s.Transitions), fmt.Sprint(s.MaxDepth),
		s.Elapsed.Round(10*time.Microsecond).String(), fmt.Sprintf("%.0f", s.PerSecond()))
	return werr
}

// Record is a row of the verdict table as a JSON object of kind
// "check.row"; docs/cli.md describes every field.
type Record struct {
	Kind           string                `json:"kind"`
	Row            string                `json:"row"`
	Model          string                `json:"model"`
	Config         string                `json:"config"`
	Bound          string                `json:"bound"`
	Verdict        string                `json:"verdict"` // SAFE, UNSAFE, UNKNOWN, N/A or ERROR
	Expected       bool                  `json:"expected"`
	Negative       bool                  `json:"negative"`
	UnknownReason  string                `json:"unknown_reason"`
	NotApplicable  string                `json:"not_applicable,omitempty"` // why the model cannot express the program (Verdict.NotApplicable)
	Error          string                `json:"error"`
	States         int                   `json:"states"`
	Transitions    int                   `json:"transitions"`
	Depth          int                   `json:"depth"`
	ElapsedNS      int64                 `json:"elapsed_ns"`
	Unreduced      bool                  `json:"unreduced"`             // searched again without reductions (Verdict.Unreduced)
	Runs           int64                 `json:"runs,omitempty"`        // model-world rows: the program's runs (Verdict.Runs)
	Obligations    []ObligationRecord    `json:"obligations"`           // per obligation, the states that judged it (Verdict.Judged); null if not counted
	JudgeError     string                `json:"judge_error,omitempty"` // why they could not be counted
	Counterexample *CounterexampleRecord `json:"counterexample"`        // null unless UNSAFE
}

// ObligationRecord is one obligation of a row (an assertion, the final
// condition, an acknowledged write's durability) and the number of states
// that judged it: 0 means vacuous at this bound.
type ObligationRecord struct {
	Name   string `json:"name"`
	States int    `json:"states"`
}

// CounterexampleRecord is a violation in a Record: its kind, what
// broke, and the path, one step per object.
type CounterexampleRecord struct {
	Violation string       `json:"violation"` // safety, deadlock or blocked forever
	Message   string       `json:"message"`
	Steps     []StepRecord `json:"steps"`
}

// StepRecord is one step of a counterexample: its number (from 1), the
// actor that takes it (a timeline column) and what it does: Text, as the
// timeline shows it but unwrapped, and, where the system gives them
// (explore.FactDescriber), the same as data.
type StepRecord struct {
	Step  int         `json:"step"`
	Actor string      `json:"actor"`
	Text  string      `json:"text"`
	Label LabelRecord `json:"label"`           // the transition, for explore.Replay
	Facts any         `json:"facts,omitempty"` // explore.Step.Facts: the durability checker's durable.StepFacts
}

// LabelRecord is a step's explore.Label, field for field: what a replay of
// the path needs (Path).
type LabelRecord struct {
	Actor uint8  `json:"actor"`
	Kind  uint8  `json:"kind"`
	ID    uint16 `json:"id"`
	Arg   uint16 `json:"arg"`
	Alt   uint16 `json:"alt"`
}

// Path rebuilds the counterexample's path from its record, for
// explore.Replay on the row's system: the labels, texts and facts as the
// search found them (facts read back from JSON are maps).
func (c *CounterexampleRecord) Path() []explore.Step {
	out := make([]explore.Step, len(c.Steps))
	for i, st := range c.Steps {
		l := st.Label
		out[i] = explore.Step{Actor: int(l.Actor), Text: st.Text,
			Label: explore.Label{Actor: l.Actor, Kind: l.Kind, ID: l.ID, Arg: l.Arg, Alt: l.Alt}, Facts: st.Facts}
	}
	return out
}

// NewRecord renders the row called name: its verdict, or err, the
// error or panic that ended its search instead.
func NewRecord(name string, v Verdict, err error) Record {
	r := Record{Kind: "check.row", Row: name, Model: v.Model, Config: v.Config, Bound: v.Bound,
		Verdict: v.Word(), Expected: v.Expected(), Negative: v.Negative,
		States: v.Stats.States, Transitions: v.Stats.Transitions, Depth: v.Stats.MaxDepth, ElapsedNS: int64(v.Stats.Elapsed),
		Unreduced: v.Unreduced, Runs: v.Runs, NotApplicable: v.NotApplicable}
	if err != nil {
		r.Verdict, r.Expected, r.Error = "ERROR", false, err.Error()
		return r
	}
	if v.Judged != nil {
		r.Obligations = []ObligationRecord{}
		for _, j := range v.Judged {
			r.Obligations = append(r.Obligations, ObligationRecord{Name: j.Name, States: j.States})
		}
	}
	if v.JudgeErr != nil {
		r.JudgeError = v.JudgeErr.Error()
	}
	if v.Outcome == Unknown {
		r.UnknownReason = v.Unknown
	}
	if x := v.Violation; x != nil {
		c := &CounterexampleRecord{Violation: string(x.Kind), Message: fmt.Sprint(x.Err), Steps: []StepRecord{}}
		for i, st := range x.Path {
			actor := fmt.Sprint(st.Actor)
			if st.Actor >= 0 && st.Actor < len(x.Actor) {
				actor = x.Actor[st.Actor]
			}
			l := st.Label
			c.Steps = append(c.Steps, StepRecord{Step: i + 1, Actor: actor, Text: st.Text,
				Label: LabelRecord{Actor: l.Actor, Kind: l.Kind, ID: l.ID, Arg: l.Arg, Alt: l.Alt}, Facts: st.Facts})
		}
		r.Counterexample = c
	}
	return r
}

// Protocol is one entry of the catalog: a protocol (or the device itself),
// the rows it contributes to the verdict table and its cost table.
type Protocol struct {
	// Name is what `flushproof cost -protocol` takes, and the first word of
	// the protocol's row names ("device" rows are named after the device's
	// bug, "bug-..." for its negative controls).
	Name string
	// Summary says in one line what is checked.
	Summary string
	// Doc is the user documentation page, relative to the repository root.
	Doc string
	// Rows lists the protocol's rows in table order, proof rows marked.
	Rows func() []Row
	// Cost is the protocol's cost table; nil if it has none.
	Cost *Cost
	// Bound is how the protocol's rows take a bound of tasks x operations
	// asked for instead of their own (`flushproof check -tasks N -ops
	// M`); nil if their bounds are not tasks x operations, and then
	// NoBound says what they are instead.
	Bound *Bound
	// NoBound says, for a protocol without Bound, what its rows' bounds
	// are instead, in a few words ("transactions committed one after the
	// other x journal blocks each").
	NoBound string
}

// Range is the integers from Min to Max.
type Range struct{ Min, Max int }

// Has reports whether v is in the range.
func (r Range) Has(v int) bool { return v >= r.Min && v <= r.Max }

// Bound is how a protocol's rows are explored at a bound of tasks x
// operations per task asked for (`flushproof check -tasks N -ops M`)
// instead of the bounds they have in the table: the same configurations
// (variants, memory models, devices, failures), each at that bound, and
// named after it.
type Bound struct {
	// Task and Op are the words of the rows' bounds for a task and one of
	// its operations, singular: "task" and "fsync", "writer" and "direct
	// write".
	Task, Op string
	// Tasks and Ops are the values the rows can take. A configuration
	// may take less than the whole product (Row.Unfit says so, and Limit
	// says where).
	Tasks, Ops Range
	// Limit says which products of Tasks and Ops the rows cannot take
	// ("tasks x fsyncs at most 15 under Relaxed and LKMM"); "" if none.
	Limit string
	// Fixed says what else the rows' bounds have, kept as in the table,
	// as a phrase ("each write() of 2 blocks", "and a task that
	// truncates"); "" if nothing.
	Fixed string
	// Rows lists the rows at tasks x ops: the configurations of the
	// default table, then with proof those -proof adds and with long
	// those -long adds, each at tasks x ops; a configuration whose row is
	// already listed (the same but for its bound) is left out. A row its
	// configuration cannot take at that bound has Unfit set. Outside Tasks
	// or Ops, the rows are only names (which rows a command must refuse):
	// their searches are not to be run.
	Rows func(tasks, ops int, proof, long bool) []Row
}

// BoundRows lists the rows of sets of configurations, each already at
// the bound asked for, in order, a row whose name an earlier one has left
// out; fit says why a configuration cannot take its bound (nil: it can),
// and sets the row's Unfit.
func BoundRows[C interface{ Row() Row }](fit func(C) error, sets ...[]C) []Row {
	var out []Row
	seen := map[string]bool{}
	for _, cs := range sets {
		for _, c := range cs {
			r := c.Row()
			if seen[r.Name()] {
				continue
			}
			seen[r.Name()] = true
			if fit != nil {
				r.Unfit = fit(c)
			}
			out = append(out, r)
		}
	}
	return out
}

// Explore is the verdict of a row that one exhaustive search decides: the
// search of sys (built by the protocol's constructor, which returned err)
// with opt.
func Explore[S comparable](row Row, sys explore.System[S], err error, opt explore.Options) (Verdict, error) {
	if err != nil {
		return Verdict{}, err
	}
	return FromResult(row, explore.Explore(sys, opt)), nil
}

// LongRows lists the rows of configurations, marked Long.
func LongRows[C interface{ Row() Row }](long []C) []Row {
	var out []Row
	for _, c := range long {
		r := c.Row()
		r.Long = true
		out = append(out, r)
	}
	return out
}

// Rows lists the rows of a protocol's configurations: those of checks,
// then those of proof marked Proof.
func Rows[C interface{ Row() Row }](checks, proof []C) []Row {
	var out []Row
	for _, c := range checks {
		out = append(out, c.Row())
	}
	for _, c := range proof {
		r := c.Row()
		r.Proof = true
		out = append(out, r)
	}
	return out
}

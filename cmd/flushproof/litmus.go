package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
)

// litmusModels are the memory models `flushproof litmus` runs, in the order
// it prints them. -expect compares the one named LKMM-ref (the reference)
// with a file's Result: line.
var litmusModels = []litmus.Model{
	durable.Operational{Model: memory.SC},
	durable.Operational{Model: memory.TSO},
	durable.Operational{Model: memory.Relaxed},
	lkmm.Promise{},
	lkmm.Reference{},
}

// optionalLitmusModels run only when -model names them: memory.LKMM, the
// explorer's LKMM model, which refuses a test with a store after an
// unfenced load of another location (docs/memory.md).
var optionalLitmusModels = []litmus.Model{
	durable.Operational{Model: memory.LKMM},
}

// expectModel is the name of the model -expect compares with Result: lines.
const expectModel = "LKMM-ref"

// witnesser is a model that can show an execution reaching an outcome.
type witnesser interface {
	Witness(t *litmus.Test, cond litmus.Expr) ([]explore.Step, []string, error)
}

// litmusRecord is one file under one model, as -json prints it.
type litmusRecord struct {
	Kind     string   `json:"kind"` // "litmus.result"
	Schema   int      `json:"schema"`
	File     string   `json:"file"`
	Test     string   `json:"test"`
	Model    string   `json:"model"`
	Cond     string   `json:"condition"`
	Outcomes []string `json:"outcomes,omitempty"`
	Matches  int      `json:"positive"`
	Negative int      `json:"negative"`
	Holds    bool     `json:"holds"`            // herd7's Ok: the quantified condition holds
	Result   string   `json:"result,omitempty"` // Always, Sometimes, Never
	Witness  string   `json:"witness,omitempty"`
	Error    string   `json:"error,omitempty"`
	// NotApplicable says why a model of the default list cannot express
	// the file (Relaxed has no acquire or release): no answer, and no
	// error either.
	NotApplicable string `json:"not_applicable,omitempty"`
	// AnsweredBy, for model LKMM, names the model that answered where
	// the explorer's refused the file (a construct it does not have, one
	// of its bounds): LKMM-ref, LKMM itself. ExplorerError is the
	// explorer's refusal, with its file:line:col. A search of the
	// explorer's cut short by its budget is not answered again: the
	// reference's own budget would follow the one spent.
	AnsweredBy    string `json:"answered_by,omitempty"`
	ExplorerError string `json:"explorer_error,omitempty"`
}

// refRunsAll ends the refusal of a construct by another model than the
// reference.
const refRunsAll = " (LKMM-ref, -model lkmm-ref, runs the whole LKMM language)"

// isExplorerLKMM reports whether m is the explorer's LKMM (memory.LKMM run
// by durable.Operational), which -model lkmm names.
func isExplorerLKMM(m litmus.Model) bool {
	op, ok := m.(durable.Operational)
	return ok && op.Model == memory.LKMM
}

// answeredByRef is the record of model LKMM for a file the explorer
// refused (refused): the reference's answer (ref), under the name LKMM,
// with who answered and why. LKMM is one model with two engines: the
// explorer, exact on what it accepts, and the reference, which accepts
// the whole language.
func answeredByRef(refused, ref litmusRecord) litmusRecord {
	ref.Model, ref.AnsweredBy, ref.ExplorerError = refused.Model, ref.Model, strings.TrimSuffix(refused.Error, refRunsAll)
	return ref
}

// expectSchema is the schema of litmus.expect objects: 2 since each file
// of -expect has one, its verdict, time and refused construct, a file
// that cannot be parsed or has no Result: line included (under 1 such a
// file had only a litmus.result object with its error); 3 since want is
// the whole Result: line ("Never DATARACE", "Flag srcu-bad-nesting",
// judged by the corpus's conventions), got may be DEADLOCK, and flags
// holds the answer's herd7 flags.
const expectSchema = 3

// expectRecord is the -expect comparison of one file.
type expectRecord struct {
	Kind   string `json:"kind"` // "litmus.expect"
	Schema int    `json:"schema"`
	File   string `json:"file"`
	Test   string `json:"test"`
	Want   string `json:"want"` // the file's Result: line, all of it
	// Got is the LKMM-ref model's answer: Always, Sometimes, Never, or
	// DEADLOCK (no outcome at all) where Want accepts that.
	Got string `json:"got"`
	// Flags are the herd7 flags its answer raises ("data-race"), sorted.
	Flags []string `json:"flags,omitempty"`
	Match bool     `json:"match"`
	Error string   `json:"error,omitempty"`
	// Verdict is MATCH, MISMATCH, REFUSED, UNKNOWN, ERROR or NORESULT.
	Verdict string `json:"verdict"`
	// Seconds is the file's time: parsing and every model run on it.
	Seconds float64 `json:"seconds"`
	// Construct is what a REFUSED file uses that is not supported.
	Construct string `json:"construct,omitempty"`
}

func runLitmus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("litmus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, m := range litmusModels {
		names = append(names, strings.ToLower(m.Name()))
	}
	var all []string
	for _, m := range append(litmusModels[:len(litmusModels):len(litmusModels)], optionalLitmusModels...) {
		all = append(all, strings.ToLower(m.Name()))
	}
	modelsFlag := fs.String("model", strings.Join(names, ","), "comma-separated memory models to run: "+strings.Join(all, ", ")+" (lkmm only when named)")
	expect := fs.Bool("expect", false, "compare the "+expectModel+" model's answer with each file's Result: line, one line per file and a summary (without -model, only "+expectModel+" runs); exit 1 on a mismatch")
	jsonOut := fs.Bool("json", false, "print JSON Lines: a litmus.result object per file and model, a litmus.expect object per file and a litmus.summary with -expect (docs/cli.md)")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "files run at once")
	timeout := fs.Duration("timeout", 2*time.Minute, "the time budget of "+expectModel+" per file, 0 for none: a file past it is UNKNOWN")
	quiet := fs.Bool("q", false, "no progress line on stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof litmus [-model %s] [-expect] [-json] [-j N] [-timeout D] [-q] FILE...\n", strings.Join(names, ","))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "flushproof litmus: no litmus file given")
		return exitUsage
	}
	models, err := selectModels(*modelsFlag)
	var jobsErr, timeoutErr error
	if *jobs < 1 {
		jobsErr = fmt.Errorf("-j: want at least 1, got %d", *jobs)
	}
	if *timeout < 0 {
		timeoutErr = fmt.Errorf("-timeout: want 0 (none) or more, got %v", *timeout)
	}
	if code := usageError(stderr, "litmus", err, jobsErr, timeoutErr); code >= 0 {
		return code
	}
	o := &litmusOptions{models: models, expect: *expect, jsonOut: *jsonOut, timeout: *timeout}
	// A model of the default list that lacks a primitive the file uses
	// (Relaxed has no acquire or release) is not applicable to it; one
	// named with -model is asked for, and its refusal is an error.
	fs.Visit(func(f *flag.Flag) { o.named = o.named || f.Name == "model" })
	for _, m := range litmusModels {
		if isExpectModel(m) {
			o.ref = m
		}
	}
	// -expect alone runs only the expect model, one line per file.
	fast := o.expect && !o.named

	files := fs.Args()
	work := func(i int) fileResult {
		if fast {
			return o.expectOnly(files[i])
		}
		return o.allModels(files[i])
	}
	in := catchInterrupts(stderr, true)
	defer in.release()
	status := newStatusLine(stderr, stdout)
	tl := newLitmusTally()
	var flags exitFlags
	start := time.Now()
	// The progress line counts verdicts: it is -expect's.
	*quiet = *quiet || !o.expect
	show := func() {
		if !*quiet {
			status.show(tl.progress(len(files), time.Since(start)))
		}
	}
	emit := func(i int, r fileResult) error {
		flags.add(r)
		if r.exp != nil {
			tl.add(r.exp)
		} else {
			tl.done++
		}
		status.clear()
		_, err := stdout.Write(r.out)
		return err
	}
	done, err := runInOrder(len(files), *jobs, work, emit, show, in.done)
	if err != nil {
		status.newline()
		fmt.Fprintf(stderr, "flushproof litmus: %v\n", err)
		return exitFailed
	}
	if !*quiet {
		status.end(tl.progress(len(files), time.Since(start)))
	}
	if flags.noLKMM {
		fmt.Fprintf(stderr, "flushproof litmus: -expect: no %s model in this build, Result: lines not compared\n", expectModel)
	}
	if o.expect {
		s := tl.summary(len(files), *jobs, time.Since(start))
		s.Interrupted, s.Signal = in.signal() != nil, in.signalName()
		if *jsonOut {
			if err := jsonLines(stdout).Encode(s); err != nil {
				fmt.Fprintf(stderr, "flushproof litmus: %v\n", err)
				return exitFailed
			}
		} else {
			writeSummaryText(stdout, s)
		}
	} else if in.signal() != nil {
		fmt.Fprintf(stdout, "\nINTERRUPTED by %s: %d of %d files printed\n", in.signalName(), done, len(files))
	}
	if in.signal() != nil {
		return in.exitCode()
	}
	return flags.code()
}

// litmusOptions are runLitmus's flags, as the workers use them.
type litmusOptions struct {
	models  []litmus.Model
	ref     litmus.Model // the expect model, nil if the build has none
	named   bool         // -model was given
	expect  bool
	jsonOut bool
	timeout time.Duration
}

// allModels runs one file under every model of -model, then, with
// -expect, compares the expect model's answer with the Result: line: the
// records of the file as they are printed, text or JSON.
func (o *litmusOptions) allModels(path string) (res fileResult) {
	start := time.Now()
	var out bytes.Buffer
	enc := jsonLines(&out)
	// emit prints one record, as JSON or as text.
	emit := func(rec any) {
		if o.jsonOut {
			if err := enc.Encode(rec); err != nil {
				// The records hold strings, numbers and booleans only.
				panic(err)
			}
			return
		}
		switch r := rec.(type) {
		case litmusRecord:
			writeLitmusText(&out, r)
		case expectRecord:
			writeExpectText(&out, r)
		}
	}
	// A file that cannot be read, or under -expect has no Result: line
	// or one that is not understood, is that file's error record; the
	// others still run.
	t, err := parsed(path)
	fromParser := err != nil
	var want resultWant
	if err == nil && o.expect {
		if t.Result == "" {
			err = fmt.Errorf("%s: -expect, but the file has no Result: line", path)
		} else if want, err = parseResultLine(t.ResultLine); err != nil {
			err = fmt.Errorf("%s: -expect, but %w", path, err)
		}
	}
	if err != nil {
		res.failed = true
		emit(litmusRecord{Kind: "litmus.result", Schema: 1, File: path, Error: err.Error()})
		if o.expect {
			exp := &expectRecord{Kind: "litmus.expect", Schema: expectSchema, File: path, Error: err.Error(), Seconds: time.Since(start).Seconds()}
			switch {
			case fromParser:
				exp.Verdict, exp.Construct = classify(err, true)
			case t.Result == "":
				exp.Test, exp.Verdict = t.Name, verdictNoResult
			default:
				exp.Test, exp.Want, exp.Verdict = t.Name, wantText(t), verdictError
			}
			res.exp = exp
		}
		res.out = out.Bytes()
		return res
	}
	// run is litmusOne within the time budget for the expect model, a
	// panic recovered as the model's error.
	run := func(m litmus.Model) (litmusRecord, answered) {
		d := time.Duration(0)
		if isExpectModel(m) {
			var selfTimed bool
			if m, selfTimed = budgeted(m, o.timeout); !selfTimed {
				d = o.timeout
			}
		}
		type both struct {
			rec litmusRecord
			a   answered
		}
		b, err := guarded(d, func() (both, error) {
			rec, a := litmusOne(path, t, m)
			return both{rec, a}, nil
		})
		if err != nil {
			rec := litmusRecord{Kind: "litmus.result", Schema: 1, File: path, Test: t.Name, Model: m.Name(),
				Cond: t.Quant.String() + " " + t.Cond.String(), Error: err.Error()}
			return rec, answered{err: err}
		}
		return b.rec, b.a
	}
	var lkmmAnswer *litmus.Answer
	var lkmmErr error
	for _, m := range o.models {
		rec, a := run(m)
		if isExplorerLKMM(m) && o.ref != nil && errors.Is(a.err, litmus.ErrUnsupported) {
			refRec, refA := run(o.ref)
			rec, a = answeredByRef(rec, refRec), refA
		}
		if rec.Error != "" && !o.named && errors.Is(a.err, litmus.ErrNotInModel) {
			rec.NotApplicable, rec.Error = rec.Error, ""
		}
		// No outcome at all from the expect model is its answer where
		// the Result: line accepts it (DEADLOCK, Maybe): no failure.
		accepted := o.expect && isExpectModel(m) && errors.Is(a.err, litmus.ErrNoOutcome) && (want.deadlock || want.any)
		if rec.Error != "" {
			switch {
			case accepted:
			case errors.Is(a.err, errPanic):
				res.failed = true
			case errors.Is(a.err, litmus.ErrUnsupported):
				res.unsupported = true
			case errors.Is(a.err, litmus.ErrCutShort):
				res.cutShort = true
			default:
				res.failed = true
			}
		}
		if isExpectModel(m) {
			if rec.Error != "" {
				lkmmErr = a.err
				if lkmmErr == nil {
					lkmmErr = errors.New(rec.Error)
				}
			} else {
				lkmmAnswer = &a.Answer
			}
		}
		emit(rec)
	}
	if !o.expect {
		res.out = out.Bytes()
		return res
	}
	exp := &expectRecord{Kind: "litmus.expect", Schema: expectSchema, File: path, Test: t.Name, Want: wantText(t)}
	switch {
	case o.ref == nil:
		res.noLKMM = true
		exp.Error = "no " + expectModel + " model in this build: nothing to compare with"
		exp.Verdict = verdictUnknown
	case lkmmAnswer == nil && lkmmErr == nil:
		// -model left it out: run it for the comparison.
		a, err := o.decideRef(t)
		if err != nil {
			lkmmErr = err
		} else {
			lkmmAnswer = &a
		}
	}
	if lkmmErr != nil || lkmmAnswer != nil {
		if err := want.judge(exp, lkmmAnswer, lkmmErr); err != nil {
			exp.Error = err.Error()
			exp.Verdict, exp.Construct = classify(err, false)
			res.flagsOf(exp.Verdict, false)
		}
	}
	exp.Seconds = time.Since(start).Seconds()
	res.exp = exp
	emit(*exp)
	res.out = out.Bytes()
	return res
}

// isExpectModel says whether m is the model -expect compares (by name:
// models need not be comparable values).
func isExpectModel(m litmus.Model) bool { return strings.EqualFold(m.Name(), expectModel) }

// writeExpectText prints the -expect comparison after a file's records.
func writeExpectText(w io.Writer, exp expectRecord) {
	switch {
	case exp.Error != "":
		fmt.Fprintf(w, "Expect %s: %s\n\n", exp.Test, exp.Error)
	case exp.Match:
		fmt.Fprintf(w, "Expect %s: Result: %s, %s says %s: match\n\n", exp.Test, exp.Want, expectModel, gotText(exp.Want, exp.Got, exp.Flags))
	default:
		fmt.Fprintf(w, "Expect %s: Result: %s, %s says %s: MISMATCH\n\n", exp.Test, exp.Want, expectModel, gotText(exp.Want, exp.Got, exp.Flags))
	}
}

// selectModels returns the models -model names, in the order given.
func selectModels(list string) ([]litmus.Model, error) {
	var out []litmus.Model
	var names []string
	known := append(litmusModels[:len(litmusModels):len(litmusModels)], optionalLitmusModels...)
	for _, m := range known {
		names = append(names, strings.ToLower(m.Name()))
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, m := range known {
			if strings.EqualFold(m.Name(), name) {
				out = append(out, m)
				found = true
			}
		}
		if !found && strings.EqualFold(name, "lkmm-memory") {
			return nil, fmt.Errorf("-model: lkmm-memory is spelled lkmm now, as in flushproof check (the explorer's LKMM model); the axiomatic reference is lkmm-ref, the promise-based model lkmm-op")
		}
		if !found {
			return nil, fmt.Errorf("-model: want a comma-separated list of %s, got %q", strings.Join(names, ", "), name)
		}
	}
	return out, nil
}

// answered is a model's answer with its error.
type answered struct {
	litmus.Answer
	err error
}

// litmusOne runs t under m: the answer, and a witness where the condition's
// answer has one (a reachable exists, a violated ~exists or forall).
func litmusOne(path string, t *litmus.Test, m litmus.Model) (litmusRecord, answered) {
	rec := litmusRecord{Kind: "litmus.result", Schema: 1, File: path, Test: t.Name, Model: m.Name(),
		Cond: t.Quant.String() + " " + t.Cond.String()}
	a, err := litmus.Judge(m, t)
	if err != nil {
		rec.Error = err.Error()
		if _, ref := m.(lkmm.Reference); !ref && errors.Is(err, litmus.ErrNotInModel) {
			// Say which model does have it.
			rec.Error += refRunsAll
		}
		return rec, answered{err: err}
	}
	for _, o := range a.Outcomes {
		rec.Outcomes = append(rec.Outcomes, o.Key())
	}
	rec.Matches, rec.Negative = a.Matches, len(a.Outcomes)-a.Matches
	rec.Holds, rec.Result = a.Positive, a.Result
	var cond *litmus.Expr
	switch {
	case t.Quant == litmus.Exists && a.Matches > 0, t.Quant == litmus.NotExists && a.Matches > 0:
		cond = &t.Cond
	case t.Quant == litmus.Forall && !a.Positive:
		c := litmus.Not(t.Cond)
		cond = &c
	}
	if w, ok := m.(witnesser); ok && cond != nil {
		path, actors, err := w.Witness(t, *cond)
		switch {
		case err != nil:
			rec.Error = "witness: " + err.Error()
			return rec, answered{Answer: a, err: err}
		case path != nil:
			rec.Witness = explore.Timeline(actors, path)
		}
	}
	return rec, answered{Answer: a}
}

// writeLitmusText prints a record the way herd7 prints a test's answer,
// then the witness timeline.
func writeLitmusText(w io.Writer, r litmusRecord) {
	if r.Model == "" {
		fmt.Fprintf(w, "== %s\n", r.File)
	} else {
		fmt.Fprintf(w, "== %s under %s\n", r.File, r.Model)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n\n", r.Error)
		return
	}
	if r.NotApplicable != "" {
		fmt.Fprintf(w, "not applicable: %s\n\n", r.NotApplicable)
		return
	}
	kind := "Allowed"
	if !strings.HasPrefix(r.Cond, "exists") {
		kind = "Required"
	}
	fmt.Fprintf(w, "Test %s %s\nStates %d\n", r.Test, kind, len(r.Outcomes))
	for _, o := range r.Outcomes {
		fmt.Fprintln(w, o)
	}
	ok := "No"
	if r.Holds {
		ok = "Ok"
	}
	fmt.Fprintf(w, "%s\nWitnesses\nPositive: %d Negative: %d\nCondition %s\nObservation %s %s %d %d\n",
		ok, r.Matches, r.Negative, r.Cond, r.Test, r.Result, r.Matches, r.Negative)
	if r.AnsweredBy != "" {
		fmt.Fprintf(w, "Answered by %s: the explorer gave no answer: %s\n", r.AnsweredBy, r.ExplorerError)
	}
	if r.Witness != "" {
		what := "an outcome that satisfies the condition"
		if strings.HasPrefix(r.Cond, "forall") {
			what = "an outcome that violates the condition"
		}
		fmt.Fprintf(w, "Witness: a shortest execution to %s\n%s", what, r.Witness)
	}
	fmt.Fprintln(w)
}

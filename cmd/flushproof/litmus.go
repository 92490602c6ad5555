package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

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
}

// expectRecord is the -expect comparison of one file.
type expectRecord struct {
	Kind   string `json:"kind"` // "litmus.expect"
	Schema int    `json:"schema"`
	File   string `json:"file"`
	Test   string `json:"test"`
	Want   string `json:"want"` // the file's Result: line
	Got    string `json:"got"`  // the LKMM-ref model's answer
	Match  bool   `json:"match"`
	Error  string `json:"error,omitempty"`
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
	expect := fs.Bool("expect", false, "compare the "+expectModel+" model's answer with each file's Result: line; exit 1 on a mismatch")
	jsonOut := fs.Bool("json", false, "print JSON Lines: a litmus.result object per file and model, a litmus.expect object per file with -expect (docs/cli.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof litmus [-model %s] [-expect] [-json] FILE...\n", strings.Join(names, ","))
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
	if code := usageError(stderr, "litmus", err); code >= 0 {
		return code
	}
	// A model of the default list that lacks a primitive the file uses
	// (Relaxed has no acquire or release) is not applicable to it; one
	// named with -model is asked for, and its refusal is an error.
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "model" })
	var lkmm litmus.Model
	for _, m := range litmusModels {
		if strings.EqualFold(m.Name(), expectModel) {
			lkmm = m
		}
	}

	enc := jsonLines(stdout)
	// emit prints one record, as JSON or as text.
	emit := func(rec litmusRecord) error {
		if *jsonOut {
			return enc.Encode(rec)
		}
		writeLitmusText(stdout, rec)
		return nil
	}
	unsupported, failed, cutShort, mismatch, noLKMM := false, false, false, false, false
	for _, path := range fs.Args() {
		// A file that cannot be read, or has no Result: line under
		// -expect, is that file's error record; the others still run.
		t, err := litmus.ParseFile(path)
		if err == nil && *expect && t.Result == "" {
			err = fmt.Errorf("%s: -expect, but the file has no Result: line", path)
		}
		if err != nil {
			failed = true
			rec := litmusRecord{Kind: "litmus.result", Schema: 1, File: path, Error: err.Error()}
			if err := emit(rec); err != nil {
				fmt.Fprintf(stderr, "flushproof litmus: %v\n", err)
				return exitFailed
			}
			continue
		}
		var lkmmAnswer *litmus.Answer
		for _, m := range models {
			rec, a := litmusOne(path, t, m)
			if rec.Error != "" && !named && errors.Is(a.err, litmus.ErrNotInModel) {
				rec.NotApplicable, rec.Error = rec.Error, ""
			}
			if rec.Error != "" {
				switch {
				case errors.Is(a.err, litmus.ErrUnsupported):
					unsupported = true
				case errors.Is(a.err, litmus.ErrCutShort):
					cutShort = true
				default:
					failed = true
				}
			} else if m == lkmm {
				lkmmAnswer = &a.Answer
			}
			if err := emit(rec); err != nil {
				fmt.Fprintf(stderr, "flushproof litmus: %v\n", err)
				return exitFailed
			}
		}
		if !*expect {
			continue
		}
		exp := expectRecord{Kind: "litmus.expect", Schema: 1, File: path, Test: t.Name, Want: t.Result}
		switch {
		case lkmm == nil:
			noLKMM = true
			exp.Error = "no " + expectModel + " model in this build: nothing to compare with"
		case lkmmAnswer == nil:
			// -model left it out, or it failed: run it (again) for the comparison.
			rec, a := litmusOne(path, t, lkmm)
			if rec.Error != "" {
				exp.Error = rec.Error
				failed = true
			} else {
				lkmmAnswer = &a.Answer
			}
		}
		if lkmmAnswer != nil {
			exp.Got = lkmmAnswer.Result
			exp.Match = exp.Got == exp.Want
			mismatch = mismatch || !exp.Match
		}
		if *jsonOut {
			if err := enc.Encode(exp); err != nil {
				fmt.Fprintf(stderr, "flushproof litmus: %v\n", err)
				return exitFailed
			}
			continue
		}
		switch {
		case exp.Error != "":
			fmt.Fprintf(stdout, "Expect %s: %s\n\n", t.Name, exp.Error)
		case exp.Match:
			fmt.Fprintf(stdout, "Expect %s: Result: %s, %s says %s: match\n\n", t.Name, exp.Want, expectModel, exp.Got)
		default:
			fmt.Fprintf(stdout, "Expect %s: Result: %s, %s says %s: MISMATCH\n\n", t.Name, exp.Want, expectModel, exp.Got)
		}
	}
	if noLKMM {
		fmt.Fprintf(stderr, "flushproof litmus: -expect: no %s model in this build, Result: lines not compared\n", expectModel)
	}
	switch {
	case mismatch:
		return exitUnexpected
	case unsupported:
		return exitUsage
	case failed:
		return exitFailed
	case cutShort, noLKMM:
		return exitIncomplete
	}
	return exitOK
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
	if r.Witness != "" {
		what := "an outcome that satisfies the condition"
		if strings.HasPrefix(r.Cond, "forall") {
			what = "an outcome that violates the condition"
		}
		fmt.Fprintf(w, "Witness: a shortest execution to %s\n%s", what, r.Witness)
	}
	fmt.Fprintln(w)
}

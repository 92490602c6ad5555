package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/lkmm"
)

// The verdicts of a file under -expect.
const (
	verdictMatch    = "MATCH"    // the expect model's answer is one the Result: line accepts
	verdictMismatch = "MISMATCH" // it does not
	verdictRefused  = "REFUSED"  // the parser or the model does not support a construct of the file
	verdictUnknown  = "UNKNOWN"  // the model reached its budget (states or time)
	verdictError    = "ERROR"    // anything else, a panic and a Result: line not understood included
	verdictNoResult = "NORESULT" // the file has no Result: line
)

// verdictOrder is the order the summary and the progress line count them in.
var verdictOrder = []string{verdictMatch, verdictMismatch, verdictRefused, verdictUnknown, verdictError, verdictNoResult}

// fileResult is what a worker hands back for one file: its output, ready
// to print, and what the exit status and the summary need.
type fileResult struct {
	out []byte
	// exp is the file's verdict under -expect, nil without -expect.
	exp *expectRecord
	// The classes of the exit status (docs/cli.md): a model refused a
	// test, something failed, a search was cut short, no expect model.
	unsupported, failed, cutShort, noLKMM bool
}

// exitFlags gathers the classes of every file's result.
type exitFlags struct {
	mismatch, unsupported, failed, cutShort, noLKMM bool
}

func (f *exitFlags) add(r fileResult) {
	f.unsupported = f.unsupported || r.unsupported
	f.failed = f.failed || r.failed
	f.cutShort = f.cutShort || r.cutShort
	f.noLKMM = f.noLKMM || r.noLKMM
	if r.exp != nil && r.exp.Verdict == verdictMismatch {
		f.mismatch = true
	}
}

// code is the exit status: mismatch > unsupported > failed > cut short.
func (f exitFlags) code() int {
	switch {
	case f.mismatch:
		return exitUnexpected
	case f.unsupported:
		return exitUsage
	case f.failed:
		return exitFailed
	case f.cutShort, f.noLKMM:
		return exitIncomplete
	}
	return exitOK
}

// runInOrder runs work(i) for i in [0, n) on jobs workers and calls emit
// for each i in order, as soon as i and every index before it are done. A
// worker starts file i only when i < (the oldest file not yet emitted) +
// 4*jobs, so at most that many results wait to be emitted, whatever n is.
// tick is called about once a second while it waits. It stops early when
// stop is closed (emitted counts what was emitted) or when emit fails.
func runInOrder(n, jobs int, work func(i int) fileResult, emit func(i int, r fileResult) error,
	tick func(), stop <-chan struct{}) (emitted int, err error) {
	window := 4 * jobs
	// A token is taken when a file is handed to a worker and given back
	// when it is emitted: at most window files are in between.
	tokens := make(chan struct{}, window)
	todo := make(chan int)
	type done struct {
		i int
		r fileResult
	}
	// At most window results are ever in flight, so a worker never blocks
	// on sending one, even after the loop below has stopped reading.
	results := make(chan done, window)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(todo)
		for i := 0; i < n; i++ {
			select {
			case tokens <- struct{}{}:
			case <-quit:
				return
			}
			select {
			case todo <- i:
			case <-quit:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				results <- done{i, work(i)}
			}
		}()
	}
	pending := make([]*fileResult, window) // file i waits in slot i%window
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for emitted < n {
		select {
		case d := <-results:
			pending[d.i%window] = &d.r
			for emitted < n && pending[emitted%window] != nil {
				r := pending[emitted%window]
				pending[emitted%window] = nil
				if err := emit(emitted, *r); err != nil {
					return emitted, err
				}
				emitted++
				<-tokens
			}
		case <-ticker.C:
			tick()
		case <-stop:
			return emitted, nil
		}
	}
	wg.Wait()
	return emitted, nil
}

// budgeted returns m set to keep the per-file time budget d itself, and
// whether it does: the LKMM reference, through its Timeout field (its
// search stops and fails with an error wrapping litmus.ErrCutShort). Any
// other model is waited for by guarded's watchdog instead.
func budgeted(m litmus.Model, d time.Duration) (litmus.Model, bool) {
	if r, ok := m.(lkmm.Reference); ok && d > 0 {
		r.Timeout = d
		return r, true
	}
	return m, false
}

// errPanic is wrapped by the error a recovered panic becomes.
var errPanic = errors.New("panic")

// recovered calls f and turns a panic in it into an error wrapping
// errPanic, so that one file's bug is that file's ERROR and the run goes on.
func recovered[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return f()
}

// guarded calls f, recovering a panic. With d > 0 it gives up waiting
// after d and returns an error wrapping litmus.ErrCutShort: f keeps
// running in its goroutine until it returns (Go cannot stop it), and its
// answer is dropped. With d == 0 it calls f in this goroutine.
func guarded[T any](d time.Duration, f func() (T, error)) (T, error) {
	if d <= 0 {
		return recovered(f)
	}
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1) // buffered: a late answer does not block its goroutine
	go func() {
		v, err := recovered(f)
		ch <- answer{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("%w: no answer within -timeout %v", litmus.ErrCutShort, d)
	}
}

// parsed is litmus.ParseFile with a panic recovered.
func parsed(path string) (*litmus.Test, error) {
	return recovered(func() (*litmus.Test, error) { return litmus.ParseFile(path) })
}

// classify is the verdict of an error: REFUSED for a construct the parser
// (fromParser) or a model does not support, UNKNOWN for a budget reached,
// ERROR otherwise; for REFUSED, the construct.
func classify(err error, fromParser bool) (verdict, construct string) {
	msg := err.Error()
	switch {
	case errors.Is(err, errPanic):
		return verdictError, ""
	case errors.Is(err, litmus.ErrCutShort), errors.Is(err, context.DeadlineExceeded):
		return verdictUnknown, ""
	case fromParser && strings.Contains(msg, "unsupported construct"):
		return verdictRefused, refusalConstruct(msg)
	case errors.Is(err, litmus.ErrUnsupported):
		return verdictRefused, refusalConstruct(msg)
	}
	return verdictError, ""
}

// refusalConstruct is the construct a refusal names: the text after
// "unsupported construct: " (the parser's) or "unsupported: " (a model's;
// "unsupported in this memory model: " for a primitive the model lacks), up
// to " (" or the end; the whole message if it has none of them.
func refusalConstruct(msg string) string {
	for _, mark := range []string{"unsupported construct: ", "unsupported in this memory model: ", "unsupported: "} {
		if i := strings.Index(msg, mark); i >= 0 {
			s := msg[i+len(mark):]
			if j := strings.Index(s, " ("); j >= 0 {
				s = s[:j]
			}
			return s
		}
	}
	return msg
}

// flagsOf sets r's exit classes from its verdict under -expect: a model's
// refusal is "unsupported" (2), the parser's a file that cannot be parsed
// (3), as without -expect.
func (r *fileResult) flagsOf(verdict string, fromParser bool) {
	switch verdict {
	case verdictRefused:
		if fromParser {
			r.failed = true
		} else {
			r.unsupported = true
		}
	case verdictUnknown:
		r.cutShort = true
	case verdictError, verdictNoResult:
		r.failed = true
	}
}

// decideRef answers t's condition under the expect model, within the
// per-file budget: the model's own Timeout where it has one, else a
// guard that gives up waiting (budgeted, guarded).
func (o *litmusOptions) decideRef(t *litmus.Test) (litmus.Answer, error) {
	m, selfTimed := budgeted(o.ref, o.timeout)
	d := o.timeout
	if selfTimed {
		d = 0
	}
	return guarded(d, func() (litmus.Answer, error) { return litmus.Decide(m, t) })
}

// expectOnly runs one file under -expect without -model: the expect model
// alone, through litmus.Decide, within the time budget.
func (o *litmusOptions) expectOnly(path string) fileResult {
	start := time.Now()
	exp := &expectRecord{Kind: "litmus.expect", Schema: expectSchema, File: path}
	var res fileResult
	fromParser := false
	err := func() error {
		t, err := parsed(path)
		if err != nil {
			fromParser = true
			return err
		}
		exp.Test, exp.Want = t.Name, wantText(t)
		if t.Result == "" {
			return errNoResult
		}
		w, err := parseResultLine(t.ResultLine)
		if err != nil {
			return fmt.Errorf("%s: -expect, but %w", path, err)
		}
		if o.ref == nil {
			return errNoRef
		}
		a, err := o.decideRef(t)
		return w.judge(exp, &a, err)
	}()
	exp.Seconds = time.Since(start).Seconds()
	switch {
	case errors.Is(err, errNoResult):
		exp.Verdict = verdictNoResult
		exp.Error = fmt.Sprintf("%s: -expect, but the file has no Result: line", path)
	case errors.Is(err, errNoRef):
		// Nothing compared: incomplete, as a budget reached is.
		exp.Verdict, exp.Error = verdictUnknown, err.Error()
		res.noLKMM = true
	case err != nil:
		exp.Verdict, exp.Construct = classify(err, fromParser)
		exp.Error = err.Error()
	}
	if !res.noLKMM {
		res.flagsOf(exp.Verdict, fromParser)
	}
	res.exp = exp
	var b strings.Builder
	if o.jsonOut {
		enc := jsonLines(&b)
		if err := enc.Encode(exp); err != nil {
			// An expectRecord holds strings and numbers only.
			panic(err)
		}
	} else {
		writeExpectLine(&b, exp)
	}
	res.out = []byte(b.String())
	return res
}

// errNoResult says a file under -expect has no Result: line.
var errNoResult = errors.New("no Result: line")

// resultWant is what a Result: line accepts of the expect model's answer,
// in the LKMM corpus's (github.com/paulmckrcu/litmus) conventions
// (parseResultLine).
type resultWant struct {
	// any: "Maybe", any answer (no outcome at all included).
	any bool
	// deadlock: "DEADLOCK", no outcome at all (litmus.ErrNoOutcome).
	deadlock bool
	// result is "Always", "Sometimes" or "Never", with race set when
	// "DATARACE" follows it: the answer's result, and a data-race flag
	// raised (race) or not (!race). "" for the other forms.
	result string
	race   bool
	// flag is "Flag NAME"'s NAME: the answer raises that flag, whatever
	// its result.
	flag string
}

// raceFlag is the flag herd7 raises for a data race (DATARACE).
const raceFlag = "data-race"

// gotDeadlock is the expect model's answer, as -expect prints it, when
// it gives no outcome (litmus.ErrNoOutcome) and the Result: line accepts
// that (DEADLOCK, Maybe).
const gotDeadlock = "DEADLOCK"

// errResultLine is wrapped by the error of a Result: line that is none
// of the forms parseResultLine knows.
var errResultLine = errors.New("the Result: line is not understood")

// parseResultLine reads a Result: line (litmus.Test.ResultLine): one of
// "Always", "Sometimes", "Never", each alone or followed by "DATARACE";
// "Maybe"; "DEADLOCK"; "Flag NAME". Anything else is an error wrapping
// errResultLine.
func parseResultLine(line string) (resultWant, error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 1 && f[0] == "Maybe":
		return resultWant{any: true}, nil
	case len(f) == 1 && f[0] == "DEADLOCK":
		return resultWant{deadlock: true}, nil
	case len(f) == 2 && f[0] == "Flag" && flagName.MatchString(f[1]):
		return resultWant{flag: f[1]}, nil
	case (len(f) == 1 || len(f) == 2 && f[1] == "DATARACE") && slices.Contains([]string{"Always", "Sometimes", "Never"}, f[0]):
		return resultWant{result: f[0], race: len(f) == 2}, nil
	}
	return resultWant{}, fmt.Errorf("%w: %q (the forms: Always, Sometimes or Never, each alone or followed by DATARACE; Maybe; DEADLOCK; Flag NAME)",
		errResultLine, line)
}

// flagName is a herd7 flag's name: srcu-bad-nesting, data-race.
var flagName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// wantText is t's Result: line as -expect prints it: its words, one
// space between them.
func wantText(t *litmus.Test) string {
	return strings.Join(strings.Fields(t.ResultLine), " ")
}

// accepts says whether w accepts an answer with result and flags.
func (w resultWant) accepts(result string, flags []string) bool {
	switch {
	case w.any:
		return true
	case w.deadlock:
		return false
	case w.flag != "":
		return slices.Contains(flags, w.flag)
	}
	return result == w.result && slices.Contains(flags, raceFlag) == w.race
}

// judge sets exp's answer (Got, Flags), Match and Verdict from the
// expect model's answer a, or its error err, as w judges them: no
// outcome at all (litmus.ErrNoOutcome) is the answer DEADLOCK where w
// accepts it (DEADLOCK, Maybe). Any other error is returned, for the
// caller to classify as without a Result: line's conventions.
func (w resultWant) judge(exp *expectRecord, a *litmus.Answer, err error) error {
	switch {
	case err != nil && errors.Is(err, litmus.ErrNoOutcome) && (w.deadlock || w.any):
		exp.Got, exp.Flags, exp.Match = gotDeadlock, nil, true
	case err != nil:
		return err
	default:
		exp.Got, exp.Flags = a.Result, a.Flags
		exp.Match = w.accepts(a.Result, a.Flags)
	}
	exp.Verdict = verdictMismatch
	if exp.Match {
		exp.Verdict = verdictMatch
	}
	return nil
}

// gotText is an answer as the text output prints it: the result, then
// in parentheses what it says of the flags: "data race" when it raises
// one, "no data race" when the Result: line want (a DATARACE) has one
// and it does not, "flag NAME" for each other flag, "no flag NAME" for
// a Flag NAME it does not raise. "Never (no data race)".
func gotText(want, got string, flags []string) string {
	if got == "" {
		return ""
	}
	w, _ := parseResultLine(want) // nothing asked of the flags if not understood
	var notes []string
	switch {
	case slices.Contains(flags, raceFlag):
		notes = append(notes, "data race")
	case w.race:
		notes = append(notes, "no data race")
	}
	for _, f := range flags {
		if f != raceFlag {
			notes = append(notes, "flag "+f)
		}
	}
	if w.flag != "" && !slices.Contains(flags, w.flag) {
		notes = append(notes, "no flag "+w.flag)
	}
	if len(notes) == 0 {
		return got
	}
	return got + " (" + strings.Join(notes, ", ") + ")"
}

// errNoRef says the build has no expect model (tests take it out).
var errNoRef = errors.New("no " + expectModel + " model in this build: nothing to compare with")

// writeExpectLine prints a file's verdict on one line: verdict, file,
// want, got (with its flags, gotText), time, and for REFUSED the
// construct, for UNKNOWN and ERROR the message.
func writeExpectLine(w io.Writer, e *expectRecord) {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(w, "%-9s %s  %s  %s  %.3fs", e.Verdict, e.File, dash(e.Want), dash(gotText(e.Want, e.Got, e.Flags)), e.Seconds)
	switch e.Verdict {
	case verdictRefused:
		fmt.Fprintf(w, "  %s", e.Construct)
	case verdictUnknown, verdictError:
		fmt.Fprintf(w, "  %s", oneLine(e.Error))
	}
	fmt.Fprintln(w)
}

// oneLine keeps a message on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// litmusSummary is the end of a run under -expect, as -json prints it.
type litmusSummary struct {
	Kind        string        `json:"kind"` // "litmus.summary"
	Schema      int           `json:"schema"`
	Files       int           `json:"files"` // files given
	Done        int           `json:"done"`  // files reported (fewer if interrupted)
	Match       int           `json:"match"`
	Mismatch    int           `json:"mismatch"`
	Refused     int           `json:"refused"`
	Unknown     int           `json:"unknown"`
	Error       int           `json:"error"`
	NoResult    int           `json:"noresult"`
	Refusals    []textCount   `json:"refusals,omitempty"` // by construct, most frequent first
	Errors      []textCount   `json:"errors,omitempty"`   // ERROR files by message kind, most frequent first
	Slowest     []slowFile    `json:"slowest,omitempty"`  // at most 10, slowest first
	Mismatches  []mismatchRow `json:"mismatches,omitempty"`
	WallSeconds float64       `json:"wall_seconds"` // the whole run
	FileSeconds float64       `json:"file_seconds"` // the files' times summed
	Jobs        int           `json:"jobs"`
	Interrupted bool          `json:"interrupted,omitempty"`
	Signal      string        `json:"signal,omitempty"`
}

// textCount is a construct or an error kind with the files that gave it.
type textCount struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// slowFile is one of the slowest files.
type slowFile struct {
	File    string  `json:"file"`
	Verdict string  `json:"verdict"`
	Seconds float64 `json:"seconds"`
}

// mismatchRow is a MISMATCH, listed again in the summary.
type mismatchRow struct {
	File  string   `json:"file"`
	Test  string   `json:"test"`
	Want  string   `json:"want"`
	Got   string   `json:"got"`
	Flags []string `json:"flags,omitempty"` // the flags of the answer
}

// summarySchema is the schema of litmus.summary objects: 2 since the
// mismatches' want is the whole Result: line ("Never DATARACE", where
// it was "Never") and they have the answer's flags.
const summarySchema = 2

// slowestKept is how many of the slowest files the summary lists.
const slowestKept = 10

// litmusTally counts the verdicts as they are printed. It keeps counters, the
// counts per construct and per error kind, the slowest files and the
// mismatches: nothing else of a file.
type litmusTally struct {
	counts      map[string]int
	refusals    map[string]int
	errorKinds  map[string]int
	slowest     []slowFile // sorted slowest first, at most slowestKept
	mismatches  []mismatchRow
	fileSeconds float64
	done        int
}

func newLitmusTally() *litmusTally {
	return &litmusTally{counts: map[string]int{}, refusals: map[string]int{}, errorKinds: map[string]int{}}
}

func (t *litmusTally) add(e *expectRecord) {
	t.done++
	t.counts[e.Verdict]++
	t.fileSeconds += e.Seconds
	switch e.Verdict {
	case verdictRefused:
		t.refusals[e.Construct]++
	case verdictError:
		t.errorKinds[errorKind(e)]++
	case verdictMismatch:
		t.mismatches = append(t.mismatches, mismatchRow{File: e.File, Test: e.Test, Want: e.Want, Got: e.Got, Flags: e.Flags})
	}
	if len(t.slowest) < slowestKept || e.Seconds > t.slowest[len(t.slowest)-1].Seconds {
		i := sort.Search(len(t.slowest), func(i int) bool { return t.slowest[i].Seconds < e.Seconds })
		t.slowest = append(t.slowest, slowFile{})
		copy(t.slowest[i+1:], t.slowest[i:])
		t.slowest[i] = slowFile{File: e.File, Verdict: e.Verdict, Seconds: e.Seconds}
		if len(t.slowest) > slowestKept {
			t.slowest = t.slowest[:slowestKept]
		}
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// errorKind groups ERROR messages: without the file's or test's name
// before them, up to " (", numbers as N.
func errorKind(e *expectRecord) string {
	msg := oneLine(e.Error)
	for _, prefix := range []string{e.File + ":", e.Test + ":"} {
		if prefix != ":" && strings.HasPrefix(msg, prefix) {
			msg = msg[len(prefix):]
			// file:line:col: for a parse error.
			for len(msg) > 0 && msg[0] >= '0' && msg[0] <= '9' {
				i := strings.IndexByte(msg, ':')
				if i < 0 {
					break
				}
				msg = msg[i+1:]
			}
			msg = strings.TrimSpace(msg)
			break
		}
	}
	if j := strings.Index(msg, " ("); j >= 0 {
		msg = msg[:j]
	}
	return digits.ReplaceAllString(msg, "N")
}

// sortedCounts lists m by count, most first, then by text.
func sortedCounts(m map[string]int) []textCount {
	out := make([]textCount, 0, len(m))
	for k, v := range m {
		out = append(out, textCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Text < out[j].Text
	})
	return out
}

func (t *litmusTally) summary(files, jobs int, wall time.Duration) litmusSummary {
	return litmusSummary{
		Kind: "litmus.summary", Schema: summarySchema, Files: files, Done: t.done,
		Match: t.counts[verdictMatch], Mismatch: t.counts[verdictMismatch], Refused: t.counts[verdictRefused],
		Unknown: t.counts[verdictUnknown], Error: t.counts[verdictError], NoResult: t.counts[verdictNoResult],
		Refusals: sortedCounts(t.refusals), Errors: sortedCounts(t.errorKinds),
		Slowest: t.slowest, Mismatches: t.mismatches,
		WallSeconds: wall.Seconds(), FileSeconds: t.fileSeconds, Jobs: jobs,
	}
}

// clock prints a duration as the progress line and the summary do: 2m03s,
// 1h02m03s.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%dh%02dm%02ds", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// span prints a time of the summary: 2m03s, or 1.25s under a minute.
func span(seconds float64) string {
	if seconds < 60 {
		return fmt.Sprintf("%.2fs", seconds)
	}
	return clock(time.Duration(seconds * float64(time.Second)))
}

// progress is the line: 1234/4754 files  1100 match ... 2m03s.
func (t *litmusTally) progress(files int, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "litmus: %d/%d files", t.done, files)
	for _, v := range verdictOrder {
		if v == verdictNoResult && t.counts[v] == 0 {
			continue // a corpus's files all have one
		}
		fmt.Fprintf(&b, "  %d %s", t.counts[v], strings.ToLower(v))
	}
	fmt.Fprintf(&b, "  %s", clock(elapsed))
	return b.String()
}

// writeSummaryText prints the summary after the files' lines.
func writeSummaryText(w io.Writer, s litmusSummary) {
	fmt.Fprintln(w)
	head := "litmus"
	if s.Interrupted {
		head = fmt.Sprintf("litmus: INTERRUPTED by %s", s.Signal)
	}
	fmt.Fprintf(w, "%s: %d of %d files in %s with -j %d (per-file times summed: %s):",
		head, s.Done, s.Files, span(s.WallSeconds), s.Jobs, span(s.FileSeconds))
	counts := []int{s.Match, s.Mismatch, s.Refused, s.Unknown, s.Error, s.NoResult}
	for i, v := range verdictOrder {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %d %s", sep, counts[i], v)
	}
	fmt.Fprintln(w)
	if len(s.Refusals) > 0 {
		fmt.Fprintf(w, "refused, by construct (%d):\n", len(s.Refusals))
		for _, c := range s.Refusals {
			fmt.Fprintf(w, "  %6d  %s\n", c.Count, c.Text)
		}
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "errors, by message (%d):\n", len(s.Errors))
		for _, c := range s.Errors {
			fmt.Fprintf(w, "  %6d  %s\n", c.Count, c.Text)
		}
	}
	if len(s.Slowest) > 0 {
		fmt.Fprintf(w, "slowest files:\n")
		for _, f := range s.Slowest {
			fmt.Fprintf(w, "  %9.3fs  %-8s  %s\n", f.Seconds, f.Verdict, f.File)
		}
	}
	if len(s.Mismatches) > 0 {
		fmt.Fprintf(w, "mismatches (%d):\n", len(s.Mismatches))
		for _, m := range s.Mismatches {
			fmt.Fprintf(w, "  MISMATCH  %s  want %s, %s says %s\n", m.File, m.Want, expectModel, gotText(m.Want, m.Got, m.Flags))
		}
	}
}

// statusLine writes the progress line on stderr: rewritten in place with
// \r on a terminal, one line each otherwise.
type statusLine struct {
	w     io.Writer
	tty   bool
	share bool // stdout is a terminal too: wipe the line before stdout writes
	dirty bool // a line without its newline is on the terminal
}

func newStatusLine(stderr, stdout io.Writer) *statusLine {
	return &statusLine{w: stderr, tty: isTerminal(stderr), share: isTerminal(stdout)}
}

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (s *statusLine) show(line string) {
	if s.tty {
		fmt.Fprintf(s.w, "\r\x1b[K%s", line)
		s.dirty = true
		return
	}
	fmt.Fprintln(s.w, line)
}

// clear wipes the line from the terminal before stdout writes there.
func (s *statusLine) clear() {
	if s.dirty && s.share {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.dirty = false
	}
}

// newline ends a line left on the terminal, before stderr says more.
func (s *statusLine) newline() {
	if s.dirty {
		fmt.Fprintln(s.w)
		s.dirty = false
	}
}

// end leaves the last line on the terminal.
func (s *statusLine) end(line string) {
	s.show(line)
	if s.dirty {
		fmt.Fprintln(s.w)
		s.dirty = false
	}
}

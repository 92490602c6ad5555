package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
)

// sbBody is store buffering: LKMM-ref (and TSO) say Sometimes.
const sbBody = `{}

P0(int *x, int *y)
{
	int r0;

	WRITE_ONCE(*x, 1);
	r0 = READ_ONCE(*y);
}

P1(int *x, int *y)
{
	int r0;

	WRITE_ONCE(*y, 1);
	r0 = READ_ONCE(*x);
}

exists (0:r0=0 /\ 1:r0=0)
`

// writeSB writes store buffering named name into dir with the given
// Result: line ("" for none) and returns its path.
func writeSB(t *testing.T, dir, name, result string) string {
	t.Helper()
	src := "C " + name + "\n\n"
	if result != "" {
		src += "(* Result: " + result + " *)\n\n"
	}
	path := filepath.Join(dir, name+".litmus")
	require.NoError(t, os.WriteFile(path, []byte(src+sbBody), 0o644))
	return path
}

// writeRefused writes a file the parser refuses (goto) and returns its path.
func writeRefused(t *testing.T, dir, name string) string {
	t.Helper()
	src := "C " + name + "\n\n(* Result: Never *)\n\n{}\n\nP0(int *x)\n{\n\tgoto out;\n}\n\nexists (x=1)\n"
	path := filepath.Join(dir, name+".litmus")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// refHook stands in for the expect model in tests (it is named LKMM-ref):
// it runs f, which may sleep, block or panic, then answers as TSO does.
type refHook struct {
	f func(t *litmus.Test)
}

func (*refHook) Name() string { return expectModel }

func (h *refHook) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	if h.f != nil {
		h.f(t)
	}
	return durable.Operational{Model: memory.TSO}.Outcomes(t)
}

// withRef makes m the expect model for the test: every other model of
// litmusModels is kept.
func withRef(t *testing.T, m litmus.Model) {
	saved := litmusModels
	t.Cleanup(func() { litmusModels = saved })
	litmusModels = nil
	for _, old := range saved {
		if !isExpectModel(old) {
			litmusModels = append(litmusModels, old)
		}
	}
	litmusModels = append(litmusModels, m)
}

// lines is out without the summary: the files' lines.
func fileLines(out string) []string {
	head, _, _ := strings.Cut(out, "\n\n")
	return strings.Split(head, "\n")
}

// TestLitmusRunOrder: with -j 4, files that finish in reverse order are
// printed in the order given, one line each.
func TestLitmusRunOrder(t *testing.T) {
	dir := t.TempDir()
	var files []string
	delay := map[string]time.Duration{}
	for i := range 12 {
		name := fmt.Sprintf("SB%02d", i)
		files = append(files, writeSB(t, dir, name, "Sometimes"))
		delay[name] = time.Duration(12-i) * 3 * time.Millisecond
	}
	withRef(t, &refHook{f: func(t *litmus.Test) { time.Sleep(delay[t.Name]) }})
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-j", "4"}, files...)...)
	require.Equal(t, exitOK, code, errs)
	lines := fileLines(out)
	require.Len(t, lines, len(files), out)
	for i, l := range lines {
		assert.Regexp(t, `^MATCH     `+regexpQuote(files[i])+`  Sometimes  Sometimes  [0-9]+\.[0-9]{3}s$`, l)
	}
	assert.Contains(t, out, "12 MATCH, 0 MISMATCH, 0 REFUSED, 0 UNKNOWN, 0 ERROR, 0 NORESULT")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestLitmusRunVerdicts: the real reference over a MATCH, a MISMATCH (a
// Result: line that is wrong), a REFUSED (a construct the parser does not
// have) and a NORESULT; then the summary counts them and lists the
// mismatch, the refusal's construct and the slowest files, the progress
// line ends stderr, and a mismatch wins the exit status.
func TestLitmusRunVerdicts(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		writeSB(t, dir, "match", "Sometimes"),
		writeSB(t, dir, "mismatch", "Never"),
		writeRefused(t, dir, "refused"),
		writeSB(t, dir, "noresult", ""),
	}
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-j", "3"}, files...)...)
	assert.Equal(t, exitUnexpected, code, errs)
	lines := fileLines(out)
	require.Len(t, lines, 4, out)
	assert.Regexp(t, `^MATCH     \S+/match\.litmus  Sometimes  Sometimes  \d+\.\d{3}s$`, lines[0])
	assert.Regexp(t, `^MISMATCH  \S+/mismatch\.litmus  Never  Sometimes  \d+\.\d{3}s$`, lines[1])
	assert.Regexp(t, `^REFUSED   \S+/refused\.litmus  -  -  \d+\.\d{3}s  goto$`, lines[2])
	assert.Regexp(t, `^NORESULT  \S+/noresult\.litmus  -  -  \d+\.\d{3}s$`, lines[3])

	assert.Contains(t, out, "litmus: 4 of 4 files in ")
	assert.Contains(t, out, ": 1 MATCH, 1 MISMATCH, 1 REFUSED, 0 UNKNOWN, 0 ERROR, 1 NORESULT\n")
	assert.Contains(t, out, "refused, by construct (1):\n       1  goto\n")
	assert.Contains(t, out, "slowest files:\n")
	assert.Contains(t, out, "mismatches (1):\n  MISMATCH  "+files[1]+"  want Never, LKMM-ref says Sometimes\n")
	assert.Regexp(t, `litmus: 4/4 files  1 match  1 mismatch  1 refused  0 unknown  0 error  1 noresult  \dm\d\ds\n$`, errs)

	// -q: no progress line. Without the mismatch, the refusal by the
	// parser and the missing Result: line are failures (3).
	out, errs, code = runLitmusArgs(t, "-expect", "-q", files[0], files[2], files[3])
	assert.Equal(t, exitFailed, code)
	assert.Empty(t, errs)
	assert.Contains(t, out, ": 1 MATCH, 0 MISMATCH, 1 REFUSED, 0 UNKNOWN, 0 ERROR, 1 NORESULT\n")
	assert.NotContains(t, out, "mismatches")
}

// TestLitmusRunPanic: a model that panics on one file is that file's
// ERROR with the panic's message; the other files run and print.
func TestLitmusRunPanic(t *testing.T) {
	dir := t.TempDir()
	files := []string{writeSB(t, dir, "before", "Sometimes"), writeSB(t, dir, "boom", "Sometimes"), writeSB(t, dir, "after", "Sometimes")}
	withRef(t, &refHook{f: func(t *litmus.Test) {
		if t.Name == "boom" {
			panic("the model's bug")
		}
	}})
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-q", "-j", "2"}, files...)...)
	assert.Equal(t, exitFailed, code, errs)
	lines := fileLines(out)
	require.Len(t, lines, 3, out)
	assert.True(t, strings.HasPrefix(lines[0], "MATCH     "), lines[0])
	assert.Regexp(t, `^ERROR     \S+/boom\.litmus  Sometimes  -  \d+\.\d{3}s  panic: the model's bug$`, lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "MATCH     "), lines[2])
	assert.Contains(t, out, "errors, by message (1):\n       1  panic: the model's bug\n")

	// Under -model, the panic is the model's error record and the
	// expect record's ERROR.
	out, _, code = runLitmusArgs(t, "-expect", "-model", "sc,lkmm-ref", files[1])
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "== "+files[1]+" under LKMM-ref\nerror: panic: the model's bug\n")
	assert.Contains(t, out, "Expect boom: panic: the model's bug\n")
	assert.Contains(t, out, "0 MATCH, 0 MISMATCH, 0 REFUSED, 0 UNKNOWN, 1 ERROR, 0 NORESULT")
}

// TestLitmusRunTimeout: a file whose model does not answer within
// -timeout is UNKNOWN, with the time it took; the run goes on, exit 4.
func TestLitmusRunTimeout(t *testing.T) {
	dir := t.TempDir()
	files := []string{writeSB(t, dir, "slow", "Sometimes"), writeSB(t, dir, "fast", "Sometimes")}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // the abandoned run ends with the test
	withRef(t, &refHook{f: func(t *litmus.Test) {
		if t.Name == "slow" {
			<-release
		}
	}})
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-q", "-timeout", "50ms"}, files...)...)
	assert.Equal(t, exitIncomplete, code, errs)
	lines := fileLines(out)
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `^UNKNOWN   \S+/slow\.litmus  Sometimes  -  \d+\.\d{3}s  search cut short: no answer within -timeout 50ms$`, lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "MATCH     "), lines[1])
	assert.Contains(t, out, "slowest files:\n      0.0")
}

// TestLitmusRunJSON: one litmus.expect object per file, then the
// litmus.summary; every line decodes.
func TestLitmusRunJSON(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		writeSB(t, dir, "match", "Sometimes"),
		writeSB(t, dir, "mismatch", "Never"),
		writeRefused(t, dir, "refused"),
		writeSB(t, dir, "noresult", ""),
	}
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-json", "-q", "-j", "4"}, files...)...)
	assert.Equal(t, exitUnexpected, code, errs)
	sc := bufio.NewScanner(strings.NewReader(out))
	var exps []expectRecord
	var sum litmusSummary
	for sc.Scan() {
		var kind struct{ Kind string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &kind), sc.Text())
		switch kind.Kind {
		case "litmus.expect":
			var e expectRecord
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
			exps = append(exps, e)
		case "litmus.summary":
			require.NoError(t, json.Unmarshal(sc.Bytes(), &sum))
		default:
			t.Fatalf("unexpected object %s", sc.Text())
		}
	}
	require.Len(t, exps, 4)
	for i, v := range []string{verdictMatch, verdictMismatch, verdictRefused, verdictNoResult} {
		assert.Equal(t, files[i], exps[i].File)
		assert.Equal(t, v, exps[i].Verdict)
		assert.Equal(t, expectSchema, exps[i].Schema)
	}
	assert.True(t, exps[0].Match)
	assert.Equal(t, "Never", exps[1].Want)
	assert.Equal(t, "Sometimes", exps[1].Got)
	assert.Equal(t, "goto", exps[2].Construct)
	assert.Contains(t, exps[2].Error, "unsupported construct: goto")
	assert.Contains(t, exps[3].Error, "no Result: line")

	assert.Equal(t, "litmus.summary", sum.Kind)
	assert.Equal(t, 4, sum.Files)
	assert.Equal(t, 4, sum.Done)
	assert.Equal(t, [6]int{1, 1, 1, 0, 0, 1}, [6]int{sum.Match, sum.Mismatch, sum.Refused, sum.Unknown, sum.Error, sum.NoResult})
	assert.Equal(t, []textCount{{"goto", 1}}, sum.Refusals)
	assert.Equal(t, []mismatchRow{{File: files[1], Test: "mismatch", Want: "Never", Got: "Sometimes"}}, sum.Mismatches)
	assert.Len(t, sum.Slowest, 4)
	assert.Equal(t, 4, sum.Jobs)
}

// TestLitmusRunModelsInOrder: -model with -expect prints every named
// model's records, then the comparison, file after file in the order
// given, with -j 4 too.
func TestLitmusRunModelsInOrder(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 8 {
		result := "Sometimes"
		if i == 5 {
			result = "Never"
		}
		files = append(files, writeSB(t, dir, fmt.Sprintf("SB%d", i), result))
	}
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-model", "sc,tso", "-j", "4", "-q"}, files...)...)
	assert.Equal(t, exitUnexpected, code, errs)
	at := 0
	for i, f := range files {
		for _, want := range []string{"== " + f + " under SC\n", "== " + f + " under TSO\n", fmt.Sprintf("Expect SB%d: Result: ", i)} {
			j := strings.Index(out[at:], want)
			require.GreaterOrEqual(t, j, 0, "%q after offset %d", want, at)
			at += j + len(want)
		}
	}
	assert.Contains(t, out, "Expect SB5: Result: Never, LKMM-ref says Sometimes: MISMATCH")
	assert.Contains(t, out, ": 7 MATCH, 1 MISMATCH, 0 REFUSED, 0 UNKNOWN, 0 ERROR, 0 NORESULT")
}

// TestRunInOrderWindow: a worker never starts a file 4*jobs or more
// ahead of the oldest file not yet printed, whatever the files' times.
func TestRunInOrderWindow(t *testing.T) {
	const n, jobs = 200, 3
	var emitted atomic.Int64
	var mu sync.Mutex
	var late []int
	work := func(i int) fileResult {
		if int64(i) >= emitted.Load()+4*jobs {
			mu.Lock()
			late = append(late, i)
			mu.Unlock()
		}
		if i%17 == 0 {
			time.Sleep(2 * time.Millisecond) // the others overtake it
		}
		return fileResult{out: []byte(fmt.Sprintln(i))}
	}
	var got bytes.Buffer
	emit := func(i int, r fileResult) error {
		got.Write(r.out)
		emitted.Add(1)
		return nil
	}
	done, err := runInOrder(n, jobs, work, emit, func() {}, nil)
	require.NoError(t, err)
	assert.Equal(t, n, done)
	assert.Empty(t, late)
	var want bytes.Buffer
	for i := range n {
		fmt.Fprintln(&want, i)
	}
	assert.Equal(t, want.String(), got.String())

	// An emit that fails stops the run with its error.
	boom := errors.New("stdout closed")
	done, err = runInOrder(n, jobs, work, func(i int, r fileResult) error {
		if i == 5 {
			return boom
		}
		return nil
	}, func() {}, nil)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 5, done)
}

func TestRefusalConstruct(t *testing.T) {
	for msg, want := range map[string]string{
		"a.litmus:3:10: unsupported construct: parameter type intptr_t (int *, atomic_t * only)":   "parameter type intptr_t",
		"a.litmus:9:2: unsupported construct: rcu_read_lock()":                                     "rcu_read_lock()",
		"T: lkmm: unsupported: srcu_read_lock":                                                     "srcu_read_lock",
		"a.litmus:14:2: unsupported: plain store (plain accesses): LKMM-ref does not have it":      "plain store",
		"T: line 14: unsupported in this memory model: Relaxed does not support smp_store_release": "Relaxed does not support smp_store_release",
		"something else": "something else",
	} {
		assert.Equal(t, want, refusalConstruct(msg), msg)
	}
	e := &expectRecord{File: "d/a.litmus", Test: "a", Error: "a: lkmm: test too large to enumerate: 6 threads (at most 4)"}
	assert.Equal(t, "lkmm: test too large to enumerate: N threads", errorKind(e))
	e.Error = "d/a.litmus:3:7: syntax error near }"
	assert.Equal(t, "syntax error near }", errorKind(e))
}

func TestLitmusRunFlags(t *testing.T) {
	_, errs, code := runLitmusArgs(t, "-expect", "-j", "0", litmusDir+"SB.litmus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "-j: want at least 1, got 0")
	_, errs, code = runLitmusArgs(t, "-expect", "-timeout", "-1s", litmusDir+"SB.litmus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "-timeout: want 0 (none) or more")
}

// TestBudgeted: the LKMM reference keeps the time budget itself, through
// its Timeout field, its other fields as they were; any other model, or
// no budget, is left to the watchdog (or to nothing).
func TestBudgeted(t *testing.T) {
	m, self := budgeted(lkmm.Reference{InOrder: true}, 3*time.Second)
	assert.True(t, self)
	assert.Equal(t, lkmm.Reference{InOrder: true, Timeout: 3 * time.Second}, m)
	_, self = budgeted(lkmm.Reference{}, 0)
	assert.False(t, self)
	hook := &refHook{}
	m, self = budgeted(hook, time.Second)
	assert.False(t, self)
	assert.Same(t, hook, m)
}

// flagRef stands in for the expect model (it is named LKMM-ref) to test
// the Result: line's conventions: it answers as TSO does, the first
// outcome (by key) raising the flags flags gives for the test's name,
// and gives no outcome at all for the names of none. It records the
// names it ran.
type flagRef struct {
	flags map[string][]string
	none  map[string]bool
	ran   sync.Map
}

func (*flagRef) Name() string { return expectModel }

func (r *flagRef) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	r.ran.Store(t.Name, true)
	if r.none[t.Name] {
		return nil, nil
	}
	a, err := litmus.Judge(durable.Operational{Model: memory.TSO}, t)
	if err != nil {
		return nil, err
	}
	outs := a.Outcomes
	outs[0].Flags = r.flags[t.Name]
	return outs, nil
}

// flagDecider is flagRef as a litmus.Decider: its witnesses raise no
// flag, the Decision's Flags are the test's flags.
type flagDecider struct{ *flagRef }

func (d flagDecider) Decide(t *litmus.Test) (litmus.Decision, error) {
	outs, err := d.Outcomes(t)
	if err != nil {
		return litmus.Decision{}, err
	}
	dec := litmus.Decision{Flags: d.flags[t.Name]}
	for i := range outs {
		o := outs[i]
		o.Flags = nil
		ok, err := o.Satisfies(t.Cond)
		if err != nil {
			return litmus.Decision{}, err
		}
		switch {
		case ok && dec.Sat == nil:
			dec.Sat = &o
		case !ok && dec.Unsat == nil:
			dec.Unsat = &o
		}
	}
	return dec, nil
}

// writeSBHeader writes store buffering named name into dir with header
// as its header comment, verbatim, and returns its path.
func writeSBHeader(t *testing.T, dir, name, header string) string {
	t.Helper()
	path := filepath.Join(dir, name+".litmus")
	require.NoError(t, os.WriteFile(path, []byte("C "+name+"\n\n"+header+"\n\n"+sbBody), 0o644))
	return path
}

// resultCase is one file of the Result: line tests: its name, its
// Result: line, the flags and outcomes the stand-in gives, and the
// verdict line -expect prints (after the file, up to the time) and what
// follows the time.
type resultCase struct {
	name, result string
	flags        []string
	none         bool
	verdict      string
	want, got    string
	tail         string
}

var resultCases = []resultCase{
	{name: "plain", result: "Sometimes", verdict: verdictMatch, want: "Sometimes", got: "Sometimes"},
	{name: "maybe", result: "Maybe", verdict: verdictMatch, want: "Maybe", got: "Sometimes"},
	{name: "maybe-race", result: "Maybe", flags: []string{"data-race"}, verdict: verdictMatch, want: "Maybe", got: "Sometimes (data race)"},
	{name: "maybe-none", result: "Maybe", none: true, verdict: verdictMatch, want: "Maybe", got: "DEADLOCK"},
	{name: "deadlock", result: "DEADLOCK", none: true, verdict: verdictMatch, want: "DEADLOCK", got: "DEADLOCK"},
	{name: "deadlock-not", result: "DEADLOCK", verdict: verdictMismatch, want: "DEADLOCK", got: "Sometimes"},
	{name: "race", result: "Sometimes DATARACE", flags: []string{"data-race"}, verdict: verdictMatch, want: "Sometimes DATARACE", got: "Sometimes (data race)"},
	{name: "race-missing", result: "Sometimes DATARACE", verdict: verdictMismatch, want: "Sometimes DATARACE", got: "Sometimes (no data race)"},
	{name: "race-result", result: "Never DATARACE", flags: []string{"data-race"}, verdict: verdictMismatch, want: "Never DATARACE", got: "Sometimes (data race)"},
	{name: "race-unwanted", result: "Sometimes", flags: []string{"data-race"}, verdict: verdictMismatch, want: "Sometimes", got: "Sometimes (data race)"},
	{name: "other-flag", result: "Sometimes", flags: []string{"unmatched-rcu-lock"}, verdict: verdictMatch, want: "Sometimes", got: "Sometimes (flag unmatched-rcu-lock)"},
	{name: "flag", result: "Flag srcu-bad-nesting", flags: []string{"data-race", "srcu-bad-nesting"}, verdict: verdictMatch, want: "Flag srcu-bad-nesting", got: "Sometimes (data race, flag srcu-bad-nesting)"},
	{name: "flag-missing", result: "Flag srcu-bad-nesting", flags: []string{"unmatched-rcu-lock"}, verdict: verdictMismatch, want: "Flag srcu-bad-nesting", got: "Sometimes (flag unmatched-rcu-lock, no flag srcu-bad-nesting)"},
	{name: "never-none", result: "Never", none: true, verdict: verdictError, want: "Never", got: "-", tail: "s  never-none: LKMM-ref gives no outcome"},
	{name: "garbled", result: "Sometimes maybe", verdict: verdictError, want: "Sometimes maybe", got: "-", tail: `-expect, but the Result: line is not understood: "Sometimes maybe" (the forms: `},
	{name: "lowercase", result: "never", verdict: verdictError, want: "never", got: "-", tail: `-expect, but the Result: line is not understood: "never"`},
	{name: "flag-bare", result: "Flag", verdict: verdictError, want: "Flag", got: "-", tail: `the Result: line is not understood: "Flag"`},
}

// writeResultCases writes resultCases into a temporary directory and
// returns their paths and the stand-in that answers them.
func writeResultCases(t *testing.T) ([]string, *flagRef) {
	dir := t.TempDir()
	ref := &flagRef{flags: map[string][]string{}, none: map[string]bool{}}
	var files []string
	for _, c := range resultCases {
		files = append(files, writeSB(t, dir, c.name, c.result))
		ref.flags[c.name], ref.none[c.name] = c.flags, c.none
	}
	return files, ref
}

// TestLitmusRunResultConventions: under -expect, the Result: line is
// judged by the corpus's conventions (Maybe, DEADLOCK, DATARACE, Flag
// NAME), a line of no known form is an ERROR that says so and the model
// does not run, with the stand-in as a plain model (Decide falls back on
// Judge: the flags are the outcomes') and as a Decider (the Decision's).
func TestLitmusRunResultConventions(t *testing.T) {
	files, ref := writeResultCases(t)
	for _, m := range []litmus.Model{ref, flagDecider{ref}} {
		withRef(t, m)
		out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-q", "-j", "3"}, files...)...)
		assert.Equal(t, exitUnexpected, code, errs)
		lines := fileLines(out)
		require.Len(t, lines, len(resultCases), out)
		for i, c := range resultCases {
			head := fmt.Sprintf("%-9s %s  %s  %s  ", c.verdict, files[i], c.want, c.got)
			assert.True(t, strings.HasPrefix(lines[i], head), "%T %s:\n got %q\nwant %q...", m, c.name, lines[i], head)
			if c.tail != "" {
				assert.Contains(t, lines[i], c.tail, "%T %s", m, c.name)
			} else {
				assert.Regexp(t, `  \d+\.\d{3}s$`, lines[i], "%T %s: nothing after the time", m, c.name)
			}
		}
		assert.Contains(t, out, ": 8 MATCH, 5 MISMATCH, 0 REFUSED, 0 UNKNOWN, 4 ERROR, 0 NORESULT\n")
		assert.Contains(t, out, "  MISMATCH  "+files[7]+"  want Sometimes DATARACE, LKMM-ref says Sometimes (no data race)\n")
		assert.Contains(t, out, "  MISMATCH  "+files[5]+"  want DEADLOCK, LKMM-ref says Sometimes\n")
		assert.Contains(t, out, "errors, by message (4):\n")
	}
	for _, name := range []string{"garbled", "lowercase", "flag-bare"} {
		_, ran := ref.ran.Load(name)
		assert.False(t, ran, "%s: a Result: line not understood, the model is not run", name)
	}
	_, ran := ref.ran.Load("plain")
	assert.True(t, ran)
}

// TestLitmusRunResultJSON: the litmus.expect objects have the whole
// Result: line as want, DEADLOCK as got for no outcome, and the answer's
// flags; the summary's mismatches have their flags.
func TestLitmusRunResultJSON(t *testing.T) {
	files, ref := writeResultCases(t)
	withRef(t, flagDecider{ref})
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-json", "-q"}, files...)...)
	assert.Equal(t, exitUnexpected, code, errs)
	var exps []expectRecord
	var raw []map[string]any
	var sum litmusSummary
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var kind struct{ Kind string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &kind), sc.Text())
		switch kind.Kind {
		case "litmus.expect":
			var e expectRecord
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
			exps = append(exps, e)
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
			raw = append(raw, m)
		case "litmus.summary":
			require.NoError(t, json.Unmarshal(sc.Bytes(), &sum))
		}
	}
	require.Len(t, exps, len(resultCases))
	for i, c := range resultCases {
		e := exps[i]
		assert.Equal(t, 3, e.Schema)
		assert.Equal(t, c.verdict, e.Verdict, c.name)
		assert.Equal(t, c.result, e.Want, c.name)
		assert.Equal(t, c.verdict == verdictMatch, e.Match, c.name)
		switch {
		case c.verdict == verdictError:
			assert.Empty(t, e.Got, c.name)
			assert.Contains(t, e.Error, strings.TrimPrefix(c.tail, "s  "), c.name)
		case c.none:
			assert.Equal(t, "DEADLOCK", e.Got, c.name)
		default:
			assert.Equal(t, "Sometimes", e.Got, c.name)
		}
		if c.verdict != verdictError && !c.none {
			assert.Equal(t, c.flags, e.Flags, c.name)
		}
		_, has := raw[i]["flags"]
		assert.Equal(t, len(e.Flags) > 0, has, "%s: flags only when there are some", c.name)
	}
	assert.Equal(t, []any{"data-race", "srcu-bad-nesting"}, raw[11]["flags"])
	assert.Equal(t, summarySchema, sum.Schema)
	assert.Equal(t, 2, sum.Schema)
	require.Len(t, sum.Mismatches, 5)
	assert.Equal(t, mismatchRow{File: files[8], Test: "race-result", Want: "Never DATARACE", Got: "Sometimes", Flags: []string{"data-race"}}, sum.Mismatches[2])
	assert.Equal(t, mismatchRow{File: files[7], Test: "race-missing", Want: "Sometimes DATARACE", Got: "Sometimes"}, sum.Mismatches[1])
}

// TestLitmusRunResultComments: the Result: line in the comment forms of
// the corpus, a comment closed on a later line included.
func TestLitmusRunResultComments(t *testing.T) {
	dir := t.TempDir()
	files := []string{
		writeSBHeader(t, dir, "open", "(* Result: Sometimes\n *)"),
		writeSBHeader(t, dir, "starred", "(*\n * Result: Sometimes DATARACE\n *)"),
		writeSBHeader(t, dir, "closed", "(* Result: Never DATARACE *)"),
		writeSBHeader(t, dir, "flagged", "(*\n * Result: Flag srcu-bad-nesting\n *\n * Why: a test.\n *)"),
	}
	withRef(t, &flagRef{flags: map[string][]string{"starred": {"data-race"}, "closed": {"data-race"}, "flagged": {"srcu-bad-nesting"}}})
	out, errs, code := runLitmusArgs(t, append([]string{"-expect", "-q"}, files...)...)
	assert.Equal(t, exitUnexpected, code, errs)
	lines := fileLines(out)
	require.Len(t, lines, 4, out)
	assert.Regexp(t, `^MATCH     \S+/open\.litmus  Sometimes  Sometimes  \d`, lines[0])
	assert.Regexp(t, `^MATCH     \S+/starred\.litmus  Sometimes DATARACE  Sometimes \(data race\)  \d`, lines[1])
	assert.Regexp(t, `^MISMATCH  \S+/closed\.litmus  Never DATARACE  Sometimes \(data race\)  \d`, lines[2])
	assert.Regexp(t, `^MATCH     \S+/flagged\.litmus  Flag srcu-bad-nesting  Sometimes \(flag srcu-bad-nesting\)  \d`, lines[3])
}

// TestLitmusRunResultModels: with -model, the same conventions: the
// expect model's no outcome under DEADLOCK is a match and fails
// nothing, though its own record says it; a flag's mismatch says so; a
// Result: line not understood is the file's error, and no model runs.
func TestLitmusRunResultModels(t *testing.T) {
	dir := t.TempDir()
	deadlock := writeSB(t, dir, "deadlock", "DEADLOCK")
	race := writeSB(t, dir, "race", "Sometimes DATARACE")
	garbled := writeSB(t, dir, "garbled", "Sometimes, mostly")
	withRef(t, &flagRef{none: map[string]bool{"deadlock": true}})

	for _, models := range []string{"sc", "sc,lkmm-ref"} {
		out, errs, code := runLitmusArgs(t, "-expect", "-q", "-model", models, deadlock)
		assert.Equal(t, exitOK, code, "%s: %s\n%s", models, out, errs)
		assert.Contains(t, out, "Expect deadlock: Result: DEADLOCK, LKMM-ref says DEADLOCK: match\n", models)
		assert.Contains(t, out, ": 1 MATCH, 0 MISMATCH, 0 REFUSED, 0 UNKNOWN, 0 ERROR, 0 NORESULT\n", models)
	}
	out, _, _ := runLitmusArgs(t, "-expect", "-q", "-model", "sc,lkmm-ref", deadlock)
	assert.Contains(t, out, "under LKMM-ref\nerror: deadlock: LKMM-ref gives no outcome\n")

	out, _, code := runLitmusArgs(t, "-expect", "-q", "-model", "lkmm-ref", race)
	assert.Equal(t, exitUnexpected, code)
	assert.Contains(t, out, "Expect race: Result: Sometimes DATARACE, LKMM-ref says Sometimes (no data race): MISMATCH\n")

	out, _, code = runLitmusArgs(t, "-expect", "-q", "-model", "sc,lkmm-ref", garbled)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "== "+garbled+"\nerror: "+garbled+`: -expect, but the Result: line is not understood: "Sometimes, mostly" (the forms: `)
	assert.NotContains(t, out, "under SC")
	assert.Contains(t, out, ": 0 MATCH, 0 MISMATCH, 0 REFUSED, 0 UNKNOWN, 1 ERROR, 0 NORESULT\n")
	// As for a file with no Result: line, the litmus.result error object
	// only, and the summary counts it.
	out, _, _ = runLitmusArgs(t, "-expect", "-q", "-json", "-model", "sc", garbled)
	assert.Contains(t, out, `"kind":"litmus.result"`)
	assert.Contains(t, out, `the Result: line is not understood: \"Sometimes, mostly\"`)
	assert.Contains(t, out, `"error":1,`)
}

// TestParseResultLine: each form the corpus writes, and what is not one.
func TestParseResultLine(t *testing.T) {
	for line, want := range map[string]resultWant{
		"Never":                 {result: "Never"},
		"Sometimes":             {result: "Sometimes"},
		"Always":                {result: "Always"},
		"Never DATARACE":        {result: "Never", race: true},
		"Sometimes  DATARACE":   {result: "Sometimes", race: true},
		"Maybe":                 {any: true},
		"DEADLOCK":              {deadlock: true},
		"Flag srcu-bad-nesting": {flag: "srcu-bad-nesting"},
	} {
		got, err := parseResultLine(line)
		require.NoError(t, err, line)
		assert.Equal(t, want, got, line)
	}
	for _, line := range []string{"", "never", "Never DATARACE x", "DATARACE", "Maybe DATARACE", "DEADLOCK DATARACE", "Flag", "Flag a b", "Flag (x)", "Sometimes.", "Ok"} {
		_, err := parseResultLine(line)
		assert.ErrorIs(t, err, errResultLine, "%q", line)
	}
	assert.Equal(t, "Never (no data race)", gotText("Never DATARACE", "Never", nil))
	assert.Equal(t, "Never", gotText("Never", "Never", nil))
	assert.Equal(t, "", gotText("Never", "", nil))
}

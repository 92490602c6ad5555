package props

import (
	"flag"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/litmusvariants"
	"github.com/flushproof/flushproof/model"
	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/verdict"
)

// examplesAll runs every example file's rows against the built-in model's
// (.ci/run sets it); without it go test ./... runs the cases marked quick.
var examplesAll = flag.Bool("examples.all", false, "check every durability litmus file in examples/litmus against its built-in model's rows (minutes)")

// exampleCase is a durability litmus file in examples/litmus with patches
// applied in order (a variant kept as a patch of its family's base file;
// none: the file itself) and the built-in rows (their names in
// flushproof check, proof rows included) its rows must agree with: key
// "SC cache+fua" is the file's row under that memory model and device
// configuration.
type exampleCase struct {
	file    string   // under examples/litmus: family/base.litmus
	patches []string // under the file's directory
	rows    map[string]string
	quick   bool // run in go test ./... too (seconds)
}

// checkExamples runs each case's file rows and built-in rows and requires
// equal verdicts (SAFE or UNSAFE) and the same expectation (a negative
// control in both or in neither). The state counts are logged side by
// side (go test -v).
func checkExamples(t *testing.T, cases []exampleCase) {
	builtin := map[string]verdict.Row{}
	for _, r := range model.Rows(true, false) {
		builtin[r.Name()] = r
	}
	for _, c := range cases {
		if !c.quick && !*examplesAll {
			continue
		}
		rows := map[string]verdict.Row{}
		for k, name := range c.rows {
			br, ok := builtin[name]
			require.True(t, ok, "%s: no built-in row %q", c.file, name)
			rows[k] = br
		}
		checkFile(t, c.file, c.patches, rows)
	}
}

// checkFile runs the rows of examples/litmus/file, with patches (under
// its directory) applied, named by rows' keys ("SC cache+fua") and the
// built-in rows they map to, and requires equal verdicts and
// expectations; the state counts are logged side by side.
func checkFile(t *testing.T, file string, patches []string, rows map[string]verdict.Row) {
	path := filepath.Join("..", "examples", "litmus", file)
	var ps []string
	for _, p := range patches {
		ps = append(ps, filepath.Join(filepath.Dir(path), p))
	}
	d, label := readExample(t, path, ps...)
	checkRows(t, label, d, rows)
}

// readExample reads the litmus file at path with the patches at
// patchPaths applied in order, as flushproof check -patch does
// (kernelc.ReadPatches and ReadFile: a variant's patch gives the test
// its own name), and returns it with a label naming the file and the
// patches. An example's patch is a diff of the file as it is: a hunk
// placed at an offset or with fuzz fails the test.
func readExample(t *testing.T, path string, patchPaths ...string) (*durable.Test, string) {
	t.Helper()
	label := strings.TrimPrefix(filepath.ToSlash(path), "../examples/litmus/")
	for _, p := range patchPaths {
		label += " + " + filepath.Base(p)
	}
	ps, err := kernelc.ReadPatches(patchPaths, []string{path}, func(s string) { t.Errorf("%s: %s", label, s) })
	require.NoError(t, err, label)
	tt, err := kernelc.ReadFile(path, ps, func(s string) { t.Errorf("%s: %s", label, s) })
	require.NoError(t, err, label)
	d, err := durable.Read(tt.File, tt)
	require.NoError(t, err, label)
	return d, label
}

// exampleFiles are the files of examples/litmus and their variants
// (litmusvariants.Tree: each base file, then each patch of it).
func exampleFiles(t *testing.T) []litmusvariants.File {
	t.Helper()
	fs, err := litmusvariants.Tree(filepath.Join("..", "examples", "litmus"))
	require.NoError(t, err)
	require.NotEmpty(t, fs)
	return fs
}

// readVariant is readExample of f.
func readVariant(t *testing.T, f litmusvariants.File) (*durable.Test, string) {
	t.Helper()
	if f.Patch == "" {
		return readExample(t, f.Base)
	}
	return readExample(t, f.Base, f.Patch)
}

// checkRows runs d's rows named by rows' keys and the built-in rows they
// map to, as checkFile does; file names d in the messages.
func checkRows(t *testing.T, file string, d *durable.Test, rows map[string]verdict.Row) {
	t.Helper()
	opt := explore.Options{MaxStates: 20_000_000, Liveness: true, Obligations: true}
	fileRows := map[string]verdict.Row{}
	for _, r := range d.Rows(durable.AllModels(), false) {
		fileRows[r.Config] = r
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fr, ok := fileRows[k]
		require.True(t, ok, "%s: no row %q (the header's Device line?)", file, k)
		br := rows[k]
		fv, err := fr.Check(opt)
		require.NoError(t, err, "%s %s", file, k)
		bv, err := br.Check(opt)
		require.NoError(t, err, br.Name())
		require.False(t, fv.Outcome == verdict.Unknown || bv.Outcome == verdict.Unknown, "%s %s: a search was cut short", file, k)
		assert.Equal(t, bv.Word(), fv.Word(), "%s %s: the file's verdict against %q's", file, k, br.Name())
		assert.Equal(t, br.Negative, fr.Negative, "%s %s: expected UNSAFE in one and not the other (%q)", file, k, br.Name())
		checkJudged(t, fr.Name(), fv)
		checkJudged(t, br.Name(), bv)
		t.Logf("%-48s %-22s %-7s %10d states | %-58s %-7s %10d states", file, k, fv.Word(), fv.Stats.States, br.Name(), bv.Word(), bv.Stats.States)
	}
}

// vacuousExamples are the rows of the example files and the built-in
// table whose SAFE leaves an obligation unjudged, with why: each must be
// explained, and every other SAFE row must have judged every obligation.
var vacuousExamples = map[string]string{
	// Under SC and TSO seq is never below completed (the file's header
	// says so): the branch that skips the flush, and its assert_durable,
	// is never taken. LKMM takes it.
	"xfs-flushseq-variant-completed-before-seq SC cache+fua 2 threads, crash anywhere, flush EIO":  "assert_durable(b, round) (P0 line 47, P1 line 85)",
	"xfs-flushseq-variant-completed-before-seq TSO cache+fua 2 threads, crash anywhere, flush EIO": "assert_durable(b, round) (P0 line 47, P1 line 85)",
}

// checkJudged asserts that a row without a violation judged each of its
// obligations in some state, unless vacuousExamples explains the ones it
// did not; a row the search counted no obligations of fails too.
func checkJudged(t *testing.T, name string, v verdict.Verdict) {
	t.Helper()
	require.NoError(t, v.JudgeErr, name)
	require.NotEmpty(t, v.Judged, "%s: no obligations counted", name)
	if v.Violation != nil {
		return
	}
	never := strings.Join(v.Vacuous(), "; ")
	assert.Equal(t, vacuousExamples[name], never, "%s: obligations never judged (%v)", name, v.Judged)
}

// TestExamplesJudged checks every row of the example files for
// obligations no state judged (checkJudged): with -examples.all every
// file and every variant patched on one, by default those whose tests
// vacuousExamples names, so that an explained vacuity that goes away, or
// changes, is noticed.
func TestExamplesJudged(t *testing.T) {
	named := map[string]bool{}
	for row := range vacuousExamples {
		named[strings.Fields(row)[0]] = true
	}
	seen := map[string]bool{}
	for _, f := range exampleFiles(t) {
		if !*examplesAll && !named[f.Name()] {
			continue
		}
		d, _ := readVariant(t, f)
		for _, r := range d.Rows(nil, d.ModelsAll) {
			v, err := r.Check(explore.Options{MaxStates: 20_000_000, Liveness: true, Obligations: true})
			require.NoError(t, err, r.Name())
			if v.NotApplicable != "" {
				continue
			}
			require.NotEqual(t, verdict.Unknown, v.Outcome, "%s: cut short", r.Name())
			checkJudged(t, r.Name(), v)
			seen[r.Name()] = true
		}
	}
	for row := range vacuousExamples {
		assert.True(t, seen[row], "vacuousExamples names %q, which no example file has", row)
	}
}

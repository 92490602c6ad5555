package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/verdict"
)

var (
	mutantsFlag  = flag.Bool("mutants", false, "run flushproof check under every semantic mutation (internal/mutate), about two minutes")
	mutantsTable = flag.String("mutants.table", "", "with -mutants, also write the table of what catches each mutation (Markdown) to this file")
)

// outsideCheck are the mutations of the tools around the models, which
// `flushproof check` does not run: the test that catches each. The crash
// lab's are caught by its own tests; the budget is a check flag, so it is
// tried through check below.
var outsideCheck = map[mutate.Mutation]string{
	mutate.GeneratorNeverTears: "crashlab TestTearingCatchesGeneratorNeverTears (the generator's crash images hold no sector of older content under a kept write)",
	mutate.AckOffByOne:         "crashlab TestAckBoundaryCatchesAckOffByOne (a crash right after the acknowledging op)",
	// The durability litmus checker runs files, which check's default
	// rows are not.
	mutate.CondAssignLocal: "model/durable TestCondAssignCrashPoint, TestDurableFiles and TestDurableReductionsKeepVerdicts (testdata/durable/cond-assign-crash-point.litmus: UNSAFE -> SAFE on its 9 rows)",
	// No durability obligation sees it: the short write's direct blocks
	// went with REQ_FUA.
	mutate.ODSyncShortSkipsSync: "model/odsync TestODSyncShortWriteSyncs (a write() whose fallback failed returns a short count instead of -EIO)",
	// The model world's device never fails a write.
	mutate.DSyncIgnoresWriteError: "impl TestDSyncWriterWriteError (write+flush returns nil for a failed write)",
	// No default row has an actor blocked forever while another can
	// still return.
	mutate.LivenessAnyReturn: "model/explore TestExploreBlockedForeverNamesTheActor (a waiter blocked forever beside an actor that can always return)",
	// Only one default row submits an asynchronous flush (the xfs flush
	// sequence's negative control that submits before it numbers), and
	// its bug shows in runs where the flush makes data durable, whose
	// states the device tells apart anyway.
	mutate.WorldKeyNoFlushEnd: "model/world TestAsyncFlushFailureIsReached (a failed asynchronous flush with nothing to make durable: UNSAFE -> SAFE)",
}

// mutantBudget is the -max-states the budget mutation is tried with.
const mutantBudget = 30

// TestMutants switches each semantic mutation on, one at a time, runs
// `flushproof check` (the command, in this process) and asserts that at
// least one row's verdict turns unexpected: a real model UNSAFE, a negative
// control SAFE, or a search that errs. Under BudgetIgnored check runs
// with -max-states, and a row that the budget cuts short (UNKNOWN) without
// the mutation but reports SAFE or UNSAFE with it is the catch. Runs with
// -mutants, in a test binary built with -tags mutants (CI does).
func TestMutants(t *testing.T) {
	if !*mutantsFlag {
		t.Skip("run with -mutants (about two minutes): go test -tags mutants ./cmd/flushproof -run TestMutants -mutants")
	}
	if !mutate.Built {
		t.Fatal("-mutants needs the mutations built in: go test -tags mutants ./cmd/flushproof -run 'TestMutants$' -mutants")
	}
	base, _, code := checkJSON(t)
	require.Equal(t, exitOK, code, "the table without mutations")
	was := map[string]verdict.Record{}
	for _, r := range base {
		was[r.Row] = r
	}
	// The same table under the budget, for BudgetIgnored: the rows a
	// working budget cuts short.
	budgetArgs := []string{"-max-states", fmt.Sprint(mutantBudget)}
	cut := map[string]bool{}
	budgeted, _, code := checkJSON(t, budgetArgs...)
	require.Equal(t, exitIncomplete, code, "the table under -max-states %d without mutations", mutantBudget)
	for _, r := range budgeted {
		cut[r.Row] = r.Verdict == "UNKNOWN"
	}
	var table []string
	for _, m := range mutate.All() {
		if why, ok := outsideCheck[m]; ok {
			table = append(table, fmt.Sprintf("| %s | not run by check | | %s |", m, why))
			continue
		}
		t.Run(m.String(), func(t *testing.T) {
			restore := mutate.Set(t, m)
			defer restore()
			start := time.Now()
			var args []string
			if m == mutate.BudgetIgnored {
				args = budgetArgs
			}
			rows, _, code := checkJSON(t, args...)
			var caught []string
			for _, r := range rows {
				before := was[r.Row]
				switch {
				case m == mutate.BudgetIgnored:
					if cut[r.Row] && r.Verdict != "UNKNOWN" {
						caught = append(caught, fmt.Sprintf("%s: UNKNOWN -> %s after %d states with -max-states %d", r.Row, r.Verdict, r.States, mutantBudget))
					}
				case r.Verdict == "ERROR":
					caught = append(caught, fmt.Sprintf("%s: ERROR %s", r.Row, r.Error))
				case !r.Expected && r.Verdict != "UNKNOWN":
					what := r.Verdict
					if r.Counterexample != nil {
						what += " (" + r.Counterexample.Violation + ", " + fmt.Sprint(len(r.Counterexample.Steps)) + " steps)"
					}
					caught = append(caught, fmt.Sprintf("%s: %s -> %s", r.Row, before.Verdict, what))
				}
			}
			// A real model turned UNSAFE first: it shows the mutation's bug.
			sort.SliceStable(caught, func(i, j int) bool {
				ui, uj := strings.Contains(caught[i], "SAFE -> UNSAFE"), strings.Contains(caught[j], "SAFE -> UNSAFE")
				if ui != uj {
					return ui
				}
				return caught[i] < caught[j]
			})
			t.Logf("%v: exit %d, %d of %d rows caught it in %v", m, code, len(caught), len(rows), time.Since(start).Round(time.Millisecond))
			for _, c := range caught {
				t.Logf("  %s", c)
			}
			if assert.NotEmpty(t, caught, "%v: no row of flushproof check changes", m) {
				if m != mutate.BudgetIgnored {
					assert.Equal(t, exitUnexpected, code, "%v: check exits 1", m)
				}
				table = append(table, fmt.Sprintf("| %s | %d of %d rows | `%s` | |", m, len(caught), len(rows), caught[0]))
			} else {
				table = append(table, fmt.Sprintf("| %s | NOT CAUGHT | | |", m))
			}
		})
	}
	if *mutantsTable != "" {
		head := "| mutation | rows of `flushproof check` turned unexpected | a row that changes (a real model turned UNSAFE if any) | caught outside check by |\n|---|---|---|---|\n"
		require.NoError(t, os.WriteFile(*mutantsTable, []byte(head+strings.Join(table, "\n")+"\n"), 0o644))
	}
}

// TestMutantsDocumented: docs/mutants.md names every mutation, so a new one
// is not added without saying what catches it.
func TestMutantsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mutants.md")
	require.NoError(t, err)
	for _, m := range mutate.All() {
		assert.Contains(t, string(doc), "| "+m.String()+" |", "docs/mutants.md has no row for %v", m)
	}
}

// TestBinaryLinksNoTesting: without the build tag mutants the command
// links nothing of package testing (the mutations are not built in).
func TestBinaryLinksNoTesting(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	out, err := exec.Command(gocmd, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		assert.NotEqual(t, "testing", p, "flushproof links package testing")
	}
}

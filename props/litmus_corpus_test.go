package props

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
)

var litmusTable = flag.String("litmus.table", "", "write the corpus agreement table (Markdown) to this file")

// The models a litmus test is run under: the two the explorer runs exactly
// (SC, x86-TSO), today's view-based Relaxed model, and the axiomatic LKMM
// reference, the judge.
var (
	opSC      = durable.Operational{Model: memory.SC}
	opTSO     = durable.Operational{Model: memory.TSO}
	opRelaxed = durable.Operational{Model: memory.Relaxed}
	reference = lkmm.Reference{}
)

// outcomeKeys runs t under m: the set of its outcomes' keys, or err.
func outcomeKeys(m litmus.Model, t *litmus.Test) (map[string]bool, error) {
	outs, err := m.Outcomes(t)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, o := range outs {
		set[o.Key()] = true
	}
	return set, nil
}

// missing lists the keys of a not in b.
func missing(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestLitmusCorpus runs every test of props/testdata/litmus under the
// LKMM reference, which must give the result the test's header states,
// and under SC and x86-TSO, whose outcomes must be among the next model's
// (SC within TSO within LKMM: each is stronger than the next). Today's
// Relaxed model runs the tests it supports; where its answer differs from
// LKMM's the table says so (it is stronger than LKMM, which a later model
// replaces), but it must never allow an outcome LKMM forbids.
func TestLitmusCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/litmus/*.litmus")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 60, "the corpus")
	start := time.Now()
	rows := []string{"| test | header (LKMM) | LKMM reference | LKMM operational | LKMM explorer | SC | TSO | Relaxed (today) |", "|---|---|---|---|---|---|---|---|"}
	var agree, opAgree, relaxedDiffers, relaxedRefuses int
	for _, f := range files {
		test, err := litmus.ParseFile(f)
		require.NoError(t, err, f)
		require.NotEmpty(t, test.Result, "%s: no Result: line", f)
		answer := func(m litmus.Model) string {
			a, err := litmus.Judge(m, test)
			if errors.Is(err, litmus.ErrUnsupported) {
				return "unsupported"
			}
			if !assert.NoError(t, err, "%s under %s", f, m.Name()) {
				return "ERROR"
			}
			return a.Result
		}
		ref, op, sc, tso, rel := answer(reference), answer(opLKMM), answer(opSC), answer(opTSO), answer(opRelaxed)
		// The explorer's LKMM (memory.LKMM) refuses a store after an
		// unfenced load it does not depend on: "refused" (load
		// buffering); TestMemoryLKMMCorpus holds the rest to the reference.
		mem := "refused"
		if a, err := litmus.Judge(opMem, test); err == nil {
			mem = a.Result
		} else if !errors.Is(err, litmus.ErrUnsupported) {
			assert.NoError(t, err, "%s under %s", f, opMem.Name())
			mem = "ERROR"
		}
		if assert.Equal(t, test.Result, ref, "%s: the LKMM reference against the header", f) {
			agree++
		}
		if assert.Equal(t, test.Result, op, "%s: the operational LKMM model against the header", f) {
			opAgree++
		}
		switch {
		case rel == "unsupported":
			relaxedRefuses++
		case rel != ref:
			relaxedDiffers++
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", test.Name, test.Result, ref, op, mem, sc, tso, rel))

		// Inclusion: SC within TSO within LKMM; Relaxed within LKMM.
		refSet, err := outcomeKeys(reference, test)
		require.NoError(t, err, f)
		for _, m := range []litmus.Model{opSC, opTSO, opRelaxed} {
			set, err := outcomeKeys(m, test)
			if errors.Is(err, litmus.ErrUnsupported) {
				continue
			}
			require.NoError(t, err, "%s under %s", f, m.Name())
			assert.Empty(t, missing(set, refSet), "%s: outcomes %s allows and LKMM does not", f, m.Name())
		}
		scSet, err1 := outcomeKeys(opSC, test)
		tsoSet, err2 := outcomeKeys(opTSO, test)
		if err1 == nil && err2 == nil {
			assert.Empty(t, missing(scSet, tsoSet), "%s: outcomes SC allows and TSO does not", f)
		}
	}
	t.Logf("%d corpus tests in %v: LKMM reference agrees with %d headers, the operational LKMM model with %d; Relaxed (today) answers %d differently and refuses %d",
		len(files), time.Since(start).Round(time.Millisecond), agree, opAgree, relaxedDiffers, relaxedRefuses)
	if *litmusTable != "" {
		require.NoError(t, os.WriteFile(*litmusTable, []byte(strings.Join(rows, "\n")+"\n"), 0o644))
	}
}

// drawReferenced draws a random program and its outcomes under the LKMM
// reference; ok is false if it is beyond nestCandidates (counted in
// skipped).
func drawReferenced(rt *rapid.T, o litmustest.Options, skipped *int) (test *litmus.Test, ref map[string]bool, ok bool) {
	test = litmustest.Draw(rt, o)
	ref, err := outcomeKeys(lkmm.Reference{Candidates: nestCandidates}, test)
	if errors.Is(err, lkmm.ErrTooLarge) {
		*skipped++
		return nil, nil, false
	}
	if err != nil {
		rt.Fatalf("LKMM reference: %v", err)
	}
	return test, ref, true
}

// mustKeys runs test under m: its outcome keys; an error fails the check.
func mustKeys(rt *rapid.T, m litmus.Model, test *litmus.Test) map[string]bool {
	set, err := outcomeKeys(m, test)
	if err != nil {
		rt.Fatalf("%s: %v", m.Name(), err)
	}
	return set
}

// within fails the check if a, the outcomes of model an, has one b (of
// model bn) has not.
func within(rt *rapid.T, a map[string]bool, an string, b map[string]bool, bn string) {
	if m := missing(a, b); len(m) > 0 {
		rt.Fatalf("%s allows %v, %s does not", an, m, bn)
	}
}

// nestCandidates bounds the reference's candidate executions per random
// program: a program beyond it is skipped and counted.
const nestCandidates = 20000

// nestOptions are the random programs of TestLitmusModelsNest: small
// enough that the reference enumerates them in milliseconds.
func nestOptions() litmustest.Options {
	o := litmustest.Default()
	o.MaxThreads, o.MaxLocs, o.MaxStmts, o.Values = 3, 2, 3, 2
	return o
}

// TestLitmusModelsNest draws random litmus programs of every primitive but
// locks (2 or 3 threads, up to 2 locations, up to 3 statements each,
// branches and data dependencies) and checks that each model allows only what the next,
// weaker one allows: SC within x86-TSO within the LKMM reference
// (TestOperationalLKMMRandom holds the operational LKMM model to the
// reference's exact outcome sets). About 20 ms a program: 100 by default,
// 2000 in CI (-rapid.checks=2000).
func TestLitmusModelsNest(t *testing.T) {
	start := time.Now()
	var ran, skipped int
	rapid.Check(t, func(rt *rapid.T) {
		test, ref, ok := drawReferenced(rt, nestOptions(), &skipped)
		if !ok {
			return
		}
		sc, tso := mustKeys(rt, opSC, test), mustKeys(rt, opTSO, test)
		within(rt, sc, "SC", tso, "TSO")
		within(rt, tso, "TSO", ref, "LKMM")
		ran++
	})
	t.Logf("%d random programs (%d over the reference's bounds, skipped) in %v", ran, skipped, time.Since(start).Round(time.Millisecond))
}

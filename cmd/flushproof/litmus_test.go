package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

const litmusDir = "testdata/litmus/"

func runLitmusArgs(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"litmus"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestLitmusText(t *testing.T) {
	out, errs, code := runLitmusArgs(t, "-model", "sc,tso", litmusDir+"SB.litmus")
	assert.Equal(t, exitOK, code, errs)
	for _, want := range []string{
		"== testdata/litmus/SB.litmus under SC", "Test SB Allowed", "States 3", "No\n",
		"Positive: 0 Negative: 3", "Observation SB Never 0 3",
		"== testdata/litmus/SB.litmus under TSO", "States 4", "Ok\n", "Positive: 1 Negative: 3",
		"Observation SB Sometimes 1 3", "0:r0=0; 1:r0=0; x=1; y=1;",
		"Witness: a shortest execution to an outcome that satisfies the condition",
		"step | P0", "| memory", "r0 = READ_ONCE(y) = 0", "reaches memory",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "under Relaxed", "-model sc,tso")
	// SC has no witness: the first Witness line is TSO's.
	sc, _, _ := bytes.Cut([]byte(out), []byte("under TSO"))
	assert.NotContains(t, string(sc), "Witness:")
}

func TestLitmusForallWitness(t *testing.T) {
	out, errs, code := runLitmusArgs(t, "-model", "tso", litmusDir+"counter.litmus")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "Test counter Required")
	assert.Contains(t, out, "Observation counter Always 2 0")
	assert.NotContains(t, out, "Witness:", "forall holds: nothing to show")
}

func TestLitmusJSON(t *testing.T) {
	out, errs, code := runLitmusArgs(t, "-json", litmusDir+"SB+mbs.litmus")
	assert.Equal(t, exitOK, code, errs)
	var recs []litmusRecord
	sc := bufio.NewScanner(bytes.NewBufferString(out))
	for sc.Scan() {
		var r litmusRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		recs = append(recs, r)
	}
	require.Len(t, recs, 5)
	for i, m := range []string{"SC", "TSO", "Relaxed", "LKMM-op", "LKMM-ref"} {
		assert.Equal(t, "litmus.result", recs[i].Kind)
		assert.Equal(t, m, recs[i].Model)
		assert.Equal(t, "Never", recs[i].Result, m)
		assert.False(t, recs[i].Holds, m)
		assert.Empty(t, recs[i].Witness, m)
	}
}

// TestLitmusExplorerLKMM: -model lkmm runs the explorer's LKMM model (the
// one flushproof check -model lkmm runs), which answers SB+mbs as the
// reference does, answers LB by leaving the load pending while the store
// runs ahead (the witness shows it), and refuses a store that follows a
// load only smp_rmb separates it from (smp_rmb satisfies the load and
// orders nothing before the store). Its old spelling, lkmm-memory, is
// refused with the new ones.
func TestLitmusExplorerLKMM(t *testing.T) {
	out, errs, code := runLitmusArgs(t, "-model", "lkmm", litmusDir+"SB+mbs.litmus")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "under LKMM\n")
	assert.NotContains(t, out, "under LKMM-")
	assert.Contains(t, out, "Observation SB+mbs Never")
	_, errs, code = runLitmusArgs(t, "-model", "lkmm-memory", litmusDir+"SB+mbs.litmus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "lkmm-memory is spelled lkmm now, as in flushproof check")
	assert.Contains(t, errs, "the axiomatic reference is lkmm-ref")
	out, _, code = runLitmusArgs(t, "-model", "lkmm", litmusDir+"LB.litmus")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Observation LB Sometimes 1 3")
	assert.Contains(t, out, "r0 = READ_ONCE(x): left pending (what follows may run before it)")
	assert.Contains(t, out, "r0 = READ_ONCE(x) = 1 (the pending access is satisfied)")
	rmb := filepath.Join(t.TempDir(), "LB+rmb.litmus")
	require.NoError(t, os.WriteFile(rmb, []byte(`C LB+rmb
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); smp_rmb(); WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; r0 = READ_ONCE(*y); smp_rmb(); WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1)
`), 0o644))
	// The explorer refuses it (a store its run-ahead cannot place): LKMM
	// is the reference's answer, which says so.
	out, _, code = runLitmusArgs(t, "-model", "lkmm", rmb)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Observation LB+rmb Sometimes 1 3")
	assert.Contains(t, out, "Answered by LKMM-ref: the explorer gave no answer: ")
	assert.Contains(t, out, "LKMM lets this store be seen before its load of x is satisfied")
	// The same load buffering in a check: the negative control's
	// counterexample shows the read left pending and satisfied late.
	var cout, cerr bytes.Buffer
	code = run([]string{"check", "-q", "-model", "lkmm", "../../examples/litmus/lkmm/lkmm-lb.litmus"}, &cout, &cerr)
	assert.Equal(t, exitOK, code, cerr.String())
	assert.Contains(t, cout.String(), "L27: r0 = READ_ONCE(*a): left pending (what follows may run before it)")
	assert.Contains(t, cout.String(), "L27: r0 = READ_ONCE(*a) = 1 (the pending access is satisfied)")
	// A construct only the reference runs: the refusal says where, and
	// which model has it.
	rcu := filepath.Join(t.TempDir(), "MP+rcu.litmus")
	require.NoError(t, os.WriteFile(rcu, []byte(`C MP+rcu
{}
P0(int *x, int *y) { WRITE_ONCE(*x, 1); synchronize_rcu(); WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; int r1; rcu_read_lock(); r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); rcu_read_unlock(); }
exists (1:r0=1 /\ 1:r1=0)
`), 0o644))
	out, _, code = runLitmusArgs(t, "-model", "sc", rcu)
	assert.Equal(t, exitUsage, code) // a model refuses the test (docs/cli.md)
	assert.Contains(t, out, "MP+rcu.litmus:3:41: unsupported: synchronize_rcu (RCU): the explorer (SC, TSO, Relaxed, LKMM) does not have it (LKMM-ref, -model lkmm-ref, runs the whole LKMM language)")
	out, _, code = runLitmusArgs(t, "-model", "lkmm-ref", rcu)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Observation MP+rcu Never")
	// LKMM is LKMM in every command: where the explorer refuses, the
	// reference answers, as LKMM, saying why.
	lk, _, code := runLitmusArgs(t, "-model", "lkmm", "-json", rcu)
	assert.Equal(t, exitOK, code)
	var rec litmusRecord
	require.NoError(t, json.Unmarshal([]byte(lk), &rec))
	assert.Equal(t, "LKMM", rec.Model)
	assert.Equal(t, "LKMM-ref", rec.AnsweredBy)
	assert.Equal(t, rcu+":3:41: unsupported: synchronize_rcu (RCU): the explorer (SC, TSO, Relaxed, LKMM) does not have it", rec.ExplorerError)
	assert.Equal(t, "Never", rec.Result)
	assert.Empty(t, rec.Error)
	// Past the explorer's bound of locations, the same.
	var params, stores []string
	for i := 0; i <= memory.MaxLocations; i++ {
		params = append(params, fmt.Sprintf("int *l%d", i))
		stores = append(stores, fmt.Sprintf("WRITE_ONCE(*l%d, 1);", i))
	}
	wide := filepath.Join(t.TempDir(), "MP+wide.litmus")
	require.NoError(t, os.WriteFile(wide, []byte(fmt.Sprintf(`C MP+wide
{}
P0(%s) { %s smp_wmb(); WRITE_ONCE(*l0, 2); }
P1(int *l0, int *l%d) { int r0; int r1; r0 = READ_ONCE(*l0); smp_rmb(); r1 = READ_ONCE(*l%d); }
exists (1:r0=2 /\ 1:r1=0)
`, strings.Join(params, ", "), strings.Join(stores, " "), memory.MaxLocations, memory.MaxLocations)), 0o644))
	lk, _, code = runLitmusArgs(t, "-model", "lkmm", "-json", wide)
	assert.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(lk), &rec))
	assert.Equal(t, "LKMM-ref", rec.AnsweredBy)
	assert.Contains(t, rec.ExplorerError, "and the checker's memory holds at most")
	assert.Equal(t, "Never", rec.Result)
	// A file the explorer accepts is its answer alone.
	lk, _, code = runLitmusArgs(t, "-model", "lkmm", "-json", litmusDir+"SB+mbs.litmus")
	assert.Equal(t, exitOK, code)
	rec = litmusRecord{}
	require.NoError(t, json.Unmarshal([]byte(lk), &rec))
	assert.Empty(t, rec.AnsweredBy)
	assert.Empty(t, rec.ExplorerError)
}

func TestLitmusErrors(t *testing.T) {
	// A construct the parser refuses: that file's error record
	// (file:line:column: construct), the other files run, exit 3 as for
	// an error row.
	out, errs, code := runLitmusArgs(t, litmusDir+"unsupported.litmus", litmusDir+"SB.litmus")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "== "+litmusDir+"unsupported.litmus\nerror: "+litmusDir+"unsupported.litmus:9:2: unsupported construct: do")
	assert.Contains(t, out, "Observation SB Sometimes")
	assert.Empty(t, errs)

	// A primitive a model of the default list lacks: not applicable, the
	// others run, exit 0; the same model named with -model: its error,
	// exit 2.
	out, _, code = runLitmusArgs(t, litmusDir+"MP+rel+acq.litmus")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Observation MP+rel+acq Never 0 3")
	assert.Contains(t, out, "not applicable: MP+rel+acq: line 14: unsupported in this memory model: Relaxed does not support smp_store_release")
	out, _, code = runLitmusArgs(t, "-model", "sc,relaxed", litmusDir+"MP+rel+acq.litmus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "error: MP+rel+acq: line 14: unsupported in this memory model: Relaxed does not support smp_store_release")

	_, errs, code = runLitmusArgs(t, "-model", "arm", litmusDir+"SB.litmus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `-model: want a comma-separated list of sc, tso, relaxed, lkmm-op, lkmm-ref, lkmm, got "arm"`)

	_, errs, code = runLitmusArgs(t)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "no litmus file")

	out, _, code = runLitmusArgs(t, litmusDir+"missing.litmus")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "error: litmus: reading "+litmusDir+"missing.litmus")
}

// lkmmStandIn is a model named LKMM-ref for testing -expect: it answers as TSO
// does (the real LKMM reference joins litmusModels elsewhere).
type lkmmStandIn struct{ durable.Operational }

func (lkmmStandIn) Name() string { return "LKMM-ref" }

func TestLitmusExpect(t *testing.T) {
	saved := litmusModels
	t.Cleanup(func() { litmusModels = saved })

	// The LKMM reference is in the build: -expect runs it.
	out, errs, code := runLitmusArgs(t, "-expect", "-model", "sc", litmusDir+"SB.litmus", litmusDir+"SB+mbs.litmus")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "Expect SB: Result: Sometimes, LKMM-ref says Sometimes: match")
	assert.Contains(t, out, "Expect SB+mbs: Result: Never, LKMM-ref says Never: match")

	// Without a model named LKMM-ref, -expect says so and the run is incomplete.
	litmusModels = nil
	for _, m := range saved {
		if m.Name() != expectModel {
			litmusModels = append(litmusModels, m)
		}
	}
	out, errs, code = runLitmusArgs(t, "-expect", "-model", "sc", litmusDir+"SB.litmus")
	assert.Equal(t, exitIncomplete, code)
	assert.Contains(t, out, "Expect SB: no LKMM-ref model in this build")
	assert.Contains(t, errs, "Result: lines not compared")

	out, _, code = runLitmusArgs(t, "-expect", litmusDir+"noresult.litmus")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "NORESULT  "+litmusDir+"noresult.litmus  -  -  ")

	litmusModels = append(append([]litmus.Model{}, litmusModels...), lkmmStandIn{durable.Operational{Model: memory.TSO}})

	// LKMM-ref runs for -expect even when -model leaves it out.
	out, errs, code = runLitmusArgs(t, "-expect", "-model", "sc", litmusDir+"SB.litmus", litmusDir+"SB+mbs.litmus", litmusDir+"counter.litmus")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "Expect SB: Result: Sometimes, LKMM-ref says Sometimes: match")
	assert.Contains(t, out, "Expect SB+mbs: Result: Never, LKMM-ref says Never: match")
	assert.Contains(t, out, "Expect counter: Result: Always, LKMM-ref says Always: match")

	// header lies: write one that does.
	bad := t.TempDir() + "/SB-lies.litmus"
	src, err := os.ReadFile(litmusDir + "SB.litmus")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, bytes.Replace(src, []byte("Result: Sometimes"), []byte("Result: Never"), 1), 0o644))
	out, _, code = runLitmusArgs(t, "-expect", "-json", bad)
	assert.Equal(t, exitUnexpected, code)
	assert.Contains(t, out, `"kind":"litmus.expect"`)
	assert.Contains(t, out, `"want":"Never","got":"Sometimes","match":false`)
}

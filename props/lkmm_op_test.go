package props

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
)

// The operational LKMM model runs each thread in program order, so it
// cannot give the outcomes that need load buffering; the reference
// restricted to executions where po | rf is acyclic (Reference.InOrder)
// is exactly what it must give.
var (
	opLKMM    = litmus.LKMM{}
	inOrderLK = lkmm.Reference{}
)

// TestOperationalLKMMCorpus runs every corpus test under the operational
// LKMM model and asserts it gives exactly the reference's in-order
// outcomes; it logs the tests whose LKMM outcomes need load buffering
// (the outcomes the model does not give yet).
func TestOperationalLKMMCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "litmus", "*.litmus"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sort.Strings(files)
	needLB := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		test, err := litmus.Parse(f, src)
		require.NoError(t, err, f)
		name := filepath.Base(f)
		ref, err := outcomeKeys(inOrderLK, test)
		require.NoError(t, err, name)
		full, err := outcomeKeys(reference, test)
		require.NoError(t, err, name)
		if lb := missing(full, ref); len(lb) > 0 {
			needLB++
			t.Logf("%s: outcomes that need load buffering: %v", name, lb)
		}
		t0 := time.Now()
		op, err := outcomeKeys(opLKMM, test)
		if d := time.Since(t0); d > time.Second {
			t.Logf("%s: %v", name, d.Round(time.Millisecond))
		}
		if !assert.NoError(t, err, name) {
			continue
		}
		assert.Empty(t, missing(op, ref), "%s: the operational model allows what LKMM forbids", name)
		assert.Empty(t, missing(ref, op), "%s: the operational model forbids what LKMM allows in order", name)
	}
	t.Logf("%d corpus tests; %d have outcomes that need load buffering", len(files), needLB)
}

// TestOperationalLKMMRandom is the differential test of the operational
// LKMM model against the reference on random programs (2 or 3 threads, up
// to 2 locations, up to 3 statements each, every primitive but locks,
// branches and data dependencies): the same outcome sets, the reference
// restricted to in-order executions. About 35 ms a program: 100 in
// go test ./props, 2000 in CI (-rapid.checks=N).
func TestOperationalLKMMRandom(t *testing.T) {
	start := time.Now()
	var ran, skipped int
	rapid.Check(t, func(rt *rapid.T) {
		test := litmustest.Draw(rt, nestOptions())
		ref, err := outcomeKeys(lkmm.Reference{Candidates: nestCandidates}, test)
		if errors.Is(err, lkmm.ErrTooLarge) {
			skipped++
			return
		}
		if err != nil {
			rt.Fatalf("LKMM reference: %v", err)
		}
		op, err := outcomeKeys(opLKMM, test)
		if err != nil {
			rt.Fatalf("operational LKMM: %v", err)
		}
		if m := missing(op, ref); len(m) > 0 {
			rt.Fatalf("the operational model allows %v, LKMM forbids them", m)
		}
		if m := missing(ref, op); len(m) > 0 {
			rt.Fatalf("LKMM allows %v in order, the operational model does not", m)
		}
		ran++
	})
	t.Logf("%d random programs (%d over the reference's bounds, skipped) in %v", ran, skipped, time.Since(start).Round(time.Millisecond))
}

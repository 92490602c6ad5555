package props

import (
	"errors"
	"flag"
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

// opLKMM is the operational LKMM model.
var opLKMM = lkmm.Promise{}

// TestOperationalLKMMCorpus runs every corpus test under the operational
// LKMM model and asserts it gives exactly the reference's outcomes; it
// logs the tests with outcomes only load buffering gives (only promises
// give them in the operational model).
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
		ref, err := outcomeKeys(reference, test)
		require.NoError(t, err, name)
		inOrder, err := outcomeKeys(lkmm.Reference{InOrder: true}, test)
		require.NoError(t, err, name)
		if lb := missing(ref, inOrder); len(lb) > 0 {
			needLB++
			t.Logf("%s: outcomes that need load buffering: %v", name, lb)
		}
		op, err := outcomeKeys(opLKMM, test)
		if !assert.NoError(t, err, name) {
			continue
		}
		assert.Empty(t, missing(op, ref), "%s: the operational model allows what LKMM forbids", name)
		assert.Empty(t, missing(ref, op), "%s: the operational model forbids what LKMM allows", name)
	}
	t.Logf("%d corpus tests; %d have outcomes that need load buffering", len(files), needLB)
}

var bigLitmus = flag.Bool("litmus.big", false, "TestOperationalLKMMRandom: programs of 2 to 4 threads, 1 to 4 locations, up to 4 statements each")

// TestOperationalLKMMRandom is the differential test of the operational
// LKMM model against the reference on random programs (2 or 3 threads, up
// to 2 locations, up to 3 statements each, every primitive but locks,
// branches and data dependencies; -litmus.big: 2 to 4 threads, 1 to 4
// locations, up to 4 statements): the same outcome sets. About 25 ms a
// program: 100 in go test ./props, 2000 in CI (-rapid.checks=N).
func TestOperationalLKMMRandom(t *testing.T) {
	start := time.Now()
	var ran, skipped, opSkipped int
	o := nestOptions()
	if *bigLitmus {
		o = litmustest.Default()
		o.MaxLocs, o.Values = 4, 2
	}
	rapid.Check(t, func(rt *rapid.T) {
		test, ref, ok := drawReferenced(rt, o, &skipped)
		if !ok {
			return
		}
		op, err := outcomeKeys(lkmm.Promise{MaxStates: opStates}, test)
		if errors.Is(err, litmus.ErrCutShort) {
			opSkipped++
			return
		}
		if err != nil {
			rt.Fatalf("%s: %v", opLKMM.Name(), err)
		}
		within(rt, op, "the operational LKMM model", ref, "the LKMM reference")
		within(rt, ref, "the LKMM reference", op, "the operational LKMM model")
		ran++
	})
	t.Logf("%d random programs (skipped: %d over the reference's bounds, %d over the operational model's) in %v", ran, skipped, opSkipped, time.Since(start).Round(time.Millisecond))
}

// opStates bounds the operational model's search per random program: a
// program beyond it is skipped and counted, as one beyond the reference's
// bound is (a few programs in a thousand need hundreds of thousands of states or more).
const opStates = 50_000

package props

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
)

// corpusRef is the corpus file a primitive file names in its header.
var corpusRef = regexp.MustCompile(`props/testdata/litmus/(\S+\.litmus)`)

// TestExamplesLKMMPrimitives: the files examples/litmus/lkmm-*.litmus make
// each ordering primitive of the language load-bearing in the verdict
// table (acquire and release, smp_rmb, smp_wmb, smp_mb__before_atomic,
// smp_mb__after_atomic, smp_mb__after_spinlock, the orderings of RMWs, and
// the propagation axiom through smp_mb): each row gets the verdict its
// header expects, and each file's LKMM row agrees with the axiomatic LKMM
// reference on the corpus test whose shape it has (SAFE where herd7 says
// Never, UNSAFE where it says Sometimes). A primitive the explorer's LKMM
// breaks flips a row here, not only in the differential tests.
func TestExamplesLKMMPrimitives(t *testing.T) {
	files, err := filepath.Glob("../examples/litmus/lkmm-*.litmus")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 24)
	var safe, unsafe int
	for _, path := range files {
		tt, err := litmus.ParseFile(path)
		require.NoError(t, err)
		d, err := durable.Read(path, tt)
		require.NoError(t, err)
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		m := corpusRef.FindStringSubmatch(string(text))
		require.NotNil(t, m, "%s: the header names no corpus test", path)
		corpus, err := litmus.ParseFile(filepath.Join("testdata", "litmus", m[1]))
		require.NoError(t, err)
		ref, err := litmus.Judge(reference, corpus)
		require.NoError(t, err, m[1])
		lkmmRows := 0
		for _, r := range d.Rows(nil, false) {
			v, err := r.Check(explore.Options{Liveness: true, MaxStates: 100_000, Obligations: true})
			require.NoError(t, err, r.Name())
			assert.True(t, v.Expected(), "%s is %s", r.Name(), v.Result())
			checkJudged(t, r.Name(), v)
			if !strings.Contains(" "+r.Name()+" ", " LKMM ") {
				continue
			}
			lkmmRows++
			want := map[string]string{"Never": "SAFE", "Sometimes": "UNSAFE"}[ref.Result]
			assert.Equal(t, want, v.Word(), "%s against the LKMM reference on %s (%s)", r.Name(), m[1], ref.Result)
			if v.Word() == "SAFE" {
				safe++
			} else {
				unsafe++
			}
		}
		assert.Equal(t, 1, lkmmRows, "%s: one LKMM row", path)
	}
	t.Logf("%d files: %d SAFE and %d UNSAFE under LKMM", len(files), safe, unsafe)
}

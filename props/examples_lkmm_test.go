package props

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/litmusvariants"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
)

// corpusRef is the corpus file a primitive file names in its header.
var corpusRef = regexp.MustCompile(`props/testdata/litmus/(\S+\.litmus)`)

// TestExamplesLKMMPrimitives: the files of examples/litmus/lkmm, and the
// variants kept there as patches of one of them, make each ordering
// primitive of the language load-bearing in the verdict table (acquire
// and release, smp_rmb, smp_wmb, smp_mb__before_atomic,
// smp_mb__after_atomic, smp_mb__after_spinlock, the orderings of RMWs, and
// the propagation axiom through smp_mb): each row gets the verdict its
// header expects, and each file's LKMM row agrees with the axiomatic LKMM
// reference on the corpus test whose shape it has (SAFE where herd7 says
// Never, UNSAFE where it says Sometimes). A primitive the explorer's LKMM
// breaks flips a row here, not only in the differential tests.
func TestExamplesLKMMPrimitives(t *testing.T) {
	fs, err := litmusvariants.Dir(filepath.Join("..", "examples", "litmus", "lkmm"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(fs), 24)
	var safe, unsafe int
	for _, f := range fs {
		d, path := readVariant(t, f)
		m := corpusRef.FindStringSubmatch(string(f.Text))
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
	t.Logf("%d files and variants: %d SAFE and %d UNSAFE under LKMM", len(fs), safe, unsafe)
}

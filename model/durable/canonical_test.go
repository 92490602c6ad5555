package durable

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// TestCanonicalCommutes: under LKMM, Canonical (which forgets the marks
// of loads no later store reads: opSystem.forgetMarks) must commute with
// the steps, as the explorer needs to turn its stored states back into
// a real path: from every state reached (in the real states, not their
// canonical forms), each step's canonical result is the same step's from
// the state's canonical form. On every litmus file of the props corpus
// and the LKMM example files. Found by the corpus: smp_mb left a
// location's cover mark behind once it forgot the location's loads, so
// a state whose mark was forgotten and one whose mark the barrier kept
// went on apart.
func TestCanonicalCommutes(t *testing.T) {
	files, err := filepath.Glob("../../props/testdata/litmus/*.litmus")
	require.NoError(t, err)
	more, err := filepath.Glob("../../examples/litmus/lkmm/*.litmus")
	require.NoError(t, err)
	files = append(files, more...)
	require.NotEmpty(t, files)
	checked := 0
	for _, f := range files {
		lt, err := litmus.ParseFile(f)
		require.NoError(t, err, f)
		sys, err := compile(memory.LKMM, lt)
		if err != nil {
			continue // a construct the explorer's LKMM refuses
		}
		sys.startAhead()
		steps := func(p opState) map[explore.Label]opState {
			out := map[explore.Label]opState{}
			sys.Next(p, func(l explore.Label, n opState) { out[l] = sys.Canonical(n) })
			return out
		}
		walkCanonical[opState](sys, 20_000, func(p, c opState) bool {
			require.Equal(t, c, sys.Canonical(c), "%s: Canonical is idempotent", f)
			real, canon := steps(p), steps(c)
			require.Equal(t, len(canon), len(real), "%s: the steps of a state and of its canonical form", f)
			for l, x := range canon {
				y, ok := real[l]
				require.True(t, ok, "%s: step %+v from the canonical form only", f, l)
				require.True(t, x == y, "%s: step %+v: the canonical results differ", f, l)
			}
			return true
		})
		checked++
	}
	require.Greater(t, checked, 100)
}

// canonSystem is what walkCanonical needs of a system.
type canonSystem[S comparable] interface {
	Init() []S
	Next(S, func(explore.Label, S))
	Canonical(S) S
}

// walkCanonical goes breadth first over the states of sys as its steps
// make them (each expanded as it is, not in canonical form), visiting
// each canonical form once with the first state found that has it,
// until visit returns false or limit canonical forms were visited. It
// returns how many were.
func walkCanonical[S comparable](sys canonSystem[S], limit int, visit func(x, c S) bool) int {
	queue := sys.Init()
	seen := map[S]bool{}
	for len(queue) > 0 && len(seen) < limit {
		x := queue[0]
		queue = queue[1:]
		c := sys.Canonical(x)
		if seen[c] {
			continue
		}
		seen[c] = true
		if !visit(x, c) {
			break
		}
		sys.Next(x, func(_ explore.Label, y S) { queue = append(queue, y) })
	}
	return len(seen)
}

package litmus

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
)

// TestDurableCanonicalKeepsSteps: on random runs of the example files,
// a state and its canonical form (dead registers zeroed) have the same
// steps to the same canonical states, under each memory model.
func TestDurableCanonicalKeepsSteps(t *testing.T) {
	for _, f := range []string{"xfs-flushseq-patched", "xfs-flushseq-mutant-read-before-writeback"} {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			canonicalKeepsSteps(t, "../../examples/litmus/"+f+".litmus", m)
		}
	}
}

func canonicalKeepsSteps(t *testing.T, file string, m memory.Model) {
	tt, err := ParseFile(file)
	require.NoError(t, err)
	d, err := ReadDurable(file, tt)
	require.NoError(t, err)
	sys, err := d.system(DurableConfig{Model: m, Device: d.Devices[0], Failures: d.Failures})
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(1))
	succ := func(s durState) []string {
		var out []string
		sys.Next(s, func(l explore.Label, n durState) { out = append(out, fmt.Sprintf("%v %v", l, sys.Canonical(n))) })
		sort.Strings(out)
		return out
	}
	for run := 0; run < 200; run++ {
		s := sys.Init()[0]
		for step := 0; step < 60; step++ {
			a, b := succ(s), succ(sys.Canonical(s))
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%s under %v: run %d step %d: pcs %v\nreal %v\ncanon %v\n%v\n%v", file, m, run, step, s.op.pc, s.op.regs[0], sys.Canonical(s).op.regs[0], a, b)
			}
			var next []durState
			sys.Next(s, func(_ explore.Label, n durState) { next = append(next, n) })
			if len(next) == 0 {
				break
			}
			s = next[rng.Intn(len(next))]
		}
	}
}

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

// symFiles are the example files the reduction tests walk.
var symFiles = []string{"xfs-flushseq-patched", "xfs-flushseq-mutant-read-before-writeback", "xfs-flushseq-benign-plain-store-completed"}

func durSys(t *testing.T, name string, m memory.Model) *durSystem {
	t.Helper()
	path := "../../examples/litmus/" + name + ".litmus"
	tt, err := ParseFile(path)
	require.NoError(t, err)
	d, err := ReadDurable(path, tt)
	require.NoError(t, err)
	sys, err := d.system(DurableConfig{Model: m, Device: d.Devices[0], Failures: d.Failures})
	require.NoError(t, err)
	return sys
}

// succ is the set of st's successors, each zeroed of dead registers.
func succ(sys *durSystem, st durState, f func(durState) durState) []string {
	var out []string
	sys.Next(st, func(_ explore.Label, n durState) { out = append(out, fmt.Sprintf("%v", f(n))) })
	sort.Strings(out)
	return out
}

// randomStates walks random runs of sys and calls f on every state.
func randomStates(sys *durSystem, runs, steps int, f func(durState)) {
	rng := rand.New(rand.NewSource(1))
	for run := 0; run < runs; run++ {
		st := sys.Init()[0]
		for k := 0; k < steps; k++ {
			f(st)
			var next []durState
			sys.Next(st, func(_ explore.Label, n durState) { next = append(next, n) })
			if len(next) == 0 {
				break
			}
			st = next[rng.Intn(len(next))]
		}
	}
}

// dead zeroes dead registers only (Canonical without renaming).
func dead(sys *durSystem) func(durState) durState {
	return func(st durState) durState {
		u := *sys
		u.noSym = true
		return u.Canonical(st)
	}
}

// TestDurableDeadRegisters: a state and the state with its dead registers
// zeroed have the same successors (zeroed alike), on random runs of the
// example files under each memory model.
func TestDurableDeadRegisters(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			sys := durSys(t, f, m)
			z := dead(sys)
			randomStates(sys, 100, 60, func(st durState) {
				require.Equal(t, succ(sys, st, z), succ(sys, z(st), z), "%s under %v at %v", f, m, st.op.pc)
			})
		}
	}
}

// TestDurableThreadRenaming: renaming interchangeable threads (with their
// blocks, memory's views of them and what they wait for) commutes with
// every step: the successors of the renamed state are the renamed
// successors, for every renaming, on random runs of the example files.
// This is what makes sorting threads (Canonical) sound.
func TestDurableThreadRenaming(t *testing.T) {
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			sys := durSys(t, f, m)
			require.Len(t, sys.sym, 1, f)
			c := sys.sym[0]
			z := dead(sys)
			perm := []int{1, 0}
			randomStates(sys, 60, 60, func(st durState) {
				ren := func(x durState) durState { return z(sys.permuteClass(x, c, perm)) }
				require.Equal(t, succ(sys, st, ren), succ(sys, ren(st), z), "%s under %v at %v", f, m, st.op.pc)
			})
		}
	}
}

// TestDurableRenumbering: renaming writes and flushes commutes with every
// step (a write or flush submitted next keeps its number), for random
// renamings, on random runs of the example files.
func TestDurableRenumbering(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, f := range symFiles {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			sys := durSys(t, f, m)
			z := dead(sys)
			randomStates(sys, 60, 60, func(st durState) {
				nw, nf := st.dev.Writes(), st.dev.Flushes()
				wp, fp := perm8(rng, nw), perm8(rng, nf)
				ren := func(x durState) durState {
					// The renaming extended by the identity on what x
					// submitted since st.
					w, f := append([]uint8(nil), wp...), append([]uint8(nil), fp...)
					for i := nw; i < x.dev.Writes(); i++ {
						w = append(w, uint8(i))
					}
					for i := nf; i < x.dev.Flushes(); i++ {
						f = append(f, uint8(i))
					}
					return z(sys.applyNumbering(x, w, f))
				}
				require.Equal(t, succ(sys, st, ren), succ(sys, ren(st), z), "%s under %v at %v", f, m, st.op.pc)
			})
		}
	}
}

func perm8(rng *rand.Rand, n int) []uint8 {
	out := make([]uint8, n)
	for i, p := range rng.Perm(n) {
		out[i] = uint8(p)
	}
	return out
}

package explore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lopsided is a system whose Canonical is not a symmetry: it maps (a, b) to
// (a+b, 0), but a state with b > 0 is a dead end, so the real path that
// the reduced search rebuilds can go where the stored one did not. The
// violation is a == 2.
type lopsided struct{}

func (lopsided) Actors() []string           { return []string{"A", "B"} }
func (lopsided) Init() [][2]uint8           { return [][2]uint8{{0, 0}} }
func (lopsided) Describe(l Label) string    { return fmt.Sprintf("%c+1", 'a'+rune(l.Actor)) }
func (lopsided) Unfinished([2]uint8) uint64 { return 0 }
func (lopsided) Next(s [2]uint8, yield func(Label, [2]uint8)) {
	if s[1] > 0 {
		return
	}
	yield(Label{Actor: 1}, [2]uint8{s[0], s[1] + 1})
	if s[0] < 2 {
		yield(Label{Actor: 0}, [2]uint8{s[0] + 1, s[1]})
	}
}
func (lopsided) Check(s [2]uint8) error {
	if s[0] == 2 {
		return fmt.Errorf("a reached 2 in %v", s)
	}
	return nil
}
func (lopsided) Canonical(s [2]uint8) [2]uint8 { return [2]uint8{s[0] + s[1], 0} }

// TestExploreCanonicalNotASymmetry: when the counterexample of a reduced
// search cannot be rebuilt as a real path, Explore does not panic: it
// searches again without the reduction, says so (Unreduced), and its
// counterexample replays to a violation.
func TestExploreCanonicalNotASymmetry(t *testing.T) {
	var sys System[[2]uint8] = lopsided{}
	for _, workers := range []int{1, 2} {
		var r *Result[[2]uint8]
		require.NotPanics(t, func() { r = Explore(sys, Options{Workers: workers, ParallelMinLevel: 1}) })
		require.NotNil(t, r.Violation, "the violation is found either way")
		assert.True(t, r.Unreduced, "the counterexample comes from the search without the reduction")
		s, err := Replay(sys, r.Violation.Path)
		require.NoError(t, err)
		assert.Error(t, sys.Check(s), "the path replays to a violation: %s", r.Violation.Timeline())
	}
	// A real symmetry is kept.
	r := Explore[uint32](symGraph{graph{n: 20000, bad: 5000}}, Options{})
	assert.False(t, r.Unreduced)
}

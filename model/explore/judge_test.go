package explore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// judgedGrid is a grid with three obligations: "one done" judges the
// states where an actor has counted to n, "diagonal" those with x == y, "beyond" the
// states with a coordinate above n, of which there are none.
type judgedGrid struct{ grid }

func (judgedGrid) Obligations() []string { return []string{"one done", "diagonal", "beyond"} }

func (g judgedGrid) Judged(s [2]int, initial bool) uint64 {
	var m uint64
	if s[0] == g.n || s[1] == g.n {
		m |= 1
	}
	if s[0] == s[1] {
		m |= 2
	}
	if s[0] > g.n || s[1] > g.n {
		m |= 4
	}
	return m
}

// symJudgedGrid treats the two actors as interchangeable.
type symJudgedGrid struct{ judgedGrid }

func (symJudgedGrid) Canonical(s [2]int) [2]int {
	if s[0] > s[1] {
		s[0], s[1] = s[1], s[0]
	}
	return s
}

func TestJudgedCountsEveryState(t *testing.T) {
	g := judgedGrid{grid{n: 3, bad: none, noStep: none}}
	for _, workers := range []int{1, 2, 4} {
		r := Explore[[2]int](g, Options{Obligations: true, Workers: workers, ParallelMinLevel: 1})
		require.True(t, r.Exhausted)
		require.NoError(t, r.JudgeErr)
		assert.Equal(t, []Judgment{{"one done", 7}, {"diagonal", 4}, {"beyond", 0}}, r.Judged, "workers %d", workers)
		assert.Equal(t, []string{"beyond"}, Vacuous(r.Judged))
	}
	r := Explore[[2]int](g, Options{})
	assert.Nil(t, r.Judged, "counted only on request")
}

func TestJudgedWithSymmetryCountsClasses(t *testing.T) {
	g := symJudgedGrid{judgedGrid{grid{n: 3, bad: none, noStep: none}}}
	r := Explore[[2]int](g, Options{Obligations: true})
	require.True(t, r.Exhausted)
	// One representative (a, b), a <= b, per class: (0..3, 3) are done.
	assert.Equal(t, []Judgment{{"one done", 4}, {"diagonal", 4}, {"beyond", 0}}, r.Judged)
	u := Explore[[2]int](g, Options{Obligations: true, NoReduce: true})
	assert.Equal(t, []Judgment{{"one done", 7}, {"diagonal", 4}, {"beyond", 0}}, u.Judged,
		"without the reduction every state counts; the same obligations are vacuous")
}

func TestJudgedStopsAtTheViolation(t *testing.T) {
	g := judgedGrid{grid{n: 3, bad: [2]int{1, 1}, noStep: none}}
	r := Explore[[2]int](g, Options{Obligations: true})
	require.NotNil(t, r.Violation)
	assert.Equal(t, r.States, r.Len())
	assert.Equal(t, "diagonal", r.Judged[1].Name)
	assert.Equal(t, 2, r.Judged[1].States, "(0,0) and the violating (1,1): the states found before the search stopped")
}

package explore

import (
	"fmt"
	"github.com/flushproof/flushproof/internal/mutate"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grid: two actors each count from 0 to n; the invariant forbids one cell.
type grid struct {
	n      int
	bad    [2]int // the forbidden state, or {-1,-1}
	noStep [2]int // a state with no transitions, or {-1,-1}
}

func (g grid) Actors() []string { return []string{"x", "y"} }
func (g grid) Init() [][2]int   { return [][2]int{{0, 0}} }
func (g grid) Next(s [2]int, yield func(Label, [2]int)) {
	if s == g.noStep {
		return
	}
	for a := 0; a < 2; a++ {
		if s[a] < g.n {
			t := s
			t[a]++
			yield(Label{Actor: uint8(a), ID: uint16(t[a])}, t)
		}
	}
}
func (g grid) Describe(l Label) string { return fmt.Sprintf("to %d", l.ID) }
func (g grid) Check(s [2]int) error {
	if s == g.bad {
		return fmt.Errorf("reached %v", s)
	}
	return nil
}

// Unfinished: an actor returns when it has counted to n.
func (g grid) Unfinished(s [2]int) uint64 {
	var u uint64
	for a := range s {
		if s[a] < g.n {
			u |= 1 << a
		}
	}
	return u
}

var none = [2]int{-1, -1}

func TestExploreStatistics(t *testing.T) {
	r := Explore[[2]int](grid{n: 2, bad: none, noStep: none}, Options{})
	require.Nil(t, r.Violation)
	assert.True(t, r.Exhausted)
	assert.Equal(t, 9, r.States, "3 x 3 grid")
	assert.Equal(t, 12, r.Transitions, "2 x 3 + 3 x 2 edges")
	assert.Equal(t, 4, r.MaxDepth)
}

func TestExploreShortestCounterexample(t *testing.T) {
	r := Explore[[2]int](grid{n: 5, bad: [2]int{2, 3}, noStep: none}, Options{})
	require.NotNil(t, r.Violation)
	assert.Equal(t, Safety, r.Violation.Kind)
	assert.Len(t, r.Violation.Path, 5, "BFS: the shortest path to (2,3) has 5 steps")
	s, err := Replay[[2]int](grid{n: 5, bad: [2]int{2, 3}, noStep: none}, r.Violation.Path)
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 3}, s, "the path replays to the violating state")
	assert.False(t, r.Exhausted)
}

func TestExploreDeadlock(t *testing.T) {
	r := Explore[[2]int](grid{n: 3, bad: none, noStep: [2]int{1, 1}}, Options{})
	require.NotNil(t, r.Violation)
	assert.Equal(t, Deadlock, r.Violation.Kind)
	assert.Equal(t, "x, y have not returned and no step is enabled", r.Violation.Err.Error())
	assert.Len(t, r.Violation.Path, 2)
}

// A state without transitions in which every actor has returned is the end,
// not a deadlock.
func TestExploreNoDeadlockWhenAllReturned(t *testing.T) {
	r := Explore[[2]int](grid{n: 3, bad: none, noStep: none}, Options{Liveness: true})
	assert.Nil(t, r.Violation)
	assert.True(t, r.Exhausted)
}

func TestBlocked(t *testing.T) {
	g := grid{n: 3, bad: none, noStep: [2]int{1, 1}}
	assert.Equal(t, uint64(0b11), Blocked[[2]int](g, [2]int{1, 1}), "no step: both unfinished actors are blocked")
	assert.Equal(t, uint64(0), Blocked[[2]int](g, [2]int{1, 2}), "each has a step")
	assert.Equal(t, uint64(0), Blocked[[2]int](g, [2]int{3, 3}), "both returned")
	assert.Equal(t, uint64(0), Blocked[[2]int](g, [2]int{3, 1}), "x returned, y has a step")
}

func TestExploreBudget(t *testing.T) {
	r := Explore[[2]int](grid{n: 100, bad: none, noStep: none}, Options{MaxStates: 50})
	assert.Nil(t, r.Violation)
	assert.False(t, r.Exhausted, "a search cut by the budget proves nothing")
	assert.GreaterOrEqual(t, r.States, 50)
}

// spin: actor 0 either returns at once or waits for a flag that actor 1
// never sets; actor 1 spins between two states forever (it never returns,
// like a device). No state lacks transitions, so only the liveness check
// sees that actor 0, once it waits, is blocked forever.
type spin struct{}

type spinState struct {
	phase    uint8
	started  bool
	returned bool
}

func (spin) Actors() []string  { return []string{"waiter", "spinner"} }
func (spin) Init() []spinState { return []spinState{{}} }
func (spin) Next(s spinState, yield func(Label, spinState)) {
	if !s.started && !s.returned {
		yield(Label{Actor: 0, Kind: 1}, spinState{started: true})
		yield(Label{Actor: 0, Kind: 3}, spinState{returned: true})
		return
	}
	n := s
	n.phase = 1 - s.phase
	yield(Label{Actor: 1, Kind: 2}, n)
}
func (spin) Describe(l Label) string {
	return map[uint8]string{1: "wait for flag", 2: "spin", 3: "return"}[l.Kind]
}
func (spin) Check(spinState) error { return nil }
func (spin) Unfinished(s spinState) uint64 {
	if s.returned {
		return 0
	}
	return 1
}

func TestExploreBlockedForever(t *testing.T) {
	r := Explore[spinState](spin{}, Options{})
	assert.Nil(t, r.Violation, "without liveness, a livelock is not seen")
	assert.True(t, r.Exhausted)

	r = Explore[spinState](spin{}, Options{Liveness: true})
	require.NotNil(t, r.Violation)
	assert.Equal(t, BlockedForever, r.Violation.Kind)
	assert.Equal(t, "waiter has not returned and no schedule lets it return", r.Violation.Err.Error())
	require.Len(t, r.Violation.Path, 1)
	assert.Equal(t, "wait for flag", r.Violation.Path[0].Text, "the initial state may still return: the violation is after the wait")
}

// waitAndReturn: actor 0 (waiter) either returns at once or waits for a
// flag nobody sets; actor 1 (returner) returns in one step whatever
// happens. Some actor can always return, but once the waiter waits it
// never can: the liveness check must name the waiter, not be satisfied by
// the returner's return (mutate.LivenessAnyReturn).
type waitAndReturn struct{}

type warState struct{ waiting, wdone, rdone bool }

func (waitAndReturn) Actors() []string { return []string{"waiter", "returner"} }
func (waitAndReturn) Init() []warState { return []warState{{}} }
func (waitAndReturn) Next(s warState, yield func(Label, warState)) {
	if !s.waiting && !s.wdone {
		n := s
		n.waiting = true
		yield(Label{Actor: 0, Kind: 1}, n)
		n = s
		n.wdone = true
		yield(Label{Actor: 0, Kind: 3}, n)
	}
	if !s.rdone {
		n := s
		n.rdone = true
		yield(Label{Actor: 1, Kind: 3}, n)
	}
	if s.waiting && s.rdone {
		yield(Label{Actor: 1, Kind: 2}, s) // the returner idles: no deadlock, a livelock
	}
}
func (waitAndReturn) Describe(l Label) string {
	return map[uint8]string{1: "wait for flag", 2: "idle", 3: "return"}[l.Kind]
}
func (waitAndReturn) Check(warState) error { return nil }
func (waitAndReturn) Unfinished(s warState) uint64 {
	var u uint64
	if !s.wdone {
		u |= 1
	}
	if !s.rdone {
		u |= 2
	}
	return u
}

func TestExploreBlockedForeverNamesTheActor(t *testing.T) {
	r := Explore[warState](waitAndReturn{}, Options{Liveness: true})
	require.NotNil(t, r.Violation, "the waiter is blocked forever although the returner can return")
	assert.Equal(t, BlockedForever, r.Violation.Kind)
	assert.Equal(t, "waiter has not returned and no schedule lets it return", r.Violation.Err.Error())
	require.Len(t, r.Violation.Path, 1)
	assert.Equal(t, "wait for flag", r.Violation.Path[0].Text)
}

// TestLivenessAnyReturnCaught: under mutate.LivenessAnyReturn the waiter's
// livelock goes unseen (the returner can always return): the test above
// fails under it.
func TestLivenessAnyReturnCaught(t *testing.T) {
	defer mutate.Set(t, mutate.LivenessAnyReturn)()
	r := Explore[warState](waitAndReturn{}, Options{Liveness: true})
	assert.Nil(t, r.Violation, "the mutation hides the blocked waiter")
}

package verdict_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/verdict"
)

// lostUpdate: two tasks each read a shared counter and then write it plus
// one; the invariant (once both are done the counter is 2) breaks when
// both read before either writes.
type lostUpdate struct{}

type luState struct {
	val  uint8
	pc   [2]uint8 // 0: read next, 1: write next, 2: done
	read [2]uint8
}

func (lostUpdate) Actors() []string          { return []string{"A", "B"} }
func (lostUpdate) Init() []luState           { return []luState{{}} }
func (lostUpdate) Unfinished(luState) uint64 { return 0 }

func (lostUpdate) Next(s luState, yield func(explore.Label, luState)) {
	for t := range 2 {
		n := s
		switch s.pc[t] {
		case 0:
			n.read[t], n.pc[t] = s.val, 1
			yield(explore.Label{Actor: uint8(t), Kind: 1, Arg: uint16(s.val)}, n)
		case 1:
			n.val, n.pc[t] = s.read[t]+1, 2
			yield(explore.Label{Actor: uint8(t), Kind: 2, Arg: uint16(n.val)}, n)
		}
	}
}

func (lostUpdate) Describe(l explore.Label) string {
	if l.Kind == 1 {
		return fmt.Sprintf("read %d", l.Arg)
	}
	return fmt.Sprintf("write %d", l.Arg)
}

func (lostUpdate) Check(s luState) error {
	if s.pc == [2]uint8{2, 2} && s.val != 2 {
		return fmt.Errorf("counter is %d", s.val)
	}
	return nil
}

// TestRecordReplays: an UNSAFE row's JSON counterexample carries the
// labels of its path, so that the path rebuilt from the JSON alone
// replays (explore.Replay) to a state that breaks the invariant again;
// with one label changed it no longer does.
func TestRecordReplays(t *testing.T) {
	var sys lostUpdate
	r := explore.Explore[luState](sys, explore.Options{})
	require.NotNil(t, r.Violation)
	v := verdict.FromResult(verdict.Row{Model: "lost-update", Config: "c", Bound: "2 tasks", Negative: true}, r)
	require.Equal(t, verdict.Unsafe, v.Outcome)

	b, err := json.Marshal(verdict.NewRecord("lost-update c 2 tasks", v, nil))
	require.NoError(t, err)
	var rec verdict.Record
	require.NoError(t, json.Unmarshal(b, &rec))
	require.NotNil(t, rec.Counterexample)
	path := rec.Counterexample.Path()
	require.Len(t, path, len(r.Violation.Path))

	end, err := explore.Replay[luState](sys, path)
	require.NoError(t, err)
	assert.Error(t, sys.Check(end), "the replayed path must break the invariant again")

	// A label the search did not take: the replay stops at that step.
	bad := append([]explore.Step(nil), path...)
	bad[1].Label.Arg++
	_, err = explore.Replay[luState](sys, bad)
	assert.Error(t, err)
}

// TestOutcomeZeroIsUnknown: a verdict nobody set is UNKNOWN, and UNKNOWN
// is never the expected verdict, of a negative control or of a real row.
func TestOutcomeZeroIsUnknown(t *testing.T) {
	var v verdict.Verdict
	assert.Equal(t, verdict.Unknown, v.Outcome)
	assert.Equal(t, "UNKNOWN", v.Word())
	assert.False(t, v.Expected())
	v.Negative = true
	assert.False(t, v.Expected())
	for o, want := range map[verdict.Outcome][2]bool{verdict.Safe: {true, false}, verdict.Unsafe: {false, true}, verdict.NA: {true, true}} {
		assert.Equal(t, want[0], verdict.Verdict{Outcome: o}.Expected(), o)
		assert.Equal(t, want[1], verdict.Verdict{Outcome: o, Negative: true}.Expected(), o)
	}
}

package explore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specSys: from 0 the actor goes to 1 (a sink where it has not returned)
// or to 2 (returned). spec says whether state 1 is speculative.
type specSys struct{ spec bool }

func (specSys) Actors() []string      { return []string{"P0"} }
func (specSys) Init() []int           { return []int{0} }
func (specSys) Describe(Label) string { return "" }
func (specSys) Check(int) error       { return nil }
func (specSys) Next(s int, yield func(Label, int)) {
	if s == 0 {
		yield(Label{ID: 1}, 1)
		yield(Label{ID: 2}, 2)
	}
}
func (specSys) Unfinished(s int) uint64 {
	if s == 2 {
		return 0
	}
	return 1
}

type specSysSpeculating struct{ specSys }

func (specSysSpeculating) Speculative(s int) bool { return s == 1 }

// TestSpeculativeSinkIsNoDeadlock: a sink where an actor has not returned
// is a deadlock, and a liveness violation, unless the system calls it
// speculative (explore.Speculator).
func TestSpeculativeSinkIsNoDeadlock(t *testing.T) {
	for _, live := range []bool{false, true} {
		r := Explore[int](specSys{}, Options{Workers: 1, Liveness: live})
		require.NotNil(t, r.Violation, "liveness %v: a plain sink", live)
		r = Explore[int](specSysSpeculating{}, Options{Workers: 1, Liveness: live})
		assert.Nil(t, r.Violation, "liveness %v: a speculative sink", live)
	}
}

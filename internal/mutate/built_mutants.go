//go:build mutants

package mutate

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// Built reports whether the mutations are built in (the build tag
// mutants).
const Built = true

// active is the mutation switched on. An atomic, so that a search's
// workers may read it while a test that set it waits for them; reading it
// costs a plain load on the hot paths that ask.
var active atomic.Uint32

// On reports whether mutation m is switched on.
func On(m Mutation) bool { return active.Load() == uint32(m) && m != None }

// Active returns the mutation switched on, None if there is none.
func Active() Mutation { return Mutation(active.Load()) }

// Set switches m on (None: every mutation off) for t and returns the
// function that switches back. It panics outside a test binary, and if
// another mutation is on: mutations are tried one at a time.
func Set(t TB, m Mutation) (restore func()) {
	t.Helper()
	if !testing.Testing() {
		panic("mutate: mutations are switched on by tests only")
	}
	if m >= numMutations {
		panic(fmt.Sprintf("mutate: unknown %v", m))
	}
	prev := Mutation(active.Load())
	if prev != None && m != None {
		panic(fmt.Sprintf("mutate: %v is on; switch it off before %v", prev, m))
	}
	active.Store(uint32(m))
	return func() { active.Store(uint32(prev)) }
}

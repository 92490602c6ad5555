package explore

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
)

// Obligations is implemented by systems whose invariant is made of
// obligations that each judge some states only: an acknowledged write's
// durability judges the states after its acknowledgment, an assertion the
// steps that run it, a final condition the end states. A search that
// found no violation is only as strong as the states its obligations
// judged: one that judged none proves nothing about it (it is vacuous at
// this bound). With Options.Obligations, Explore counts, per obligation,
// the states that judged it (Result.Judged).
type Obligations[S comparable] interface {
	// Obligations names the obligations, at most MaxObligations, in the
	// order the bits of Judged number them.
	Obligations() []string
	// Judged returns the obligations (bit i: the i-th of Obligations)
	// that s is judged by: those Check evaluates in s, and those a step
	// from s evaluates (an assertion a thread runs in its next step, in
	// any of the step's results). It must be a function of s alone, not
	// of the path that reached it, so that the counts do not depend on
	// the search order. initial marks an initial state: the obligations
	// evaluated on the way to it (the local steps Init takes, say) are
	// included.
	Judged(s S, initial bool) uint64
}

// MaxObligations bounds the obligations a system counts (the bits of
// Obligations.Judged).
const MaxObligations = 64

// Judgment is how many states of a search judged one obligation.
type Judgment struct {
	Name   string
	States int
}

// Vacuous reports whether no state judged it.
func (j Judgment) Vacuous() bool { return j.States == 0 }

func (j Judgment) String() string {
	return fmt.Sprintf("%s: %d %s", j.Name, j.States, plural(j.States, "state"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// judge counts, over every state r found, the states that judge each of
// sys's obligations: one pass after the search, in parallel unless sys is
// Sequential. Symmetric states count once per class (the stored
// representative).
func judge[S comparable](sys System[S], r *Result[S], workers int) ([]Judgment, error) {
	ob, ok := sys.(Obligations[S])
	if !ok {
		return nil, nil
	}
	names := ob.Obligations()
	if len(names) > MaxObligations {
		return nil, fmt.Errorf("%d obligations, at most %d can be counted", len(names), MaxObligations)
	}
	if _, seq := sys.(Sequential); seq {
		workers = 1
	}
	n := r.states.len()
	workers = max(1, min(workers, n/chunkJudge+1))
	counts := make([][MaxObligations]int, workers)
	var wg sync.WaitGroup
	var next sync.Mutex
	at := 0
	take := func() (int, int) {
		next.Lock()
		defer next.Unlock()
		lo := at
		at = min(n, at+chunkJudge)
		return lo, at
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &counts[w]
			var s S
			for {
				lo, hi := take()
				if lo >= hi {
					return
				}
				for id := lo; id < hi; id++ {
					r.states.get(int32(id), &s)
					m := ob.Judged(s, *r.parent.at(int32(id)) < 0)
					for ; m != 0; m &= m - 1 {
						c[bits.TrailingZeros64(m)]++
					}
				}
			}
		}()
	}
	wg.Wait()
	out := make([]Judgment, len(names))
	for i, name := range names {
		out[i].Name = name
		for w := range counts {
			out[i].States += counts[w][i]
		}
	}
	return out, nil
}

// chunkJudge is how many states a worker of judge takes at a time.
const chunkJudge = 1024

// judgeWorkers is the number of goroutines judge uses for Options.Workers.
func judgeWorkers(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// Vacuous returns the names of the obligations no state judged.
func Vacuous(js []Judgment) []string {
	var out []string
	for _, j := range js {
		if j.Vacuous() {
			out = append(out, j.Name)
		}
	}
	return out
}

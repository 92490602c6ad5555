package props

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/explore"
)

// walk is a random run of an explorer system chosen by rapid: from an
// initial state, each step draws one of the enabled transitions, and the
// invariant is checked in every state. It reaches bounds that exhaustive
// search cannot (more tasks, more rounds), and a failure shrinks and
// replays like any rapid test case. It returns the path taken and the
// state reached (after maxSteps steps, or where no transition is enabled).
// On a violation it fails t with the timeline of the path.
func walk[S comparable](t *rapid.T, sys explore.System[S], maxSteps int) ([]explore.Label, S) {
	inits := sys.Init()
	s := inits[0]
	if len(inits) > 1 {
		s = inits[rapid.IntRange(0, len(inits)-1).Draw(t, "init")]
	}
	var path []explore.Label
	type succ struct {
		l explore.Label
		s S
	}
	var next []succ
	for step := 0; ; step++ {
		if err := sys.Check(s); err != nil {
			t.Fatalf("invariant broken after %d steps: %v\n%s", step, err, describePath(sys, path))
		}
		if step == maxSteps {
			return path, s
		}
		next = next[:0]
		sys.Next(s, func(l explore.Label, n S) { next = append(next, succ{l, n}) })
		if len(next) == 0 {
			return path, s
		}
		i := 0
		if len(next) > 1 {
			i = rapid.IntRange(0, len(next)-1).Draw(t, "transition")
		}
		path = append(path, next[i].l)
		s = next[i].s
	}
}

func describePath[S comparable](sys explore.System[S], path []explore.Label) string {
	var b strings.Builder
	actors := sys.Actors()
	for i, l := range path {
		who := fmt.Sprint(l.Actor)
		if int(l.Actor) < len(actors) {
			who = actors[l.Actor]
		}
		fmt.Fprintf(&b, "%4d  %-8s %s\n", i+1, who, sys.Describe(l))
	}
	return b.String()
}

package rapidctl

import (
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/world"
)

// Chooser lets rapid pick every step of a model-world run, so a failing
// schedule is a rapid test case: it shrinks, and replays from its seed or
// fail file.
func Chooser(t *rapid.T) world.Chooser { return chooser{t} }

type chooser struct{ t *rapid.T }

func (c chooser) Choose(acts []world.Action) int {
	if len(acts) == 1 {
		return 0
	}
	return rapid.IntRange(0, len(acts)-1).Draw(c.t, "step")
}

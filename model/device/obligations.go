package device

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: the soundness search's two.
func (s *System) Obligations() []string {
	return []string{
		"the device does nothing the contract forbids",
		"after a crash, the device leaves only what the contract allows",
	}
}

// Judged implements explore.Obligations: the first in every state, the
// second in the states after a crash.
func (s *System) Judged(st State, _ bool) uint64 {
	if st.dev.Crashed() {
		return 3
	}
	return 1
}

// Obligations implements explore.Obligations: the completeness search's
// one.
func (c *CompletenessSystem) Obligations() []string {
	return []string{"after a crash, every content the contract allows is left by some landing order"}
}

// Judged implements explore.Obligations: the history classes after a
// crash.
func (c *CompletenessSystem) Judged(s HistoryClass, _ bool) uint64 {
	devs := c.members(s)
	if len(devs) == 0 || !devs[0].Crashed() || s.base.illegal.Kind != 0 {
		return 0
	}
	return 1
}

var (
	_ explore.Obligations[State]        = (*System)(nil)
	_ explore.Obligations[HistoryClass] = (*CompletenessSystem)(nil)
)

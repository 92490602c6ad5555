package odsync

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: Check's one.
func (s *System) Obligations() []string {
	return []string{"a block a write() returned survives a crash"}
}

// Judged implements explore.Obligations: every state in which some
// write() has returned (Check judges the blocks acknowledged there).
func (s *System) Judged(st State, _ bool) uint64 {
	for b := 0; b < s.cfg.Tasks*s.cfg.Blocks; b++ {
		if st.acked[b] != 0 {
			return 1
		}
	}
	return 0
}

var _ explore.Obligations[State] = (*System)(nil)

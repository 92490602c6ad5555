package jbd2

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: Check's two, judged on
// every crash image the contract allows.
func (s *System) Obligations() []string {
	return []string{
		"every transaction recovery replays is whole",
		"recovery replays every transaction whose commit returned",
	}
}

// Judged implements explore.Obligations: the first in every state (its
// crash images), the second once some commit has returned.
func (s *System) Judged(st State, _ bool) uint64 {
	m := uint64(1)
	for t := 0; t < s.cfg.Transactions; t++ {
		if st.Acked(t) {
			m |= 2
		}
	}
	return m
}

var _ explore.Obligations[State] = (*System)(nil)

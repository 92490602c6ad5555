package iowq

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: Check's two.
func (s *System) Obligations() []string {
	return []string{
		"no sector reads another file's stale data",
		"a completed write is not lost or overwritten by an earlier one",
	}
}

// Judged implements explore.Obligations: the first in every state, the
// second once some write has completed.
func (s *System) Judged(st State, _ bool) uint64 {
	m := uint64(1)
	if st.done != 0 {
		m |= 2
	}
	return m
}

var _ explore.Obligations[State] = (*System)(nil)

package diocount

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: Check's three, in its order.
func (s *System) Obligations() []string {
	return []string{
		"no direct write lands in a block truncate freed",
		"i_dio_count never goes below 0",
		"i_dio_count is 0 once no direct I/O is left",
	}
}

// Judged implements explore.Obligations: the first where a direct write
// lands (a DAX store, a bio), the second in every state, the third once
// every task has finished and no bio is in flight.
func (s *System) Judged(st State, _ bool) uint64 {
	m := uint64(2)
	if s.Done(st) {
		m |= 4
	}
	s.Next(st, func(l explore.Label, _ State) {
		if op := Op(l.Kind); op == OpDAXStore || op == OpBioLands {
			m |= 1
		}
	})
	return m
}

var _ explore.Obligations[State] = (*System)(nil)

package flushseq

import "github.com/flushproof/flushproof/model/explore"

// Obligations implements explore.Obligations: the one obligation Check
// states, judged where an fsync returns 0 (the step that sets lost when
// the write is not durable).
func (s *System) Obligations() []string {
	return []string{"an fsync that returns 0 leaves its write durable"}
}

// Judged implements explore.Obligations: a state from which some task's
// fsync returns 0. Only a task at pcReturn can take that step
// (taskSteps runs fsyncReturn there and nowhere else), so only those
// tasks' steps are taken: the others' would double the search's work
// under LKMM for nothing (TestJudgedAtReturnOnly holds it to every
// task's steps).
func (s *System) Judged(st State, _ bool) uint64 {
	return s.judged(st, false)
}

// judged is Judged; every takes every task's steps, as the reference.
func (s *System) judged(st State, every bool) uint64 {
	if st.lost != 0 {
		return 0 // the violation: Next stops here
	}
	var m uint64
	for t := 0; t < s.cfg.Tasks; t++ {
		if !every && st.task[t].pc != pcReturn {
			continue
		}
		s.taskSteps(st, t, func(l explore.Label, _ State) {
			if l.Kind == kReturn && l.Arg == 0 {
				m = 1
			}
		})
	}
	return m
}

var _ explore.Obligations[State] = (*System)(nil)

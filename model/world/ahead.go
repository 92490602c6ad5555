package world

import "github.com/flushproof/flushproof/model/explore"

// successor is a state found from a world, not yet added: its key, its
// node and what goes beside it.
type successor struct {
	key    []byte
	h      uint64
	n      node
	err    error
	actors []int8
	seqs   []uint32
	label  explore.Label
}

// maxAhead bounds the bytes of the successors kept ahead (lookAhead).
const maxAhead = 256 << 20

// lookAhead is for a new state id whose world cannot stay live (maxLive):
// the world takes the step that it would have taken at id's expansion (the
// last one allowed), the successor is kept, and the world closes. Its
// expansion then needs one replay fewer.
//
// A step that panics there (the program's, or the replay's check) is left
// for id's expansion to take again and report, so that a search still
// stops at its first violation, breadth first.
func (s *Search) lookAhead(id State, w *World) {
	closed := false
	defer func() {
		if p := recover(); p != nil {
			return // w is dropped: its coroutines may not be resumed again
		}
		if !closed {
			w.close()
		}
	}()
	n := s.node(id)
	if n.failed || n.acts == 0 || int(n.depth) >= s.opt.MaxDepth {
		return
	}
	actors := s.actorsOf(id)
	i := n.acts - 1
	for ; i >= 0; i-- {
		if _, _, ok := s.preempt(&n, actors, int(i)); ok {
			break
		}
	}
	if i < 0 {
		return
	}
	s.amu.Lock()
	full := s.aheadBytes > maxAhead
	s.amu.Unlock()
	if full {
		return
	}
	last, pre, _ := s.preempt(&n, actors, int(i))
	a := w.takeAction(int(i))
	key, h := s.key(w, id, i, last, pre)
	succ := s.describe(w, key, h, id, i, pack(a), n.depth+1, last, pre)
	succ.label = s.label(a, i)
	closed = true
	w.close()
	s.amu.Lock()
	s.ahead[id] = succ
	s.aheadBytes += int64(len(succ.key) + 128)
	s.amu.Unlock()
}

// takeAhead returns the successor kept ahead for st, if any.
func (s *Search) takeAhead(st State) *successor {
	s.amu.Lock()
	defer s.amu.Unlock()
	succ := s.ahead[st]
	if succ != nil {
		delete(s.ahead, st)
		s.aheadBytes -= int64(len(succ.key) + 128)
	}
	return succ
}

// maxLive bounds the worlds kept live for the states not yet expanded:
// each holds its tasks' coroutines.
const maxLive = 4096

// keepLive keeps w, the world that reached the new state id, for id's
// expansion, if the budget allows.
func (s *Search) keepLive(id State, w *World) bool {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if len(s.live) >= s.maxLive {
		return false
	}
	s.live[id] = w
	return true
}

// takeLive returns the live world of st, if one was kept.
func (s *Search) takeLive(st State) *World {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	w := s.live[st]
	delete(s.live, st)
	return w
}

// closeLive closes the worlds of the states the search did not expand.
func (s *Search) closeLive() {
	s.lmu.Lock()
	live := s.live
	s.live = map[State]*World{}
	s.lmu.Unlock()
	for _, w := range live {
		w.close()
	}
}

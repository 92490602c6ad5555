package world

import (
	"bytes"
	"fmt"
)

// CommuteStats is what CommuteCheck saw.
type CommuteStats struct {
	Pairs       int // pairs of steps enabled together in a state
	Independent int // of those, the pairs whose footprints do not conflict
	Transitions int // the steps enabled in the states (the search's transitions)
	// Diamonds are the transitions (X, a) where X was reached from P by
	// b, and a was enabled in P and independent of b there: X's successor
	// by a is P's successor by a followed by b, a state a reduction could
	// look up instead of replaying.
	Diamonds int
}

// CommuteCheck takes, in every state s found, every pair of steps that
// are enabled there and whose footprints do not conflict, in both orders,
// and returns an error unless each order keeps the other step enabled and
// both reach the same state key (footprint).
func CommuteCheck(s *Search) (CommuteStats, error) {
	var cs CommuteStats
	fps := make([]map[packed]footprint, len(s.nodes))
	for st := range State(len(s.nodes)) {
		n := s.node(st)
		if n.failed {
			continue
		}
		path := s.packedPath(st)
		w, _ := s.replay(path, noState, -1)
		acts := w.actions(nil)
		w.close()
		cs.Transitions += len(acts)
		fps[st] = map[packed]footprint{}
		for _, a := range acts {
			w, _ := s.replay(path, noState, -1)
			fps[st][pack(a)] = w.takeFootprint(a)
			w.close()
		}
		for i := range acts {
			for j := i + 1; j < len(acts); j++ {
				cs.Pairs++
				if fps[st][pack(acts[i])].conflicts(fps[st][pack(acts[j])]) {
					continue
				}
				cs.Independent++
				kij, err := s.both(path, acts[i], acts[j])
				if err != nil {
					return cs, err
				}
				kji, err := s.both(path, acts[j], acts[i])
				if err != nil {
					return cs, err
				}
				if !bytes.Equal(kij, kji) {
					return cs, fmt.Errorf("state %d: %v then %v and the other order reach different keys (footprints %+v and %+v)",
						st, acts[i], acts[j], fps[st][pack(acts[i])], fps[st][pack(acts[j])])
				}
			}
		}
	}
	for st := range State(len(s.nodes)) {
		n := s.node(st)
		if n.choice < 0 || fps[st] == nil {
			continue
		}
		at := fps[n.parent]
		b, ok := at[n.act]
		if !ok {
			continue
		}
		for a := range fps[st] {
			if fa, ok := at[a]; ok && a != n.act && !fa.conflicts(b) {
				cs.Diamonds++
			}
		}
	}
	return cs, nil
}

// both replays path, takes a and then b, and returns the key reached.
func (s *Search) both(path []packed, a, b Action) ([]byte, error) {
	w, _ := s.replay(path, noState, -1)
	defer w.close()
	w.takeFootprint(a)
	i := -1
	for k, c := range w.actions(nil) {
		if pack(c) == pack(b) {
			i = k
		}
	}
	if i < 0 || !w.enabled(b) {
		return nil, fmt.Errorf("%v disables %v", a, b)
	}
	w.takeFootprint(w.actions(nil)[i])
	return w.appendKey(nil, nil), nil
}

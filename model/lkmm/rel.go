package lkmm

import "math/bits"

// maxEvents bounds the events of one candidate execution (threads' events
// plus one initial write per location): a relation is one 64-bit row per
// event.
const maxEvents = 64

// set is a set of events, by index.
type set uint64

func (s set) has(i int) bool { return s&(1<<uint(i)) != 0 }

// rel is a binary relation over the events of one execution: row i is the
// set of events j with (i, j) in the relation.
type rel []set

func newRel(n int) rel { return make(rel, n) }

func (r rel) add(i, j int) { r[i] |= 1 << uint(j) }

func (r rel) has(i, j int) bool { return r[i].has(j) }

func (r rel) clone() rel { return append(rel(nil), r...) }

// union returns r | others.
func (r rel) union(others ...rel) rel {
	out := r.clone()
	for _, o := range others {
		for i := range out {
			out[i] |= o[i]
		}
	}
	return out
}

// inter returns r & o.
func (r rel) inter(o rel) rel {
	out := r.clone()
	for i := range out {
		out[i] &= o[i]
	}
	return out
}

// minus returns r \ o.
func (r rel) minus(o rel) rel {
	out := r.clone()
	for i := range out {
		out[i] &^= o[i]
	}
	return out
}

// seq returns r ; o.
func (r rel) seq(o rel) rel {
	out := newRel(len(r))
	for i, row := range r {
		var acc set
		for row != 0 {
			j := bits.TrailingZeros64(uint64(row))
			row &^= 1 << uint(j)
			acc |= o[j]
		}
		out[i] = acc
	}
	return out
}

// inv returns r^-1.
func (r rel) inv() rel {
	out := newRel(len(r))
	for i, row := range r {
		for row != 0 {
			j := bits.TrailingZeros64(uint64(row))
			row &^= 1 << uint(j)
			out.add(j, i)
		}
	}
	return out
}

// restrict returns [dom] ; r ; [rng].
func (r rel) restrict(dom, rng set) rel {
	out := newRel(len(r))
	for i, row := range r {
		if dom.has(i) {
			out[i] = row & rng
		}
	}
	return out
}

// opt returns r? (r with the identity).
func (r rel) opt() rel {
	out := r.clone()
	for i := range out {
		out.add(i, i)
	}
	return out
}

// plus returns r+ (transitive closure), by Warshall's algorithm on rows.
func (r rel) plus() rel {
	out := r.clone()
	for k := range out {
		bit := set(1) << uint(k)
		for i := range out {
			if out[i]&bit != 0 {
				out[i] |= out[k]
			}
		}
	}
	return out
}

// star returns r* (reflexive transitive closure).
func (r rel) star() rel { return r.plus().opt() }

// acyclic reports whether r has no cycle.
func (r rel) acyclic() bool { return r.plus().irreflexive() }

// irreflexive reports whether no event is related to itself.
func (r rel) irreflexive() bool {
	for i, row := range r {
		if row.has(i) {
			return false
		}
	}
	return true
}

// empty reports whether r relates nothing.
func (r rel) empty() bool {
	for _, row := range r {
		if row != 0 {
			return false
		}
	}
	return true
}

// id returns [s], the identity on s, over n events.
func id(n int, s set) rel {
	out := newRel(n)
	for i := 0; i < n; i++ {
		if s.has(i) {
			out.add(i, i)
		}
	}
	return out
}

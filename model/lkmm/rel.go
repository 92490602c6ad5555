package lkmm

import "math/bits"

// Sets of events and relations over them, of any width: a set is a bit
// per event index in 64-bit words, a relation n rows of such sets stored
// end to end. The search fixes the width once per test (the most events
// an execution of it can have) and takes every relation of a check from
// an arena that keeps its buffers from one candidate to the next, so that
// checking a candidate allocates nothing; a test of up to 64 events has
// one word a row, and the loops below take that case apart where it pays.

// bitset is a set of events, by index.
type bitset []uint64

func (s bitset) has(i int) bool { return s[i>>6]&(1<<uint(i&63)) != 0 }

func (s bitset) add(i int) { s[i>>6] |= 1 << uint(i&63) }

func (s bitset) del(i int) { s[i>>6] &^= 1 << uint(i&63) }

func (s bitset) clear() {
	for k := range s {
		s[k] = 0
	}
}

func (s bitset) or(o bitset) {
	for k := range s {
		s[k] |= o[k]
	}
}

func (s bitset) and(o bitset) {
	for k := range s {
		s[k] &= o[k]
	}
}

func (s bitset) andNot(o bitset) {
	for k := range s {
		s[k] &^= o[k]
	}
}

func (s bitset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// words returns the words a set of n events takes.
func words(n int) int { return (n + 63) / 64 }

// rel is a binary relation over the first n events: row i is the set of
// events j with (i, j) in it. Its buffer may be longer than n rows (the
// arena sizes it for the largest execution of the test).
type rel struct {
	n, w int
	b    []uint64
}

func (r rel) row(i int) bitset { return bitset(r.b[i*r.w : (i+1)*r.w : (i+1)*r.w]) }

func (r rel) add(i, j int) { r.b[i*r.w+j>>6] |= 1 << uint(j&63) }

func (r rel) has(i, j int) bool { return r.b[i*r.w+j>>6]&(1<<uint(j&63)) != 0 }

// words returns the relation's n rows as one slice.
func (r rel) words() []uint64 { return r.b[:r.n*r.w] }

func (r rel) clear() {
	b := r.words()
	for k := range b {
		b[k] = 0
	}
}

// set makes r a copy of o.
func (r rel) set(o rel) { copy(r.words(), o.words()) }

// or adds o to r: r = r | o.
func (r rel) or(o rel) {
	b, c := r.words(), o.words()
	for k := range b {
		b[k] |= c[k]
	}
}

// and keeps in r what o has too: r = r & o.
func (r rel) and(o rel) {
	b, c := r.words(), o.words()
	for k := range b {
		b[k] &= c[k]
	}
}

// andNot removes o from r: r = r \ o.
func (r rel) andNot(o rel) {
	b, c := r.words(), o.words()
	for k := range b {
		b[k] &^= c[k]
	}
}

// restrict keeps the pairs of r from dom to rng: r = [dom] ; r ; [rng].
func (r rel) restrict(dom, rng bitset) {
	for i := 0; i < r.n; i++ {
		row := r.row(i)
		if dom.has(i) {
			row.and(rng)
		} else {
			row.clear()
		}
	}
}

// restrictTo keeps the pairs of r whose target is in rng: r = r ; [rng].
func (r rel) restrictTo(rng bitset) {
	for i := 0; i < r.n; i++ {
		r.row(i).and(rng)
	}
}

// addID adds the identity on the first n events: r = r?.
func (r rel) addID() {
	for i := 0; i < r.n; i++ {
		r.add(i, i)
	}
}

// delID removes the identity: r = r \ id.
func (r rel) delID() {
	for i := 0; i < r.n; i++ {
		r.b[i*r.w+i>>6] &^= 1 << uint(i&63)
	}
}

// seq sets r to a ; b (r distinct from both).
func (r rel) seq(a, b rel) {
	if r.w == 1 {
		for i := 0; i < r.n; i++ {
			row := a.b[i]
			var acc uint64
			for row != 0 {
				j := bits.TrailingZeros64(row)
				row &= row - 1
				acc |= b.b[j]
			}
			r.b[i] = acc
		}
		return
	}
	w := r.w
	for i := 0; i < r.n; i++ {
		out := r.b[i*w : (i+1)*w]
		for k := range out {
			out[k] = 0
		}
		in := a.b[i*w : (i+1)*w]
		for k, word := range in {
			for word != 0 {
				j := k<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				src := b.b[j*w : (j+1)*w]
				for m := range out {
					out[m] |= src[m]
				}
			}
		}
	}
}

// inv sets r to a^-1 (r distinct from a).
func (r rel) inv(a rel) {
	r.clear()
	w := r.w
	for i := 0; i < r.n; i++ {
		for k, word := range a.b[i*w : (i+1)*w] {
			for word != 0 {
				j := k<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				r.add(j, i)
			}
		}
	}
}

// plus makes r its transitive closure r+, by Warshall's algorithm on
// rows: after step k, a row reaching k reaches all that k reaches.
func (r rel) plus() {
	if r.w == 1 {
		for k := 0; k < r.n; k++ {
			bit, rk := uint64(1)<<uint(k), r.b[k]
			if rk == 0 {
				continue
			}
			for i := 0; i < r.n; i++ {
				if r.b[i]&bit != 0 {
					r.b[i] |= rk
				}
			}
		}
		return
	}
	w := r.w
	for k := 0; k < r.n; k++ {
		rk := r.b[k*w : (k+1)*w]
		if bitset(rk).empty() {
			continue
		}
		kw, bit := k>>6, uint64(1)<<uint(k&63)
		for i := 0; i < r.n; i++ {
			if r.b[i*w+kw]&bit != 0 {
				ri := r.b[i*w : (i+1)*w]
				for m := range ri {
					ri[m] |= rk[m]
				}
			}
		}
	}
}

// star makes r its reflexive transitive closure r*.
func (r rel) star() {
	r.plus()
	r.addID()
}

// empty reports whether r relates nothing.
func (r rel) empty() bool { return bitset(r.words()).empty() }

// irreflexive reports whether no event is related to itself.
func (r rel) irreflexive() bool {
	for i := 0; i < r.n; i++ {
		if r.has(i, i) {
			return false
		}
	}
	return true
}

// arena hands out relations of one width and keeps their buffers for the
// next check: get returns a cleared relation, reset takes them all back.
type arena struct {
	n, w, max int // rows in use, words a row, rows a buffer holds
	bufs      [][]uint64
	used      int
}

func newArena(maxEvents int) *arena {
	if maxEvents < 1 {
		maxEvents = 1
	}
	return &arena{w: words(maxEvents), max: maxEvents}
}

// reset takes back every relation handed out and sets the events of the
// next ones to n.
func (a *arena) reset(n int) {
	a.used, a.n = 0, n
}

// get returns a cleared relation over the arena's n events.
func (a *arena) get() rel {
	if a.used == len(a.bufs) {
		a.bufs = append(a.bufs, make([]uint64, a.max*a.w))
	}
	r := rel{n: a.n, w: a.w, b: a.bufs[a.used]}
	a.used++
	r.clear()
	return r
}

// copyOf returns a new relation equal to o.
func (a *arena) copyOf(o rel) rel {
	r := a.get()
	r.set(o)
	return r
}

// acyclic reports whether r has no cycle, by taking away events with no
// predecessor until none is left (a cycle is what stays): no closure
// needed. indeg and queue are scratch of at least n entries.
func (r rel) acyclic(indeg, queue []int) bool {
	indeg = indeg[:r.n]
	for i := range indeg {
		indeg[i] = 0
	}
	w := r.w
	for i := 0; i < r.n; i++ {
		for k, word := range r.b[i*w : (i+1)*w] {
			for word != 0 {
				indeg[k<<6|bits.TrailingZeros64(word)]++
				word &= word - 1
			}
		}
	}
	q := queue[:0]
	for i, d := range indeg {
		if d == 0 {
			q = append(q, i)
		}
	}
	seen := 0
	for len(q) > 0 {
		i := q[len(q)-1]
		q = q[:len(q)-1]
		seen++
		for k, word := range r.b[i*w : (i+1)*w] {
			for word != 0 {
				j := k<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				indeg[j]--
				if indeg[j] == 0 {
					q = append(q, j)
				}
			}
		}
	}
	return seen == r.n
}

// restrictFrom keeps the pairs of r whose source is in dom: r = [dom] ; r.
func (r rel) restrictFrom(dom bitset) {
	for i := 0; i < r.n; i++ {
		if !dom.has(i) {
			r.row(i).clear()
		}
	}
}

// equal reports whether r and o relate the same pairs.
func (r rel) equal(o rel) bool {
	b, c := r.words(), o.words()
	for k := range b {
		if b[k] != c[k] {
			return false
		}
	}
	return true
}

// cross returns dom * rng, every pair from dom to rng.
func (a *arena) cross(dom, rng bitset) rel {
	r := a.get()
	for i := 0; i < r.n; i++ {
		if dom.has(i) {
			r.row(i).or(rng)
		}
	}
	return r
}

// seqOf returns a new relation x ; y.
func (a *arena) seqOf(x, y rel) rel {
	r := a.get()
	if x.empty() || y.empty() {
		return r
	}
	r.seq(x, y)
	return r
}

// invOf returns a new relation x^-1.
func (a *arena) invOf(x rel) rel {
	r := a.get()
	r.inv(x)
	return r
}

// starOf returns a new relation x*.
func (a *arena) starOf(x rel) rel {
	r := a.copyOf(x)
	r.star()
	return r
}

// optOf returns a new relation x?.
func (a *arena) optOf(x rel) rel {
	r := a.copyOf(x)
	r.addID()
	return r
}

// unionOf returns a new relation, the union of xs.
func (a *arena) unionOf(xs ...rel) rel {
	r := a.get()
	for _, x := range xs {
		r.or(x)
	}
	return r
}

// id returns the identity on s.
func (a *arena) id(s bitset) rel {
	r := a.get()
	for i := 0; i < r.n; i++ {
		if s.has(i) {
			r.add(i, i)
		}
	}
	return r
}

// each calls f with every event in s.
func (s bitset) each(f func(int)) {
	for k, w := range s {
		for w != 0 {
			f(k<<6 | bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
}

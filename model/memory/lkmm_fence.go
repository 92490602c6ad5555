package memory

import (
	"fmt"
	"strings"
)

// LKMM memory (lkmm.go): the barriers (smp_mb, smp_rmb, smp_wmb, the
// pending barrier after a read-modify-write and its settling) and the
// alternatives a step with more than one result is labelled by (Alt).

// Settle is thread t taking a step that is not a memory operation (device
// I/O, say): under LKMM the barrier after its last read-modify-write, if
// still pending, completes first, because a fully ordered operation orders
// every later event of its thread. Like any barrier, it has one result per
// order in which other threads' pending barriers may complete before it
// (Fences). Memory's own operations settle by themselves. It returns m
// alone under the other models and when t has no pending barrier.
func (m Memory) Settle(t int) []Choice {
	if m.post&(1<<t) == 0 {
		return []Choice{{m, 0}}
	}
	return closeAll(m.open().lkSettles(t))
}

// weakFences is smp_mb under mutate.FenceWeak: a barrier that takes in and
// publishes nothing. Its thread's loads still count as ordered before its
// later stores (ErrUnordered), so that the mutation weakens what the
// barrier does to views and nothing else.
func (m Memory) weakFences(t int) []Choice {
	cs := m.Settle(t)
	for i := range cs {
		w := cs[i].Mem.open()
		w.unord[t], w.cond[t] = 0, 0
		cs[i].Mem = w.close()
	}
	return cs
}

// Pending reports whether thread t's barrier after its last fully ordered
// read-modify-write is pending (LKMM; never under the other models).
func (m *Memory) Pending(t int) bool { return m.post&(1<<t) != 0 }

// lkSettles completes t's pending barrier (the one after its last
// read-modify-write), if any, after every order of other threads' pending
// barriers (lkFences): every operation of t starts with it.
func (m lk) lkSettles(t int) []lkChoice {
	if m.post&(1<<t) == 0 {
		return []lkChoice{{m, 0}}
	}
	return m.lkFences(t)
}

// lkNormalize forgets the parts of views that cannot matter: a thread's
// acq view, its rel view and the message views of stores are taken in
// only by a barrier, which joins them with the global view, and the
// global view only grows. So where one of them is at or below the global
// view it is lowered (acq to the thread's cur, the others to 0); where acq
// is at or below cur it is cur.
func (m *lk) lkNormalize() {
	g := m.glob
	for t := range m.cur {
		c, a, r := m.cur[t], m.acq[t], m.rel[t]
		low := a.le(c.join(g))
		m.acq[t] = a&^low | c&low
		m.rel[t] = r &^ r.le(g)
	}
	for l := range m.mview {
		for i := 0; i < int(m.n[l]); i++ {
			v := m.mview[l][i]
			m.mview[l][i] = v &^ v.le(g)
		}
	}
}

// within reports whether v is at or below o at every location.
func (v vw) within(o vw) bool { return v.join(o) == o }

// completeSubsumed completes every pending barrier that would publish
// nothing new (see Subsumption), until none is left: completing one
// compacts every location (lkFence), which can bring the views of a
// thread already passed within the global view.
func (m lk) completeSubsumed() lk {
	for again := true; again; {
		again = false
		for u := 0; u < MaxThreads; u++ {
			if m.post&(1<<u) != 0 && m.cur[u].join(m.acq[u]).within(m.glob) {
				m = m.lkFence(u)
				again = true
			}
		}
	}
	return m
}

// Unreduced turns off the reductions of LKMM (see Subsumption in
// lkmm.go), for the search without reductions. Memories that differ
// only in this are different states.
func (m *Memory) Unreduced() {
	if m.model != LKMM {
		return
	}
	w := m.open()
	w.unreduced = true
	*m = w.close()
}

// lkFences is smp_mb by t after every sequence of other threads' pending
// barriers completing (none first included), each with its Alt.
func (m lk) lkFences(t int) []lkChoice {
	var out []lkChoice
	var walk func(m lk, alt Alt, k int)
	walk = func(m lk, alt Alt, k int) {
		// After a pending barrier that published all t has seen (k > 0),
		// the result is subsumed by the one where t's barrier went first
		// (see subsumption).
		if k == 0 || m.unreduced || !m.cur[t].join(m.acq[t]).within(m.glob) {
			out = append(out, lkChoice{m.lkFence(t), alt})
		}
		for u := 0; u < MaxThreads; u++ {
			if u == t || m.post&(1<<u) == 0 {
				continue
			}
			if k == altThreads {
				// Alt names at most altThreads of them: more would be
				// orders left out, so refuse rather than drop them.
				panic(fmt.Sprintf("memory: more than %d other threads' barriers pending at a barrier of thread %d (Alt cannot name their orders)", altThreads, t))
			}
			walk(m.lkFence(u), alt|Alt(u+1)<<(4*k), k+1)
		}
	}
	walk(m, 0, 0)
	return out
}

// Alt says which of the results of one memory operation a result is
// (explore.Label.Alt): bits 0-11 the threads whose pending barriers
// completed first, in order (4 bits each, thread+1); bits 12-15 how many
// stores are newer in modification order than the store made or read.
type Alt uint16

const altThreads = 3

// Choice is one result of a store or a barrier, with its Alt.
type Choice struct {
	Mem Memory
	Alt Alt
}

type lkChoice struct {
	m   lk
	alt Alt
}

func closeAll(cs []lkChoice) []Choice {
	out := make([]Choice, len(cs))
	for i, c := range cs {
		out[i] = Choice{c.m.close(), c.alt}
	}
	return out
}

func (a Alt) withNewer(k int) Alt { return a | Alt(k)<<12 }

// Orders is the part of a that names the pending barriers that completed
// first (for a load, whose label names the value read already).
func (a Alt) Orders() Alt { return a & (1<<(4*altThreads) - 1) }

// Text describes the choice for a timeline ("" for the first one), naming
// threads with name. store says whether the operation stored (else it read).
func (a Alt) Text(name func(int) string, store bool) string {
	var parts []string
	var ts []string
	for k := 0; k < altThreads; k++ {
		if u := int(a>>(4*k)) & 0xf; u != 0 {
			ts = append(ts, name(u-1))
		}
	}
	if len(ts) > 0 {
		parts = append(parts, "after the barrier of "+strings.Join(ts, ", then ")+" took effect")
	}
	if k := int(a >> 12); k > 0 {
		verb := "read"
		if store {
			verb = "placed"
		}
		parts = append(parts, fmt.Sprintf("%s %d store(s) before the newest", verb, k))
	}
	return strings.Join(parts, "; ")
}

// lkFence is smp_mb.
func (m lk) lkFence(t int) lk {
	c := m.cur[t].join(m.acq[t]).join(m.glob)
	m.cur[t], m.acq[t], m.rel[t], m.glob = c, c, c, c
	if m.whole {
		m.cow()
		m.rv[t], m.own[t] = 0, 0    // within c: smp_rmb and smp_wmb would add nothing
		m.tulp[t], m.tacq[t] = 0, 0 // within c: the next spin_lock would add nothing
		m.tunord[t], m.since[t] = 0, 0
		// Everything after the barrier happens after it; what the
		// thread had read is within c.
		m.g[t], m.ah[t], m.tah[t] = c, 0, 0
		m.lgv[t] = [MaxLocations]vw{}
		m.lmv[t] = [MaxLocations]vw{}
		m.dmv[t] = [MaxLocations]vw{} // within c
	}
	m.unord[t] = 0
	m.post &^= 1 << t
	for l := range m.n {
		m.lkCompact(l)
	}
	return m
}

// lkRmb is smp_rmb: what t's value-returning loads read, with their
// message views, bounds its later loads (rmb in linux-kernel.cat orders
// R4rmb, the reads that return a value, before later ones).
func (m lk) lkRmb(t int) []Choice {
	return m.lkLocalFence(t, "smp_rmb", func(m *lk) {
		m.cur[t] = m.cur[t].join(m.rv[t])
		m.rv[t] = 0 // within cur now
		for l := range m.n {
			m.lkCompact(l)
		}
	})
}

// lkWmb is smp_wmb: t's later stores carry its earlier stores and their
// message views (wmb is a cumul-fence that is not A-cumulative: only the
// thread's own stores).
func (m lk) lkWmb(t int) []Choice {
	return m.lkLocalFence(t, "smp_wmb", func(m *lk) {
		m.rel[t] = m.rel[t].join(m.own[t])
		m.own[t] = 0 // within rel now
	})
}

// lkLocalFence is a fence that changes only t's views (f), after t's
// pending barrier in every order.
func (m lk) lkLocalFence(t int, what string, f func(*lk)) []Choice {
	m.mustWhole(what)
	var out []Choice
	for _, c := range m.lkSettles(t) {
		m := c.m
		m.cow()
		f(&m)
		out = append(out, Choice{m.close(), c.alt})
	}
	return out
}

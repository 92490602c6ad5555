package memory

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"
)

// LKMM memory (lkmm.go): read-modify-writes and spin locks.

// lkRMW is a read-modify-write: f gives the value to store for the value
// read, or false (a failed cmpxchg: a plain read, no barrier). A store is
// fully ordered and reads a store no other read-modify-write has read.
// One that is conditional (cond) keeps what its barriers ordered in cond
// (checkOrdered); another clears it.
func (m lk) lkRMW(t, loc int, f func(old int64) (int64, bool), cond bool) ([]RMWResult, error) {
	m.mustWrite(t, loc, true)
	var kept LocSet // what the thread's cond is after a store
	if cond {
		kept = m.cond[t] | 1<<loc
		if m.post&(1<<t) == 0 {
			// With t's barrier after its last RMW pending, its loads
			// so far are ordered by that barrier whether or not this
			// one stores (the reduction that completes the barrier at
			// once, completeSubsumed, has them out of unord already).
			kept |= m.unord[t]
		}
	}
	var out []RMWResult
	for _, r := range m.lkLoad(t, loc) {
		if _, ok := f(r.Val); !ok {
			m.mustRead(t, loc)
			out = append(out, RMWResult{Old: r.Val, Mem: r.Mem, Alt: r.Alt})
		}
	}
	for _, c := range m.lkFences(t) {
		fenced := c.m
		for i := int(fenced.cur[t].at(loc)); i < int(fenced.n[loc]); i++ {
			if fenced.propForbids(t, loc, i) {
				continue // its read, as any load's (lkLoadAs)
			}
			old := int64(fenced.vals[loc][i])
			v, ok := f(old)
			if !ok {
				continue
			}
			if i+1 < int(fenced.n[loc]) && fenced.glued[loc]&(1<<(i+1)) != 0 && !mutate.On(mutate.RMWStale) {
				continue // another read-modify-write read store i
			}
			if fenced.n[loc] == MaxStores {
				return nil, fmt.Errorf("memory: more than %d live stores to location %d", MaxStores, loc)
			}
			next := fenced.lkRead(t, loc, i)
			next.lkInsert(t, loc, i+1, v, true, false, false)
			next.post |= 1 << t
			next.cond[t] = kept
			next.lkCompact(loc)
			out = append(out, RMWResult{Old: old, New: v, Stored: true, Mem: next.close(), Alt: c.alt.withNewer(int(fenced.n[loc]) - 1 - i)})
		}
	}
	return out, nil
}

// lkRMWOnce is a read-modify-write without barriers (atomic_inc,
// cmpxchg_relaxed, the _acquire and _release variants: o): the read of a
// store no other read-modify-write has read, and the store right after it.
func (m lk) lkRMWOnce(t, loc int, f func(old int64) (int64, bool), o RMWOrder) ([]RMWResult, error) {
	m.mustWrite(t, loc, true)
	var out []RMWResult
	for _, c := range m.lkSettles(t) {
		rs, err := c.m.lkRMWOnceSettled(t, loc, f, c.alt, o)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// lkRMWOnceSettled is lkRMWOnce once t's barrier is no longer pending. A
// failed cmpxchg is a plain read whatever its ordering.
func (m lk) lkRMWOnceSettled(t, loc int, f func(old int64) (int64, bool), first Alt, o RMWOrder) ([]RMWResult, error) {
	if err := m.checkOrdered(t, loc, o.Deps, o.Release); err != nil {
		return nil, err
	}
	plain, stored := readPlain, readPlain
	if o.NoReturn {
		plain, stored = readNoReturn, readNoReturn
	}
	if o.Covered {
		plain |= readCoveredBit
		stored |= readCoveredBit
	}
	if o.FailCovered {
		plain |= readCoveredBit
	}
	if o.Acquire {
		stored = readAcquire
	}
	var out []RMWResult
	base, ordered := m.writeBase(t, loc, o.Deps, o.Release)
	for i := int(m.cur[t].at(loc)); i < m.readEnd(t, loc); i++ {
		if m.propForbids(t, loc, i) {
			continue // its read, as any load's (lkLoadAs)
		}
		old := int64(m.vals[loc][i])
		v, ok := f(old)
		newer := first.withNewer(int(m.n[loc]) - 1 - i)
		if !ok {
			m.mustRead(t, loc)
			next := m.lkReadAs(t, loc, i, plain)
			next.lkCompact(loc)
			out = append(out, RMWResult{Old: old, Mem: next.close(), Alt: newer})
			continue
		}
		if i+1 < int(m.n[loc]) && m.glued[loc]&(1<<(i+1)) != 0 && !mutate.On(mutate.RMWStale) {
			continue
		}
		if i < int(base.at(loc)) {
			continue // its store would go before a store its dependencies (or, released, its thread) saw
		}
		if m.n[loc] == MaxStores {
			return nil, fmt.Errorf("memory: more than %d live stores to location %d", MaxStores, loc)
		}
		var dv vw
		if o.Deps != 0 {
			dv = m.depView(t, o.Deps) // before its own read: the loads its operands read
		}
		next := m.lkReadAs(t, loc, i, stored)
		if o.Acquire && o.Cond {
			next.cond[t] |= 1 << loc // an acquire read orders what follows only when it stores
		}
		next.lkInsert(t, loc, i+1, v, true, o.Release, ordered)
		if dv != 0 {
			next.dv[loc][i+1] = dv
		}
		next.lkCompact(loc)
		out = append(out, RMWResult{Old: old, New: v, Stored: true, Mem: next.close(), Alt: newer})
	}
	return out, nil
}

// lkSpinLock is spin_lock: nothing if the lock is held.
func (m lk) lkSpinLock(t, loc int, free, held int64) ([]Choice, error) {
	m.mustWhole("spin_lock")
	m.mustWrite(t, loc, true)
	var out []Choice
	for _, c := range m.lkSettles(t) {
		m := c.m
		i := int(m.n[loc]) - 1
		if int64(m.vals[loc][i]) != free {
			continue // held: the thread waits
		}
		if m.n[loc] == MaxStores {
			return nil, fmt.Errorf("memory: more than %d live stores to location %d", MaxStores, loc)
		}
		next := m.lkReadAs(t, loc, i, readAcquire)
		next.cur[t] = next.cur[t].join(next.tacq[t])
		next.acq[t] = next.acq[t].join(next.cur[t])
		next.g[t] = next.g[t].join(next.tah[t])
		next.tah[t] = 0
		next.rel[t] = next.rel[t].join(next.ulp[loc]).join(next.tulp[t])
		next.tulp[t], next.tacq[t] = 0, 0 // within rel and cur now
		next.unord[t] &^= next.tunord[t] &^ next.since[t]
		next.tunord[t], next.since[t] = 0, 0
		next.lkInsert(t, loc, i+1, held, true, false, false)
		for l := range next.n {
			next.lkCompact(l)
		}
		out = append(out, Choice{next.close(), c.alt})
	}
	return out, nil
}

// lkSpinUnlock is spin_unlock: a release store of free, which leaves what
// the thread's earlier events pass on in ulp, tulp and the other views
// its next lock takes in. It goes where a release store may; when the
// thread holds the lock that is only the end of co (its view is its own
// newest store). One that goes elsewhere (an unlock of a lock the thread
// does not hold) leaves ulp as it was: the newest store is not it.
func (m lk) lkSpinUnlock(t, loc int, free int64) ([]Choice, error) {
	m.mustWhole("spin_unlock")
	return m.lkStores(t, loc, free, 0, true, true)
}

package litmus

import (
	"fmt"
	"strings"
)

// The parts of herd7's LKMM language that only the LKMM reference runs:
// pointers (an address as a value, an access through a pointer held in a
// register), plain accesses, RCU, SRCU, spin_trylock and spin_is_locked,
// atomic_add_unless, smp_mb__after_unlock_lock. The other models refuse a
// test that uses one (Test.Refuse), naming it at its line.

// AddrBase is the address of a test's first location, as a value;
// location i of Test.Locs is at AddrBase+i. It lies far from the small
// integers tests compute with, so that no value a thread computes from
// its constants is taken for an address.
const AddrBase int64 = 1 << 40

// AddrValue returns the address of location loc, as a value.
func (t *Test) AddrValue(loc string) (int64, bool) {
	for i, l := range t.Locs {
		if l == loc {
			return AddrBase + int64(i), true
		}
	}
	return 0, false
}

// LocOfAddr returns the location whose address v is.
func (t *Test) LocOfAddr(v int64) (string, bool) {
	if i := v - AddrBase; i >= 0 && i < int64(len(t.Locs)) {
		return t.Locs[i], true
	}
	return "", false
}

// FormatValue renders v as a final condition writes it: a location's
// name for its address, else the number.
func (t *Test) FormatValue(v int64) string {
	if l, ok := t.LocOfAddr(v); ok {
		return l
	}
	return fmt.Sprint(v)
}

// Feature is a construct of the LKMM language that not every model has.
type Feature uint16

// The features.
const (
	FeatPointer    Feature = 1 << iota // an address as a value, an access through a pointer register
	FeatPlain                          // plain (unmarked) loads and stores
	FeatRCU                            // rcu_read_lock, rcu_read_unlock, synchronize_rcu
	FeatSRCU                           // srcu_read_lock, srcu_read_unlock, synchronize_srcu, smp_mb__after_srcu_read_unlock
	FeatTrylock                        // spin_trylock, spin_is_locked
	FeatAddUnless                      // atomic_add_unless
	FeatUnlockLock                     // smp_mb__after_unlock_lock
	numFeatures    = iota
)

// AllFeatures is every feature.
const AllFeatures Feature = 1<<numFeatures - 1

func (f Feature) String() string {
	var names []string
	for i, n := range []string{"pointers", "plain accesses", "RCU", "SRCU", "spin_trylock/spin_is_locked", "atomic_add_unless", "smp_mb__after_unlock_lock"} {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Feature returns the feature op belongs to, 0 for the primitives
// every model has (some lack acquire, release or locks: ErrNotInModel).
func (op Op) Feature() Feature { return opFeature(op) }

// opFeature is the feature an op belongs to, 0 for the common ones.
func opFeature(op Op) Feature {
	switch op {
	case OpPlainRead, OpPlainWrite:
		return FeatPlain
	case OpRcuLock, OpRcuUnlock, OpSyncRcu:
		return FeatRCU
	case OpSrcuLock, OpSrcuUnlock, OpSyncSrcu, OpMbAfterSrcuUnlock:
		return FeatSRCU
	case OpSpinTrylock, OpSpinIsLocked:
		return FeatTrylock
	case OpAddUnless:
		return FeatAddUnless
	case OpMbAfterUnlockLock:
		return FeatUnlockLock
	}
	return 0
}

// Use is the first use of a feature in a test: where, and what.
type Use struct {
	Feature Feature
	At      Pos
	What    string
}

// Uses returns the first use of each feature t has, in the order met:
// the initial state, then each thread's code, then the final condition
// and filter.
func (t *Test) Uses() []Use {
	var out []Use
	var seen Feature
	add := func(f Feature, at Pos, what string) {
		if f != 0 && seen&f == 0 {
			seen |= f
			out = append(out, Use{f, at, what})
		}
	}
	for i, l := range t.Locs {
		if v, ok := t.Init[l]; ok {
			if to, ok := t.LocOfAddr(v); ok {
				add(FeatPointer, t.LocPos(i), fmt.Sprintf("the pointer %s=%s in the initial state", l, to))
			}
		}
	}
	for th, regs := range t.RegInit {
		for r, v := range regs {
			if to, ok := t.LocOfAddr(v); ok {
				add(FeatPointer, t.RegInitPos(th, r), fmt.Sprintf("the pointer %d:%s=%s in the initial state", th, r, to))
			}
		}
	}
	exprAddr := func(e Expr, at Pos) {
		e.walk(func(x Expr) {
			if x.Addr != "" {
				add(FeatPointer, at, "the address of "+x.Addr+" as a value")
			}
		})
	}
	var walk func([]Stmt)
	walk = func(body []Stmt) {
		for _, s := range body {
			at := Pos{s.Line, s.Col}
			switch {
			case s.Access != nil:
				a := s.Access
				if a.Addr != nil {
					add(FeatPointer, at, "an access through the pointer "+a.Addr.String())
				}
				add(opFeature(a.Op), at, a.Op.String())
				exprAddr(a.Val, at)
				exprAddr(a.Expect, at)
			case s.Assign != nil:
				exprAddr(s.Assign.Val, at)
			case s.If != nil:
				exprAddr(s.If.Cond, at)
				walk(s.If.Then)
				walk(s.If.Else)
			case s.Loop != nil:
				exprAddr(s.Loop.Cond, at)
				walk(s.Loop.Body)
				walk(s.Loop.Post)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	cond := Pos{t.CondLine, t.CondCol}
	exprAddr(t.Cond, cond)
	if t.Filter != nil {
		exprAddr(*t.Filter, cond)
	}
	return out
}

// Features returns every feature t uses.
func (t *Test) Features() Feature {
	var f Feature
	for _, u := range t.Uses() {
		f |= u.Feature
	}
	return f
}

// Refuse returns nil if t uses no feature beyond have, else an error at
// the first use of another, wrapping ErrNotInModel: model, a memory
// model's name, does not have that construct.
func (t *Test) Refuse(model string, have Feature) error {
	for _, u := range t.Uses() {
		if u.Feature&^have == 0 {
			continue
		}
		msg := fmt.Sprintf("%s (%s): %s does not have it", u.What, u.Feature, model)
		if t.File == "" || u.At.Line == 0 {
			return fmt.Errorf("%s: %w: %s", t.Name, ErrNotInModel, msg)
		}
		return &Error{File: t.File, Line: u.At.Line, Col: u.At.Col, Msg: "unsupported: " + msg, Err: ErrNotInModel}
	}
	return nil
}

// walk calls f with e and every expression within it.
func (e Expr) walk(f func(Expr)) {
	f(e)
	for _, a := range e.Args {
		a.walk(f)
	}
}

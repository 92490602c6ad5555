package lkmm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
)

// Properties of the constructs no other model has (RCU, pointers), as
// relations between the outcomes of a random program and of the program
// rewritten: what linux-kernel.cat says the rewrite must keep or remove.

// featureCandidates bounds each search of these properties: three
// searches a program, a hundred programs a property.
const featureCandidates = 20_000

// featureOptions are randomOptions with at most three threads.
func featureOptions(rt *rapid.T) litmustest.Options {
	o := randomOptions(rt)
	o.MaxThreads = 3
	return o
}

// outcomeKeys returns the keys of t's outcomes, without the registers
// drop names; ok is false when the search was cut short.
func outcomeKeys(rt *rapid.T, t *litmus.Test, drop map[string]bool) ([]string, bool) {
	outs, err := lkmm.Reference{Candidates: featureCandidates}.Outcomes(t)
	if errors.Is(err, litmus.ErrCutShort) {
		return nil, false
	}
	require.NoError(rt, err, render(t))
	var out []string
	for _, o := range outs {
		for _, regs := range o.Regs {
			for r := range drop {
				delete(regs, r)
			}
		}
		out = append(out, o.Key())
	}
	// Dropping registers may make two outcomes one.
	slices.Sort(out)
	return slices.Compact(out), true
}

// mapOps rewrites every access of t's threads by f, which returns the
// statements that replace it.
func mapOps(t *litmus.Test, f func(th int, s litmus.Stmt) []litmus.Stmt) *litmus.Test {
	c := *t
	c.Threads = make([]litmus.Thread, len(t.Threads))
	var walk func(th int, body []litmus.Stmt) []litmus.Stmt
	walk = func(th int, body []litmus.Stmt) []litmus.Stmt {
		var out []litmus.Stmt
		for _, s := range body {
			switch {
			case s.If != nil:
				i := *s.If
				i.Then, i.Else = walk(th, i.Then), walk(th, i.Else)
				s.If = &i
				out = append(out, s)
			case s.Access != nil:
				out = append(out, f(th, s)...)
			default:
				out = append(out, s)
			}
		}
		return out
	}
	for th, thread := range t.Threads {
		c.Threads[th] = thread
		c.Threads[th].Body = walk(th, thread.Body)
	}
	return &c
}

func fenceStmt(op litmus.Op) litmus.Stmt {
	return litmus.Stmt{Access: &litmus.Access{Op: op}}
}

// withMbs draws a program and puts an smp_mb at a random place of the top
// level of some threads, so that the rewrites below have fences to work on.
func withMbs(rt *rapid.T) *litmus.Test {
	t := litmustest.Draw(rt, featureOptions(rt))
	for th := range t.Threads {
		body := t.Threads[th].Body
		if !rapid.Bool().Draw(rt, fmt.Sprintf("P%d smp_mb", th)) {
			continue
		}
		at := rapid.IntRange(0, len(body)).Draw(rt, fmt.Sprintf("P%d smp_mb at", th))
		nb := append(append(append([]litmus.Stmt(nil), body[:at]...), fenceStmt(litmus.OpMb)), body[at:]...)
		t.Threads[th].Body = nb
	}
	return t
}

// With no RCU read-side critical section, synchronize_rcu orders as
// smp_mb does (gp is in strong-fence as mb is, and rcu-order needs an
// rcu-rscs to relate anything but a grace period to itself): the same
// outcomes.
func TestSyncRcuIsMbWithoutReaders(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		test := withMbs(rt)
		sync := mapOps(test, func(_ int, s litmus.Stmt) []litmus.Stmt {
			if s.Access.Op == litmus.OpMb {
				return []litmus.Stmt{fenceStmt(litmus.OpSyncRcu)}
			}
			return []litmus.Stmt{s}
		})
		a, ok1 := outcomeKeys(rt, test, nil)
		b, ok2 := outcomeKeys(rt, sync, nil)
		if ok1 && ok2 {
			require.Equal(rt, a, b, "smp_mb then synchronize_rcu, of %s", render(test))
		}
	})
}

// Read-side critical sections order nothing by themselves: wrapping a
// thread's code in rcu_read_lock/rcu_read_unlock, with no grace period
// in the program, keeps the outcomes; with synchronize_rcu in place of
// smp_mb, they can only remove outcomes (rcu-fence adds to rb, never
// takes from hb or pb).
func TestRcuReadersOrderOnlyAgainstGracePeriods(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		test := withMbs(rt)
		reader := rapid.IntRange(0, len(test.Threads)-1).Draw(rt, "reader")
		wrapped := *test
		wrapped.Threads = append([]litmus.Thread(nil), test.Threads...)
		body := []litmus.Stmt{fenceStmt(litmus.OpRcuLock)}
		body = append(body, test.Threads[reader].Body...)
		wrapped.Threads[reader].Body = append(body, fenceStmt(litmus.OpRcuUnlock))
		a, ok1 := outcomeKeys(rt, test, nil)
		b, ok2 := outcomeKeys(rt, &wrapped, nil)
		if ok1 && ok2 {
			require.Equal(rt, a, b, "P%d in a read-side critical section, no grace period, of %s", reader, render(test))
		}
		sync := mapOps(&wrapped, func(_ int, s litmus.Stmt) []litmus.Stmt {
			if s.Access.Op == litmus.OpMb {
				return []litmus.Stmt{fenceStmt(litmus.OpSyncRcu)}
			}
			return []litmus.Stmt{s}
		})
		c, ok3 := outcomeKeys(rt, sync, nil)
		if ok2 && ok3 {
			have := map[string]bool{}
			for _, k := range b {
				have[k] = true
			}
			for _, k := range c {
				require.True(rt, have[k], "grace periods added outcome %s to %s", k, render(&wrapped))
			}
		}
	})
}

// An access through a register that holds a location's address, set
// from a constant (no dependency), is the access to that location: the
// same outcomes, but for the pointer registers.
func TestPointerAccessIsDirectAccess(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		test := litmustest.Draw(rt, featureOptions(rt))
		drop := map[string]bool{}
		via := mapOps(test, func(th int, s litmus.Stmt) []litmus.Stmt {
			a := s.Access
			if a.Loc == "" || a.Op == litmus.OpSpinLock || a.Op == litmus.OpSpinUnlock ||
				!rapid.Bool().Draw(rt, fmt.Sprintf("P%d %s through a pointer", th, a.Loc)) {
				return []litmus.Stmt{s}
			}
			addr, ok := test.AddrValue(a.Loc)
			require.True(rt, ok)
			reg := "ptr_" + a.Loc
			drop[reg] = true
			c := *a
			p := litmus.R(reg)
			c.Loc, c.Addr = "", &p
			set := litmus.Stmt{Assign: &litmus.Assign{Reg: reg, Val: litmus.Expr{IsConst: true, Const: addr, Addr: a.Loc}}}
			return []litmus.Stmt{set, {Access: &c}}
		})
		a, ok1 := outcomeKeys(rt, test, nil)
		b, ok2 := outcomeKeys(rt, via, drop)
		if ok1 && ok2 {
			require.Equal(rt, a, b, "accesses through pointers, of %s", render(test))
		}
	})
}

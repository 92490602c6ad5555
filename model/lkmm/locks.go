package lkmm

import (
	"fmt"

	"github.com/flushproof/flushproof/model/litmus"
)

// Spin locks, as tools/memory-model/lock.cat (Linux v6.18) gives them for
// spin_lock and spin_unlock; the prose is the LOCKING section of
// tools/memory-model/Documentation/explanation.txt.
//
// spin_lock(l) is two events, LKR then LKW, an rmw pair (lk-rmw);
// spin_unlock(l) is one event, UL. LKR is an Acquire, UL a Release. A
// critical section is an LKW with the first UL of l after it in its
// thread (critical). The candidate executions of a lock location are the
// orders in which the critical sections take the lock:
//
//   - co of l is the initial write, then each LKW followed at once by its
//     UL, in the order chosen (co0 with IW first, then critical and
//     critical^-1 ; co merge each UL just after its LKW);
//   - each LKR reads from the write just before its LKW in co, the
//     initial write or the previous holder's UL ([IW | UL] ;
//     singlestep(co) ; lk-rmw^-1), so the lock is always taken free;
//   - an LKW never released (UNMATCHED-LKW) comes last in co, and at
//     most one per location is allowed (unmatched-locks): a thread that
//     would wait forever for a lock gives no execution, so the outcomes
//     are those of the executions in which every waiter gets the lock;
//   - a thread that takes a lock it already holds deadlocks (lock-nest):
//     that run gives no execution either.
//
// The search (search.go) builds these orders section by section: an LKW
// goes into the lock's co only where a section ends (after the initial
// write or an UL), its UL right after it, a section never released must
// be last when its thread's run ends (and nothing goes after it since it
// is no section end), and the LKR reads are set from co when the last
// thread using the lock is placed. Each thread's sections keep program
// order (coherence would reject any other). What lock.cat only flags, herd7
// reporting the test as suspect, is refused here with an error: an
// unlock of a lock not held (unmatched-unlock), an ordinary access to a
// lock location (mixed-lock-accesses), a final condition on a lock
// location (lock-final). spin_trylock and spin_is_locked are reads of the
// lock whose value the thread's run chooses (events.go, lockTest): held,
// read from an LKW; free, from an UL or the initial write.

// isLockOp reports whether op is spin_lock, spin_unlock, spin_trylock or
// spin_is_locked: an operation on a spin lock.
func isLockOp(op litmus.Op) bool {
	switch op {
	case litmus.OpSpinLock, litmus.OpSpinUnlock, litmus.OpSpinTrylock, litmus.OpSpinIsLocked:
		return true
	}
	return false
}

// lockLocs returns the locations t uses as spin locks, and refuses a test
// that lock.cat would flag: an ordinary access to a lock location, an
// initial value other than free, a final condition reading one.
func lockLocs(t *litmus.Test) (map[string]bool, error) {
	locks := map[string]bool{}
	other := map[string]int{} // location -> line of an ordinary access
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, s := range body {
			switch {
			case s.Access != nil && isLockOp(s.Access.Op):
				locks[s.Access.Loc] = true
			case s.Access != nil && s.Access.Loc != "":
				if _, ok := other[s.Access.Loc]; !ok {
					other[s.Access.Loc] = s.Line
				}
			case s.If != nil:
				walk(s.If.Then)
				walk(s.If.Else)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	for l := range locks {
		if line, ok := other[l]; ok {
			return nil, fmt.Errorf("%w: line %d: %s is a spin lock and an ordinary location (lock.cat flags mixed-lock-accesses)",
				ErrUnsupported, line, l)
		}
		if v := t.Init[l]; v != lockFree {
			return nil, fmt.Errorf("%w: spin lock %s starts at %d, not free", ErrUnsupported, l, v)
		}
	}
	var final string
	var find func(e litmus.Expr)
	find = func(e litmus.Expr) {
		if locks[e.Loc] && final == "" {
			final = e.Loc
		}
		for _, a := range e.Args {
			find(a)
		}
	}
	find(t.Cond)
	if final != "" {
		return nil, fmt.Errorf("%w: the final condition reads spin lock %s (lock.cat flags lock-final)", ErrUnsupported, final)
	}
	return locks, nil
}

// lockNest reports whether a run takes a lock it already holds
// (lock.cat's lock-nest axiom: such a run deadlocks and gives no
// execution; dropping it early saves enumerating executions that
// coherence rejects too, its first LKW being unmatched so co-last yet
// po-before another LKW of the lock), and fails on an unlock of a lock the thread does not hold
// (lock.cat's unmatched-unlock flag).
func lockNest(events []event) (bool, error) {
	held := map[string]bool{}
	for _, ev := range events {
		switch ev.lock {
		case lockLKR:
			if held[ev.loc] {
				return true, nil
			}
		case lockLKW:
			held[ev.loc] = true
		case lockUL:
			if !held[ev.loc] {
				return false, fmt.Errorf("%w: spin_unlock(%s) of a lock the thread does not hold (lock.cat flags unmatched-unlock)",
					ErrUnsupported, ev.loc)
			}
			held[ev.loc] = false
		}
	}
	return false, nil
}

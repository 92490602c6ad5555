package durable

import (
	"reflect"

	"github.com/flushproof/flushproof/model/litmus"
)

// Retry loops of a cmpxchg, for memory.LKMM.
//
// A conditional read-modify-write (cmpxchg) orders what its barriers order
// only when it stores: LKMM lets it fail by reading a store that its
// thread cannot yet see in program order, so the memory refuses a store
// after one that succeeded unless the store depends on it or a barrier
// that always happens comes first (memory.Memory.RMWCond). In a retry loop
//
//	while (atomic_cmpxchg_acquire(&sem->count, 0, LOCKED) != 0)
//		wait_event(wq, atomic_read(&sem->count) == 0);
//
// a failure only goes back to the cmpxchg: the code that runs after it
// fails makes no store, no device call and no check, and every register
// it writes is written again before anything reads it. Such a failed pass
// can be taken out of any LKMM execution: what is left is an execution of
// the same program (its events lose relations, never gain them, so
// LKMM's axioms still hold), the other threads read the same stores, and
// the outcome is the same. So every outcome is one in which the cmpxchg
// that lets the thread go on succeeded: for such a one the memory is
// asked for the ordering of a read-modify-write that always succeeds.
//
// markRetries finds them. A failure is known from the branch conditions
// that compare the cmpxchg's register with its expected value (a
// constant, or a register not written since): "r != e", "r == e", "r"
// with e = 0, and their negations; and from constant ones. A branch on
// anything else may go either way, and both ways must come back. Any
// other instruction on a way back, or one that reaches the end of the
// thread, leaves the cmpxchg conditional. The failed pass is cut at some
// instruction h of the loop (its head, where the loop reads the value to
// expect again, or the cmpxchg): every register the loop writes must be
// dead at h, so that the run without the pass goes on from h as it did.
// keep are the registers read at the end (the final condition's).
func markRetries(code []instr, regs map[string]int, keep uint64) {
	var use, def []uint64
	var live []uint64
	for p, in := range code {
		if in.kind != iAccess || in.access == nil || !in.access.Op.IsCmpxchg() {
			continue
		}
		if use == nil {
			use, def = regUseDef(code, regs)
			live = liveAtEnd(code, use, def, keep)
		}
		code[p].retry = failRetries(code, p, def, live)
	}
}

// failRetries reports whether, after the cmpxchg at p fails, every way
// comes back to p as markRetries requires; live are the registers live
// before each instruction.
func failRetries(code []instr, p int, def []uint64, live []uint64) bool {
	a := code[p].access
	e := a.Expect
	if a.Reg == "" || e.Op != "" || !e.IsConst && e.Reg == "" {
		return false
	}
	type point struct {
		pc    int
		known bool // the register still holds the failed value (not e)
	}
	seen := map[point]bool{}
	loop := map[int]bool{p: true} // the instructions failed passes run
	wrote := def[p]
	var back func(pt point) bool
	back = func(pt point) bool {
		if pt.pc == p {
			return true
		}
		if pt.pc >= len(code) {
			return false // the thread ends after a failure
		}
		if seen[pt] {
			return true // a loop that does not come back makes no store either
		}
		seen[pt] = true
		loop[pt.pc] = true
		in := code[pt.pc]
		wrote |= def[pt.pc]
		// A write of the register or of the expected value's forgets
		// the failure.
		known := pt.known && !writes(in, a.Reg) && (e.Reg == "" || !writes(in, e.Reg))
		next := point{pt.pc + 1, known}
		switch in.kind {
		case iAssign, iAwait, iNop:
			return back(next)
		case iJump:
			return back(point{in.target, known})
		case iBranch:
			if in.cond.IsConst && in.cond.Op == "" { // a loop's "while (1)"
				if in.cond.Const != 0 {
					return back(next)
				}
				return back(point{in.target, known})
			}
			if pt.known {
				if v, ok := failedCond(in.cond, a.Reg, e); ok {
					if v {
						return back(next) // the condition holds: no jump
					}
					return back(point{in.target, true})
				}
			}
			return back(next) && back(point{in.target, known})
		case iAccess:
			info := in.access.Op.Info()
			if info.Writes || in.access.Op.IsRMW() || in.access.Op == litmus.OpSpinLock || in.access.Op == litmus.OpSpinUnlock {
				return false
			}
			return back(next)
		}
		return false // a device call, a check, a completion
	}
	if !back(point{p + 1, true}) {
		return false
	}
	// The cut: p, or an instruction of the straight run of the loop just
	// before it that no jump enters past its start (so every pass goes
	// through it).
	entered := map[int]bool{}
	for _, in := range code {
		if in.kind == iJump || in.kind == iBranch {
			entered[in.target] = true
		}
	}
	for h := p; h >= 0 && loop[h]; h-- {
		if wrote&live[h] == 0 {
			return true
		}
		if entered[h] || h > 0 && (code[h-1].kind == iJump || code[h-1].kind == iBranch) {
			break // another way into the run: h-1 is not on every pass
		}
	}
	return false
}

// writes reports whether in writes register r.
func writes(in instr, r string) bool {
	switch {
	case in.assign != nil:
		return in.assign.Reg == r
	case in.access != nil:
		return in.access.Reg == r
	case in.dev != nil:
		return in.dev.Reg == r
	}
	return false
}

// failedCond evaluates cond, which reads reg, knowing only that reg is
// not e: ok is false unless the condition is one of markRetries' forms.
func failedCond(cond litmus.Expr, reg string, e litmus.Expr) (v, ok bool) {
	isReg := func(x litmus.Expr) bool { return x.Reg == reg && x.Op == "" && !x.IsConst }
	isE := func(x litmus.Expr) bool { return reflect.DeepEqual(x, e) }
	switch {
	case cond.Op == "!" && len(cond.Args) == 1:
		v, ok := failedCond(cond.Args[0], reg, e)
		return !v, ok
	case isReg(cond) && e.IsConst && e.Const == 0:
		return true, true
	case (cond.Op == "!=" || cond.Op == "==") && len(cond.Args) == 2 &&
		(isReg(cond.Args[0]) && isE(cond.Args[1]) || isE(cond.Args[0]) && isReg(cond.Args[1])):
		return cond.Op == "!=", true
	}
	return false, false
}

// liveAtEnd is liveness with keep read at the end only: the registers
// some path from each instruction reads, or leaves to the end, before
// writing.
func liveAtEnd(code []instr, use, def []uint64, keep uint64) []uint64 {
	live := make([]uint64, len(code)+1)
	live[len(code)] = keep
	for changed := true; changed; {
		changed = false
		for i := len(code) - 1; i >= 0; i-- {
			var out uint64
			successors(code, i, func(n int) { out |= live[n] })
			l := use[i] | out&^def[i]
			if l != live[i] {
				live[i], changed = l, true
			}
		}
	}
	return live
}

// condRegs are the registers of thread t (bit i: index i in regs) that the
// final condition cond reads.
func condRegs(cond litmus.Expr, t int, regs map[string]int) uint64 {
	var keep uint64
	var walk func(e litmus.Expr)
	walk = func(e litmus.Expr) {
		if i, ok := regs[e.Reg]; ok && e.Reg != "" && e.Thread == t {
			keep |= 1 << i
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(cond)
	return keep
}

package lkmm

import "github.com/flushproof/flushproof/model/litmus"

// Terse builders for litmus tests written as Go values.

func acc(op litmus.Op, reg, loc string, val litmus.Expr) litmus.Stmt {
	return litmus.Stmt{Access: &litmus.Access{Op: op, Reg: reg, Loc: loc, Val: val}}
}

// rd is reg = READ_ONCE(*loc).
func rd(reg, loc string) litmus.Stmt { return acc(litmus.OpReadOnce, reg, loc, litmus.Expr{}) }

// ldAcq is reg = smp_load_acquire(loc).
func ldAcq(reg, loc string) litmus.Stmt { return acc(litmus.OpLoadAcquire, reg, loc, litmus.Expr{}) }

// wr is WRITE_ONCE(*loc, v).
func wr(loc string, v int64) litmus.Stmt { return wrE(loc, litmus.C(v)) }

// wrE is WRITE_ONCE(*loc, e).
func wrE(loc string, e litmus.Expr) litmus.Stmt { return acc(litmus.OpWriteOnce, "", loc, e) }

// stRel is smp_store_release(loc, v).
func stRel(loc string, v int64) litmus.Stmt { return acc(litmus.OpStoreRelease, "", loc, litmus.C(v)) }

// barrier is a barrier primitive (smp_mb() and friends).
func barrier(op litmus.Op) litmus.Stmt { return acc(op, "", "", litmus.Expr{}) }

// rmwOp is reg = op(loc, v) for an atomic RMW ("" reg for none).
func rmwOp(op litmus.Op, reg, loc string, v int64) litmus.Stmt { return acc(op, reg, loc, litmus.C(v)) }

// cas is reg = op(loc, expect, v) for a cmpxchg.
func cas(op litmus.Op, reg, loc string, expect, v int64) litmus.Stmt {
	s := acc(op, reg, loc, litmus.C(v))
	s.Access.Expect = litmus.C(expect)
	return s
}

// assign is reg = e.
func assign(reg string, e litmus.Expr) litmus.Stmt {
	return litmus.Stmt{Assign: &litmus.Assign{Reg: reg, Val: e}}
}

// when is if (cond) { then }.
func when(cond litmus.Expr, then ...litmus.Stmt) litmus.Stmt {
	return litmus.Stmt{If: &litmus.If{Cond: cond, Then: then}}
}

func th(body ...litmus.Stmt) litmus.Thread { return litmus.Thread{Body: body} }

// reg is "t:r = v" in a final condition; mem is "loc = v".
func reg(t int, r string, v int64) litmus.Expr {
	return litmus.Bin("==", litmus.TR(t, r), litmus.C(v))
}

func mem(loc string, v int64) litmus.Expr { return litmus.Bin("==", litmus.L(loc), litmus.C(v)) }

// and is the conjunction of its terms.
func and(terms ...litmus.Expr) litmus.Expr {
	e := terms[0]
	for _, t := range terms[1:] {
		e = litmus.Bin("&&", e, t)
	}
	return e
}

// exists builds a test whose final condition is "exists cond".
func exists(name string, cond litmus.Expr, threads ...litmus.Thread) *litmus.Test {
	return &litmus.Test{Name: name, Threads: threads, Quant: litmus.Exists, Cond: cond}
}

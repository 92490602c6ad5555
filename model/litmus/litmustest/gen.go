// Package litmustest draws random litmus tests for property tests: small
// programs of every primitive a model supports, for differential testing of
// memory models against each other and against the axiomatic reference.
package litmustest

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/litmus"
)

// Options bound a drawn test.
type Options struct {
	MinThreads, MaxThreads int // 2..4
	MaxLocs                int // 1..4
	MaxStmts               int // per thread
	// Ops are the primitives to draw from (all of litmus.Ops but locks if
	// empty).
	Ops []litmus.Op
	// Branches draws if statements on loaded registers (control
	// dependencies); Data draws stored values computed from registers.
	Branches, Data bool
	// Values, if not 0, draws each stored constant from 1..Values instead
	// of giving every store a value of its own: fewer values a load may
	// return keep the axiomatic reference's enumeration small.
	Values int
	// Locks, if not 0, adds that many spin locks (s, t) and draws critical
	// sections: spin_lock, one or two statements, spin_unlock, never
	// nested, so that no run deadlocks.
	Locks int
}

// Default is 2 to 4 threads, up to 3 locations, up to 4 statements each,
// every primitive but locks and those only the LKMM reference has
// (litmus.Feature), branches and data dependencies.
func Default() Options {
	var ops []litmus.Op
	for _, op := range litmus.Ops() {
		if op != litmus.OpSpinLock && op != litmus.OpSpinUnlock && op.Feature() == 0 {
			ops = append(ops, op)
		}
	}
	return Options{MinThreads: 2, MaxThreads: 4, MaxLocs: 3, MaxStmts: 4, Ops: ops, Branches: true, Data: true}
}

// Draw draws a test. Unless Options.Values is set, every store of a
// constant writes a value no other store writes (the value says which
// store a load read, as in the kernel's tests); values stay small (the operational models keep them in a byte).
// The final condition is "exists (true)": differential tests compare
// outcome sets.
func Draw(t *rapid.T, o Options) *litmus.Test {
	nThreads := rapid.IntRange(o.MinThreads, o.MaxThreads).Draw(t, "threads")
	nLocs := rapid.IntRange(1, o.MaxLocs).Draw(t, "locs")
	locs := []string{"x", "y", "z", "w"}[:nLocs]
	test := &litmus.Test{Name: "random", Locs: locs, Quant: litmus.Exists, Cond: litmus.C(1)}
	locks := []string{"s", "t"}[:o.Locks]
	test.Locs = append(append([]string(nil), locs...), locks...)
	next := int64(1) // the next value a store writes
	for th := 0; th < nThreads; th++ {
		d := drawer{t: t, o: o, locs: locs, locks: locks, next: &next, th: th}
		n := rapid.IntRange(1, o.MaxStmts).Draw(t, fmt.Sprintf("P%d stmts", th))
		test.Threads = append(test.Threads, litmus.Thread{Body: d.stmts(n, 0)})
	}
	return test
}

type drawer struct {
	t     *rapid.T
	o     Options
	locs  []string
	locks []string
	next  *int64
	th    int
	regs  []string // registers loaded so far
}

func (d *drawer) label(what string) string { return fmt.Sprintf("P%d %s", d.th, what) }

func (d *drawer) value() litmus.Expr {
	v := *d.next
	*d.next++
	if d.o.Values > 0 {
		v = rapid.Int64Range(1, int64(d.o.Values)).Draw(d.t, d.label("value"))
	}
	if d.o.Data && len(d.regs) > 0 && rapid.Bool().Draw(d.t, d.label("data dependency")) {
		// A value that depends on a register: r + v.
		r := rapid.SampledFrom(d.regs).Draw(d.t, d.label("data register"))
		return litmus.Bin("+", litmus.R(r), litmus.C(v))
	}
	return litmus.C(v)
}

func (d *drawer) stmts(n, depth int) []litmus.Stmt {
	var out []litmus.Stmt
	for i := 0; i < n; i++ {
		if d.o.Branches && depth == 0 && len(d.regs) > 0 && rapid.IntRange(0, 5).Draw(d.t, d.label("branch?")) == 0 {
			r := rapid.SampledFrom(d.regs).Draw(d.t, d.label("branch register"))
			cond := litmus.Bin("!=", litmus.R(r), litmus.C(0))
			then := d.stmts(1, depth+1)
			out = append(out, litmus.Stmt{If: &litmus.If{Cond: cond, Then: then}})
			continue
		}
		if len(d.locks) > 0 && depth == 0 && rapid.IntRange(0, 2).Draw(d.t, d.label("critical section?")) == 0 {
			l := rapid.SampledFrom(d.locks).Draw(d.t, d.label("lock"))
			out = append(out, litmus.Stmt{Access: &litmus.Access{Op: litmus.OpSpinLock, Loc: l}})
			out = append(out, d.stmts(rapid.IntRange(1, 2).Draw(d.t, d.label("critical section stmts")), depth+1)...)
			out = append(out, litmus.Stmt{Access: &litmus.Access{Op: litmus.OpSpinUnlock, Loc: l}})
			continue
		}
		out = append(out, d.access())
	}
	return out
}

func (d *drawer) access() litmus.Stmt {
	op := rapid.SampledFrom(d.o.Ops).Draw(d.t, d.label("op"))
	info := op.Info()
	a := &litmus.Access{Op: op}
	if info.Reads || info.Writes {
		a.Loc = rapid.SampledFrom(d.locs).Draw(d.t, d.label("loc"))
	}
	switch {
	case op == litmus.OpAdd || op.ReturnsNew() || (op >= litmus.OpFetchAdd && op <= litmus.OpFetchAddRel):
		a.Val = litmus.C(rapid.Int64Range(1, 2).Draw(d.t, d.label("add")))
	case info.Writes:
		a.Val = d.value()
	}
	if op.IsCmpxchg() {
		// Expect a value some store writes, or 0 (the initial one).
		a.Expect = litmus.C(rapid.Int64Range(0, *d.next).Draw(d.t, d.label("expect")))
	}
	if info.Returns {
		a.Reg = fmt.Sprintf("r%d", len(d.regs))
		d.regs = append(d.regs, a.Reg)
	}
	return litmus.Stmt{Access: a}
}

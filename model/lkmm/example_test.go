package lkmm_test

import (
	"fmt"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/lkmm"
)

// Message passing with a release store and an acquire load: LKMM never
// lets the reader see the flag without the data
// (tools/memory-model/litmus-tests/MP+pooncerelease+poacquireonce.litmus).
func ExampleReference() {
	st := func(op litmus.Op, loc string, v int64) litmus.Stmt {
		return litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Val: litmus.C(v)}}
	}
	ld := func(op litmus.Op, reg, loc string) litmus.Stmt {
		return litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Reg: reg}}
	}
	t := &litmus.Test{
		Name: "MP+pooncerelease+poacquireonce",
		Threads: []litmus.Thread{
			{Body: []litmus.Stmt{st(litmus.OpWriteOnce, "x", 1), st(litmus.OpStoreRelease, "y", 1)}},
			{Body: []litmus.Stmt{ld(litmus.OpLoadAcquire, "r0", "y"), ld(litmus.OpReadOnce, "r1", "x")}},
		},
		Quant: litmus.Exists,
		Cond: litmus.Bin("&&",
			litmus.Bin("==", litmus.TR(1, "r0"), litmus.C(1)),
			litmus.Bin("==", litmus.TR(1, "r1"), litmus.C(0))),
	}
	a, err := litmus.Judge(lkmm.Reference{}, t)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Result, len(a.Outcomes), "outcomes")
	// Output: Never 3 outcomes
}

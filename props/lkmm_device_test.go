package props

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/lkmm"
	"github.com/flushproof/flushproof/model/memory"
)

// TestMemoryLKMMDevice holds the durability checker under LKMM to the
// reference on random programs of Memory's primitives into which device
// calls are put (a cache flush, or a write of a register's value)
// anywhere, the arms of ifs included. LKMM knows no device: a device call
// orders nothing in memory, so the memory outcomes of the program with
// the calls are those the reference gives the program without them. The
// checker judges conditions, not outcome sets, so each outcome is a
// search of its own: for every outcome the reference allows, the checker
// must find a run that violates forall (~outcome); and forall (the
// reference's outcomes, or'ed) must hold. A file the checker refuses
// (load buffering it cannot run ahead into) is counted, never passed.
//
// The device calls exercise what memory-only programs cannot: the
// checker satisfies a thread's pending loads before its device call
// (forceAll), which with a call in the arm of an if on a loaded value
// missed LKMM outcomes (found by TestMemoryLKMMGuarded with a store in the
// arm; model/durable/testdata/refused/flush-in-arm.litmus).
func TestMemoryLKMMDevice(t *testing.T) {
	o := memOptions()
	o.MaxThreads = 2 // with device calls, three threads take seconds a program
	deviceCalls(t, o)
}

// TestMemoryLKMMDeviceLB is TestMemoryLKMMDevice on programs drawn from
// plain loads and stores and unordered RMWs, with branches: load
// buffering shapes, where a device call in the arm of an if on a pending
// load meets a store after the if, are common here.
func TestMemoryLKMMDeviceLB(t *testing.T) {
	o := memOptions()
	o.MaxThreads, o.MaxLocs = 2, 2
	o.Ops = []litmus.Op{litmus.OpReadOnce, litmus.OpWriteOnce}
	deviceCalls(t, o)
}

func deviceCalls(t *testing.T, o litmustest.Options) {
	start := time.Now()
	var ran, refused, skipped, searches int
	rapid.Check(t, func(rt *rapid.T) {
		test := litmustest.Draw(rt, o)
		outs, err := lkmm.Reference{Candidates: nestCandidates}.Outcomes(test)
		if errors.Is(err, lkmm.ErrTooLarge) {
			skipped++
			return
		}
		if err != nil {
			rt.Fatalf("LKMM reference: %v", err)
		}
		dev := withDeviceCalls(rt, test)
		check := func(cond litmus.Expr) (*explore.Result[durable.State], bool) {
			dev.Quant, dev.Cond = litmus.Forall, cond
			d, err := durable.Read("random", dev)
			if err != nil {
				rt.Fatalf("durable.Read: %v", err)
			}
			searches++
			r, err := d.Search(durable.Config{Model: memory.LKMM, Device: d.Devices[0], Crash: d.Crash}, explore.Options{MaxStates: 2_000_000})
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, "LKMM lets this store be seen before") || errors.Is(err, litmus.ErrUnsupported) && strings.Contains(msg, "atomic") {
					return nil, false
				}
				rt.Fatalf("the durability checker under LKMM: %v", err)
			}
			if r.Stopped != "" {
				rt.Fatalf("the durability checker under LKMM stopped: %s", r.Stopped)
			}
			return r, true
		}
		var all []litmus.Expr
		for _, out := range outs {
			is := outcomeExpr(out)
			all = append(all, is)
			r, ok := check(litmus.Expr{Op: "!", Args: []litmus.Expr{is}})
			if !ok {
				refused++
				return
			}
			if r.Violation == nil || r.Violation.Kind == explore.Deadlock {
				rt.Fatalf("the reference allows [%s]; with device calls, the durability checker under LKMM finds no run that ends there", out.Key())
			}
		}
		r, ok := check(orAll(all))
		if !ok {
			refused++
			return
		}
		if r.Violation != nil {
			rt.Fatalf("with device calls, the durability checker under LKMM ends a run outside the reference's outcomes: %v", r.Violation.Err)
		}
		ran++
	})
	t.Logf("%d random programs with device calls equal to the reference (%d searches), %d refused (load buffering the checker cannot run ahead into, or an smp_mb__{before,after}_atomic away from its RMW), %d over the reference's bounds, in %v", ran, searches, refused, skipped, time.Since(start).Round(time.Millisecond))
}

// withDeviceCalls is test with device calls put in at random places of
// each thread (at most two a thread, in the arms of ifs too), as a
// durability file with no crash, on a device without a cache.
func withDeviceCalls(rt *rapid.T, test *litmus.Test) *litmus.Test {
	out := *test
	out.Header = map[string]litmus.HeaderField{"device": {Value: "no-cache"}, "crash": {Value: "none"}}
	out.Threads = nil
	for ti, th := range test.Threads {
		var regs []string
		var put func(body []litmus.Stmt, depth int) []litmus.Stmt
		put = func(body []litmus.Stmt, depth int) []litmus.Stmt {
			var b []litmus.Stmt
			call := func(where string) {
				// A call in an arm is the shape that matters most: more
				// often there.
				n := 3
				if depth > 0 {
					n = 2
				}
				switch rapid.IntRange(0, n).Draw(rt, fmt.Sprintf("P%d device call %s", ti, where)) {
				case 1:
					b = append(b, litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevFlush}})
				case 2:
					val := litmus.C(1)
					if len(regs) > 0 {
						val = litmus.R(rapid.SampledFrom(regs).Draw(rt, fmt.Sprintf("P%d device value", ti)))
					}
					b = append(b, litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevWrite, Block: litmus.C(0), Val: val, Flags: litmus.C(0)}})
				}
			}
			for i, st := range body {
				call(fmt.Sprintf("before %d at depth %d", i, depth))
				if st.If != nil {
					in := *st.If
					in.Then = put(in.Then, depth+1)
					st.If = &in
				}
				b = append(b, st)
				if a := st.Access; a != nil && a.Reg != "" {
					regs = append(regs, a.Reg)
				}
			}
			call(fmt.Sprintf("at the end of depth %d", depth))
			return b
		}
		th.Body = put(th.Body, 0)
		out.Threads = append(out.Threads, th)
	}
	return &out
}

// outcomeExpr is the condition that holds exactly at out: each register
// and location at its value.
func outcomeExpr(out litmus.Outcome) litmus.Expr {
	var parts []litmus.Expr
	for t, regs := range out.Regs {
		for r, v := range regs {
			parts = append(parts, litmus.Bin("==", litmus.TR(t, r), litmus.C(v)))
		}
	}
	for l, v := range out.Mem {
		parts = append(parts, litmus.Bin("==", litmus.L(l), litmus.C(v)))
	}
	return fold("&&", parts, litmus.C(1))
}

// orAll is the disjunction of es (false if there are none).
func orAll(es []litmus.Expr) litmus.Expr { return fold("||", es, litmus.C(0)) }

// fold joins es with the binary operator op (empty if there are none).
func fold(op string, es []litmus.Expr, empty litmus.Expr) litmus.Expr {
	if len(es) == 0 {
		return empty
	}
	e := es[0]
	for _, x := range es[1:] {
		e = litmus.Bin(op, e, x)
	}
	return e
}

// S4 (the patch "ext4: Add DIO_SKIP_DIO_COUNT flag to dax_do_io()"): many
// goroutines (Config.S4Goroutines, default 4 x GOMAXPROCS) on a hot I/O
// path that keeps an in-flight count for truncate to wait on
// (impl.DIOCounter, i.e. inode_dio_begin / inode_dio_end), counted
//
//	twice per op   an outer Begin/End around an inner pair, as ext4 did
//	               around dax_do_io before the patch: baseline
//	once per op    the inner pair skipped (DIO_SKIP_DIO_COUNT): optimised
//
// with two kinds of I/O op:
//
//	4 KiB copy         a memory copy from a shared 4 KiB page, standing for
//	                   DAX on NVDIMM as the patch measured it, where the
//	                   I/O is a memcpy and the counter's cache line is a
//	                   real cost
//	4 KiB O_DIRECT read  a pread(2) of the goroutine's own block
//
// All goroutines share one counter, so every Begin and End is an atomic
// read-modify-write on one cache line. No truncate waits meanwhile; the
// count must be zero after every slice. Latencies under the histogram's
// 1 µs floor show as 0 µs: the copy case is read by its ops/s.

package hwbench

import (
	"context"
	"fmt"
	"time"

	"github.com/flushproof/flushproof/impl"
)

func (e *scenarioEnv) runS4(ctx context.Context) (outcome, error) {
	var out outcome
	for _, kind := range s4Kinds {
		group := e.s4Group(kind)
		var cases []*workload
		for _, v := range s4Variants {
			w, err := e.s4Case(kind, v)
			if err != nil {
				return out, err
			}
			cases = append(cases, w)
		}
		rs, err := alternate(ctx, e.cfg, "S4 "+group, cases)
		if err != nil {
			return out, err
		}
		out.add(rs...)
		out.comparisons = append(out.comparisons, Comparison{
			Scenario: "S4", Name: fmt.Sprintf("%s: in-flight counter twice vs once per op", group),
			Baseline: rs[0], Optimised: rs[1],
		})
	}
	return out, nil
}

// S4's kinds of I/O op.
const (
	s4Copy = "4 KiB copy (DAX-like)"
	s4Read = "4 KiB O_DIRECT read"
)

var s4Kinds = []string{s4Copy, s4Read}

// s4Variant is one of S4's two ways to count.
type s4Variant struct {
	name, role string
	twice      bool
}

var s4Variants = []s4Variant{{"counted twice per op", "baseline", true}, {"counted once per op", "optimised", false}}

// s4Group is the group name of S4's kind of op.
func (e *scenarioEnv) s4Group(kind string) string {
	return fmt.Sprintf("%d goroutines, %s", e.cfg.S4Goroutines, kind)
}

// s4Case is variant v of S4 for the kind of op, as a fresh workload with
// a counter of its own.
func (e *scenarioEnv) s4Case(kind string, v s4Variant) (*workload, error) {
	counter, err := impl.NewDIOCounter(&impl.Word{}, &impl.WaitQueue{})
	if err != nil {
		return nil, err
	}
	src := e.buffer(0xff)
	cnt := e.counting()
	updates := 2.0
	if v.twice {
		updates = 4
	}
	read := kind == s4Read
	twice := v.twice
	return &workload{
		res:      Result{Scenario: "S4", Group: e.s4Group(kind), Variant: v.name, Role: v.role, Threads: e.cfg.S4Goroutines, Extra: map[string]float64{ExtraCounterUpdatesPerOp: updates}},
		count:    cnt,
		target:   e.t,
		blocking: read,
		newOp: func(w int) opFunc {
			buf := e.buffer(w)
			off := int64(w) * int64(e.io)
			return func(start time.Time) (time.Time, error) {
				counter.Begin()
				if twice {
					counter.Begin()
				}
				var err error
				if read {
					err = cnt.ReadAt(buf, off)
				} else {
					copy(buf, src)
				}
				if twice {
					counter.End()
				}
				counter.End()
				return start, err
			}
		},
		finish: func(r *Result) error {
			if n := counter.InFlight(); n != 0 {
				return fmt.Errorf("S4 %s: %d I/Os still counted in flight after the last slice", r.Case(), n)
			}
			counter.Wait() // returns at once: nothing in flight
			return nil
		},
	}, nil
}

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
	g := e.cfg.S4Goroutines
	src := e.buffer(0xff)
	for _, kind := range []string{"4 KiB copy (DAX-like)", "4 KiB O_DIRECT read"} {
		group := fmt.Sprintf("%d goroutines, %s", g, kind)
		var cases []*workload
		for _, v := range []struct {
			name, role string
			twice      bool
		}{{"counted twice per op", "baseline", true}, {"counted once per op", "optimised", false}} {
			counter, err := impl.NewDIOCounter(&impl.Word{}, &impl.WaitQueue{})
			if err != nil {
				return out, err
			}
			cnt := e.counting()
			updates := 2.0
			if v.twice {
				updates = 4
			}
			read := kind == "4 KiB O_DIRECT read"
			twice := v.twice
			cases = append(cases, &workload{
				res:      Result{Scenario: "S4", Group: group, Variant: v.name, Role: v.role, Threads: g, Extra: map[string]float64{ExtraCounterUpdatesPerOp: updates}},
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
			})
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

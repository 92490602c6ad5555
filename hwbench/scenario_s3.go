// S3 (the patch "io_uring: avoid hashing O_DIRECT writes if the filesystem
// doesn't need it"): 8 writers (Config.S3Writers), each writing 4 KiB
// O_DIRECT blocks sequentially through its own part of one file or device,
// submitted through an impl.Submitter:
//
//	serialised   one write at a time, as io-wq runs work hashed to one
//	             inode: baseline
//	parallel     the writes go to the device together, as io_uring does
//	             after the patch for a file system that sets
//	             FMODE_DIO_PARALLEL_WRITE: optimised
//
// The latency recorded is the Submit call's: waiting for the writes ahead
// of it (serialised) plus the write itself. Plain writes, no flushes: the
// scenario measures submission, not durability.

package hwbench

import (
	"context"
	"fmt"
	"time"

	"github.com/flushproof/flushproof/impl"
)

func (e *scenarioEnv) runS3(ctx context.Context) (outcome, error) {
	var out outcome
	group := e.s3Group()
	var cases []*workload
	for _, v := range s3Variants {
		cases = append(cases, e.s3Case(group, v))
	}
	rs, err := alternate(ctx, e.cfg, "S3 "+group, cases)
	if err != nil {
		return out, err
	}
	out.add(rs...)
	out.comparisons = append(out.comparisons, Comparison{
		Scenario: "S3", Name: fmt.Sprintf("%s, 4 KiB O_DIRECT writes: serialised vs parallel", group),
		Baseline: rs[0], Optimised: rs[1],
	})
	return out, nil
}

// s3Variant is one of S3's two ways to submit.
type s3Variant struct {
	name, role string
	serialised bool
}

var s3Variants = []s3Variant{{"serialised", "baseline", true}, {"parallel", "optimised", false}}

// s3Case is variant v of S3 as a fresh workload.
func (e *scenarioEnv) s3Case(group string, v s3Variant) *workload {
	n := e.cfg.S3Writers
	part := e.cfg.Span / int64(n) / int64(e.io) // blocks per writer
	cnt := e.counting()
	sub := &impl.Submitter{Serialised: v.serialised}
	return &workload{
		res:      Result{Scenario: "S3", Group: group, Variant: v.name, Role: v.role, Threads: n},
		count:    cnt,
		target:   e.t,
		blocking: true,
		newOp: func(w int) opFunc {
			buf := e.buffer(w)
			base := int64(w) * part
			next := int64(0)
			return func(start time.Time) (time.Time, error) {
				off := (base + next) * int64(e.io)
				next = (next + 1) % part
				return start, sub.Submit(func() error { return cnt.WriteAt(buf, off, 0) })
			}
		},
	}
}

// s3Group is S3's group name.
func (e *scenarioEnv) s3Group() string { return fmt.Sprintf("%d writers, one file", e.cfg.S3Writers) }

// How a case is measured: goroutines run an operation in a loop for a
// slice of time, each recording latencies in its own HDR histogram; the
// cases of a comparison take turns slice by slice (A B, B A, A B, ...), so
// that drift of the device (a cache filling, a neighbour's load, thermal
// throttling) falls on all of them alike. A case's figures are the sum of
// its slices: operations, wall time, histograms merged, device commands
// counted (impl.Counting) and, for a block device, the requests the block
// layer sent the driver (/sys/class/block/NAME/stat).
//
// Workers that block in system calls run as fio's jobs do, a thread each:
// each goroutine is locked to its OS thread, and GOMAXPROCS is raised to
// the workers plus one for the slice (and restored after). Otherwise a
// worker returning from pwrite or fdatasync may find every P taken and
// wait for the scheduler: with 16 S2 writers and GOMAXPROCS=2 that alone
// cut syncs/s to a third of fio's on the same job. Workers that only
// compute (S4's copy case) keep GOMAXPROCS as it is, so that they compete
// for the CPUs as the patch's benchmark threads do.

package hwbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/flushproof/flushproof/impl"
)

// Keys of Result.Extra that the scenarios set.
const (
	// ExtraDeviceFlushesPerOp is flush requests the block layer sent the
	// driver per operation (post-flushes of emulated FUA and flushes
	// merged by the block layer's flush machinery included), from the
	// device's stat file. Only for block devices.
	ExtraDeviceFlushesPerOp = "dev-flushes/op"
	// ExtraFUAWritesPerOp is WriteAt calls with spec.FUA per operation.
	ExtraFUAWritesPerOp = "fua-writes/op"
	// ExtraSkippedPerSync and ExtraJoinedPerSync are the Syncs that
	// returned without a flush of their own, and of those the ones that
	// waited for a flush in flight (S2).
	ExtraSkippedPerSync = "skipped/sync"
	ExtraJoinedPerSync  = "joined/sync"
	// ExtraFlushesPerSync is the flushes that served S2's syncs, per
	// sync: those the block layer sent the device where it counts them
	// (a block device; concurrent flush requests merge into one, see
	// block/blk-flush.c), otherwise those the Syncer issued.
	ExtraFlushesPerSync = "flushes/sync"
	// ExtraLimit is S2's ceiling in syncs/s at the flush rate the case
	// itself reached: the writers times the flushes per second counted in
	// ExtraFlushesPerSync. A writer has one sync outstanding, and a sync
	// is served only by a flush that started after its write completed,
	// so one flush serves at most one sync of each writer.
	ExtraLimit = "limit-syncs/s"
	// ExtraEfficiency is syncs/s divided by ExtraLimit: syncs per flush
	// over the writers, at most 1. It is left out where the counts give
	// more (the count then missed flushes, and a note says so).
	ExtraEfficiency = "efficiency"
	// ExtraVsOneWriter is syncs/s divided by the writers times the rate
	// of one writer doing write + flush back to back (S2's reference
	// case, measured in the same run). It is a scaling figure, not a
	// bound: concurrent writes overlap flushes, so it can exceed 1.
	ExtraVsOneWriter = "vs-writers-x-1-writer"
	// ExtraThinkMicros is the mean S2 pause actually taken between a
	// write's completion and the flush check, in µs.
	ExtraThinkMicros = "think-us"
	// ExtraCounterUpdatesPerOp is atomic read-modify-writes of the
	// in-flight counter per operation (S4).
	ExtraCounterUpdatesPerOp = "counter-updates/op"
)

// opFunc runs one operation. It is given the time the operation started
// and returns the time from which its latency is to be counted: start, or
// a later moment if only the end of the operation is measured (S2 times
// the Sync, not the write before it).
type opFunc func(start time.Time) (from time.Time, err error)

// workload is one case: Threads goroutines, each running its own opFunc.
type workload struct {
	res    Result                  // Scenario, Group, Variant, Role, Threads set by the scenario
	newOp  func(worker int) opFunc // one per worker, made before the first slice
	count  *impl.Counting          // the device the case goes through, if any
	target *Target                 // for the block device's stats
	finish func(r *Result) error   // adds figures after the last slice
	// blocking says the operation blocks in system calls (I/O); see the
	// file comment.
	blocking bool

	ops    []opFunc
	hists  []*hdrhistogram.Histogram
	done   int64
	wall   time.Duration
	counts impl.Counts
	disk   DiskStats
	diskOK bool
}

func (w *workload) prepare() {
	if w.ops != nil {
		return
	}
	w.diskOK = w.target != nil && w.target.IsBlockDevice()
	for i := range w.res.Threads {
		w.ops = append(w.ops, w.newOp(i))
		w.hists = append(w.hists, NewLatencyHistogram())
	}
}

// runSlice runs every worker until d has passed since the slice started,
// adds what happened to the case and returns the slice's own operations
// and wall time.
func (w *workload) runSlice(d time.Duration) (SliceRate, error) { return w.run(d, 0) }

// runOps runs exactly n operations, shared among the workers (each takes
// the next one until none is left), adds what happened to the case and
// returns the operations and their wall time. The benchmarks run b.N
// operations this way.
func (w *workload) runOps(n int64) (SliceRate, error) {
	if n <= 0 {
		return SliceRate{}, fmt.Errorf("%s %s: %d operations asked for", w.res.Scenario, w.res.Case(), n)
	}
	return w.run(0, n)
}

// run runs the workers for d (ops == 0) or for ops operations in all.
func (w *workload) run(d time.Duration, ops int64) (SliceRate, error) {
	w.prepare()
	var countsBefore impl.Counts
	if w.count != nil {
		countsBefore = w.count.Counts()
	}
	var diskBefore DiskStats
	if w.diskOK {
		diskBefore, w.diskOK = w.target.DiskStats()
	}

	var (
		wg    sync.WaitGroup
		total atomic.Int64
		left  atomic.Int64 // operations not yet taken, when counting
		mu    sync.Mutex
		errs  []error
	)
	left.Store(ops)
	if w.blocking && runtime.GOMAXPROCS(0) < len(w.ops)+1 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(len(w.ops) + 1))
	}
	release := make(chan struct{})
	start := time.Now()
	deadline := start.Add(d)
	for i, op := range w.ops {
		h := w.hists[i]
		wg.Go(func() {
			if w.blocking {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			<-release
			var n int64
			defer func() { total.Add(n) }()
			for {
				if ops > 0 && left.Add(-1) < 0 {
					return
				}
				t0 := time.Now()
				from, err := op(t0)
				t1 := time.Now()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s %s, worker %d: %w", w.res.Scenario, w.res.Case(), i, err))
					mu.Unlock()
					return
				}
				_ = h.RecordValue(min(t1.Sub(from).Nanoseconds(), maxLatency))
				n++
				if ops == 0 && !t1.Before(deadline) {
					return
				}
			}
		})
	}
	close(release)
	wg.Wait()
	slice := SliceRate{Ops: total.Load(), Duration: time.Since(start)}
	w.wall += slice.Duration
	w.done += slice.Ops

	if w.count != nil {
		w.counts = addCounts(w.counts, w.count.Counts().Sub(countsBefore))
	}
	if w.diskOK {
		var after DiskStats
		after, w.diskOK = w.target.DiskStats()
		d := after.Sub(diskBefore)
		w.disk = DiskStats{w.disk.Reads + d.Reads, w.disk.Writes + d.Writes, w.disk.WriteSectors + d.WriteSectors, w.disk.Flushes + d.Flushes}
	}
	return slice, errors.Join(errs...)
}

func addCounts(a, b impl.Counts) impl.Counts {
	return impl.Counts{Writes: a.Writes + b.Writes, FUAWrites: a.FUAWrites + b.FUAWrites, Flushes: a.Flushes + b.Flushes, Reads: a.Reads + b.Reads}
}

// result returns the case's figures after its last slice.
func (w *workload) result() (Result, error) {
	r := w.res
	r.Tool = "hwbench"
	r.Ops = w.done
	r.Duration = w.wall
	r.Latency = NewLatencyHistogram()
	for _, h := range w.hists {
		r.Latency.Merge(h)
	}
	r.Writes, r.FUAWrites, r.Flushes = w.counts.Writes, w.counts.FUAWrites, w.counts.Flushes
	r.Extra = map[string]float64{}
	for k, v := range w.res.Extra {
		r.Extra[k] = v
	}
	if r.Ops > 0 {
		if w.count != nil {
			r.Extra[ExtraFUAWritesPerOp] = float64(r.FUAWrites) / float64(r.Ops)
		}
		if w.diskOK {
			r.Extra[ExtraDeviceFlushesPerOp] = float64(w.disk.Flushes) / float64(r.Ops)
		}
	}
	if w.finish != nil {
		if err := w.finish(&r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// alternate runs the cases for cfg.Duration each, in cfg.slices() turns,
// starting each turn with the next case (A B C, B C A, C A B, ...), and
// returns their results in the order given.
func alternate(ctx context.Context, cfg Config, label string, cases []*workload) ([]Result, error) {
	n := cfg.slices()
	per := cfg.Duration / time.Duration(n)
	started := time.Now()
	lastProgress := started
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		for j := range cases {
			if _, err := cases[(i+j)%len(cases)].runSlice(per); err != nil {
				return nil, err
			}
		}
		if now := time.Now(); now.Sub(lastProgress) >= time.Second || i == n-1 {
			cfg.progress("%s: slice %d/%d done (%v)", label, i+1, n, now.Sub(started).Round(time.Millisecond))
			lastProgress = now
		}
	}
	out := make([]Result, len(cases))
	for i, c := range cases {
		r, err := c.result()
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

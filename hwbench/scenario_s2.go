// S2 (the patch "xfs: skip the fsync flush when a later flush has
// completed"): N writers (default 16), each in a loop: a 4 KiB O_DIRECT
// write to its own block, then Syncer.Sync, under the policies
//
//	always                  a flush per Sync (fdatasync each): baseline
//	skip-if-flushed-since   skip when a flush submitted after the write
//	                        completed has completed (the patched xfs fsync)
//	join                    also wait for such a flush in flight
//	group-commit            join, or first wait for the flushes in flight
//	                        to end so that the next one serves many
//
// Each case counts the flushes that served its syncs: on a block device
// those the block layer sent the device (it merges concurrent flush
// requests, block/blk-flush.c, so the baseline's flush per sync reaches
// the device as far fewer), elsewhere those the Syncer issued. A sync is
// served only by a flush that started after its write completed, and a
// writer has one sync outstanding, so one flush serves at most one sync
// per writer: syncs/s is at most N times the flushes per second, the
// case's limit, and efficiency (syncs per flush over N) is at most 1.
//
// One writer doing write + flush back to back is measured in the same
// run as a reference: syncs/s over N times its rate says how the policy
// scales, and is not a bound (16 writers' writes overlap the flushes).
//
// The latency recorded is the Sync's, not the write's.
//
// A writer that syncs immediately after its write rarely finds a flush
// to share (docs/impl.md, "A finding"): every flush in flight then was
// numbered before its sample. In the patch's workload (xfs fsync), the log
// force between the data write and the flush check is where other
// fsyncs' flushes complete. Config.Think models that: the writer samples
// the flush sequence when its write completes (Syncer.Sample), pauses,
// then checks and flushes (Syncer.SyncSince), and the pause counts as
// part of the sync's latency. The tight loop always runs; the paused one
// runs when Think is set.

package hwbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/impl"
)

func (e *scenarioEnv) runS2(ctx context.Context) (outcome, error) {
	var out outcome
	n := e.cfg.Writers
	group := fmt.Sprintf("%d writers", n)
	rs, err := e.s2Group(ctx, group, 0, true)
	if err != nil {
		return out, err
	}
	out.add(rs...)
	limit, always := rs[0], rs[1]
	for _, opt := range rs[2:] {
		out.comparisons = append(out.comparisons, Comparison{
			Scenario: "S2", Name: fmt.Sprintf("%s, 4 KiB write + sync: %s vs %s", group, impl.Always, opt.Variant),
			Baseline: always, Optimised: opt,
		})
	}
	job := FIOJob{
		Name: fmt.Sprintf("S2-always-%d", n), Path: e.t.Path, RW: "write", BlockSize: e.io, Direct: e.t.File.Direct(),
		Sync: "fdatasync", NumJobs: n, Size: e.cfg.Span,
	}
	fresh := func() (*workload, error) { return e.s2Case(group, e.s2Baseline(), 0) }
	if err := e.fioReference(ctx, &out, always, fresh, job); err != nil {
		return out, err
	}

	think := e.cfg.Think
	if think == ThinkOneFlush {
		think = limit.Percentile(50)
	}
	if think > 0 {
		tg := fmt.Sprintf("%d writers, think %v", n, think.Round(time.Microsecond))
		trs, err := e.s2Group(ctx, tg, think, false)
		if err != nil {
			return out, err
		}
		out.add(trs...)
		for _, opt := range trs[1:] {
			out.comparisons = append(out.comparisons, Comparison{
				Scenario: "S2", Name: fmt.Sprintf("%s, 4 KiB write + think + sync: %s vs %s", tg, impl.Always, opt.Variant),
				Baseline: trs[0], Optimised: opt,
			})
		}
		out.notes = append(out.notes, fmt.Sprintf("S2 %q: each writer pauses %v (nanosleep; the pause actually taken, on average, is the \"pause taken\" row) between its write's completion (Syncer.Sample) and the flush check (Syncer.SyncSince), standing for the log force in the patched xfs fsync; the pause is counted in the sync latency and limits every policy alike.", tg, think.Round(time.Microsecond)))
	}
	out.notes = append(out.notes, s2LimitNotes(n, limit, out.results)...)
	return out, nil
}

// pause blocks the calling thread for at least d with nanosleep(2) and
// returns how long it did. time.Sleep would go through the runtime's
// timers, which on this kind of machine overshoot a 100 µs pause to about a
// millisecond; nanosleep overshoots by the thread's timer slack (50 µs by
// default, prctl(2) PR_SET_TIMERSLACK).
func pause(d time.Duration) time.Duration {
	start := time.Now()
	ts := unix.NsecToTimespec(int64(d))
	for {
		var left unix.Timespec
		err := unix.Nanosleep(&ts, &left)
		if err != unix.EINTR {
			break
		}
		ts = left
	}
	return time.Since(start)
}

// s2Spec is one S2 case: a policy, its writers and its role.
type s2Spec struct {
	policy  impl.Policy
	writers int
	role    string
	name    string
}

// s2Baseline is the S2 baseline with the configured writers: a flush per
// sync.
func (e *scenarioEnv) s2Baseline() s2Spec {
	return s2Spec{impl.Always, e.cfg.Writers, "baseline", impl.Always.String()}
}

// s2Case is the case s of group as a fresh workload: its own Syncer over
// its own counting view of the device.
func (e *scenarioEnv) s2Case(group string, s s2Spec, think time.Duration) (*workload, error) {
	cnt := e.counting()
	syncer, err := impl.NewSyncer(impl.Handles{
		Dev:   cnt,
		Queue: &impl.WaitQueue{},
		Seq:   impl.FlushSeq{Submitted: &impl.Word{}, Completed: &impl.Word{}, MB: impl.Fence{}},
	}, s.policy)
	if err != nil {
		return nil, err
	}
	var paused atomic.Int64 // ns the writers paused for, in all
	return &workload{
		res:      Result{Scenario: "S2", Group: group, Variant: s.name, Role: s.role, Threads: s.writers},
		count:    cnt,
		target:   e.t,
		blocking: true,
		newOp: func(w int) opFunc {
			buf := e.buffer(w)
			off := int64(w) * int64(e.io)
			return func(time.Time) (time.Time, error) {
				if err := cnt.WriteAt(buf, off, 0); err != nil {
					return time.Time{}, err
				}
				from := time.Now()
				if think <= 0 {
					return from, syncer.Sync()
				}
				sample := syncer.Sample()
				paused.Add(int64(pause(think)))
				return from, syncer.SyncSince(sample)
			}
		},
		finish: func(r *Result) error {
			st := syncer.Stats()
			switch {
			case st.Syncs != r.Ops:
				return fmt.Errorf("S2 %s: %d syncs counted by the Syncer, %d operations timed", r.Case(), st.Syncs, r.Ops)
			case st.Flushes != r.Flushes:
				return fmt.Errorf("S2 %s: the Syncer issued %d flushes, the device saw %d", r.Case(), st.Flushes, r.Flushes)
			case st.Failed > 0:
				return fmt.Errorf("S2 %s: %d flushes failed", r.Case(), st.Failed)
			}
			if st.Syncs > 0 {
				s2FlushFigures(r, s.writers)
				r.Extra[ExtraSkippedPerSync] = float64(st.Skipped) / float64(st.Syncs)
				r.Extra[ExtraJoinedPerSync] = float64(st.Joined) / float64(st.Syncs)
				if think > 0 {
					r.Extra[ExtraThinkMicros] = float64(paused.Load()) / float64(st.Syncs) / float64(time.Microsecond)
				}
			}
			return nil
		},
	}, nil
}

// s2FlushFigures sets a case's flushes per sync, its limit and its
// efficiency (see the file comment) from the flushes that reached the
// device, or those issued where the device's are not counted. An
// efficiency over 1 is not stored: s2LimitNotes says why.
func s2FlushFigures(r *Result, writers int) {
	perSync, ok := r.Extra[ExtraDeviceFlushesPerOp]
	if !ok {
		perSync = r.FlushesPerOp()
	}
	r.Extra[ExtraFlushesPerSync] = perSync
	if perSync <= 0 || r.Duration <= 0 {
		return
	}
	limit := float64(writers) * perSync * r.IOPS()
	r.Extra[ExtraLimit] = limit
	if eff := r.IOPS() / limit; eff <= 1+1e-9 {
		r.Extra[ExtraEfficiency] = eff
	}
}

// s2LimitNotes says where S2's limits come from, names the cases whose
// counts gave an efficiency over 1, and gives the single writer's rate
// that the scaling figures divide by.
func s2LimitNotes(n int, one Result, rs []Result) []string {
	var notes []string
	notes = append(notes, fmt.Sprintf("S2: limit is %d x the flushes per second that served the case's syncs (the device's count, /sys/class/block/NAME/stat, where there is one; otherwise the flushes issued): a flush serves at most one sync of each writer, so efficiency (syncs/s over the limit) is at most 1. \"vs %d x 1 writer\" divides syncs/s by %d x the rate of one writer doing write + flush (%.0f/s x %d = %.0f syncs/s), a scaling figure that can exceed 1 since writes overlap flushes.",
		n, n, n, one.IOPS(), n, one.IOPS()*float64(n)))
	for _, r := range rs {
		if r.Scenario != "S2" || r.Tool != "hwbench" || r.Role == "reference" {
			continue
		}
		if _, ok := r.Extra[ExtraEfficiency]; !ok && r.Extra[ExtraFlushesPerSync] > 0 {
			notes = append(notes, fmt.Sprintf("S2 %s: %.2f syncs per counted flush is more than the %d writers allow: the count missed flushes, so no efficiency is given.",
				r.Case(), 1/r.Extra[ExtraFlushesPerSync], r.Threads))
		}
	}
	return notes
}

// s2Specs is S2's cases: with withOne, the single writer doing write +
// flush first; then the policies with the configured writers.
func (e *scenarioEnv) s2Specs(withOne bool) []s2Spec {
	var specs []s2Spec
	if withOne {
		specs = append(specs, s2Spec{impl.Always, 1, "reference", s2OneWriter})
	}
	return append(specs,
		e.s2Baseline(),
		s2Spec{impl.SkipIfFlushedSince, e.cfg.Writers, "optimised", impl.SkipIfFlushedSince.String()},
		s2Spec{impl.Join, e.cfg.Writers, "optimised", impl.Join.String()},
		s2Spec{impl.GroupCommit, e.cfg.Writers, "optimised", impl.GroupCommit.String()},
	)
}

// s2OneWriter is the variant name of S2's single-writer reference.
const s2OneWriter = "1 writer (write + flush)"

// s2Group measures the policies (and, with withOne, the single writer
// first) alternated, and returns them in the order one writer, always,
// skip-if-flushed-since, join, group-commit.
func (e *scenarioEnv) s2Group(ctx context.Context, group string, think time.Duration, withOne bool) ([]Result, error) {
	var cases []*workload
	for _, s := range e.s2Specs(withOne) {
		w, err := e.s2Case(group, s, think)
		if err != nil {
			return nil, err
		}
		cases = append(cases, w)
	}
	rs, err := alternate(ctx, e.cfg, "S2 "+group, cases)
	if err != nil {
		return nil, err
	}
	// The single writer's rate: this group's, or the tight group's (run
	// before) when this one has none.
	if withOne {
		e.s2One = rs[0].IOPS() * float64(e.cfg.Writers)
	}
	first := 0
	if withOne {
		first = 1
	}
	for i := first; i < len(rs); i++ {
		if e.s2One > 0 {
			rs[i].Extra[ExtraVsOneWriter] = rs[i].IOPS() / e.s2One
		}
	}
	return rs, nil
}

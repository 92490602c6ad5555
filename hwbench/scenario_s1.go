// S1 (the patch "block: skip redundant flush for O_DSYNC direct writes"):
// one thread, 4 KiB O_DIRECT writes, sequential and random, three ways:
//
//	plain                 pwrite(2): not durable, the ceiling
//	O_DSYNC (RWF_DSYNC)   pwritev2(2) with RWF_DSYNC (impl.DSyncWriter FUA):
//	                      what an O_DSYNC write costs on this kernel
//	write + fdatasync     pwrite(2), then fdatasync(2) (impl.DSyncWriter
//	                      WriteFlush): one flush per write
//
// The comparison is O_DSYNC (baseline) against write + fdatasync
// (optimised). On a block device with a volatile cache and emulated FUA
// (a loop device: queue/fua is 0) an unpatched kernel turns an O_DSYNC
// write into a write, the FUA post-flush and generic_write_sync's flush;
// the patch removes the last one, leaving a write and one flush, which is
// what write + fdatasync costs. So write + fdatasync is what the patched
// kernel would do there, and the model (odsync.CallCost) says how
// many flushes each costs on each device configuration: the notes print
// its prediction next to the device's own flush count.

package hwbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/spec"
)

// The S1 variants.
const (
	s1Plain     = "plain (not durable)"
	s1DSync     = "O_DSYNC (RWF_DSYNC)"
	s1WriteSync = "write + fdatasync"
)

// s1Variant is one of S1's three ways to write.
type s1Variant struct {
	name, role string
	sync       string // the fio job's FIOJob.Sync
	write      func(dev spec.Device) func(p []byte, off int64) error
}

var s1Variants = []s1Variant{
	{s1Plain, "ceiling", "", func(dev spec.Device) func([]byte, int64) error {
		return func(p []byte, off int64) error { return dev.WriteAt(p, off, 0) }
	}},
	{s1DSync, "baseline", "dsync", func(dev spec.Device) func([]byte, int64) error {
		return impl.DSyncWriter{Dev: dev, Mode: impl.FUA}.WriteAt
	}},
	{s1WriteSync, "optimised", "fdatasync", func(dev spec.Device) func([]byte, int64) error {
		return impl.DSyncWriter{Dev: dev, Mode: impl.WriteFlush}.WriteAt
	}},
}

// s1Case is variant vi of S1 for pattern (pi: its index, "seq" or
// "random"), as a fresh workload.
func (e *scenarioEnv) s1Case(pi int, pattern string, vi int) *workload {
	v := s1Variants[vi]
	group := pattern + " 4 KiB"
	cnt := e.counting()
	write := v.write(cnt)
	blocks := e.cfg.Span / int64(e.io)
	seed := e.cfg.Seed + uint64(pi*10+vi)
	return &workload{
		res:      Result{Scenario: "S1", Group: group, Variant: v.name, Role: v.role, Threads: 1},
		count:    cnt,
		target:   e.t,
		blocking: true,
		newOp: func(int) opFunc {
			buf := e.buffer(vi)
			next := int64(0)
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			return func(start time.Time) (time.Time, error) {
				var blk int64
				if pattern == "seq" {
					blk = next
					next = (next + 1) % blocks
				} else {
					blk = rng.Int64N(blocks)
				}
				return start, write(buf, blk*int64(e.io))
			}
		},
	}
}

func (e *scenarioEnv) runS1(ctx context.Context) (outcome, error) {
	var out outcome
	for pi, pattern := range []string{"seq", "random"} {
		group := pattern + " 4 KiB"
		var cases []*workload
		for vi := range s1Variants {
			cases = append(cases, e.s1Case(pi, pattern, vi))
		}
		rs, err := alternate(ctx, e.cfg, "S1 "+group, cases)
		if err != nil {
			return out, err
		}
		out.add(rs...)
		plain, dsync, wsync := rs[0], rs[1], rs[2]
		out.comparisons = append(out.comparisons, Comparison{
			Scenario: "S1", Name: fmt.Sprintf("%s, 1 thread: %s vs %s", group, s1DSync, s1WriteSync),
			Baseline: dsync, Optimised: wsync,
		})
		out.notes = append(out.notes, e.s1ModelNote(group, plain, dsync, wsync))

		rw := map[string]string{"seq": "write", "random": "randwrite"}[pattern]
		for vi, v := range s1Variants {
			job := FIOJob{
				Name: "S1-" + pattern + "-" + map[string]string{"": "plain", "dsync": "dsync", "fdatasync": "fdatasync"}[v.sync],
				Path: e.t.Path, RW: rw, BlockSize: e.io, Direct: e.t.File.Direct(), Sync: v.sync,
				NumJobs: 1, Size: e.cfg.Span, Offset: 0,
			}
			fresh := func() (*workload, error) { return e.s1Case(pi, pattern, vi), nil }
			if err := e.fioReference(ctx, &out, rs[vi], fresh, job); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// s1ModelNote puts the model's cost of one O_DSYNC write() (baseline and
// patched kernel, pure direct path) next to what the device counted, and
// prices the model's commands with this run's own latencies: a write
// costs what a plain write took, a flush what write + fdatasync took
// beyond it.
func (e *scenarioEnv) s1ModelNote(group string, plain, dsync, wsync Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "S1 %s, the model's prediction (odsync.CallCost, pure direct path) side by side: ", group)
	cfg, known := e.t.Queue.Config()
	if !e.t.IsBlockDevice() {
		fmt.Fprintf(&b, "the model describes a raw block device, and %s is a file, whose file system decides what O_DSYNC costs; for reference, ", e.t.Path)
	}
	configs := spec.Configs()
	if e.t.IsBlockDevice() && known {
		configs = []spec.Config{cfg}
	}
	writeLat := plain.Mean()
	flushLat := wsync.Mean() - plain.Mean()
	lat := odsync.Latency{Name: "this run", CachedWrite: writeLat, FUAWrite: writeLat, MediaWrite: writeLat, Flush: max(flushLat, 0)}
	for i, c := range configs {
		base, err1 := odsync.CallCost(odsync.Baseline, c, odsync.PureDirect)
		patched, err2 := odsync.CallCost(odsync.Patched, c, odsync.PureDirect)
		if err1 != nil || err2 != nil {
			fmt.Fprintf(&b, "model error: %v %v", err1, err2)
			return b.String()
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: O_DSYNC write() = %d write(s) + %d flush(es) unpatched, %d + %d patched",
			c, base.PlainWrites()+base.FUAWrites, base.Flushes, patched.PlainWrites()+patched.FUAWrites, patched.Flushes)
		if e.t.IsBlockDevice() && known && flushLat > 0 {
			fmt.Fprintf(&b, "; priced with this run's latencies (write %v = plain mean, flush %v = write+fdatasync mean - plain mean): unpatched %.0f IOPS predicted, %.0f measured (%s); patched %.0f IOPS predicted, write + fdatasync measured %.0f",
				writeLat.Round(time.Microsecond), flushLat.Round(time.Microsecond), base.IOPS(lat), dsync.IOPS(), s1DSync, patched.IOPS(lat), wsync.IOPS())
		}
	}
	if f, ok := dsync.Extra[ExtraDeviceFlushesPerOp]; ok {
		fmt.Fprintf(&b, ". Device flushes per write measured (/sys/class/block/%s/stat): %s %.2f, %s %.2f, %s %.2f",
			e.t.Queue.Name, s1DSync, f, s1WriteSync, wsync.Extra[ExtraDeviceFlushesPerOp], s1Plain, plain.Extra[ExtraDeviceFlushesPerOp])
	}
	if e.t.IsBlockDevice() && known && cfg.NativeFUA {
		fmt.Fprintf(&b, ". With native FUA the patched kernel's O_DSYNC write is one FUA write and no flush, which user space cannot issue on its own: write + fdatasync is then not the patched kernel")
	}
	b.WriteString(".")
	return b.String()
}

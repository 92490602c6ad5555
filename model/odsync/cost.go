package odsync

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// The cost of one O_DIRECT|O_DSYNC write() to a block device, per variant
// and device configuration, derived from the same model that is checked:
// CallCost runs System for a single write() along one path
// (every device command succeeds, the direct part is chosen), records the
// device commands the path submits, and prices them. Nothing is typed in
// per variant: a variant that issued another command would cost more here
// and be checked against the same commands.
//
// How the block layer turns the commands into work for the device:
//   - a REQ_FUA write, native FUA: one write the device makes durable before
//     completing it;
//   - a REQ_FUA write, emulated FUA (blk-flush.c, blk_flush_policy: FUA
//     requested, QUEUE_FLAG_FUA absent): a plain write, then a post-flush,
//     one after the other (REQ_FSEQ_DATA, REQ_FSEQ_POSTFLUSH);
//   - no volatile cache: REQ_FUA and REQ_PREFLUSH are stripped; an empty
//     PREFLUSH bio (blkdev_issue_flush) is ended at once by
//     submit_bio_noacct and never reaches the device (block/blk-core.c).
//
// A single task waits for every command before the next one (the direct
// bio, the page write-back, the flush), so the latency of a write() is the
// sum of its commands' latencies and IOPS is its inverse (queue depth 1, as
// in the patch's pwrite() loop).

// Path is the way one write() goes through blkdev_write_iter.
type Path uint8

// The paths.
const (
	// PureDirect: the whole write went direct (one 4 KiB block),
	// the patch's benchmark.
	PureDirect Path = iota + 1
	// FallbackAll: blkdev_direct_write returned 0 (the page cache
	// could not be invalidated, -EBUSY); the block went through the page
	// cache.
	FallbackAll
	// ShortDirect: a two-block write whose direct part was short by
	// one block; the second block went through the page cache.
	ShortDirect
)

func (p Path) String() string {
	switch p {
	case PureDirect:
		return "direct"
	case FallbackAll:
		return "fallback"
	case ShortDirect:
		return "short"
	}
	return fmt.Sprintf("ODSyncPath(%d)", uint8(p))
}

// Paths lists the paths.
func Paths() []Path {
	return []Path{PureDirect, FallbackAll, ShortDirect}
}

// shape returns the blocks of the write() and how many go direct.
func (p Path) shape() (blocks, direct int) {
	switch p {
	case FallbackAll:
		return 1, 0
	case ShortDirect:
		return 2, 1
	}
	return 1, 1
}

// Cost is what one write() costs the device.
//
// A flush is empty (EmptyFlushes) when every write it covers (those
// completed when it was submitted, spec.Contract.FlushCover) is durable
// already, made so by its own FUA completion or by an earlier flush: the
// cache holds no write since the previous flush, or since the start. A
// post-flush never is, as it follows its own write's data into the cache.
type Cost struct {
	Variant Variant
	Device  spec.Config
	Path    Path
	// Commands is the device history of the call, as the model submitted
	// it (writes, flushes, emulated-FUA post-flushes), completions left out.
	Commands []spec.Event

	FUAWrites       int // writes the device itself makes durable (native FUA)
	CachedWrites    int // writes into the volatile cache (plain, or the data of an emulated FUA write)
	MediaWrites     int // writes to a device without a volatile cache
	Flushes         int // cache flushes the device executes, post-flushes included
	PostFlushes     int // of which emulated-FUA post-flushes
	EmptyFlushes    int // of Flushes, those that find nothing cached to make durable (above)
	StrippedFlushes int // empty PREFLUSH bios ended by the block layer (no volatile cache)
	RoundTrips      int // device commands, each waited for before the next
	_               struct{}
}

// PlainWrites is the number of writes without (honoured) FUA.
func (c Cost) PlainWrites() int { return c.CachedWrites + c.MediaWrites }

// DirtyFlushes is the number of flushes that find a cached write to make
// durable: Flushes - EmptyFlushes.
func (c Cost) DirtyFlushes() int { return c.Flushes - c.EmptyFlushes }

// Latency prices the device commands of one write().
type Latency struct {
	Name        string        // where the figures come from
	CachedWrite time.Duration // a 4 KiB write into the volatile write cache
	FUAWrite    time.Duration // a 4 KiB write with native FUA
	MediaWrite  time.Duration // a 4 KiB write to a device without a volatile cache
	Flush       time.Duration // a cache flush (empty PREFLUSH or post-flush) that finds a write cached
	// EmptyFlush is a flush that finds nothing cached since the previous
	// flush (Cost.EmptyFlushes). Many devices complete it sooner: a loop
	// device's flush is an fsync of its backing file, which has nothing
	// to write back then. Zero prices it as Flush.
	EmptyFlush time.Duration
	_          struct{}
}

// emptyFlush is the price of an empty flush: EmptyFlush, or Flush if unset.
func (l Latency) emptyFlush() time.Duration {
	if l.EmptyFlush == 0 {
		return l.Flush
	}
	return l.EmptyFlush
}

// DefaultLatency is a 7200 rpm HDD with its write cache on and native FUA,
// calibrated on the measurements of the patch "block: skip redundant flush
// for O_DSYNC direct writes" (Seagate ST20000NM007D, sequential 4 KiB
// O_DIRECT|O_DSYNC pwrite() at queue depth 1): the patched kernel's mean
// latency, 133 us, is one FUA write; the baseline's, 8357 us, is a FUA write
// plus a flush, so a flush costs 8357 - 133 = 8224 us. A write into the
// cache is taken as 130 us. The patch measured no drive without a write
// cache; MediaWrite assumes it costs what a FUA write costs.
var DefaultLatency = Latency{
	Name:        "7200 rpm HDD as the patch measured it, sequential 4 KiB writes",
	CachedWrite: 130 * time.Microsecond,
	FUAWrite:    133 * time.Microsecond,
	MediaWrite:  133 * time.Microsecond,
	Flush:       8224 * time.Microsecond,
}

// PatchRandomLatency is the same drive calibrated on the patch's random
// 4 KiB writes over 100 GiB: a FUA write is the patched mean, 1500 us (it
// now includes a seek), a flush the baseline's mean minus that, 4905 us.
var PatchRandomLatency = Latency{
	Name:        "7200 rpm HDD as the patch measured it, random 4 KiB writes over 100 GiB",
	CachedWrite: 130 * time.Microsecond,
	FUAWrite:    1500 * time.Microsecond,
	MediaWrite:  1500 * time.Microsecond,
	Flush:       4905 * time.Microsecond,
}

// Latency is the time one write() takes: its commands one after the other,
// an empty flush priced as Latency.EmptyFlush (Flush if that is zero).
func (c Cost) Latency(l Latency) time.Duration {
	return time.Duration(c.FUAWrites)*l.FUAWrite + time.Duration(c.CachedWrites)*l.CachedWrite +
		time.Duration(c.MediaWrites)*l.MediaWrite + time.Duration(c.DirtyFlushes())*l.Flush +
		time.Duration(c.EmptyFlushes)*l.emptyFlush()
}

// IOPS is the rate of a single task issuing such write()s back to back,
// +Inf for a write() that sends the device nothing.
func (c Cost) IOPS(l Latency) float64 {
	d := c.Latency(l)
	if d <= 0 {
		return math.Inf(1)
	}
	return float64(time.Second) / float64(d)
}

// CallCost runs one write() of the variant along the path on the
// device and counts the commands it issues.
func CallCost(v Variant, dev spec.Config, p Path) (Cost, error) {
	blocks, direct := p.shape()
	sys, err := NewSystem(Config{Variant: v, Device: dev, Tasks: 1, Writes: 1, Blocks: blocks})
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Variant: v, Device: dev, Path: p}
	st := sys.Init()[0]
	returned := false
	for step := 0; !returned; step++ {
		if step > 100 {
			return c, fmt.Errorf("odsync cost %v %v %v: the write() did not return", v, dev, p)
		}
		var (
			next  State
			label explore.Label
			found bool
		)
		sys.Next(st, func(l explore.Label, n State) {
			if found || !costStep(l, direct) {
				return
			}
			next, label, found = n, l, true
		})
		if !found {
			return c, fmt.Errorf("odsync cost %v %v %v: stuck after %d steps", v, dev, p, step)
		}
		st = next
		if label.Kind == odkReturn {
			returned = true
			if got := int(uint8(label.Arg)); got != blocks {
				return c, fmt.Errorf("odsync cost %v %v %v: write() returned %d blocks, want %d", v, dev, p, got, blocks)
			}
			continue
		}
		if e, ok := sys.DeviceEvent(label); ok {
			c.count(e, &st.dev)
		}
	}
	if st.live != 0 || st.flive != 0 {
		return c, fmt.Errorf("odsync cost %v %v %v: write() returned with commands in flight", v, dev, p)
	}
	return c, nil
}

// odsyncCostStep picks the steps of a run without failures: the task's
// step (the chosen direct part), else a device completion. Tasks come
// first in Next, so the task always moves when it can.
func costStep(l explore.Label, direct int) bool {
	switch l.Kind {
	case odkDirect:
		return int(l.Arg) == direct
	case odkBackground:
		return false
	case odkDevice:
		switch spec.Kind(l.Arg) {
		case spec.WriteComplete, spec.WriteDataDone, spec.FlushComplete:
			return true
		}
		return false
	}
	return true
}

// count adds the device event e to the cost; dev is the device's contract
// with e applied.
func (c *Cost) count(e spec.Event, dev *spec.Contract) {
	switch e.Kind {
	case spec.WriteSubmit:
		c.Commands = append(c.Commands, e)
		c.RoundTrips++
		switch {
		case !c.Device.VolatileCache:
			c.MediaWrites++
		case e.FUA && c.Device.NativeFUA:
			c.FUAWrites++
		default:
			c.CachedWrites++
		}
	case spec.WriteDataDone:
		c.Commands = append(c.Commands, e)
		c.Flushes++
		c.PostFlushes++
		c.RoundTrips++
		// The post-flush covers the write whose data just completed into
		// the cache (rule 3 of spec.Contract): it finds that write there
		// unless something already made it durable.
		if dev.Durable(e.ID) {
			c.EmptyFlushes++
		}
	case spec.FlushSubmit:
		c.Commands = append(c.Commands, e)
		if c.Device.VolatileCache {
			c.Flushes++
			c.RoundTrips++
			if flushFindsNothing(dev, e.ID) {
				c.EmptyFlushes++
			}
		} else {
			c.StrippedFlushes++
		}
	}
}

// flushFindsNothing reports whether flush f, just submitted, covers no
// write that is not durable yet: the writes completed when it was
// submitted (spec.Contract.FlushCover) are all durable already.
func flushFindsNothing(dev *spec.Contract, f int) bool {
	for m := dev.FlushCover(f); m != 0; m &= m - 1 {
		if !dev.Durable(bits.TrailingZeros32(m) + 1) {
			return false
		}
	}
	return true
}

// SequenceCost is the cost of the device commands cmds issued one after
// the other, each waited for before the next, as a program in user space
// issues them: a WriteSubmit is a write (with FUA: RWF_DSYNC on a raw block
// device, which the block layer runs as on dev), a FlushSubmit is a flush
// (fdatasync(2) on a raw block device, blkdev_issue_flush). Only the kind,
// the blocks (one if none) and FUA of each command are read; commands are
// numbered here. The cost is counted as CallCost counts it; its Variant
// and Path are zero.
func SequenceCost(dev spec.Config, cmds []spec.Event) (Cost, error) {
	c := Cost{Device: dev}
	con := spec.NewContract(dev)
	apply := func(e spec.Event) error {
		if err := con.Apply(e); err != nil {
			return fmt.Errorf("odsync sequence cost on %v: %w", dev, err)
		}
		c.count(e, &con)
		return nil
	}
	writes, flushes := 0, 0
	for _, cmd := range cmds {
		switch cmd.Kind {
		case spec.WriteSubmit:
			writes++
			blocks := cmd.Blocks
			if blocks == 0 {
				blocks = 1
			}
			e := spec.Event{Kind: spec.WriteSubmit, ID: writes, Blocks: blocks, FUA: cmd.FUA}
			if err := apply(e); err != nil {
				return c, err
			}
			if cmd.FUA && dev.EmulatesFUA() {
				if err := apply(spec.Event{Kind: spec.WriteDataDone, ID: writes}); err != nil {
					return c, err
				}
			}
			if err := apply(spec.Event{Kind: spec.WriteComplete, ID: writes}); err != nil {
				return c, err
			}
		case spec.FlushSubmit:
			flushes++
			if err := apply(spec.Event{Kind: spec.FlushSubmit, ID: flushes}); err != nil {
				return c, err
			}
			if err := apply(spec.Event{Kind: spec.FlushComplete, ID: flushes}); err != nil {
				return c, err
			}
		default:
			return c, fmt.Errorf("odsync sequence cost: %v is not a write or a flush submitted", cmd)
		}
	}
	return c, nil
}

// Costs returns the cost of every variant on every device
// configuration along every path.
func Costs() ([]Cost, error) {
	var out []Cost
	for _, v := range Variants() {
		for _, dev := range spec.Configs() {
			for _, p := range Paths() {
				c, err := CallCost(v, dev, p)
				if err != nil {
					return out, err
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// WriteCostTable prints the cost of one write() for every variant,
// device configuration and path, priced with lat, and then the pure direct
// path of the baseline against the patched kernel.
func WriteCostTable(w io.Writer, lat Latency) error {
	costs, err := Costs()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tCONFIG\tPATH\tFUA-WRITES\tPLAIN-WRITES\tFLUSHES\t(POST)\tSTRIPPED\tROUND-TRIPS\tLATENCY\tIOPS")
	for _, c := range costs {
		iops := "no device I/O"
		if c.RoundTrips > 0 {
			iops = fmt.Sprintf("%.1f", c.IOPS(lat))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%s\n", c.Variant, c.Device, c.Path,
			c.FUAWrites, c.PlainWrites(), c.Flushes, c.PostFlushes, c.StrippedFlushes, c.RoundTrips,
			c.Latency(lat).Round(time.Microsecond), iops)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the odsync cost table: %w", err)
	}
	fmt.Fprintf(w, "\nlatencies (%s): cached write %v, FUA write %v, write without cache %v, flush %v",
		lat.Name, lat.CachedWrite, lat.FUAWrite, lat.MediaWrite, lat.Flush)
	if lat.EmptyFlush != 0 {
		fmt.Fprintf(w, ", empty flush %v", lat.EmptyFlush)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "pure direct path, one task, queue depth 1:")
	for _, dev := range spec.Configs() {
		base, err := CallCost(Baseline, dev, PureDirect)
		if err != nil {
			return err
		}
		patched, err := CallCost(Patched, dev, PureDirect)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-18s baseline %d flush(es) %8.1f IOPS, patched %d flush(es) %8.1f IOPS: x%.2f\n", dev,
			base.Flushes, base.IOPS(lat), patched.Flushes, patched.IOPS(lat), patched.IOPS(lat)/base.IOPS(lat))
	}
	_, err = fmt.Fprintln(w, "  the patch's measurements (cache+fua): sequential 119.7 -> 7497.0 IOPS, random 156.1 -> 666.4 IOPS")
	return err
}

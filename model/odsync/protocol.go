package odsync

import (
	"flag"
	"math"
	"time"

	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/model/verdict"
)

// Protocol is the catalog entry: the verdict table's rows and the cost
// table (device commands per write()).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "odsync",
		Summary: "O_DSYNC direct writes to a block device: FUA bios instead of a sync after the write",
		Doc:     "docs/odsync.md",
		Rows:    Rows,
		Cost: &verdict.Cost{
			Title: "O_DSYNC direct writes to a block device: device commands per write()",
			Flags: costFlags,
		},
	}
}

// costTable is the cost table with its flags: the drive's latencies.
type costTable struct {
	name   func(string) string
	lat    Latency
	random *bool
	set    func() map[string]bool
}

func costFlags(fs *flag.FlagSet, name func(string) string) verdict.CostTable {
	t := &costTable{name: name, lat: DefaultLatency}
	fs.DurationVar(&t.lat.CachedWrite, name("write"), t.lat.CachedWrite, "O_DSYNC: latency of a 4 KiB write into the volatile cache, in (0, 1h]")
	fs.DurationVar(&t.lat.FUAWrite, name("fua-write"), t.lat.FUAWrite, "O_DSYNC: latency of a 4 KiB FUA write, in (0, 1h]")
	fs.DurationVar(&t.lat.MediaWrite, name("media-write"), t.lat.MediaWrite, "O_DSYNC: latency of a 4 KiB write to a device without a volatile cache, in (0, 1h]")
	fs.DurationVar(&t.lat.Flush, name("flush"), t.lat.Flush, "O_DSYNC: latency of a cache flush, in (0, 1h]")
	t.random = fs.Bool(name("random"), false, "O_DSYNC: the drive calibrated on the patch's random writes instead of its sequential ones")
	t.set = func() map[string]bool {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return set
	}
	return t
}

func (t *costTable) Validate() error {
	n := t.name
	return flagcheck.First(
		flagcheck.DurationIn(n("write"), t.lat.CachedWrite, 0, time.Hour, false),
		flagcheck.DurationIn(n("fua-write"), t.lat.FUAWrite, 0, time.Hour, false),
		flagcheck.DurationIn(n("media-write"), t.lat.MediaWrite, 0, time.Hour, false),
		flagcheck.DurationIn(n("flush"), t.lat.Flush, 0, time.Hour, false))
}

// latency is the drive in effect: the calibration asked for, with any
// latency the user set on top of it.
func (t *costTable) latency() Latency {
	set := t.set()
	lat := t.lat
	if *t.random {
		r := PatchRandomLatency
		if set[t.name("write")] {
			r.CachedWrite = lat.CachedWrite
		}
		if set[t.name("fua-write")] {
			r.FUAWrite = lat.FUAWrite
		}
		if set[t.name("media-write")] {
			r.MediaWrite = lat.MediaWrite
		}
		if set[t.name("flush")] {
			r.Flush = lat.Flush
		}
		return r
	}
	if set[t.name("write")] || set[t.name("fua-write")] || set[t.name("media-write")] || set[t.name("flush")] {
		lat.Name = "user-set latencies"
	}
	return lat
}

func (t *costTable) Write(out verdict.CostOutput, _ func() string) (int, error) {
	lat := t.latency()
	if out.Text != nil {
		return 0, WriteCostTable(out.Text, lat)
	}
	costs, err := Costs()
	if err != nil {
		return 0, err
	}
	for _, c := range costs {
		r := costRecord{Kind: "cost.odsync", Variant: c.Variant.String(), Config: c.Device.String(), Path: c.Path.String(),
			FUAWrites: c.FUAWrites, PlainWrites: c.PlainWrites(), Flushes: c.Flushes, PostFlushes: c.PostFlushes,
			StrippedFlushes: c.StrippedFlushes, RoundTrips: c.RoundTrips, LatencyNS: int64(c.Latency(lat))}
		if iops := c.IOPS(lat); !math.IsInf(iops, 0) && c.RoundTrips > 0 {
			r.IOPS = &iops
		}
		out.Record(r)
	}
	return 0, nil
}

func (t *costTable) Settings() map[string]any {
	lat := t.latency()
	return map[string]any{"odsync_latency": lat.Name, "odsync_write_ns": int64(lat.CachedWrite), "odsync_fua_write_ns": int64(lat.FUAWrite),
		"odsync_media_write_ns": int64(lat.MediaWrite), "odsync_flush_ns": int64(lat.Flush)}
}

// costRecord is a row of the cost table as JSON (kind "cost.odsync").
type costRecord struct {
	Kind            string   `json:"kind"`
	Variant         string   `json:"variant"`
	Config          string   `json:"config"`
	Path            string   `json:"path"`
	FUAWrites       int      `json:"fua_writes"`
	PlainWrites     int      `json:"plain_writes"`
	Flushes         int      `json:"flushes"`
	PostFlushes     int      `json:"post_flushes"`
	StrippedFlushes int      `json:"stripped_flushes"`
	RoundTrips      int      `json:"round_trips"`
	LatencyNS       int64    `json:"latency_ns"`
	IOPS            *float64 `json:"iops"` // null: no device I/O
}

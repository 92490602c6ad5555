package odsync

import (
	"fmt"
	"math"
	"time"

	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/spec"
)

// Protocol is the catalog entry: the verdict table's rows and the cost
// table (device commands per write()).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "odsync",
		Summary: "O_DSYNC direct writes to a block device: FUA bios instead of a sync after the write",
		Doc:     "docs/odsync.md",
		Rows:    Rows,
		Bound: &verdict.Bound{Task: "task", Op: "write", Tasks: verdict.Range{Min: 1, Max: maxODTasks},
			Ops: verdict.Range{Min: 1, Max: spec.MaxFlushes}, Fixed: "each write() of 2 blocks", Rows: BoundRows,
			Limit: fmt.Sprintf("tasks x writes at most %d", spec.MaxFlushes)},
		Cost: &verdict.Cost{
			Title: "O_DSYNC direct writes to a block device: device commands per write()",
			Params: []verdict.Param{
				{Name: "write", Default: DefaultLatency.CachedWrite, Usage: "O_DSYNC: latency of a 4 KiB write into the volatile cache, in (0, 1h]"},
				{Name: "fua-write", Default: DefaultLatency.FUAWrite, Usage: "O_DSYNC: latency of a 4 KiB FUA write, in (0, 1h]"},
				{Name: "media-write", Default: DefaultLatency.MediaWrite, Usage: "O_DSYNC: latency of a 4 KiB write to a device without a volatile cache, in (0, 1h]"},
				{Name: "flush", Default: DefaultLatency.Flush, Usage: "O_DSYNC: latency of a cache flush, in (0, 1h]"},
				{Name: "random", Default: false, Usage: "O_DSYNC: the drive calibrated on the patch's random writes instead of its sequential ones"},
			},
			Table: func(p verdict.Params) verdict.CostTable { return &costTable{p: p} },
		},
	}
}

// costTable is the cost table with its settings: the drive's latencies.
type costTable struct{ p verdict.Params }

func (t *costTable) Validate() error {
	p := t.p
	in := func(name string) error {
		return flagcheck.DurationIn(p.Flag(name), p.Duration(name), 0, time.Hour, false)
	}
	return flagcheck.First(in("write"), in("fua-write"), in("media-write"), in("flush"))
}

// latency is the drive in effect: the calibration asked for, with any
// latency the user set on top of it.
func (t *costTable) latency() Latency {
	p := t.p
	lat := DefaultLatency
	lat.CachedWrite, lat.FUAWrite = p.Duration("write"), p.Duration("fua-write")
	lat.MediaWrite, lat.Flush = p.Duration("media-write"), p.Duration("flush")
	if p.Bool("random") {
		r := PatchRandomLatency
		if p.Set("write") {
			r.CachedWrite = lat.CachedWrite
		}
		if p.Set("fua-write") {
			r.FUAWrite = lat.FUAWrite
		}
		if p.Set("media-write") {
			r.MediaWrite = lat.MediaWrite
		}
		if p.Set("flush") {
			r.Flush = lat.Flush
		}
		return r
	}
	if p.Set("write") || p.Set("fua-write") || p.Set("media-write") || p.Set("flush") {
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
			FUAWrites: c.FUAWrites, PlainWrites: c.PlainWrites(), Flushes: c.Flushes, PostFlushes: c.PostFlushes, EmptyFlushes: c.EmptyFlushes,
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
	EmptyFlushes    int      `json:"empty_flushes"`
	StrippedFlushes int      `json:"stripped_flushes"`
	RoundTrips      int      `json:"round_trips"`
	LatencyNS       int64    `json:"latency_ns"`
	IOPS            *float64 `json:"iops"` // null: no device I/O
}

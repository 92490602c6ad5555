package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/flushproof/flushproof/model/diocount"
	"github.com/flushproof/flushproof/model/iowq"
	"github.com/flushproof/flushproof/model/odsync"
)

// costProtocols are the tables of `flushproof cost`, in order.
var costProtocols = []string{"odsync", "diocount", "iowq"}

// runCost prints what each variant of the seed protocols costs, counted
// from the models' own steps: device commands per O_DSYNC write() (with
// predicted IOPS), counter read-modify-writes per direct I/O, and lock
// waits of io-wq workers writing one file.
func runCost(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lat := odsync.DefaultLatency
	fs.DurationVar(&lat.CachedWrite, "write", lat.CachedWrite, "O_DSYNC: latency of a 4 KiB write into the volatile cache, in (0, 1h]")
	fs.DurationVar(&lat.FUAWrite, "fua-write", lat.FUAWrite, "O_DSYNC: latency of a 4 KiB FUA write, in (0, 1h]")
	fs.DurationVar(&lat.MediaWrite, "media-write", lat.MediaWrite, "O_DSYNC: latency of a 4 KiB write to a device without a volatile cache, in (0, 1h]")
	fs.DurationVar(&lat.Flush, "flush", lat.Flush, "O_DSYNC: latency of a cache flush, in (0, 1h]")
	random := fs.Bool("random", false, "O_DSYNC: the drive calibrated on the seed's random writes instead of its sequential ones")
	runs := fs.Int("runs", 50, "io-wq: simulated runs per line, 1 to 100000")
	seed := fs.Uint64("seed", 1, "io-wq: seed of the first run")
	only := fs.String("protocol", "", "only this protocol: odsync, diocount or iowq")
	jsonOut := fs.Bool("json", false, "print JSON Lines instead of the tables: one object per table row (cost.odsync, cost.diocount, cost.iowq), then a cost.summary (docs/cli.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof cost [flags]\n\nPrints the cost tables of the seed protocols, counted from the models; see docs/cli.md.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"write", lat.CachedWrite}, {"fua-write", lat.FUAWrite}, {"media-write", lat.MediaWrite}, {"flush", lat.Flush}} {
		errs = append(errs, durationIn(d.name, d.v, 0, time.Hour, false))
	}
	errs = append(errs, intIn("runs", *runs, 1, 100000))
	if *only != "" && !contains(costProtocols, *only) {
		errs = append(errs, fmt.Errorf("-protocol must be odsync, diocount or iowq (or empty for all three), got %q", *only))
	}
	if code := usageError(stderr, "cost", errs...); code >= 0 {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	latencySet := set["write"] || set["fua-write"] || set["media-write"] || set["flush"]
	if *random {
		// The calibration of the random writes, with any latency the user
		// set on top of it.
		r := odsync.SeedRandomLatency
		if set["write"] {
			r.CachedWrite = lat.CachedWrite
		}
		if set["fua-write"] {
			r.FUAWrite = lat.FUAWrite
		}
		if set["media-write"] {
			r.MediaWrite = lat.MediaWrite
		}
		if set["flush"] {
			r.Flush = lat.Flush
		}
		lat = r
	} else if latencySet {
		lat.Name = "user-set latencies"
	}
	iowqLat := iowq.DefaultLatency()

	in := catchInterrupts(stderr, true)
	defer in.release()
	start := time.Now()
	enc := jsonLines(stdout)
	sum := costSummary{Kind: "cost.summary", Schema: 1, Tables: []string{}, Latency: lat.Name, CachedWriteNS: int64(lat.CachedWrite),
		FUAWriteNS: int64(lat.FUAWrite), MediaWriteNS: int64(lat.MediaWrite), FlushNS: int64(lat.Flush), Runs: *runs, Seed: *seed}
	code := exitOK
	for _, name := range costProtocols {
		if *only != "" && *only != name {
			continue
		}
		// A table is computed whole, in a goroutine, so that a signal is
		// answered at once; the tables printed before it stay.
		type table struct {
			text    []byte
			records []any
			err     error
		}
		done := make(chan table, 1)
		go func() {
			var t table
			t.text, t.records, t.err = costTable(name, lat, iowqLat, *runs, *seed, *jsonOut)
			done <- t
		}()
		var t table
		select {
		case t = <-done:
		case <-in.done:
		}
		if in.signal() != nil {
			code = in.exitCode()
			break
		}
		if t.err != nil {
			fmt.Fprintf(stderr, "flushproof cost: %s: %v\n", name, t.err)
			code = exitFailed
			break
		}
		sum.Tables = append(sum.Tables, name)
		if *jsonOut {
			for _, r := range t.records {
				enc.Encode(r)
			}
			continue
		}
		if len(sum.Tables) > 1 {
			fmt.Fprintln(stdout)
		}
		stdout.Write(t.text)
	}
	sum.Interrupted, sum.Signal = in.signal() != nil, in.signalName()
	sum.ElapsedNS, sum.ExitCode = int64(time.Since(start)), code
	if *jsonOut {
		enc.Encode(sum)
	} else if sum.Interrupted {
		fmt.Fprintf(stdout, "\nINTERRUPTED by %s: %d tables printed\n", sum.Signal, len(sum.Tables))
	}
	return code
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// costTable computes the table of one protocol: as text with its title,
// or (asJSON) as one record per row.
func costTable(name string, lat odsync.Latency, iowqLat iowq.Latency, runs int, seed uint64, asJSON bool) ([]byte, []any, error) {
	var b bytes.Buffer
	switch name {
	case "odsync":
		if !asJSON {
			fmt.Fprintf(&b, "O_DSYNC direct writes to a block device (seed 000): device commands per write()\n\n")
			err := odsync.WriteCostTable(&b, lat)
			return b.Bytes(), nil, err
		}
		costs, err := odsync.Costs()
		var out []any
		for _, c := range costs {
			r := odsyncCostRow{Kind: "cost.odsync", Variant: c.Variant.String(), Config: c.Device.String(), Path: c.Path.String(),
				FUAWrites: c.FUAWrites, PlainWrites: c.PlainWrites(), Flushes: c.Flushes, PostFlushes: c.PostFlushes,
				StrippedFlushes: c.StrippedFlushes, RoundTrips: c.RoundTrips, LatencyNS: int64(c.Latency(lat))}
			if iops := c.IOPS(lat); !math.IsInf(iops, 0) && c.RoundTrips > 0 {
				r.IOPS = &iops
			}
			out = append(out, r)
		}
		return nil, out, err
	case "diocount":
		if !asJSON {
			fmt.Fprintf(&b, "DIO counting with DAX (seed 004): counter read-modify-writes per direct I/O\n\n")
			err := diocount.WriteCosts(&b)
			return b.Bytes(), nil, err
		}
		costs, err := diocount.Costs()
		base := map[diocount.Kind]int{}
		for _, c := range costs {
			if c.Variant == diocount.Baseline {
				base[c.Kind] = c.RMWs()
			}
		}
		var out []any
		for _, c := range costs {
			out = append(out, diocountCostRow{Kind: "cost.diocount", Variant: c.Variant.String(), IO: c.Kind.String(),
				Begins: c.Begins, Ends: c.Ends, RMWsPerIO: c.RMWs(), VsBaseline: c.RMWs() - base[c.Kind], Schedules: c.Paths})
		}
		return nil, out, err
	default: // iowq
		if !asJSON {
			fmt.Fprintf(&b, "io-wq hashing of O_DIRECT writes (seed 003): waits per write, simulated\n\n")
			err := iowq.WriteContention(&b, iowqLat, runs, seed)
			return b.Bytes(), nil, err
		}
		rs, err := iowq.ContentionReport(iowqLat, runs, seed)
		cases := iowq.ContentionCases()
		var out []any
		for i, r := range rs {
			per := func(n int) float64 {
				if r.Writes == 0 {
					return 0
				}
				return float64(n) / float64(r.Writes)
			}
			row := iowqCostRow{Kind: "cost.iowq", Workload: cases[i].Workload, Submit: r.Config.Submit.String(), FS: r.Config.FS.String(),
				Writes: r.Writes, LockWaitsPerWrite: per(r.LockWaits), HashWaitsPerWrite: per(r.HashWaits),
				DIOWaitsPerWrite: per(r.DrainWaits), EAGAINPerWrite: per(r.Retries), WritesPerSecond: r.PerSecond(), Runs: r.Runs}
			if r.Writes > 0 {
				row.WaitedPerWriteNS = int64((r.LockWait + r.HashWait + r.DrainWait) / time.Duration(r.Writes))
				row.LatencyNS = int64(r.Latency / time.Duration(r.Writes))
			}
			out = append(out, row)
		}
		return nil, out, err
	}
}

// odsyncCostRow is a row of the O_DSYNC cost table (kind "cost.odsync").
type odsyncCostRow struct {
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

// diocountCostRow is a row of the DIO-count cost table (kind "cost.diocount").
type diocountCostRow struct {
	Kind       string `json:"kind"`
	Variant    string `json:"variant"`
	IO         string `json:"io"`
	Begins     int    `json:"begins"`
	Ends       int    `json:"ends"`
	RMWsPerIO  int    `json:"rmws_per_io"`
	VsBaseline int    `json:"vs_baseline"`
	Schedules  int    `json:"schedules"`
}

// iowqCostRow is a row of the io-wq contention table (kind "cost.iowq").
type iowqCostRow struct {
	Kind              string  `json:"kind"`
	Workload          string  `json:"workload"`
	Submit            string  `json:"submit"`
	FS                string  `json:"fs"`
	Runs              int     `json:"runs"`
	Writes            int     `json:"writes"`
	LockWaitsPerWrite float64 `json:"lock_waits_per_write"`
	HashWaitsPerWrite float64 `json:"hash_waits_per_write"`
	DIOWaitsPerWrite  float64 `json:"dio_waits_per_write"`
	EAGAINPerWrite    float64 `json:"eagain_per_write"`
	WaitedPerWriteNS  int64   `json:"waited_per_write_ns"`
	LatencyNS         int64   `json:"latency_ns"`
	WritesPerSecond   float64 `json:"writes_per_second"`
}

// costSummary is the JSON object of kind "cost.summary".
type costSummary struct {
	Kind          string   `json:"kind"`
	Schema        int      `json:"schema"`
	Tables        []string `json:"tables"`
	Latency       string   `json:"odsync_latency"`
	CachedWriteNS int64    `json:"odsync_write_ns"`
	FUAWriteNS    int64    `json:"odsync_fua_write_ns"`
	MediaWriteNS  int64    `json:"odsync_media_write_ns"`
	FlushNS       int64    `json:"odsync_flush_ns"`
	Runs          int      `json:"iowq_runs"`
	Seed          uint64   `json:"iowq_seed"`
	Interrupted   bool     `json:"interrupted"`
	Signal        string   `json:"signal"`
	ElapsedNS     int64    `json:"elapsed_ns"`
	ExitCode      int      `json:"exit_code"`
}

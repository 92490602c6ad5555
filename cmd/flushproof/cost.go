package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/flushproof/flushproof/model"
)

// runCost prints what each variant of the seed protocols costs, counted
// from the models' own steps: device commands per O_DSYNC write() (with
// predicted IOPS), counter read-modify-writes per direct I/O, and lock
// waits of io-wq workers writing one file.
func runCost(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lat := model.DefaultODSyncLatency
	fs.DurationVar(&lat.CachedWrite, "write", lat.CachedWrite, "O_DSYNC: latency of a 4 KiB write into the volatile cache")
	fs.DurationVar(&lat.FUAWrite, "fua-write", lat.FUAWrite, "O_DSYNC: latency of a 4 KiB FUA write")
	fs.DurationVar(&lat.MediaWrite, "media-write", lat.MediaWrite, "O_DSYNC: latency of a 4 KiB write to a device without a volatile cache")
	fs.DurationVar(&lat.Flush, "flush", lat.Flush, "O_DSYNC: latency of a cache flush")
	random := fs.Bool("random", false, "O_DSYNC: the drive calibrated on the seed's random writes instead of its sequential ones")
	runs := fs.Int("runs", 50, "io-wq: simulated runs per line")
	seed := fs.Uint64("seed", 1, "io-wq: seed of the first run")
	only := fs.String("protocol", "", "only this protocol: odsync, diocount or iowq")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof cost [flags]\n\nPrints the cost tables of the seed protocols, counted from the models.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *random {
		// The calibration of the random writes, with any latency the user
		// set on top of it.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		r := model.SeedRandomODSyncLatency
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
	} else if fs.NFlag() > 0 {
		set := false
		fs.Visit(func(f *flag.Flag) {
			set = set || f.Name == "write" || f.Name == "fua-write" || f.Name == "media-write" || f.Name == "flush"
		})
		if set {
			lat.Name = "user-set latencies"
		}
	}
	if fs.NArg() > 0 || *runs < 1 || lat.CachedWrite <= 0 || lat.MediaWrite <= 0 || lat.FUAWrite <= 0 || lat.Flush <= 0 {
		fmt.Fprintf(stderr, "flushproof cost: bad arguments (latencies > 0, runs >= 1, no positional arguments)\n")
		return 2
	}
	tables := []struct {
		name, title string
		write       func() error
	}{
		{"odsync", "O_DSYNC direct writes to a block device (seed 000): device commands per write()",
			func() error { return model.WriteODSyncCostTable(stdout, lat) }},
		{"diocount", "DIO counting with DAX (seed 004): counter read-modify-writes per direct I/O",
			func() error { return model.WriteDIOCountCosts(stdout) }},
		{"iowq", "io-wq hashing of O_DIRECT writes (seed 003): waits per write, simulated",
			func() error { return model.WriteIOWQContention(stdout, model.DefaultIOWQLatency(), *runs, *seed) }},
	}
	found := false
	for _, t := range tables {
		if *only != "" && *only != t.name {
			continue
		}
		if found {
			fmt.Fprintln(stdout)
		}
		found = true
		fmt.Fprintf(stdout, "%s\n\n", t.title)
		if err := t.write(); err != nil {
			fmt.Fprintf(stderr, "flushproof cost: %s: %v\n", t.name, err)
			return 2
		}
	}
	if !found {
		fmt.Fprintf(stderr, "flushproof cost: unknown protocol %q (want odsync, diocount or iowq)\n", *only)
		return 2
	}
	return 0
}

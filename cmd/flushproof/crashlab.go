package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flushproof/flushproof/crashlab"
)

// runCrashlab records fsync writers on a real file system through the FUSE
// + loop recorder and replays the crash states of the log.
func runCrashlab(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crashlab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fsName := fs.String("fs", "ext4", "file system: ext4 or xfs")
	workload := fs.String("workload", string(crashlab.FsyncWriters), "fsync (acknowledge after fsync), early-ack (negative control: acknowledge before fsync), syncer (O_DIRECT records made durable by one impl.Syncer, group commit) or syncer-early-sample (negative control: the Syncer sampled before the write)")
	writers := fs.Int("writers", 8, "fsync writers")
	records := fs.Int("records", 20, "4 KiB records (each followed by fsync) per writer")
	random := fs.Int("replays", 500, "random crash states, besides one per flush point")
	parallel := fs.Int("parallel", 4, "replays at once")
	seed := fs.Uint64("seed", 1, "seed of the random crash states")
	delay := fs.Duration("flush-delay", 0, "make every flush the recorder sees take this long (a disk whose flush costs milliseconds)")
	size := fs.Int64("image-size", 0, "image size in bytes (0: 128 MiB for ext4, 320 MiB for xfs)")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof crashlab [flags]\n\nRecords fsync writers on a fresh file system through a FUSE + loop recorder (root,\n/dev/fuse and losetup needed), then mounts, checks and fscks every crash state the\nlog allows at each flush point and at random cut points. Writes only to its own\ntemporary files and devices, which it removes.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flushproof crashlab: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *writers < 1 || *records < 1 || *random < 0 || *parallel < 1 || *delay < 0 || *size < 0 {
		fmt.Fprintf(stderr, "flushproof crashlab: bad arguments (writers, records, parallel >= 1; replays, flush-delay, image-size >= 0)\n")
		return 2
	}
	opt := crashlab.LabOptions{FS: crashlab.FS(*fsName), Workload: crashlab.Workload(*workload), Writers: *writers, Records: *records,
		Random: *random, Parallel: *parallel, Seed: *seed, FlushDelay: *delay, ImageSize: *size}
	if !*quiet {
		opt.Progress = func(s string) { fmt.Fprintf(stderr, "crashlab: %s\n", s) }
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(stderr, "flushproof crashlab: needs root (a FUSE mount, loop devices, mount)\n")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := crashlab.RunLab(ctx, opt)
	if err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s, %d writers x %d records (%s): %d ops logged (%d flushes), %d records acknowledged\n",
		opt.FS, *writers, *records, opt.Workload, res.Ops, res.Flushes, res.Acked)
	fmt.Fprintf(stdout, "%v\n", res.Replay)
	fmt.Fprintf(stdout, "replays losing an acknowledged record: %d of %d\n", res.Lost, len(res.Replay.Results))
	for i, f := range res.Replay.Failures() {
		if i == 5 {
			fmt.Fprintf(stdout, "(%d more failures)\n", len(res.Replay.Failures())-5)
			break
		}
		fmt.Fprintf(stdout, "  %s: %v\n", f.State.Describe(), f.Err)
	}
	if res.Lost > 0 || len(res.Replay.Failures()) > 0 {
		return 1
	}
	return 0
}

package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/model"
)

// runSkipShare runs the flush-sequence model under a latency model and
// prints, per variant, how many fsyncs skipped their flush and how many
// returned with their write not durable.
func runSkipShare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skipshare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 8, "fsync writers")
	fsyncs := fs.Int("fsyncs", 30, "append+fsync rounds per writer")
	runs := fs.Int("runs", 20, "runs (seeds 0..runs-1) per variant")
	write := fs.Duration("write", 50e3, "mean data write latency")
	flush := fs.Duration("flush", 2e6, "mean cache flush latency")
	think := fs.Duration("think", 1e6, "at most this long between an fsync's return and the next write")
	jitter := fs.Float64("jitter", 0.5, "device latencies vary uniformly by +- this fraction")
	overwrite := fs.Float64("overwrite", 0, "share of fsyncs with no metadata to log (fdatasync after overwrites)")
	crashes := fs.Int("crashes", 528, "random crash points per variant (the seed replayed 528)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flushproof skipshare [flags]\n\nRuns the xfs flush-sequence model (with the log force of an append workload) under a\nlatency model and counts the fsyncs that skip their flush.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *tasks < 1 || *fsyncs < 1 || *runs < 1 || *crashes < 0 || *jitter < 0 || *jitter > 1 || *overwrite < 0 || *overwrite > 1 {
		fmt.Fprintf(stderr, "flushproof skipshare: bad arguments (tasks, fsyncs, runs >= 1, 0 <= jitter <= 1, 0 <= overwrite <= 1, no positional arguments)\n")
		return 2
	}
	lat := model.FsyncLatency{Write: *write, Flush: *flush, Think: *think, Jitter: *jitter, Overwrite: *overwrite}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "VARIANT\tFSYNCS\tSKIPPED\tSHARE\tFLUSHES\tNOT DURABLE AT RETURN\tCRASHES LOSING A BLOCK\tMEAN RUN TIME\n")
	for _, v := range []model.FsyncVariant{model.Baseline, model.Patched, model.Improved, model.PlainStoreCompleted, model.ReadBeforeWriteback} {
		var tot model.FsyncTiming
		lostCrashes := 0
		for seed := 0; seed < *runs; seed++ {
			r, err := model.SimulateFsync(v, *tasks, *fsyncs, model.SC, lat, uint64(seed))
			if err != nil {
				fmt.Fprintf(stderr, "flushproof skipshare: %v\n", err)
				return 2
			}
			tot.Fsyncs += r.Fsyncs
			tot.Skipped += r.Skipped
			tot.Flushes += r.Flushes
			tot.Unsafe += r.Unsafe
			tot.Elapsed += r.Elapsed
			// Spread the crash points over the runs.
			n := *crashes / *runs
			if seed < *crashes%*runs {
				n++
			}
			lostCrashes += r.CrashReplays(n, uint64(seed))
		}
		fmt.Fprintf(tw, "%v\t%d\t%d\t%.1f%%\t%d\t%d\t%d of %d\t%v\n", v, tot.Fsyncs, tot.Skipped, 100*tot.SkipShare(), tot.Flushes, tot.Unsafe, lostCrashes, *crashes, tot.Elapsed/time.Duration(*runs))
	}
	tw.Flush()
	return 0
}

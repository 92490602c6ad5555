package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
)

// skipShareCase is a row of `flushproof skipshare`: flush-sequence code
// that a latency model times in the model world.
type skipShareCase struct {
	name   string // the VARIANT column
	mutant bool
	code   func(fsyncs int) flushseq.Code // fresh for each run
}

// skipShareCases are the rows of `flushproof skipshare`, in order: the
// straight-line program of xfs's fsync (with its log force) per variant,
// then impl.Syncer, the code hwbench measures, per policy (no log force:
// an S2 writer's write and Sync).
var skipShareCases = func() []skipShareCase {
	var cs []skipShareCase
	for _, v := range []flushseq.Variant{flushseq.Baseline, flushseq.Patched, flushseq.Improved, flushseq.GroupCommit,
		flushseq.BenignPlainStore, flushseq.MutantReadBeforeWriteback} {
		cs = append(cs, skipShareCase{name: v.String(), mutant: v.Mutant(), code: func(fsyncs int) flushseq.Code {
			return &flushseq.Program{Variant: v, Fsyncs: fsyncs, LogForce: true, Continue: true}
		}})
	}
	for _, p := range impl.Policies() {
		cs = append(cs, skipShareCase{name: "impl.Syncer " + p.String(), code: func(fsyncs int) flushseq.Code {
			return &syncerCode{policy: p, fsyncs: fsyncs}
		}})
	}
	return cs
}()

// runSkipShare runs the flush-sequence code under a latency model and
// prints, per variant, how many fsyncs skipped their flush and how many
// returned with their write not durable.
func runSkipShare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skipshare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 8, "fsync writers, 1 to 1024")
	fsyncs := fs.Int("fsyncs", 30, "append+fsync rounds per writer, 1 to 100000")
	runs := fs.Int("runs", 20, "runs (seeds 0..runs-1) per variant, 1 to 100000")
	write := fs.Duration("write", 50e3, "mean data write latency, in (0, 1h]")
	flush := fs.Duration("flush", 2e6, "mean cache flush latency, in (0, 1h]")
	think := fs.Duration("think", 1e6, "at most this long between an fsync's return and the next write, in [0, 1h]")
	jitter := fs.Float64("jitter", 0.5, "device latencies vary uniformly by +- this fraction, 0 to 1")
	overwrite := fs.Float64("overwrite", 0, "share of fsyncs with no metadata to log (fdatasync after overwrites), 0 to 1")
	crashes := fs.Int("crashes", 528, "random crash points per variant (the seed replayed 528), 0 to 10000000")
	jsonOut := fs.Bool("json", false, "print JSON Lines instead of the table: a skipshare.variant object per variant, then a skipshare.summary (docs/cli.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: flushproof skipshare [flags]

Runs flush-sequence code in the model world under a latency model and counts the
fsyncs that skip their flush: the straight-line program of xfs's fsync per variant
(with the log force of an append workload), then impl.Syncer, the code hwbench
measures, per policy (write, then Sync). Exit status 1 if a variant that is not a
mutant returned an fsync with its write not durable; see docs/cli.md.

flags:
`)
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if code := usageError(stderr, "skipshare",
		intIn("tasks", *tasks, 1, 1024), intIn("fsyncs", *fsyncs, 1, 100000), intIn("runs", *runs, 1, 100000),
		durationIn("write", *write, 0, time.Hour, false), durationIn("flush", *flush, 0, time.Hour, false),
		durationIn("think", *think, 0, time.Hour, true),
		fractionIn("jitter", *jitter), fractionIn("overwrite", *overwrite),
		intIn("crashes", *crashes, 0, 10000000)); code >= 0 {
		return code
	}
	lat := flushseq.Latency{Write: *write, Flush: *flush, Think: *think, Jitter: *jitter, Overwrite: *overwrite}
	in := catchInterrupts(stderr, true)
	defer in.release()
	start := time.Now()

	// The variants run in a goroutine, so that a signal is answered at once
	// even in the middle of a long run; it stops between runs.
	type result struct {
		row skipShareRow
		err error
	}
	results := make(chan result, len(skipShareCases))
	go func() {
		defer close(results)
		for _, c := range skipShareCases {
			row, err := skipShareRun(c, *tasks, *fsyncs, *runs, *crashes, lat, in.stop)
			if in.stop() != "" {
				return
			}
			results <- result{row, err}
			if err != nil {
				return
			}
		}
	}()

	width := len("VARIANT")
	for _, c := range skipShareCases {
		width = max(width, len(c.name))
	}
	const format = "%-*s  %7s  %7s  %6s  %7s  %21s  %22s  %13s\n"
	enc := jsonLines(stdout)
	if !*jsonOut {
		fmt.Fprintf(stdout, format, width, "VARIANT", "FSYNCS", "SKIPPED", "SHARE", "FLUSHES", "NOT DURABLE AT RETURN", "CRASHES LOSING A BLOCK", "MEAN RUN TIME")
	}
	sum := skipShareSummary{Kind: "skipshare.summary", Schema: 1, Tasks: *tasks, FsyncsPerTask: *fsyncs, Runs: *runs,
		WriteNS: int64(*write), FlushNS: int64(*flush), ThinkNS: int64(*think), Jitter: *jitter, Overwrite: *overwrite, Crashes: *crashes}
	code := exitOK
loop:
	for {
		select {
		case r, ok := <-results:
			if !ok {
				break loop
			}
			if r.err != nil {
				fmt.Fprintf(stderr, "flushproof skipshare: %v\n", r.err)
				code = exitFailed
				break loop
			}
			row := r.row
			sum.Variants++
			if !row.Mutant && (row.NotDurable > 0 || row.CrashesLosing > 0) {
				code = max(code, exitUnexpected)
			}
			if *jsonOut {
				enc.Encode(row)
				continue
			}
			fmt.Fprintf(stdout, format, width, row.Variant, fmt.Sprint(row.Fsyncs), fmt.Sprint(row.Skipped), fmt.Sprintf("%.1f%%", 100*row.SkipShare),
				fmt.Sprint(row.Flushes), fmt.Sprint(row.NotDurable), fmt.Sprintf("%d of %d", row.CrashesLosing, row.Crashes),
				time.Duration(row.MeanRunNS).String())
		case <-in.done:
			break loop
		}
	}
	if ic := in.exitCode(); ic != 0 {
		code = ic
	}
	sum.Interrupted, sum.Signal = in.signal() != nil, in.signalName()
	sum.ElapsedNS, sum.ExitCode = int64(time.Since(start)), code
	if *jsonOut {
		enc.Encode(sum)
		return code
	}
	head := "done"
	if sum.Interrupted {
		head = "INTERRUPTED by " + sum.Signal
	}
	fmt.Fprintf(stdout, "\n%s: %d of %d variants in %v; %d tasks x %d fsyncs, %d runs per variant, write %v, flush %v, think up to %v, jitter %g, overwrite %g\n",
		head, sum.Variants, len(skipShareCases), time.Duration(sum.ElapsedNS).Round(time.Millisecond),
		*tasks, *fsyncs, *runs, *write, *flush, *think, *jitter, *overwrite)
	return code
}

// skipShareRow is a row of the skipshare table, and its JSON object of kind
// "skipshare.variant" (docs/cli.md).
type skipShareRow struct {
	Kind          string  `json:"kind"`
	Variant       string  `json:"variant"`
	Mutant        bool    `json:"mutant"`
	Fsyncs        int     `json:"fsyncs"`
	Skipped       int     `json:"skipped"`
	SkipShare     float64 `json:"skip_share"`
	Flushes       int     `json:"flushes"`
	NotDurable    int     `json:"not_durable_at_return"`
	CrashesLosing int     `json:"crashes_losing_a_block"`
	Crashes       int     `json:"crashes"`
	MeanRunNS     int64   `json:"mean_run_time_ns"`
}

// skipShareSummary is the JSON object of kind "skipshare.summary".
type skipShareSummary struct {
	Kind          string  `json:"kind"`
	Schema        int     `json:"schema"`
	Tasks         int     `json:"tasks"`
	FsyncsPerTask int     `json:"fsyncs_per_task"`
	Runs          int     `json:"runs"`
	WriteNS       int64   `json:"write_ns"`
	FlushNS       int64   `json:"flush_ns"`
	ThinkNS       int64   `json:"think_ns"`
	Jitter        float64 `json:"jitter"`
	Overwrite     float64 `json:"overwrite"`
	Crashes       int     `json:"crashes"`
	Variants      int     `json:"variants"`
	Interrupted   bool    `json:"interrupted"`
	Signal        string  `json:"signal"`
	ElapsedNS     int64   `json:"elapsed_ns"`
	ExitCode      int     `json:"exit_code"`
}

// skipShareRun runs one case runs times, spreading the crash points over
// the runs; it stops early (with what it has) once stop says so.
func skipShareRun(c skipShareCase, tasks, fsyncs, runs, crashes int, lat flushseq.Latency, stop func() string) (skipShareRow, error) {
	var tot flushseq.Timing
	lost := 0
	for seed := 0; seed < runs && stop() == ""; seed++ {
		r, err := flushseq.SimulateCode(c.code(fsyncs), tasks, memory.SC, lat, uint64(seed))
		if err != nil {
			return skipShareRow{}, fmt.Errorf("simulate %s, seed %d: %w", c.name, seed, err)
		}
		tot.Fsyncs += r.Fsyncs
		tot.Skipped += r.Skipped
		tot.Flushes += r.Flushes
		tot.Unsafe += r.Unsafe
		tot.Elapsed += r.Elapsed
		n := crashes / runs
		if seed < crashes%runs {
			n++
		}
		lost += r.CrashReplays(n, uint64(seed))
	}
	return skipShareRow{Kind: "skipshare.variant", Variant: c.name, Mutant: c.mutant, Fsyncs: tot.Fsyncs, Skipped: tot.Skipped,
		SkipShare: tot.SkipShare(), Flushes: tot.Flushes, NotDurable: tot.Unsafe, CrashesLosing: lost, Crashes: crashes,
		MeanRunNS: int64(tot.Elapsed / time.Duration(runs))}, nil
}

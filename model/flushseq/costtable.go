package flushseq

import (
	"fmt"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/flagcheck"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// Protocol is the catalog entry: the verdict table's rows, and the cost
// table that runs the code under a latency model and counts the fsyncs
// that share another's flush (`flushproof cost -protocol xfs-flushseq`,
// also `flushproof skipshare`).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "xfs-flushseq",
		Summary: "xfs fsync's flush sequence: skip the cache flush when a flush numbered after the data write completed",
		Doc:     "docs/flushseq.md",
		Rows:    Rows,
		Bound: &verdict.Bound{Task: "task", Op: "fsync", Tasks: verdict.Range{Min: 1, Max: maxFsTasks},
			Ops: verdict.Range{Min: 1, Max: maxFlushValue}, Rows: BoundRows,
			Limit: fmt.Sprintf("tasks x fsyncs at most %d, %d under Relaxed and LKMM", maxFlushValue, memory.MaxStores-1)},
		Cost: &verdict.Cost{
			Title:  "xfs fsync flush sequence: fsyncs that share a flush, simulated in the model world",
			Params: costParams,
			Table:  newCostTable,
		},
	}
}

// skipShareCase is a row of the skip-share table: flush-sequence code that
// the latency model times in the model world.
type skipShareCase struct {
	name   string // the VARIANT column
	mutant bool
	code   func(fsyncs int) Code // fresh for each run
}

// skipShareCases are the rows of the skip-share table, in order: the
// straight-line program of xfs's fsync (with its log force) per variant,
// then impl.Syncer, the code hwbench measures, per policy (no log force:
// an S2 writer's write and Sync).
var skipShareCases = func() []skipShareCase {
	var cs []skipShareCase
	for _, v := range []Variant{Baseline, Patched, Improved, GroupCommit, BenignPlainStore, MutantReadBeforeWriteback} {
		cs = append(cs, skipShareCase{name: v.String(), mutant: v.Mutant(), code: func(fsyncs int) Code {
			return &Program{Variant: v, Fsyncs: fsyncs, LogForce: true, Continue: true}
		}})
	}
	for _, p := range impl.Policies() {
		cs = append(cs, skipShareCase{name: "impl.Syncer " + p.String(), code: func(fsyncs int) Code {
			return &syncerCode{policy: p, fsyncs: fsyncs}
		}})
	}
	return cs
}()

// costParams are the skip-share table's settings.
var costParams = []verdict.Param{
	{Name: "tasks", Default: 8, Usage: "flush sequence: fsync writers, 1 to 1024"},
	{Name: "fsyncs", Default: 30, Usage: "flush sequence: append+fsync rounds per writer, 1 to 100000"},
	{Name: "runs", Default: 20, Usage: "flush sequence: runs (seeds 0..runs-1) per variant, 1 to 100000"},
	{Name: "write", Default: 50 * time.Microsecond, Usage: "flush sequence: mean data write latency, in (0, 1h]"},
	{Name: "flush", Default: 2 * time.Millisecond, Usage: "flush sequence: mean cache flush latency, in (0, 1h]"},
	{Name: "think", Default: time.Millisecond, Usage: "flush sequence: at most this long between an fsync's return and the next write, in [0, 1h]"},
	{Name: "jitter", Default: 0.5, Usage: "flush sequence: device latencies vary uniformly by +- this fraction, 0 to 1"},
	{Name: "overwrite", Default: 0.0, Usage: "flush sequence: share of fsyncs with no metadata to log (fdatasync after overwrites), 0 to 1"},
	{Name: "crashes", Default: 528, Usage: "flush sequence: random crash points per variant (as many as the patch's crash replays), 0 to 10000000"},
}

// costTable is the skip-share table with its settings.
type costTable struct {
	name                func(string) string
	tasks, fsyncs, runs int
	crashes             int
	write, flush, think time.Duration
	jitter, overwrite   float64
}

func newCostTable(p verdict.Params) verdict.CostTable {
	return &costTable{name: p.Flag,
		tasks: p.Int("tasks"), fsyncs: p.Int("fsyncs"), runs: p.Int("runs"), crashes: p.Int("crashes"),
		write: p.Duration("write"), flush: p.Duration("flush"), think: p.Duration("think"),
		jitter: p.Float64("jitter"), overwrite: p.Float64("overwrite")}
}

func (t *costTable) Validate() error {
	n := t.name
	return flagcheck.First(
		flagcheck.IntIn(n("tasks"), t.tasks, 1, 1024), flagcheck.IntIn(n("fsyncs"), t.fsyncs, 1, 100000),
		flagcheck.IntIn(n("runs"), t.runs, 1, 100000),
		flagcheck.DurationIn(n("write"), t.write, 0, time.Hour, false), flagcheck.DurationIn(n("flush"), t.flush, 0, time.Hour, false),
		flagcheck.DurationIn(n("think"), t.think, 0, time.Hour, true),
		flagcheck.FractionIn(n("jitter"), t.jitter), flagcheck.FractionIn(n("overwrite"), t.overwrite),
		flagcheck.IntIn(n("crashes"), t.crashes, 0, 10000000))
}

func (t *costTable) latency() Latency {
	return Latency{Write: t.write, Flush: t.flush, Think: t.think, Jitter: t.jitter, Overwrite: t.overwrite}
}

func (t *costTable) Settings() map[string]any {
	return map[string]any{"flushseq_tasks": t.tasks, "flushseq_fsyncs_per_task": t.fsyncs, "flushseq_runs": t.runs,
		"flushseq_write_ns": int64(t.write), "flushseq_flush_ns": int64(t.flush), "flushseq_think_ns": int64(t.think),
		"flushseq_jitter": t.jitter, "flushseq_overwrite": t.overwrite, "flushseq_crashes": t.crashes}
}

// Write runs each case in turn and writes its row as soon as it is done. A
// row of a case that is not a mutant with an fsync that returned before its
// write was durable, or a crash that lost a block, is unexpected.
func (t *costTable) Write(out verdict.CostOutput, stop func() string) (int, error) {
	width := len("VARIANT")
	for _, c := range skipShareCases {
		width = max(width, len(c.name))
	}
	const format = "%-*s  %7s  %7s  %6s  %7s  %21s  %22s  %13s\n"
	if out.Text != nil {
		fmt.Fprintf(out.Text, format, width, "VARIANT", "FSYNCS", "SKIPPED", "SHARE", "FLUSHES", "NOT DURABLE AT RETURN", "CRASHES LOSING A BLOCK", "MEAN RUN TIME")
	}
	start, done, unexpected := time.Now(), 0, 0
	for _, c := range skipShareCases {
		if stop() != "" {
			break
		}
		row, err := skipShareRun(c, t.tasks, t.fsyncs, t.runs, t.crashes, t.latency(), stop)
		if err != nil {
			return unexpected, err
		}
		if stop() != "" {
			break // a row cut short is not printed
		}
		done++
		if !row.Mutant && (row.NotDurable > 0 || row.CrashesLosing > 0) {
			unexpected++
		}
		if out.Record != nil {
			out.Record(row)
			continue
		}
		fmt.Fprintf(out.Text, format, width, row.Variant, fmt.Sprint(row.Fsyncs), fmt.Sprint(row.Skipped), fmt.Sprintf("%.1f%%", 100*row.SkipShare),
			fmt.Sprint(row.Flushes), fmt.Sprint(row.NotDurable), fmt.Sprintf("%d of %d", row.CrashesLosing, row.Crashes),
			time.Duration(row.MeanRunNS).String())
	}
	if out.Text != nil {
		fmt.Fprintf(out.Text, "\n%d of %d variants in %v; %d tasks x %d fsyncs, %d runs per variant, write %v, flush %v, think up to %v, jitter %g, overwrite %g\n",
			done, len(skipShareCases), time.Since(start).Round(time.Millisecond),
			t.tasks, t.fsyncs, t.runs, t.write, t.flush, t.think, t.jitter, t.overwrite)
	}
	return unexpected, nil
}

// skipShareRow is a row of the skip-share table, and its JSON object of
// kind "skipshare.variant".
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

// skipShareRun runs one case runs times, spreading the crash points over
// the runs; it stops early (with what it has) once stop says so.
func skipShareRun(c skipShareCase, tasks, fsyncs, runs, crashes int, lat Latency, stop func() string) (skipShareRow, error) {
	var tot Timing
	lost := 0
	for seed := 0; seed < runs && stop() == ""; seed++ {
		r, err := SimulateCode(c.code(fsyncs), tasks, memory.SC, lat, uint64(seed))
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

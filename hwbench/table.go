// The text tables: one per comparison group, laid out like the kernel
// patches' tables (a row per figure; baseline | optimised | change), with
// the group's ceiling or device limit as extra columns, then the fio
// references.

package hwbench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// tableRow is one figure of a table.
type tableRow struct {
	label string
	value func(r Result) (float64, bool)
	// format prints a value; changes are printed as percentages unless
	// absolute is set (for per-op ratios, where "+inf %" says nothing).
	format   func(v float64) string
	absolute bool
}

func fmtRate(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// fmtMicros prints a latency in µs; below the histograms' 1 µs floor
// (NewLatencyHistogram) it can only say so.
func fmtMicros(v float64) string {
	if v < 1 {
		return "<1"
	}
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtRatio(v float64) string { return fmt.Sprintf("%.3f", v) }

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func extra(key string) func(Result) (float64, bool) {
	return func(r Result) (float64, bool) { v, ok := r.Extra[key]; return v, ok }
}

// tableRows are the figures, in the order printed. A row is left out when
// no column of the table has it.
func tableRows(scenario string) []tableRow {
	rate := "IOPS"
	lat := "latency"
	if scenario == "S2" {
		rate, lat = "syncs/s", "sync latency"
	}
	latency := func(label string, f func(Result) time.Duration) tableRow {
		return tableRow{label: fmt.Sprintf("%s %s (us)", label, lat), format: fmtMicros,
			value: func(r Result) (float64, bool) { return micros(f(r)), r.Latency != nil && r.Latency.TotalCount() > 0 }}
	}
	return []tableRow{
		{label: rate, format: fmtRate, value: func(r Result) (float64, bool) { return r.IOPS(), r.Duration > 0 }},
		latency("mean", Result.Mean),
		latency("p50", func(r Result) time.Duration { return r.Percentile(50) }),
		latency("p99", func(r Result) time.Duration { return r.Percentile(99) }),
		latency("p99.9", func(r Result) time.Duration { return r.Percentile(99.9) }),
		{label: "flushes/op (issued)", format: fmtRatio, absolute: true, value: func(r Result) (float64, bool) {
			return r.FlushesPerOp(), r.Tool == "hwbench" && (r.Flushes > 0 || r.Writes > 0)
		}},
		{label: "FUA writes/op (issued)", format: fmtRatio, absolute: true, value: extra(ExtraFUAWritesPerOp)},
		{label: "device flushes/op", format: fmtRatio, absolute: true, value: extra(ExtraDeviceFlushesPerOp)},
		{label: "skipped/sync", format: fmtRatio, absolute: true, value: extra(ExtraSkippedPerSync)},
		{label: "joined/sync", format: fmtRatio, absolute: true, value: extra(ExtraJoinedPerSync)},
		{label: "pause taken (us)", format: fmtMicros, value: extra(ExtraThinkMicros)},
		{label: "flushes/sync (served)", format: fmtRatio, absolute: true, value: extra(ExtraFlushesPerSync)},
		{label: "limit (syncs/s)", format: fmtRate, value: extra(ExtraLimit)},
		{label: "efficiency (<= 1)", format: fmtRatio, absolute: true, value: extra(ExtraEfficiency)},
		{label: "vs writers x 1 writer", format: fmtRatio, absolute: true, value: extra(ExtraVsOneWriter)},
		{label: "counter updates/op", format: func(v float64) string { return fmt.Sprintf("%.0f", v) }, absolute: true, value: extra(ExtraCounterUpdatesPerOp)},
		{label: "ops", format: func(v float64) string { return fmt.Sprintf("%.0f", v) }, value: func(r Result) (float64, bool) { return float64(r.Ops), true }},
		{label: "duration (s)", format: func(v float64) string { return fmt.Sprintf("%.2f", v) }, value: func(r Result) (float64, bool) { return r.Duration.Seconds(), true }},
	}
}

// tableGroup is the comparisons that share a baseline, and the group's
// other cases.
type tableGroup struct {
	scenario, group string
	title           []string
	baseline        Result
	optimised       []Result
	references      []Result
}

// tableKey is a baseline: the comparisons that have it make one table.
type tableKey struct{ scenario, group, variant string }

func groupTables(r Report) []*tableGroup {
	var groups []*tableGroup
	byKey := map[tableKey]*tableGroup{}
	for _, c := range r.Comparisons {
		key := tableKey{c.Scenario, c.Baseline.Group, c.Baseline.Variant}
		g, ok := byKey[key]
		if !ok {
			g = &tableGroup{scenario: c.Scenario, group: c.Baseline.Group, baseline: c.Baseline}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.title = append(g.title, c.Name)
		g.optimised = append(g.optimised, c.Optimised)
	}
	for _, g := range groups {
		for _, res := range r.Results {
			if res.Scenario == g.scenario && res.Group == g.group && res.Tool == "hwbench" && (res.Role == "ceiling" || res.Role == "reference") {
				g.references = append(g.references, res)
			}
		}
	}
	return groups
}

// flushes reports whether a case of the group flushes or writes FUA.
func (g *tableGroup) flushes() bool {
	for _, r := range append(append([]Result{g.baseline}, g.optimised...), g.references...) {
		if r.Flushes+r.FUAWrites > 0 {
			return true
		}
	}
	return false
}

// change is optimised relative to baseline, as a signed percentage, or
// for per-op figures the difference.
func change(row tableRow, base, opt float64) string {
	if row.absolute {
		d := opt - base
		if math.Abs(d) < 0.0005 {
			return "="
		}
		return fmt.Sprintf("%+.3f", d)
	}
	if base == 0 {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", (opt/base-1)*100)
}

// WriteTables prints the report as text: the device, one table per group
// of comparisons (baseline | optimised | change, then the group's ceiling
// or device limit), the fio references (hwbench / fio), and the notes.
func WriteTables(w io.Writer, r Report) error {
	ew := &errWriter{w: w}
	// "Device", capitalised: benchstat reads a line "key: value" whose key
	// is lower case as a configuration key, and this one names a temporary
	// image that differs between runs of the same target.
	fmt.Fprintf(ew, "Device: %s\n", r.Device)
	for _, g := range groupTables(r) {
		fmt.Fprintf(ew, "\n%s %s\n", g.scenario, strings.Join(g.title, "; "))
		if r.FlushFigures != "" && g.flushes() {
			fmt.Fprintf(ew, "  flushes: %s (nothing on this device is durable)\n", r.FlushFigures)
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		cols := []Result{g.baseline}
		roles := []string{"baseline"}
		for _, o := range g.optimised {
			cols = append(cols, o)
			roles = append(roles, "optimised", "change")
		}
		for _, ref := range g.references {
			cols = append(cols, ref)
			roles = append(roles, ref.Role)
		}
		// Header: roles, then the variant of each case.
		const labelWidth = 30
		fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, "", strings.Join(roles, "\t"))
		var names []string
		for i, c := range cols {
			names = append(names, c.Variant)
			if i > 0 && i <= len(g.optimised) {
				names = append(names, "")
			}
		}
		fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, "", strings.Join(names, "\t"))
		for _, row := range tableRows(g.scenario) {
			any := false
			var cells []string
			base, baseOK := row.value(g.baseline)
			for i, c := range cols {
				v, ok := row.value(c)
				any = any || ok
				cell := ""
				if ok {
					cell = row.format(v)
				}
				cells = append(cells, cell)
				if i > 0 && i <= len(g.optimised) {
					ch := ""
					if ok && baseOK {
						ch = change(row, base, v)
					}
					cells = append(cells, ch)
				}
			}
			if any {
				fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, "  "+row.label, strings.Join(cells, "\t"))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.FIO) > 0 {
		fmt.Fprintf(ew, "\nfio reference (the same job under fio, in turns with hwbench: a fio slice, then a hwbench slice, per pair)\n")
		fmt.Fprintf(ew, "  ratio = hwbench IOPS / fio IOPS, the median of the pairs' ratios, drifted pairs left out; spread = the kept pairs' median distance from it, relative to it;\n")
		fmt.Fprintf(ew, "  pair ratios = the kept pairs' smallest and largest; drifted = pairs in which both sides ran over %gx slower or faster than their medians;\n", FIODriftFactor)
		fmt.Fprintf(ew, "  noisy = spread above %.0f %%; pairs that drifted or are noisy get as many again, once (pairs 5+5); still noisy, or drifted in the rerun: not meaningful\n", FIONoisySpread*100)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%-*s\thwbench IOPS\tfio IOPS\tratio\tspread\tpair ratios\tpairs\tdrifted\thwbench p50 (us)\tfio p50 (us)\thwbench p99 (us)\tfio p99 (us)\tverdict\t\n", 52, "")
		for _, c := range r.FIO {
			spread, ratios := "-", "-"
			if len(c.Pairs) > 0 {
				lo, hi := c.RatioRange()
				spread, ratios = fmtSpread(c.Spread()), fmtRatio(lo)+"-"+fmtRatio(hi)
			}
			fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", 52, "  "+c.Name,
				fmtRate(c.Hwbench.IOPS()), fmtRate(c.FIO.IOPS()), fmtRatio(c.Ratio()), strings.ReplaceAll(spread, " ", ""), ratios,
				fioPairCount(c), c.Drifted(),
				fmtMicros(micros(c.Hwbench.Percentile(50))), fmtMicros(micros(c.FIO.Percentile(50))),
				fmtMicros(micros(c.Hwbench.Percentile(99))), fmtMicros(micros(c.FIO.Percentile(99))), c.Verdict())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(ew, "  (IOPS and latencies: all the pairs' slices of each side, drifted ones included; fio's latency for fdatasync jobs is the write's alone, hwbench's is write + fdatasync for S1 and the sync for S2)")
	}
	if r.Calibration != nil {
		_ = r.Calibration.writeText(ew) // a write error stays in ew
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(ew, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintf(ew, "- %s\n", n)
		}
	}
	return ew.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

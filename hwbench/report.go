package hwbench

// The written report (`-report=DIR`): report.md with the device, the time,
// one section per scenario holding the kind of table the kernel patches
// print (baseline | optimised | change per comparison) and every case's
// figures, the hwbench/fio ratios and the notes; and per scenario a latency
// CDF plot, <scenario>.png and <scenario>.svg, linked from report.md.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ReportFile is the name of the Markdown report WriteReport writes.
const ReportFile = "report.md"

// FIOTolerance is how far hwbench IOPS may be from fio's, as a fraction of
// fio's, for the report to call the two within the target
// ("within 10 % of fio psync"). It applies both ways: a harness much
// faster than fio is as suspect as one much slower, since the jobs are
// meant to be the same.
const FIOTolerance = 0.10

// The plots' size.
const (
	plotWidth  = 16 * vg.Centimeter
	plotHeight = 10 * vg.Centimeter
)

// WriteReport writes r to dir: ReportFile and, for each scenario with
// latencies, a latency CDF plot as <scenario>.png and <scenario>.svg
// (scenario ids made safe as file names). It creates dir if needed,
// overwrites only files of those names and deletes nothing.
func WriteReport(dir string, r Report) error {
	if dir == "" {
		return errors.New("hwbench report: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hwbench report: creating %s: %w", dir, err)
	}
	scenarios := reportScenarios(r)
	var md strings.Builder
	writeReportHeader(&md, r)
	for _, s := range scenarios {
		if s.plot != "" {
			if err := writeCDFPlots(dir, s); err != nil {
				return fmt.Errorf("hwbench report: plotting %s in %s: %w", s.title(), dir, err)
			}
		}
		writeScenario(&md, s, r.FlushFigures)
	}
	writeFIOSection(&md, r.FIO)
	if len(r.Notes) > 0 {
		md.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&md, "- %s\n", strings.ReplaceAll(strings.TrimSpace(n), "\n", "\n  "))
		}
		md.WriteString("\n")
	}
	path := filepath.Join(dir, ReportFile)
	if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("hwbench report: %w", err)
	}
	return nil
}

// reportScenario is what the report shows of one scenario.
type reportScenario struct {
	id          string
	comparisons []Comparison
	results     []Result // the scenario's cases, then fio's runs of them
	plot        string   // file name of the plots without extension; "" for none
}

func (s reportScenario) title() string {
	if s.id == "" {
		return "(no scenario)"
	}
	return s.id
}

// reportScenarios groups r by scenario, in the order the scenarios first
// appear in Results, Comparisons and FIO. A fio result belongs to its own
// scenario or, if it has none (RunFIO leaves it empty), to that of the
// hwbench case it is compared with.
func reportScenarios(r Report) []reportScenario {
	var order []string
	byID := map[string]*reportScenario{}
	get := func(id string) *reportScenario {
		if s, ok := byID[id]; ok {
			return s
		}
		order = append(order, id)
		byID[id] = &reportScenario{id: id}
		return byID[id]
	}
	for _, res := range r.Results {
		s := get(res.Scenario)
		s.results = append(s.results, res)
	}
	for _, c := range r.Comparisons {
		s := get(c.Scenario)
		s.comparisons = append(s.comparisons, c)
	}
	for _, c := range r.FIO {
		id := c.FIO.Scenario
		if id == "" {
			id = c.Hwbench.Scenario
		}
		s := get(id)
		if !containsResult(s.results, c.FIO) {
			s.results = append(s.results, c.FIO)
		}
	}
	used := map[string]bool{}
	out := make([]reportScenario, 0, len(order))
	for _, id := range order {
		s := byID[id]
		if hasLatencies(s.results) {
			s.plot = uniqueName(safeFileName(id), used)
		}
		out = append(out, *s)
	}
	return out
}

// containsResult reports whether rs holds r itself (the same histogram, or
// the same figures when there is none).
func containsResult(rs []Result, r Result) bool {
	for _, x := range rs {
		if r.Latency != nil && x.Latency == r.Latency {
			return true
		}
		if r.Latency == nil && x.Latency == nil && x.Tool == r.Tool && x.sameCase(r) &&
			x.Ops == r.Ops && x.Duration == r.Duration {
			return true
		}
	}
	return false
}

func hasLatencies(rs []Result) bool {
	for _, r := range rs {
		if r.Latency != nil && r.Latency.TotalCount() > 0 {
			return true
		}
	}
	return false
}

// safeFileName turns a scenario id into a file name without directories,
// hidden-file dots or characters that need quoting in Markdown links.
func safeFileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' && i > 0
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "scenario"
	}
	return string(b)
}

// uniqueName is name, or name-2, name-3, ... if already used.
func uniqueName(name string, used map[string]bool) string {
	n := name
	for i := 2; used[strings.ToLower(n)]; i++ {
		n = fmt.Sprintf("%s-%d", name, i)
	}
	used[strings.ToLower(n)] = true
	return n
}

func writeReportHeader(md *strings.Builder, r Report) {
	md.WriteString("# hwbench report\n\n")
	device := r.Device
	if device == "" {
		device = "(not recorded)"
	}
	started := "(not recorded)"
	if !r.Started.IsZero() {
		started = r.Started.Format(time.RFC3339)
	}
	fmt.Fprintf(md, "- Device: %s\n", device)
	if r.FlushFigures != "" {
		fmt.Fprintf(md, "- Flush figures: %s (nothing on this device is durable)\n", r.FlushFigures)
	}
	fmt.Fprintf(md, "- Started: %s\n", started)
	if r.BlockSize > 0 {
		fmt.Fprintf(md, "- Block size: %d bytes\n", r.BlockSize)
	}
	fmt.Fprintf(md, "- Cases: %d\n\n", len(r.Results))
	if r.Calibration != nil {
		r.Calibration.writeMarkdown(md)
	}
}

// writeScenario writes a scenario's section; flushFigures, if not "",
// marks its flush figures (Report.FlushFigures).
func writeScenario(md *strings.Builder, s reportScenario, flushFigures string) {
	fmt.Fprintf(md, "## %s\n\n", s.title())
	for _, c := range s.comparisons {
		writeComparison(md, c, flushFigures)
	}
	if len(s.results) > 0 {
		md.WriteString("All cases:\n\n")
		fmt.Fprintf(md, "| case | role | tool | threads | ops | IOPS | mean | p50 | p99 | p99.9 | %s |\n", flushLabel(flushFigures))
		md.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range s.results {
			fmt.Fprintf(md, "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n",
				cell(r.Case()), cell(r.Role), cell(r.Tool), r.Threads, r.Ops, formatIOPS(r.IOPS()),
				formatLatency(r, -1), formatLatency(r, 50), formatLatency(r, 99), formatLatency(r, 99.9),
				formatFlushesPerOp(r))
		}
		md.WriteString("\n")
	}
	if s.plot != "" {
		fmt.Fprintf(md, "![%s latency CDF](%s.svg)\n\n", s.title(), s.plot)
		fmt.Fprintf(md, "Latency CDF: [PNG](%s.png), [SVG](%s.svg)\n\n", s.plot, s.plot)
	}
}

// flushLabel is the flushes/op column's name, marked if the figures are
// not a durable device's.
func flushLabel(flushFigures string) string {
	if flushFigures == "" {
		return "flushes/op"
	}
	return "flushes/op (" + flushFigures + ")"
}

// writeComparison writes the table the way the kernel patches print theirs:
// one row per figure, baseline | optimised | change.
func writeComparison(md *strings.Builder, c Comparison, flushFigures string) {
	name := c.Name
	if name == "" {
		name = c.Baseline.Case() + " vs " + c.Optimised.Case()
	}
	fmt.Fprintf(md, "### %s\n\n", cell(name))
	md.WriteString("| | baseline | optimised | change |\n|---|---:|---:|---:|\n")
	b, o := c.Baseline, c.Optimised
	row := func(name, bv, ov, change string) {
		fmt.Fprintf(md, "| %s | %s | %s | %s |\n", name, bv, ov, change)
	}
	row("case", cell(b.Case()), cell(o.Case()), "")
	row("IOPS", formatIOPS(b.IOPS()), formatIOPS(o.IOPS()), formatChange(c.Change(), b.IOPS() > 0))
	for _, p := range []float64{-1, 50, 99, 99.9} {
		name := "mean"
		if p >= 0 {
			name = "p" + formatNumber(p)
		}
		bl, ol := latencyAt(b, p), latencyAt(o, p)
		row(name+" latency", formatLatency(b, p), formatLatency(o, p), relChange(float64(bl), float64(ol)))
	}
	row(flushLabel(flushFigures), formatFlushesPerOp(b), formatFlushesPerOp(o),
		relChange(b.FlushesPerOp(), o.FlushesPerOp()))
	for _, k := range extraKeys(b, o) {
		bv, bok := b.Extra[k]
		ov, ook := o.Extra[k]
		change := ""
		if bok && ook {
			change = relChange(bv, ov)
		}
		row(cell(k), formatExtra(bv, bok), formatExtra(ov, ook), change)
	}
	md.WriteString("\n")
}

func writeFIOSection(md *strings.Builder, fio []FIOComparison) {
	md.WriteString("## fio reference\n\n")
	if len(fio) == 0 {
		md.WriteString("No fio reference in this run (fio not installed, or no case was run under it).\n\n")
		return
	}
	fmt.Fprintf(md, "Each job ran under fio and under hwbench in turns: a fio slice, then a hwbench slice of the same length, per pair. "+
		"A pair in which both sides ran over %gx slower, or both over %gx faster, than their medians over the job's pairs *drifted*: the machine changed under it. "+
		"The ratio is hwbench IOPS / fio IOPS, the median of the pairs' ratios without the drifted pairs; "+
		"the spread is the median distance of those ratios from it, relative to it (half of them lie within it), and the range their smallest and largest. "+
		"A spread above %.0f %% is *noisy*. Pairs that drifted or are noisy are run again, as many once more (pairs 5 + 5); "+
		"if a pair of the rerun drifts too, or the pairs are still noisy, the ratio is not meaningful. "+
		"IOPS are over all of a side's slices. Target: the median within %.0f %% of 1, for the meaningful ratios.\n\n",
		FIODriftFactor, FIODriftFactor, FIONoisySpread*100, FIOTolerance*100)
	fmt.Fprintf(md, "| case | hwbench IOPS | fio IOPS | hwbench/fio | spread | pair range | pairs | drifted | verdict | within %.0f %% |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n", FIOTolerance*100)
	within, meaningful := 0, 0
	for _, c := range fio {
		name := c.Name
		if name == "" {
			name = c.Hwbench.Case()
		}
		ratio, spread, ratios, target := "–", "–", "–", "–"
		if c.FIO.IOPS() > 0 || len(c.Ratios()) > 0 {
			ratio = fmt.Sprintf("%.3f", c.Ratio())
		}
		if len(c.Pairs) > 0 {
			lo, hi := c.RatioRange()
			spread, ratios = strings.Replace(fmtSpread(c.Spread()), "-", "–", 1), fmt.Sprintf("%.3f–%.3f", lo, hi)
		}
		if c.Meaningful() {
			meaningful++
			target = "no"
			if math.Abs(c.Ratio()-1) <= FIOTolerance {
				target = "yes"
				within++
			}
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n", cell(name), formatIOPS(c.Hwbench.IOPS()),
			formatIOPS(c.FIO.IOPS()), ratio, spread, ratios, strings.Replace(fioPairCount(c), "+", " + ", 1), c.Drifted(),
			c.Verdict(), target)
	}
	fmt.Fprintf(md, "\n%d of %d meaningful ratios within %.0f %%", within, meaningful, FIOTolerance*100)
	if n := len(fio) - meaningful; n > 0 {
		fmt.Fprintf(md, "; %d of %d not meaningful", n, len(fio))
	}
	md.WriteString(".\n\n")
}

// extraKeys is the sorted union of the Extra keys of rs.
func extraKeys(rs ...Result) []string {
	seen := map[string]bool{}
	var keys []string
	for _, r := range rs {
		for k := range r.Extra {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// latencyAt is r's mean latency for p < 0, else its p-th percentile.
func latencyAt(r Result, p float64) time.Duration {
	if p < 0 {
		return r.Mean()
	}
	return r.Percentile(p)
}

func formatLatency(r Result, p float64) string {
	if r.Latency == nil || r.Latency.TotalCount() == 0 {
		return "–"
	}
	d := latencyAt(r, p)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// formatFlushesPerOp is "–" for fio, which does not count device commands.
func formatFlushesPerOp(r Result) string {
	if r.Tool == "fio" {
		return "–"
	}
	return formatNumber(r.FlushesPerOp())
}

func formatIOPS(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// formatNumber prints v with a precision that suits its size.
func formatNumber(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func formatExtra(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return formatNumber(v)
}

// formatChange prints a relative change, e.g. +25.0 % for 0.25.
func formatChange(change float64, ok bool) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf("%+.1f %%", change*100)
}

// relChange is the change from b to o relative to b, if b is not zero.
func relChange(b, o float64) string {
	return formatChange(o/b-1, b != 0)
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// writeCDFPlots draws the latency CDF of each of the scenario's cases,
// one line per case, and saves it as <plot>.png and <plot>.svg in dir. The
// legend goes below the axes, since the curves may cross any corner.
func writeCDFPlots(dir string, s reportScenario) error {
	p := plot.New()
	p.Title.Text = s.title() + " latency CDF"
	p.X.Label.Text = "latency (µs, log scale)"
	p.Y.Label.Text = "cumulative fraction of operations"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true

	xMin, xMax := math.Inf(1), math.Inf(-1)
	i := 0
	for _, r := range s.results {
		pts := latencyCDF(r)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		legend.Add(plotLabel(r), l)
		for _, pt := range pts {
			xMin, xMax = math.Min(xMin, pt.X), math.Max(xMax, pt.X)
		}
		i++
	}
	// A log axis needs a positive range of some width.
	p.X.Min, p.X.Max = xMin/1.2, xMax*1.2
	p.Y.Min, p.Y.Max = 0, 1

	margin := vg.Points(8)
	lr := legend.Rectangle(draw.Canvas{})
	legendHeight := lr.Max.Y - lr.Min.Y + 2*margin
	height := plotHeight + legendHeight
	for _, format := range []string{"png", "svg"} {
		c, err := draw.NewFormattedCanvas(plotWidth, height, format)
		if err != nil {
			return err
		}
		dc := draw.New(c)
		p.Draw(draw.Crop(dc, 0, 0, legendHeight, 0))
		legend.Draw(draw.Crop(dc, 4*margin, 0, margin, -plotHeight-margin))
		if err := writeFileFrom(filepath.Join(dir, s.plot+"."+format), c); err != nil {
			return err
		}
	}
	return nil
}

// writeFileFrom creates (or truncates) the file at path and writes w to it.
func writeFileFrom(path string, w io.WriterTo) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = w.WriteTo(f)
	return err
}

func plotLabel(r Result) string {
	label := r.Case()
	if label == "" {
		label = r.Role
	}
	if r.Tool == "fio" {
		label += " (fio)"
	}
	return label
}

// minPlotLatency is where latencies below the histogram's resolution are
// drawn, since a log axis has no zero (in µs).
const minPlotLatency = 0.001

// latencyCDF is the cumulative distribution of r's latencies in µs: for
// each histogram bucket that holds values, the fraction of operations at
// or below its highest value, starting from 0 at the lowest value.
func latencyCDF(r Result) plotter.XYs {
	h := r.Latency
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	total := float64(h.TotalCount())
	var pts plotter.XYs
	var cum int64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		if len(pts) == 0 {
			pts = append(pts, plotter.XY{X: math.Max(float64(b.From)/1e3, minPlotLatency), Y: 0})
		}
		cum += b.Count
		pts = append(pts, plotter.XY{X: math.Max(float64(b.To)/1e3, minPlotLatency), Y: float64(cum) / total})
	}
	return pts
}

package hwbench

// fio is the reference harness: where it is installed, the S1 and S2
// baselines also run as the equivalent fio job in the same run, and the
// report prints hwbench IOPS / fio IOPS, so that a reader can tell whether
// the Go harness is the bottleneck.
//
// How each FIOJob.Sync mode maps to fio options (fio 3.33, `man fio`):
//
//   - "" (plain): ioengine=psync, one pwrite(2) per I/O. With direct=1 this
//     is the not-durable ceiling of S1, the job the target compares
//     ("plain O_DIRECT 4 KiB write IOPS within 10 % of fio psync").
//   - "dsync": ioengine=psync with sync=dsync, which opens the file with
//     O_DSYNC. hwbench sets RWF_DSYNC per write instead (pwritev2); fio's
//     pvsync2 engine has no option for RWF_DSYNC (`fio --enghelp=pvsync2`
//     lists only hipri, hipri_percentage, uncached and nowait). The kernel
//     treats the two alike: O_DSYNC on the file makes iocb_flags() set
//     IOCB_DSYNC on every write, and RWF_DSYNC makes kiocb_set_rw_flags()
//     set the same IOCB_DSYNC on that one write (include/linux/fs.h); the
//     block device's direct-I/O path (REQ_FUA) and generic_write_sync()
//     test the iocb (iocb_is_dsync()), not how the file was opened. The
//     one difference is scope: O_DSYNC applies to every write through the
//     descriptor, which for a job of only such writes is the same thing.
//   - "fdatasync": ioengine=psync with fdatasync=1, an fdatasync(2) after
//     every write. fio times the sync separately: the write's completion
//     latency excludes it and the JSON has a "sync" section with its own
//     latency figures, which RunFIO returns in Result.Extra. fio's IOPS
//     still counts writes over the whole run, so it is write+fdatasync
//     pairs per second, the same unit as hwbench's baseline.
//
// Every job is time_based for Runtime, with size and offset set so that
// fio only writes [Offset, Offset+Size) of Path; with NumJobs > 1 every
// job shares that one region of the one file (no offset_increment), and
// the threads are reported as one group (group_reporting). Jobs run as
// threads (--thread), so that killing the one fio process on context
// cancellation stops all of them.
//
// hwbench runs a job in slices, alternated with the hwbench case it is
// compared with (FIOComparison): each slice is a fio run of its own, and
// mergeFIORuns adds the runs up. fio prints its full latency histogram
// with --output-format=json+ ("bins": the middle of each of fio's buckets,
// 64 per power of two, so within 0.8 % of every latency in it, and the
// count; plat_idx_to_val in fio's stat.c), so the runs' histograms are
// summed bucket by bucket and the percentiles read from the sum. Only
// where a run has no histogram (plain json, as in two of testdata's
// fixtures) is its histogram rebuilt from its percentiles (RunFIO says
// how) before it is added: approximate between the percentiles.
//
// fio is never left to size a file itself: when a regular file is shorter
// than the region it needs, fio "lays the file out" again, and fio 3.33
// does so by truncating it, which loses the data before Offset too (seen
// here: an 8 KiB file of 0xab bytes, offset=4096, size=8192; afterwards
// its first 4 KiB were zeros). So RunFIO first extends a short regular file to
// Offset+Size itself (ftruncate, which keeps the data and leaves a hole),
// and passes allow_file_create=0 so that fio neither creates a missing
// file nor the directories above it (it does both by default).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Keys RunFIO sets in Result.Extra.
const (
	// FIOExtraIOPS is fio's own IOPS figure (Result.IOPS is recomputed
	// from the op count and fio's millisecond runtime); over several runs,
	// their writes divided by the time fio's own figures imply.
	FIOExtraIOPS = "fio-iops"
	// FIOExtraClatMean is fio's exact mean completion latency in µs (over
	// several runs, the means weighted by the runs' writes); the Latency
	// histogram's mean is only approximate (see RunFIO).
	FIOExtraClatMean = "fio-clat-mean-us"
	// FIOExtraSyncLatMean and FIOExtraSyncLatP99 are the mean and 99th
	// percentile latency of the fdatasync calls in µs ("fdatasync" jobs).
	FIOExtraSyncLatMean = "sync-lat-mean-us"
	FIOExtraSyncLatP99  = "sync-lat-p99-us"
	// FIOExtraRuns is how many fio runs (slices) the Result adds up.
	FIOExtraRuns = "fio-runs"
)

// The percentiles RunFIO asks fio for (at most 20, `man fio`,
// percentile_list). They include 50, 90, 99, 99.9 and 99.99, and are dense
// enough for the histogram RunFIO rebuilds from them; 100 gives the top
// bucket.
var fioPercentiles = []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}

// FIOPath is the fio binary on $PATH, if fio is installed.
func FIOPath() (string, bool) {
	p, err := exec.LookPath("fio")
	if err != nil {
		return "", false
	}
	return p, true
}

// FIOJob is one fio job: NumJobs threads writing BlockSize blocks to Path
// within [Offset, Offset+Size) for Runtime. The caller guarantees that Path
// is a file or device it may overwrite in that range. Path must exist: a
// regular file (RunFIO extends it to Offset+Size if shorter) or a block
// device.
type FIOJob struct {
	Name      string // fio's job name; "hwbench" if empty
	Path      string // the existing file or block device written
	RW        string // "write" (sequential) or "randwrite"
	BlockSize int    // bytes per write
	Direct    bool   // O_DIRECT (fio direct=1)
	// Sync is "" (plain writes), "dsync" (every write durable: O_DSYNC) or
	// "fdatasync" (an fdatasync after every write).
	Sync    string
	NumJobs int   // threads; 0 means 1
	Size    int64 // bytes of the region written
	Offset  int64 // where the region starts in Path
	Runtime time.Duration
	_       struct{}
}

// validate reports the first thing wrong with the job.
func (j FIOJob) validate() error {
	switch {
	case j.Path == "":
		return errors.New("fio job: empty path")
	case j.Path == "-":
		return errors.New(`fio job: path "-" means stdout to fio`)
	case strings.TrimSpace(j.Path) != j.Path:
		// fio strips the whitespace, and would write another file.
		return fmt.Errorf("fio job: path %q starts or ends with white space", j.Path)
	case strings.ContainsRune(j.Path, '\\'):
		// fio reads "\:" as an escaped colon; refuse rather than guess.
		return fmt.Errorf("fio job: path %q contains a backslash", j.Path)
	case strings.IndexFunc(j.Path, unicode.IsControl) >= 0:
		return fmt.Errorf("fio job: path %q contains a control character", j.Path)
	}
	if j.RW != "write" && j.RW != "randwrite" {
		return fmt.Errorf("fio job %s: unknown rw %q (want write or randwrite)", j.Path, j.RW)
	}
	if j.Sync != "" && j.Sync != "dsync" && j.Sync != "fdatasync" {
		return fmt.Errorf("fio job %s: unknown sync %q (want \"\", dsync or fdatasync)", j.Path, j.Sync)
	}
	switch {
	case j.BlockSize <= 0:
		return fmt.Errorf("fio job %s: block size %d is not positive", j.Path, j.BlockSize)
	case j.Size <= 0:
		return fmt.Errorf("fio job %s: size %d is not positive", j.Path, j.Size)
	case j.Size < int64(j.BlockSize):
		return fmt.Errorf("fio job %s: size %d is less than one block of %d", j.Path, j.Size, j.BlockSize)
	case j.Offset < 0:
		return fmt.Errorf("fio job %s: offset %d is negative", j.Path, j.Offset)
	case j.Offset%int64(j.BlockSize) != 0:
		return fmt.Errorf("fio job %s: offset %d is not a multiple of the block size %d", j.Path, j.Offset, j.BlockSize)
	case j.NumJobs < 0:
		return fmt.Errorf("fio job %s: %d jobs", j.Path, j.NumJobs)
	case j.Runtime < time.Millisecond:
		return fmt.Errorf("fio job %s: runtime %v is less than 1ms", j.Path, j.Runtime)
	}
	return nil
}

func (j FIOJob) numJobs() int {
	if j.NumJobs == 0 {
		return 1
	}
	return j.NumJobs
}

// args is fio's command line for the job.
func (j FIOJob) args() []string {
	name := j.Name
	if name == "" {
		name = "hwbench"
	}
	pct := make([]string, len(fioPercentiles))
	for i, p := range fioPercentiles {
		pct[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	a := []string{
		// json+ adds the latency histograms ("bins") that runs are merged by.
		"--output-format=json+",
		"--warnings-fatal",
		"--eta=never",
	}
	if j.numJobs() > 1 {
		a = append(a, "--group_reporting")
	}
	a = append(a,
		"--name="+name,
		// A colon separates file names; an escaped one is part of the name.
		"--filename="+strings.ReplaceAll(j.Path, ":", `\:`),
		"--rw="+j.RW,
		"--bs="+strconv.Itoa(j.BlockSize),
		"--ioengine=psync",
		"--iodepth=1",
		"--offset="+strconv.FormatInt(j.Offset, 10),
		"--size="+strconv.FormatInt(j.Size, 10),
		"--time_based",
		"--runtime="+strconv.FormatInt(j.Runtime.Milliseconds(), 10)+"ms",
		"--numjobs="+strconv.Itoa(j.numJobs()),
		"--thread",
		"--allow_file_create=0",
		"--percentile_list="+strings.Join(pct, ":"),
	)
	if j.Direct {
		a = append(a, "--direct=1")
	}
	if j.RW == "randwrite" {
		// Uniform random offsets, as hwbench draws them, rather than
		// fio's default of covering every block once per pass.
		a = append(a, "--norandommap")
	}
	switch j.Sync {
	case "dsync":
		a = append(a, "--sync=dsync")
	case "fdatasync":
		a = append(a, "--fdatasync=1")
	}
	return a
}

// RunFIO runs the job under fio and returns what fio measured as a Result
// with Tool "fio", Role "reference", Case the job's name and Threads its
// NumJobs (1 if 0); the caller sets Scenario. Ops is fio's count of
// writes and Duration its runtime (milliseconds; with NumJobs > 1 the
// longest job's). Before fio starts, a regular file shorter than
// Offset+Size is extended to that length (see the top of this file).
// Cancelling ctx kills fio; a failing fio's stderr is in the error.
//
// Latency is the completion latency of the writes, from fio's latency
// histogram (to fio's bucket resolution, see the top of this file); for
// "fdatasync" jobs the sync calls are timed apart
// (Extra[FIOExtraSyncLatMean] and Extra[FIOExtraSyncLatP99]).
//
// Where fio reports percentiles only (plain json, without a histogram),
// the histogram is rebuilt from them approximately. The share of writes
// between two reported percentiles is spread evenly over the latencies
// between their values (e.g. 40 % of the writes from just above fio's p10
// value up to its p50 value), and one write each is put at fio's exact
// minimum and maximum. The rebuilt histogram reproduces fio's percentiles
// (to the resolution of fio's own buckets) and extremes; the shape between
// percentiles, and so the mean, is a guess (1.5 % and 6.4 % above fio's
// mean on the two fixtures in testdata, the second with a long tail
// between p99.9 and the maximum). fio's exact mean is in
// Extra[FIOExtraClatMean] either way.
func RunFIO(ctx context.Context, job FIOJob) (Result, error) {
	run, err := runFIO(ctx, job)
	if err != nil {
		return Result{}, err
	}
	r, err := mergeFIORuns([]fioRun{run})
	if err != nil {
		return Result{}, fmt.Errorf("fio on %s: %w", job.Path, err)
	}
	r.Variant = job.Name
	r.Threads = job.numJobs()
	return r, nil
}

// runFIO runs the job under fio once and returns what its JSON says.
func runFIO(ctx context.Context, job FIOJob) (fioRun, error) {
	if err := job.validate(); err != nil {
		return fioRun{}, err
	}
	bin, ok := FIOPath()
	if !ok {
		return fioRun{}, errors.New("fio job: fio is not installed (not found on $PATH)")
	}
	if err := prepareFIOTarget(job); err != nil {
		return fioRun{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, job.args()...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return fioRun{}, fmt.Errorf("fio on %s: %w", job.Path, ctx.Err())
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = lastLines(stdout.String(), 5)
		}
		return fioRun{}, fmt.Errorf("fio on %s: %w: %s", job.Path, err, msg)
	}
	run, err := parseFIORun(stdout.Bytes())
	if err != nil {
		return fioRun{}, fmt.Errorf("fio on %s: %w", job.Path, err)
	}
	return run, nil
}

// prepareFIOTarget checks that the job's path is a regular file or a block
// device and extends a regular file that ends before Offset+Size, so that
// fio finds it long enough and does not lay it out again (see the top of
// this file).
func prepareFIOTarget(job FIOJob) error {
	fi, err := os.Stat(job.Path)
	if err != nil {
		return fmt.Errorf("fio job: %w", err)
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		if end := job.Offset + job.Size; fi.Size() < end {
			if err := os.Truncate(job.Path, end); err != nil {
				return fmt.Errorf("fio job: extending %s to %d bytes: %w", job.Path, end, err)
			}
		}
	case m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0:
		// A block device: fio refuses a region past its end.
	default:
		return fmt.Errorf("fio job: %s is neither a regular file nor a block device (%v)", job.Path, m)
	}
	return nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The parts of fio's JSON output (`--output-format=json` or `json+`)
// RunFIO reads.
type fioOutput struct {
	Version string   `json:"fio version"`
	Jobs    []fioJob `json:"jobs"`
}

type fioJob struct {
	Name  string `json:"jobname"`
	Error int    `json:"error"`
	Write struct {
		IOPS      float64 `json:"iops"`
		RuntimeMS int64   `json:"runtime"`
		TotalIOs  int64   `json:"total_ios"`
		Clat      fioLat  `json:"clat_ns"`
	} `json:"write"`
	Sync struct {
		Lat fioLat `json:"lat_ns"`
	} `json:"sync"`
}

// fioLat is one of fio's latency summaries, in nanoseconds; Percentile maps
// "99.900000" to the latency below which 99.9 % of the I/Os completed, and
// Bins (json+ only) maps the middle of each of fio's buckets to the I/Os
// in it.
type fioLat struct {
	Min        int64              `json:"min"`
	Max        int64              `json:"max"`
	Mean       float64            `json:"mean"`
	N          int64              `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
	Bins       map[string]int64   `json:"bins"`
}

// fioRun is what one fio run of a job measured (one group, with
// group_reporting when the job has several threads).
type fioRun struct {
	Name    string
	Ops     int64 // writes completed
	Runtime time.Duration
	IOPS    float64 // fio's own figure
	Clat    fioLat  // the writes' completion latency
	Sync    fioLat  // the fdatasync calls' latency; N = 0 if none
}

// Rate is the run's writes in its runtime.
func (r fioRun) Rate() SliceRate { return SliceRate{Ops: r.Ops, Duration: r.Runtime} }

// parseFIORun reads the JSON fio printed for one job.
func parseFIORun(out []byte) (fioRun, error) {
	// fio may print notes before the JSON document.
	start := bytes.IndexByte(out, '{')
	if start < 0 {
		return fioRun{}, fmt.Errorf("no JSON in fio's output: %q", lastLines(string(out), 5))
	}
	var o fioOutput
	if err := json.NewDecoder(bytes.NewReader(out[start:])).Decode(&o); err != nil {
		return fioRun{}, fmt.Errorf("reading fio's JSON output: %w", err)
	}
	if len(o.Jobs) != 1 {
		return fioRun{}, fmt.Errorf("fio's JSON output has %d jobs, want 1", len(o.Jobs))
	}
	j := o.Jobs[0]
	if j.Error != 0 {
		return fioRun{}, fmt.Errorf("fio job %s failed with error %d", j.Name, j.Error)
	}
	w := j.Write
	return fioRun{
		Name: j.Name, Ops: w.TotalIOs, Runtime: time.Duration(w.RuntimeMS) * time.Millisecond,
		IOPS: w.IOPS, Clat: w.Clat, Sync: j.Sync.Lat,
	}, nil
}

// parseFIOOutput turns the JSON fio printed for one job into a Result.
func parseFIOOutput(out []byte) (Result, error) {
	run, err := parseFIORun(out)
	if err != nil {
		return Result{}, err
	}
	return mergeFIORuns([]fioRun{run})
}

// mergeFIORuns adds up runs of one job (the slices of a FIOComparison) as
// one Result: writes and runtimes summed; latency histograms summed (each
// run's from its bins, else rebuilt from its percentiles: see the top of
// this file); means weighted by the runs' counts. Variant is the first
// run's job name, Group empty and Threads 1; the caller sets them.
func mergeFIORuns(runs []fioRun) (Result, error) {
	if len(runs) == 0 {
		return Result{}, errors.New("no fio run to merge")
	}
	r := Result{
		Variant: runs[0].Name, Role: "reference", Threads: 1, Tool: "fio",
		Latency: NewLatencyHistogram(),
		Extra:   map[string]float64{FIOExtraRuns: float64(len(runs))},
	}
	sync := NewLatencyHistogram()
	var (
		fioTime            float64 // seconds, by fio's own IOPS figures
		clatSum, syncSum   float64 // ns, for the means
		syncN              int64
		syncP99            float64
		syncP99OK, anySync bool
	)
	for i, run := range runs {
		r.Ops += run.Ops
		r.Duration += run.Runtime
		if run.IOPS > 0 {
			fioTime += float64(run.Ops) / run.IOPS
		}
		h, err := fioHistogram(run.Clat)
		if err != nil {
			return Result{}, fmt.Errorf("fio job %s, run %d: write completion latency: %w", run.Name, i+1, err)
		}
		if dropped := r.Latency.Merge(h); dropped != 0 {
			return Result{}, fmt.Errorf("fio job %s, run %d: %d latencies out of the histogram's range", run.Name, i+1, dropped)
		}
		clatSum += run.Clat.Mean * float64(run.Clat.N)
		if s := run.Sync; s.N > 0 {
			anySync = true
			h, err := fioHistogram(s)
			if err != nil {
				return Result{}, fmt.Errorf("fio job %s, run %d: sync latency: %w", run.Name, i+1, err)
			}
			if dropped := sync.Merge(h); dropped != 0 {
				return Result{}, fmt.Errorf("fio job %s, run %d: %d sync latencies out of the histogram's range", run.Name, i+1, dropped)
			}
			syncSum += s.Mean * float64(s.N)
			syncN += s.N
			syncP99, syncP99OK = fioPercentile(s, 99)
		}
	}
	if fioTime > 0 {
		r.Extra[FIOExtraIOPS] = float64(r.Ops) / fioTime
	}
	if n := r.Latency.TotalCount(); n > 0 {
		r.Extra[FIOExtraClatMean] = clatSum / float64(n) / 1e3
	}
	if anySync && syncN > 0 {
		r.Extra[FIOExtraSyncLatMean] = syncSum / float64(syncN) / 1e3
		// One run: fio's own p99. Several: the p99 of their summed
		// histograms, since percentiles do not add.
		if len(runs) > 1 || !syncP99OK {
			syncP99, syncP99OK = float64(sync.ValueAtQuantile(99)), true
		}
		r.Extra[FIOExtraSyncLatP99] = syncP99 / 1e3
	}
	return r, nil
}

// fioPercentile is the value fio reported for percentile p.
func fioPercentile(l fioLat, p float64) (float64, bool) {
	for k, v := range l.Percentile {
		q, err := strconv.ParseFloat(k, 64)
		if err == nil && math.Abs(q-p) < 1e-9 {
			return v, true
		}
	}
	return 0, false
}

// fioHistogram is l's latencies as a histogram: from fio's own histogram
// where l has one, else rebuilt from its percentiles.
func fioHistogram(l fioLat) (*hdrhistogram.Histogram, error) {
	if len(l.Bins) == 0 {
		return histogramFromFIO(l)
	}
	return histogramFromBins(l)
}

// histogramFromBins records the I/Os of each of fio's buckets at the
// bucket's middle, as fio prints it, and checks that they are all of
// them.
func histogramFromBins(l fioLat) (*hdrhistogram.Histogram, error) {
	h := NewLatencyHistogram()
	var total int64
	for k, n := range l.Bins {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil || v < 0 || n < 0 {
			return nil, fmt.Errorf("bad histogram bucket %q: %d", k, n)
		}
		if err := h.RecordValues(min(v, maxLatency), n); err != nil {
			return nil, fmt.Errorf("histogram bucket %q: %w", k, err)
		}
		total += n
	}
	if total != l.N {
		return nil, fmt.Errorf("fio's histogram holds %d latencies, its count N is %d", total, l.N)
	}
	return h, nil
}

// histogramFromFIO rebuilds an approximate latency histogram from fio's
// percentiles, as RunFIO describes.
func histogramFromFIO(l fioLat) (*hdrhistogram.Histogram, error) {
	h := NewLatencyHistogram()
	if l.N == 0 {
		return h, nil
	}
	type point struct {
		pct   float64
		value int64
	}
	points := make([]point, 0, len(l.Percentile)+1)
	for k, v := range l.Percentile {
		q, err := strconv.ParseFloat(k, 64)
		if err != nil || q <= 0 || q > 100 {
			return nil, fmt.Errorf("bad percentile %q", k)
		}
		points = append(points, point{q, int64(v)})
	}
	sort.Slice(points, func(a, b int) bool { return points[a].pct < points[b].pct })
	if len(points) == 0 || points[len(points)-1].pct < 100 {
		points = append(points, point{100, l.Max})
	}
	// fio's percentile values are the midpoints of its own buckets, so
	// they may lie a little outside [min, max]; the true ones cannot.
	lo := min(max(l.Min, 0), maxLatency)
	hi := min(max(l.Max, lo), maxLatency)
	counts := make([]int64, len(points))
	var before int64
	for i := range points {
		points[i].value = min(max(points[i].value, lo), hi)
		upTo := int64(math.Round(float64(l.N) * points[i].pct / 100))
		counts[i] = upTo - before
		before = upTo
	}
	// Move one write from the first and one from the last non-empty gap to
	// the exact extremes. Neither move changes the count at or below any
	// reported percentile's value, since min <= every value <= max.
	var atMin, atMax int64
	if l.N >= 2 {
		for i := range counts {
			if counts[i] > 0 {
				counts[i]--
				atMin = 1
				break
			}
		}
		for i := len(counts) - 1; i >= 0; i-- {
			if counts[i] > 0 {
				counts[i]--
				atMax = 1
				break
			}
		}
	}
	if err := h.RecordValues(lo, atMin); err != nil {
		return nil, err
	}
	prev := lo
	for i, p := range points {
		if err := spreadLatencies(h, prev, p.value, counts[i]); err != nil {
			return nil, err
		}
		prev = p.value
	}
	if err := h.RecordValues(hi, atMax); err != nil {
		return nil, err
	}
	return h, nil
}

// spreadSteps is how many distinct values spreadLatencies uses at most.
const spreadSteps = 64

// spreadLatencies records n latencies evenly over (from, to], at least one
// of them at to, so that the count at or below any value outside (from,
// to) is what it would be with all n at to.
func spreadLatencies(h *hdrhistogram.Histogram, from, to, n int64) error {
	if n <= 0 {
		return nil
	}
	steps := min(n, spreadSteps)
	for k := int64(1); k <= steps; k++ {
		v := from + (to-from)*k/steps
		if err := h.RecordValues(v, n*k/steps-n*(k-1)/steps); err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/flushproof/flushproof/crashlab"
)

// The exit codes of flushproof crashlab (docs/crashlab.md, "Exit codes"):
// those of every command (signals.go), read for a crash lab.
const (
	crashlabExitPass  = exitOK         // nothing lost, nothing failed that must not
	crashlabExitFail  = exitUnexpected // an acknowledged record lost, or a state that must recover did not
	crashlabExitUsage = exitUsage      // bad flag, bad value, unexpected argument
	crashlabExitError = exitFailed     // the run failed: pre-flight, recording, a replay's setup
)

// crashlabJSONSchema is the "schema" of crashlab.summary; it changes when a
// field changes meaning or goes away: 2 since states leaves out the
// duplicates (generated counts them).
const crashlabJSONSchema = 2

// runCrashlab records fsync writers on a real file system through the FUSE
// + loop recorder and replays the crash states of the log.
func runCrashlab(args []string, stdout, stderr io.Writer) int {
	in := catchInterrupts(stderr, false)
	defer in.release()
	return crashlabMain(in.context(), args, stdout, stderr)
}

// crashlabMain is the command with its context: ctx ending is an
// interruption, by the signal its cause names.
func crashlabMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		return crashlabMerge(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("crashlab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fsName := fs.String("fs", "ext4", "file system: ext4 or xfs")
	workload := fs.String("workload", string(crashlab.FsyncWriters), "fsync (acknowledge after fsync), early-ack (negative control: acknowledge before fsync), syncer (O_DIRECT records made durable by one impl.Syncer, group commit) or syncer-early-sample (negative control: the Syncer sampled before the write)")
	writers := fs.Int("writers", 8, fmt.Sprintf("fsync writers, 1 to %d", crashlab.MaxWriters))
	records := fs.Int("records", 20, fmt.Sprintf("4 KiB records (each followed by fsync) per writer, 1 to %d", crashlab.MaxRecords))
	random := fs.Int("replays", 500, fmt.Sprintf("random crash states, besides one per flush point and the end of the log, 0 to %d", crashlab.MaxRandom))
	parallel := fs.Int("parallel", 4, fmt.Sprintf("replays at once, 1 to %d", crashlab.MaxParallel))
	seed := fs.Uint64("seed", 1, "seed of the random crash states")
	delay := fs.Duration("flush-delay", 0, fmt.Sprintf("make every flush the recorder sees take this long (a disk whose flush costs milliseconds), 0 to %v", crashlab.MaxFlushDelay))
	size := fs.Int64("image-size", 0, fmt.Sprintf("image size in bytes, a multiple of 4096 from %d MiB (ext4) or %d MiB (xfs: mkfs.xfs needs 300 MiB) to %d GiB (0: 128 MiB for ext4, 320 MiB for xfs)",
		crashlab.MinImageSize(crashlab.Ext4)>>20, crashlab.MinImageSize(crashlab.XFS)>>20, crashlab.MaxImageSize>>30))
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	jsonOut := fs.Bool("json", false, "JSON Lines on stdout: a crashlab.state object per replayed state that did not pass, then one crashlab.summary (docs/crashlab.md)")
	check := fs.String("check", "", "with a command: the checker run by /bin/sh -c in every crash state, in the recovered file system (mounted read-write on the state's own copy) with the acknowledgements at or before the cut on its standard input, one \"KEY\" or \"KEY VALUE\" line each; exit status 0 passes the state (default: every acknowledged KEY is a file there, holding VALUE where one was given)")
	save := fs.String("save", "", "write the recording to this new file before replaying it (an existing file is not overwritten), for -load, -shard and -replay")
	load := fs.String("load", "", "replay a recording -save wrote instead of recording: no workload runs; -fs, -image-size and the workload come from it")
	shard := fs.String("shard", "", "with -load: replay only the I-th of N disjoint parts of its states, I/N (e.g. 2/3); merge the parts' -json outputs with `flushproof crashlab merge`")
	replayOne := fs.String("replay", "", "FILE:STATE: rebuild state STATE of the recording FILE (with the -replays, -seed and -k of the run that reported it) into the new directory -keep names, to mount and check by hand; nothing is mounted")
	keep := fs.String("keep", "", "with -replay: the directory to create for the state's image, acknowledgements and description")
	kFlag := fs.Int("k", -1, fmt.Sprintf("also replay, for a crash after every write, its flush epoch's writes landing in log order but for up to K changes (a write dropped, reordered after a newer one it overlaps, or torn), 0 to %d; 0: the prefixes at every write (-1: 1 with a command, none with -workload)", crashlab.MaxK))
	checkTimeout := fs.Duration("check-timeout", crashlab.DefaultCheckTimeout, fmt.Sprintf("with -check: how long one run of the checker may take (past it, the state fails), up to %v", crashlab.MaxCheckTimeout))
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: flushproof crashlab [flags]
       flushproof crashlab [flags] -- CMD [ARG...]
       flushproof crashlab -load FILE [-shard I/N] [flags]
       flushproof crashlab -replay FILE:STATE -keep DIR [-replays N -seed S -k K]
       flushproof crashlab merge SHARD.jsonl...

Records a workload on a fresh file system through a FUSE + loop recorder (root,
/dev/fuse, loop devices and the file system's tools needed), then mounts, checks and fscks
every crash state the log allows at each flush point, at the end of the log and at
random cut points. Writes only to its own temporary files and devices, which it removes.

The workload is fsync writers of crashlab's own (-workload), or your program: CMD runs
with its working directory at the root of the new file system (also in $FLUSHPROOF_DIR)
until it exits, and says what it has made durable by writing lines "ack KEY" or
"ack KEY VALUE" to file descriptor 3 ($FLUSHPROOF_ACK_FD), e.g.
    flushproof crashlab -- sh -c 'echo v1 > k && sync k . && echo "ack k v1" >&3'
Each crash state is held to the acknowledgements made at or before its cut (-check).
CMD, and a first word of -check such as ./check.sh, are yours: taken from where you run
crashlab.
-save FILE keeps the recording: -load replays it (in parts with -shard, whose -json outputs
merge sums) and -replay rebuilds one state's image to inspect (docs/crashlab.md).

exit status: 0 no acknowledged record lost and every state that must recover did;
1 a record lost or such a state failed; 2 bad usage; 3 the run failed (a missing tool,
not root, a replay that could not be set up); 130 interrupted (SIGINT), 143 (SIGTERM).

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return crashlabExitPass
		}
		return crashlabExitUsage
	}
	usage := func(flagName string, v any, want string) int {
		fmt.Fprintf(stderr, "flushproof crashlab: -%s %v: want %s\n", flagName, v, want)
		return crashlabExitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cmdArgs := fs.Args()
	if code, done := crashlabRecordingFlags(set, cmdArgs, *save, *load, *shard, *replayOne, *keep, stderr); done {
		return code
	}
	if len(cmdArgs) > 0 {
		// A program of the user's is the workload: crashlab's own
		// workload flags do not apply.
		for _, name := range []string{"workload", "writers", "records"} {
			if set[name] {
				fmt.Fprintf(stderr, "flushproof crashlab: -%s: does not apply with a command (%s), which is the workload\n", name, strings.Join(cmdArgs, " "))
				return crashlabExitUsage
			}
		}
	}
	if set["check"] && strings.TrimSpace(*check) == "" {
		return usage("check", fmt.Sprintf("%q", *check), "a command line for /bin/sh -c")
	}
	if *kFlag < -1 || *kFlag > crashlab.MaxK {
		return usage("k", *kFlag, fmt.Sprintf("0 to %d (or -1: the default)", crashlab.MaxK))
	}
	if *checkTimeout <= 0 || *checkTimeout > crashlab.MaxCheckTimeout {
		return usage("check-timeout", *checkTimeout, fmt.Sprintf("more than 0, up to %v", crashlab.MaxCheckTimeout))
	}
	// LabOptions takes a zero as "the default"; on the command line a zero
	// is a value, and these do not allow it.
	for _, c := range []struct {
		flag    string
		v, most int
	}{{"writers", *writers, crashlab.MaxWriters}, {"records", *records, crashlab.MaxRecords}, {"parallel", *parallel, crashlab.MaxParallel}} {
		if c.v < 1 || c.v > c.most {
			return usage(c.flag, c.v, fmt.Sprintf("1 to %d", c.most))
		}
	}
	opt := crashlab.LabOptions{FS: crashlab.FS(*fsName), Workload: crashlab.Workload(*workload), Writers: *writers, Records: *records,
		Random: *random, Parallel: *parallel, Seed: *seed, FlushDelay: *delay, ImageSize: *size}
	// The state options, as every path takes them: -k, whose default
	// (-1) is 1 for a program of the user's and none for a built-in
	// workload, and a program's checker.
	commandOptions := func(command bool) bool {
		if !command && (set["check"] || set["check-timeout"]) {
			fmt.Fprintf(stderr, "flushproof crashlab: -check: applies to a command of yours (crashlab [flags] -- CMD [ARG...]) or to its recording; the built-in workloads have their own check\n")
			return false
		}
		switch {
		case *kFlag >= 0:
			opt.Epoch, opt.K = true, *kFlag
		case command:
			opt.Epoch, opt.K = true, 1
		}
		if command {
			opt.CheckTimeout, opt.Output = *checkTimeout, stderr
			if *check != "" {
				opt.Check = []string{"/bin/sh", "-c", crashlab.ResolveCheck(*check)}
			}
		}
		return true
	}
	if *replayOne != "" {
		return crashlabReplayOne(*replayOne, *keep, &opt, commandOptions, stdout, stderr)
	}
	opt.Save = *save
	recordingFile := *save
	switch {
	case *load != "":
		r, err := crashlab.LoadRecording(*load)
		if err != nil {
			fmt.Fprintf(stderr, "flushproof crashlab: -load: %v\n", err)
			return crashlabExitUsage
		}
		opt.Load, recordingFile = r, *load
		if !commandOptions(r.Workload == crashlab.CommandWorkload) {
			return crashlabExitUsage
		}
		if *shard != "" {
			opt.Shard, opt.Shards, _ = parseShard(*shard)
		}
	case len(cmdArgs) > 0:
		argv, err := crashlab.ResolveCommand(cmdArgs)
		if err != nil {
			fmt.Fprintf(stderr, "flushproof crashlab: -- %s: %v\n", strings.Join(cmdArgs, " "), err)
			return crashlabExitUsage
		}
		opt.Workload, opt.Command = crashlab.CommandWorkload, argv
		commandOptions(true)
	default:
		if !commandOptions(false) {
			return crashlabExitUsage
		}
	}
	if *size < 0 {
		// Negative is not "the default" either.
		return usage("image-size", *size, "0 (the default) or a positive multiple of 4096")
	}
	var oe *crashlab.OptionError
	if err := opt.Validate(); errors.As(err, &oe) {
		return usage(crashlabFlagOf[oe.Field], oe.Value, oe.Want)
	} else if err != nil {
		fmt.Fprintf(stderr, "flushproof crashlab: %v\n", err)
		return crashlabExitUsage
	}
	if !*quiet {
		opt.Progress = func(s string) { fmt.Fprintf(stderr, "crashlab: %s\n", s) }
	}

	start := time.Now()
	res, err := crashlab.RunLab(ctx, opt)
	run := crashlabRun{Result: res, Err: err, Elapsed: time.Since(start), Cause: context.Cause(ctx)}
	if res.Recording != "" { // else not saved: the run failed before
		run.RecordingFile = recordingFile
	}
	code := run.ExitCode()
	if *jsonOut {
		if werr := writeCrashlabJSON(stdout, run); werr != nil {
			fmt.Fprintf(stderr, "flushproof crashlab: write JSON: %v\n", werr)
			return crashlabExitError
		}
	} else {
		writeCrashlabText(stdout, run)
	}
	for _, line := range crashlabErrorLines(run.Errors()) {
		fmt.Fprintf(stderr, "flushproof crashlab: %s\n", line)
	}
	return code
}

// crashlabFlagOf names the flag behind each LabOptions field.
var crashlabFlagOf = map[string]string{
	"FS": "fs", "Workload": "workload", "Writers": "writers", "Records": "records", "Random": "replays",
	"Parallel": "parallel", "FlushDelay": "flush-delay", "ImageSize": "image-size", "Check": "check",
	"CheckTimeout": "check-timeout", "Command": "- CMD", "Shard": "shard", "K": "k",
}

// crashlabRun is one run of the command: what RunLab returned, and how it
// ended.
type crashlabRun struct {
	Result  crashlab.LabResult
	Err     error
	Elapsed time.Duration
	Cause   error // context.Cause of the run's context: nil, or the signal
	// RecordingFile is the recording -save wrote or -load read.
	RecordingFile string
}

// crashlabRecorded says where the run's log came from.
func crashlabRecorded(run crashlabRun) string {
	if run.Result.Options.Load != nil {
		return "from recording " + run.Result.Recording
	}
	return fmt.Sprintf("recorded in %v", run.Result.Recorded.Round(time.Millisecond))
}

// crashlabPhases are the run's phases and the command's own time (its
// wall time less theirs): they sum to the wall time.
func crashlabPhases(run crashlabRun) []crashlab.Phase {
	ph := slices.Clone(run.Result.Phases)
	var sum time.Duration
	for _, p := range ph {
		sum += p.Time
	}
	return append(ph, crashlab.Phase{Name: "the command's own", Time: max(run.Elapsed-sum, 0)})
}

// crashlabPhasesText is the phases in one line.
func crashlabPhasesText(run crashlabRun) string {
	var parts []string
	for _, p := range crashlabPhases(run) {
		parts = append(parts, fmt.Sprintf("%s %v", p.Name, p.Time.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; %v in all", run.Elapsed.Round(time.Millisecond))
}

// crashlabReplayArgs are the arguments that rebuild state index of run
// (-replay, with the state options of the run; -keep to be added).
func crashlabReplayArgs(run crashlabRun, index int) []string {
	opt := run.Result.Options
	args := []string{"-replay", fmt.Sprintf("%s:%d", run.RecordingFile, index), "-replays", fmt.Sprint(opt.Random), "-seed", fmt.Sprint(opt.Seed)}
	if opt.Epoch {
		args = append(args, "-k", fmt.Sprint(opt.K))
	}
	return args
}

// Interrupted reports whether a signal (or a canceled context) stopped
// the run.
func (r crashlabRun) Interrupted() bool { return r.Result.Interrupted }

// Signal names the signal that stopped the run: "SIGINT", "SIGTERM" or "".
func (r crashlabRun) Signal() string {
	if !r.Interrupted() {
		return ""
	}
	var c interruptCause
	if errors.As(r.Cause, &c) {
		return signalName(c.sig)
	}
	return "SIGINT" // a context canceled otherwise (tests)
}

// ExitCode is the command's exit status. An interruption wins (what was
// done is printed, but it is not all); then a finding (a lost record, a
// state that must recover and did not), which holds even if some other
// replay could not be set up; then a failed run.
func (r crashlabRun) ExitCode() int {
	v := r.Result.Replay.Verdicts()
	switch {
	case r.Interrupted() && r.Signal() == "SIGTERM":
		return exitSIGTERM
	case r.Interrupted():
		return exitSIGINT
	case r.Result.Lost > 0 || v[crashlab.VerdictFail] > 0:
		return crashlabExitFail
	case r.Err != nil || v[crashlab.VerdictError] > 0:
		return crashlabExitError
	}
	return crashlabExitPass
}

// Outcome is the result in one word: pass, fail, error or interrupted.
func (r crashlabRun) Outcome() string {
	switch r.ExitCode() {
	case crashlabExitPass:
		return "pass"
	case crashlabExitFail:
		return "fail"
	case crashlabExitError:
		return "error"
	}
	return "interrupted"
}

// Errors are the run's errors worth a line on stderr: everything RunLab
// reported except the interruption itself, which the summary states, with
// the context each error was wrapped in where that can be kept.
func (r crashlabRun) Errors() []error {
	if r.Err == nil {
		return nil
	}
	// walk returns the errors under e worth reporting, and whether that is
	// e itself, whole.
	var walk func(e error) ([]error, bool)
	walk = func(e error) ([]error, bool) {
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			var out []error
			for _, c := range u.Unwrap() {
				sub, _ := walk(c)
				out = append(out, sub...)
			}
			return out, false
		case interface{ Unwrap() error }:
			if c := u.Unwrap(); c != nil {
				if sub, whole := walk(c); !whole {
					return sub, false
				}
			}
		}
		if errors.Is(e, context.Canceled) || errors.As(e, new(interruptCause)) {
			return nil, false
		}
		return []error{e}, true
	}
	out, _ := walk(r.Err)
	return out
}

// crashlabErrorLines formats at most a few errors, one a line.
func crashlabErrorLines(errs []error) []string {
	const most = 5
	var lines []string
	for i, e := range errs {
		if i == most {
			lines = append(lines, fmt.Sprintf("(%d more errors)", len(errs)-most))
			break
		}
		lines = append(lines, e.Error())
	}
	return lines
}

// crashlabExitMeaning says what each exit status of crashlab means; the summary
// carries it so a JSON reader needs no docs to read exit_code.
var crashlabExitMeaning = map[int]string{
	crashlabExitPass:  "no acknowledged record lost; every flush-point, end-of-log and untorn random state mounted, checked and fsck'd clean",
	crashlabExitFail:  "an acknowledged record was lost, or a state the file system must recover failed to mount or fsck",
	crashlabExitError: "the run failed (pre-flight, recording, or a replay that could not be set up); the error says why",
	exitSIGINT:        "interrupted by SIGINT: the counts cover what was done",
	exitSIGTERM:       "interrupted by SIGTERM: the counts cover what was done",
}

// negativeControl reports whether the workload is there to be caught.
func crashlabNegativeControl(w crashlab.Workload) bool {
	return w == crashlab.EarlyAck || w == crashlab.SyncerEarlySample
}

// writeCrashlabText prints the run for people: what was recorded, a table
// of replays by state kind and status, the failures by verdict (at most a
// few of each), and the result.
func writeCrashlabText(w io.Writer, run crashlabRun) {
	res, opt, rep := run.Result, run.Result.Options, run.Result.Replay
	code := run.ExitCode()
	switch {
	case run.Interrupted() && res.States == 0:
		fmt.Fprintf(w, "interrupted by %s while recording: %d ops logged, %d records acknowledged; no crash state replayed (exit %d)\n",
			run.Signal(), res.Ops, res.Acked, code)
		return
	case res.States == 0 && res.Ops == 0:
		// Stopped before recording (pre-flight): the error on stderr says why.
		fmt.Fprintf(w, "result: %s (exit %d): %s\n", strings.ToUpper(run.Outcome()), code, crashlabExitMeaning[code])
		return
	}
	if opt.Workload == crashlab.CommandWorkload {
		checker := "the default checker (every acknowledged KEY a file holding its VALUE)"
		if len(opt.Check) > 0 {
			checker = fmt.Sprintf("checker %q", opt.Check[len(opt.Check)-1])
		}
		fmt.Fprintf(w, "%s, command %q, %s, image %d MiB, seed %d: %d ops logged (%d flushes), %d acknowledgements, %s\n",
			opt.FS, strings.Join(opt.Command, " "), checker, opt.ImageSize>>20, opt.Seed, res.Ops, res.Flushes, res.Acked, crashlabRecorded(run))
	} else {
		fmt.Fprintf(w, "%s, %d writers x %d records (%s), image %d MiB, seed %d: %d ops logged (%d flushes), %d records acknowledged, %s\n",
			opt.FS, opt.Writers, opt.Records, opt.Workload, opt.ImageSize>>20, opt.Seed, res.Ops, res.Flushes, res.Acked, crashlabRecorded(run))
	}
	if res.Duplicates > 0 || opt.Epoch {
		k := ""
		if opt.Epoch {
			k = fmt.Sprintf(", epoch states with up to %d changes", opt.K)
		}
		fmt.Fprintf(w, "%d crash states%s; %d of them duplicates of another's image and acknowledgements, not replayed\n", res.Generated, k, res.Duplicates)
	}
	if res.EpochTruncated {
		fmt.Fprintf(w, "the epoch states stopped at %d: the rest of the log has none (a smaller -k covers it all)\n", crashlab.EpochLimit)
	}
	fmt.Fprintf(w, "replayed %d of %d crash states in %v (%.1f/s, mount, check and fsck included); file-system block %d bytes\n",
		len(rep.Results), res.States, rep.Elapsed.Round(time.Millisecond), rep.PerSecond, rep.BlockSize)
	if len(rep.Results) > 0 {
		// One row per kind of state, one column per status.
		fmt.Fprintf(w, "%-11s %6s", "STATE KIND", "STATES")
		for _, s := range crashlab.Statuses {
			fmt.Fprintf(w, " %11s", strings.ToUpper(s.String()))
		}
		fmt.Fprintln(w)
		row := func(name string, counts map[crashlab.ReplayStatus]int) {
			total := 0
			for _, n := range counts {
				total += n
			}
			fmt.Fprintf(w, "%-11s %6d", name, total)
			for _, s := range crashlab.Statuses {
				fmt.Fprintf(w, " %11d", counts[s])
			}
			fmt.Fprintln(w)
		}
		byKind := rep.ByKind()
		for _, k := range crashlab.StateKinds {
			row(k.String(), byKind[k])
		}
		row("all", rep.Counts)
	}
	v := rep.Verdicts()
	if opt.Workload == crashlab.CommandWorkload {
		fmt.Fprintf(w, "the check failed (acknowledged data lost or wrong): in %d of %d states\n", res.Lost, len(rep.Results))
	} else {
		fmt.Fprintf(w, "acknowledged records lost: in %d of %d states\n", res.Lost, len(rep.Results))
	}
	list := func(title string, rs []crashlab.StateResult) {
		fmt.Fprintf(w, "%s: %d\n", title, len(rs))
		const most = 5
		for i, r := range rs {
			if i == most {
				fmt.Fprintf(w, "  (%d more; -json lists every one)\n", len(rs)-most)
				break
			}
			fmt.Fprintf(w, "  %s: %s\n", r.State.Describe(), r.Reason())
		}
	}
	list("crash-consistency failures (lost records; flush-point, end-of-log or untorn random states that failed)", rep.WithVerdict(crashlab.VerdictFail))
	allowed := rep.WithVerdict(crashlab.VerdictAllowed)
	unmountable := 0
	for _, r := range allowed {
		if r.Status == crashlab.StatusMountError {
			unmountable++
		}
	}
	list(fmt.Sprintf("allowed by the contract (a write torn inside a %d-byte block; %d unmountable, %d failing fsck)",
		rep.BlockSize, unmountable, len(allowed)-unmountable), allowed)
	if v[crashlab.VerdictError] > 0 {
		list("replays that could not be set up", rep.WithVerdict(crashlab.VerdictError))
	}
	if len(res.Phases) > 0 {
		fmt.Fprintf(w, "time: %s\n", crashlabPhasesText(run))
	}
	if failing := rep.Failures(); len(failing) > 0 && !run.Interrupted() {
		if run.RecordingFile != "" {
			fmt.Fprintf(w, "rebuild a state to inspect it: flushproof crashlab %s -keep DIR\n", strings.Join(crashlabReplayArgs(run, failing[0].State.Index), " "))
		} else {
			fmt.Fprintf(w, "to rebuild a failing state later, run with -save FILE (then -replay FILE:STATE -keep DIR)\n")
		}
	}
	switch {
	case run.Interrupted():
		fmt.Fprintf(w, "interrupted by %s: %d of %d states replayed (exit %d)\n", run.Signal(), len(rep.Results), res.States, code)
	default:
		note := ""
		if crashlabNegativeControl(opt.Workload) {
			if code == crashlabExitFail {
				note = fmt.Sprintf(" (%s is a negative control: this is the outcome it is there for)", opt.Workload)
			} else if code == crashlabExitPass {
				note = fmt.Sprintf(" (%s is a negative control: this run did not catch it)", opt.Workload)
			}
		}
		fmt.Fprintf(w, "result: %s (exit %d): %s%s\n", strings.ToUpper(run.Outcome()), code, crashlabExitMeaning[code], note)
	}
}

// crashlabStateJSON is one "crashlab.state" line (docs/crashlab.md, "JSON
// output").
type crashlabStateJSON struct {
	Kind         string   `json:"kind"`
	Index        int      `json:"index"`
	StateKind    string   `json:"state_kind"`
	Cut          uint64   `json:"cut"`
	Flush        uint64   `json:"flush"`
	Durable      int      `json:"durable"`
	Unflushed    int      `json:"unflushed"`
	Landed       int      `json:"landed"`
	Keep         float64  `json:"keep"`
	Torn         bool     `json:"torn"`
	Shuffled     bool     `json:"shuffled"`
	StateSeed    string   `json:"state_seed"`
	TornWrites   int      `json:"torn_writes"`
	TornWriteOps []uint64 `json:"torn_write_ops"`
	BlockBytes   int64    `json:"block_bytes"`
	Status       string   `json:"status"`
	Verdict      string   `json:"verdict"`
	Lost         bool     `json:"lost"`
	Error        string   `json:"error"`
	CheckError   string   `json:"check_error"`
	Output       string   `json:"output"`
	ElapsedNs    int64    `json:"elapsed_ns"`
	Description  string   `json:"description"`
	Changes      []string `json:"changes,omitempty"`
	// Replay rebuilds the state: crashlab's arguments, with the recording
	// the run saved or loaded (empty without one).
	Replay []string `json:"replay,omitempty"`
}

// crashlabPhaseJSON is one phase of a run in crashlab.summary.
type crashlabPhaseJSON struct {
	Name string `json:"name"`
	Ns   int64  `json:"ns"`
}

// crashlabSummaryJSON is the "crashlab.summary" line.
type crashlabSummaryJSON struct {
	Kind            string                    `json:"kind"`
	Schema          int                       `json:"schema"`
	FS              string                    `json:"fs"`
	Workload        string                    `json:"workload"`
	Command         []string                  `json:"command,omitempty"`
	Check           []string                  `json:"check,omitempty"`
	K               *int                      `json:"k"`
	Recording       string                    `json:"recording,omitempty"`
	Shard           string                    `json:"shard,omitempty"`
	Generated       int                       `json:"generated"`
	Duplicates      int                       `json:"duplicates"`
	EpochTruncated  bool                      `json:"epoch_truncated"`
	PerSecond       float64                   `json:"states_per_second"`
	Phases          []crashlabPhaseJSON       `json:"phases"`
	NegativeControl bool                      `json:"negative_control"`
	Writers         int                       `json:"writers"`
	Records         int                       `json:"records"`
	RandomStates    int                       `json:"random_states"`
	Parallel        int                       `json:"parallel"`
	Seed            uint64                    `json:"seed"`
	FlushDelayNs    int64                     `json:"flush_delay_ns"`
	ImageSizeBytes  int64                     `json:"image_size_bytes"`
	BlockBytes      int64                     `json:"block_bytes"`
	Ops             int                       `json:"ops"`
	Flushes         int                       `json:"flushes"`
	Acked           int                       `json:"acked"`
	States          int                       `json:"states"`
	Replayed        int                       `json:"replayed"`
	ByStatus        map[string]int            `json:"replays_by_status"`
	ByKind          map[string]map[string]int `json:"replays_by_kind"`
	Verdicts        map[string]int            `json:"verdicts"`
	Lost            int                       `json:"lost"`
	UnmountableTorn int                       `json:"unmountable_torn"`
	FsckErrorTorn   int                       `json:"fsck_error_torn"`
	Interrupted     bool                      `json:"interrupted"`
	Signal          string                    `json:"signal"`
	Error           string                    `json:"error"`
	RecordedNs      int64                     `json:"recorded_ns"`
	ReplayNs        int64                     `json:"replay_ns"`
	ElapsedNs       int64                     `json:"elapsed_ns"`
	Result          string                    `json:"result"`
	ExitCode        int                       `json:"exit_code"`
	ExitMeaning     string                    `json:"exit_meaning"`
}

// crashlabOutputMax bounds the tool output a state line carries (its end,
// where mount and fsck say what is wrong), so that a run's JSON stays a
// few hundred bytes per failing state.
const crashlabOutputMax = 2048

// writeCrashlabJSON writes one crashlab.state line per replayed state that
// did not pass, in state order, then the crashlab.summary line.
func writeCrashlabJSON(w io.Writer, run crashlabRun) error {
	enc := json.NewEncoder(w)
	res, opt, rep := run.Result, run.Result.Options, run.Result.Replay
	for _, r := range rep.Results {
		if r.Verdict() == crashlab.VerdictPass {
			continue
		}
		st := r.State
		line := crashlabStateJSON{
			Kind: "crashlab.state", Index: st.Index, StateKind: crashlabName(st.Kind), Cut: st.Cut, Flush: st.Flush,
			Durable: st.Durable, Unflushed: st.Unflushed, Landed: st.Landed, Keep: st.Keep, Torn: st.Torn, Shuffled: st.Shuffled,
			StateSeed: fmt.Sprintf("%#x", st.Seed), TornWrites: len(r.TornWrites), TornWriteOps: r.TornWrites, BlockBytes: r.BlockSize,
			Status: crashlabName(r.Status), Verdict: crashlabName(r.Verdict()), Lost: r.CheckErr != nil || r.Status == crashlab.StatusCheckError,
			Output: crashlabTail(r.Output, crashlabOutputMax), ElapsedNs: r.Elapsed.Nanoseconds(), Description: st.Describe(),
		}
		if len(line.TornWriteOps) > 8 {
			line.TornWriteOps = line.TornWriteOps[:8]
		}
		if line.TornWriteOps == nil {
			line.TornWriteOps = []uint64{}
		}
		for _, c := range st.Changes {
			line.Changes = append(line.Changes, c.String())
		}
		if run.RecordingFile != "" {
			line.Replay = crashlabReplayArgs(run, st.Index)
		}
		if r.Err != nil {
			line.Error = r.Err.Error()
		}
		if r.CheckErr != nil && r.Status != crashlab.StatusCheckError {
			line.CheckError = r.CheckErr.Error() // else Error says it
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	sum := crashlabSummaryJSON{
		Kind: "crashlab.summary", Schema: crashlabJSONSchema, FS: string(opt.FS), Workload: string(opt.Workload),
		NegativeControl: crashlabNegativeControl(opt.Workload), Writers: opt.Writers, Records: opt.Records,
		RandomStates: opt.Random, Parallel: opt.Parallel, Seed: opt.Seed, FlushDelayNs: opt.FlushDelay.Nanoseconds(),
		ImageSizeBytes: opt.ImageSize, BlockBytes: rep.BlockSize, Ops: res.Ops, Flushes: res.Flushes, Acked: res.Acked,
		States: res.States, Replayed: len(rep.Results), ByStatus: map[string]int{}, ByKind: map[string]map[string]int{},
		Verdicts: map[string]int{}, Lost: res.Lost, Interrupted: run.Interrupted(), Signal: run.Signal(),
		RecordedNs: res.Recorded.Nanoseconds(), ReplayNs: rep.Elapsed.Nanoseconds(), ElapsedNs: run.Elapsed.Nanoseconds(),
		Result: run.Outcome(), ExitCode: run.ExitCode(), Command: opt.Command, Check: opt.Check,
		Generated: res.Generated, Duplicates: res.Duplicates, EpochTruncated: res.EpochTruncated, PerSecond: rep.PerSecond,
		Recording: res.Recording,
	}
	if opt.Shards > 0 {
		sum.Shard = fmt.Sprintf("%d/%d", opt.Shard, opt.Shards)
	}
	if opt.Epoch {
		sum.K = &opt.K
	}
	sum.Phases = []crashlabPhaseJSON{}
	if len(res.Phases) > 0 {
		for _, p := range crashlabPhases(run) {
			sum.Phases = append(sum.Phases, crashlabPhaseJSON{p.Name, p.Time.Nanoseconds()})
		}
	}
	sum.ExitMeaning = crashlabExitMeaning[sum.ExitCode]
	byKind := rep.ByKind()
	for _, s := range crashlab.Statuses {
		sum.ByStatus[crashlabName(s)] = rep.Counts[s]
	}
	for _, k := range crashlab.StateKinds {
		m := map[string]int{}
		for _, s := range crashlab.Statuses {
			m[crashlabName(s)] = byKind[k][s]
		}
		sum.ByKind[crashlabName(k)] = m
	}
	verdicts := rep.Verdicts()
	for _, v := range crashlab.Verdicts {
		sum.Verdicts[crashlabName(v)] = verdicts[v]
	}
	for _, r := range rep.WithVerdict(crashlab.VerdictAllowed) {
		switch r.Status {
		case crashlab.StatusMountError:
			sum.UnmountableTorn++
		case crashlab.StatusFsckError:
			sum.FsckErrorTorn++
		}
	}
	sum.Error = strings.Join(crashlabErrorLines(run.Errors()), "; ")
	return enc.Encode(sum)
}

// crashlabName is a status, kind or verdict as JSON writes it
// ("mount_error", "flush_point").
func crashlabName(v encoding.TextMarshaler) string {
	b, _ := v.MarshalText()
	return string(b)
}

// crashlabTail returns the last n bytes of s at most, starting at a line.
func crashlabTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

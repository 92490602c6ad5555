package crashlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/mutate"
)

// Workload is what the writers of a lab run do.
type Workload string

// The workloads.
const (
	// FsyncWriters append 4 KiB records to files of their own through the
	// kernel file system and fsync after each; a record is acknowledged
	// when its fsync returned.
	FsyncWriters Workload = "fsync"
	// EarlyAck is the negative control: the same writers acknowledge a
	// record as soon as write() returned, before the fsync. Replays must
	// find acknowledged records missing.
	EarlyAck Workload = "early-ack"
	// SyncerWriters write their records with O_DIRECT into files of their
	// own, preallocated before the run, and make them durable with one
	// shared impl.Syncer (group commit): the user-space protocol, checked
	// on a real file system and device. A record is acknowledged when Sync
	// returned nil.
	SyncerWriters Workload = "syncer"
	// SyncerEarlySample is its negative control: each writer samples the
	// flush sequence before its write instead of after it
	// (Syncer.SyncSince with an early Sample), the read-before-writeback
	// mutant of the model.
	SyncerEarlySample Workload = "syncer-early-sample"
)

// Workloads lists every Workload.
var Workloads = []Workload{FsyncWriters, EarlyAck, SyncerWriters, SyncerEarlySample}

// LabOptions configure one record-and-replay run. A zero field takes its
// default where one is given; Validate gives the allowed ranges.
type LabOptions struct {
	FS        FS       // Ext4 or XFS
	Workload  Workload // one of Workloads, default FsyncWriters
	Writers   int      // 1 to MaxWriters, default 8
	Records   int      // records (fsyncs) per writer, 1 to MaxRecords, default 20
	ImageSize int64    // bytes, a multiple of 4096 from MinImageSize(FS) to MaxImageSize; default 128 MiB (ext4), 320 MiB (xfs)
	Random    int      // random crash states besides the flush points, 0 to MaxRandom (0: none)
	// Epoch adds the states of EpochStates (epoch.go): a crash after
	// every write, its epoch's writes landing in log order but for up to K
	// changes (0 to MaxK: dropped, reordered or torn writes).
	Epoch    bool
	K        int
	Parallel int    // replays at once, 1 to MaxParallel, default 4
	Seed     uint64 // seed of the random crash states
	// FlushDelay makes every flush the recorder sees take this long, like
	// a disk whose flush costs milliseconds: 0 to MaxFlushDelay.
	FlushDelay time.Duration
	Dir        string       // where the lab makes its own directory (default os.TempDir())
	Progress   func(string) // stage lines, if set
	// Command is the user's program as the workload (CommandWorkload,
	// command.go): its argv. Writers and Records do not apply.
	Command []string
	// Check is the checker run on every crash state of a Command run:
	// its argv; nil for the default checker (command.go).
	Check []string
	// CheckTimeout bounds one run of Check: 0 for DefaultCheckTimeout, up
	// to MaxCheckTimeout.
	CheckTimeout time.Duration
	// Output receives the standard output and error of Command (nil:
	// discarded). Check's output is kept with a failing state instead.
	Output io.Writer
	// Save, if set, is a new file the recording is written to once it is
	// made (recording.go), before anything is replayed.
	Save string
	// Load, if set, is a recording to replay instead of recording: its
	// file system, image size, workload and command replace those here.
	Load *Recording
	// Shard and Shards: replay only the Shard-th (from 1) of Shards
	// disjoint parts of the states (those whose Index is Shard-1 modulo
	// Shards); 0 and 0: all of them.
	Shard, Shards int
	_             struct{}
}

// The bounds Validate enforces. They keep a run within what one machine
// does in minutes and what the recorder's log (1 GiB) holds; none is a
// limit of the method.
const (
	MaxWriters    = 256
	MaxRecords    = 100_000
	MaxRandom     = 100_000
	MaxParallel   = 32
	MaxFlushDelay = time.Second
	MaxImageSize  = 64 << 30
	MaxShards     = 10_000
)

// MinImageSize is the smallest image Validate accepts for fs: mkfs.xfs
// refuses file systems under 300 MiB, and ext4 needs room for a journal
// (mkfs.ext4 leaves it out below a few MiB, and the lab checks a
// journaling file system).
func MinImageSize(fs FS) int64 {
	if fs == XFS {
		return 300 << 20
	}
	return 16 << 20
}

// OptionError says which LabOptions field is out of range and what is
// allowed.
type OptionError struct {
	Field string // the LabOptions field, e.g. "Writers"
	Value any
	Want  string // the allowed values
}

func (e *OptionError) Error() string {
	if s, ok := e.Value.(string); ok {
		return fmt.Sprintf("lab options: %s is %q, want %s", e.Field, s, e.Want)
	}
	return fmt.Sprintf("lab options: %s is %v, want %s", e.Field, e.Value, e.Want)
}

// withDefaults fills in the zero fields that have a default.
func (o LabOptions) withDefaults() LabOptions {
	if r := o.Load; r != nil {
		o.FS, o.ImageSize, o.Workload, o.Command, o.Writers, o.Records = r.FS, r.ImageSize, r.Workload, r.Command, r.Writers, r.Records
	}
	if o.Workload == "" && len(o.Command) > 0 {
		o.Workload = CommandWorkload
	}
	if o.Workload == "" {
		o.Workload = FsyncWriters
	}
	if o.Writers == 0 {
		o.Writers = 8
	}
	if o.Records == 0 {
		o.Records = 20
	}
	if o.ImageSize == 0 {
		o.ImageSize = 128 << 20
		if o.FS == XFS {
			o.ImageSize = 320 << 20
		}
	}
	if o.Parallel == 0 {
		o.Parallel = 4
	}
	return o
}

// Validate checks every option (zero fields taking their defaults) and
// returns an *OptionError for the first one out of range.
func (o LabOptions) Validate() error {
	o = o.withDefaults()
	bad := func(field string, v any, format string, args ...any) error {
		return &OptionError{Field: field, Value: v, Want: fmt.Sprintf(format, args...)}
	}
	command := o.Workload == CommandWorkload
	switch {
	case o.FS != Ext4 && o.FS != XFS:
		return bad("FS", string(o.FS), "%s or %s", Ext4, XFS)
	case !slices.Contains(Workloads, o.Workload) && !command:
		return bad("Workload", string(o.Workload), "%s, %s, %s or %s", FsyncWriters, EarlyAck, SyncerWriters, SyncerEarlySample)
	case command && (len(o.Command) == 0 || o.Command[0] == ""):
		return bad("Command", strings.Join(o.Command, " "), "the program to run and its arguments")
	case !command && len(o.Command) > 0:
		return bad("Workload", string(o.Workload), "%s (or none) with a Command", CommandWorkload)
	case !command && len(o.Check) > 0:
		return bad("Check", strings.Join(o.Check, " "), "none: a checker checks a Command's crash states")
	case len(o.Check) > 0 && o.Check[0] == "":
		return bad("Check", strings.Join(o.Check, " "), "the checker to run and its arguments")
	case o.Shards < 0 || o.Shards > MaxShards || o.Shards == 0 && o.Shard != 0 || o.Shards > 0 && (o.Shard < 1 || o.Shard > o.Shards):
		return bad("Shard", fmt.Sprintf("%d/%d", o.Shard, o.Shards), "I/N with 1 <= I <= N <= %d (or none)", MaxShards)
	case o.K < 0 || o.K > MaxK:
		return bad("K", o.K, "0 to %d", MaxK)
	case o.K > 0 && !o.Epoch:
		return bad("K", o.K, "0 without Epoch (K bounds the Epoch states)")
	case o.CheckTimeout < 0 || o.CheckTimeout > MaxCheckTimeout:
		return bad("CheckTimeout", o.CheckTimeout, "0 (%v) to %v", DefaultCheckTimeout, MaxCheckTimeout)
	case o.Writers < 1 || o.Writers > MaxWriters:
		return bad("Writers", o.Writers, "1 to %d", MaxWriters)
	case o.Records < 1 || o.Records > MaxRecords:
		return bad("Records", o.Records, "1 to %d", MaxRecords)
	case o.Random < 0 || o.Random > MaxRandom:
		return bad("Random", o.Random, "0 to %d", MaxRandom)
	case o.Parallel < 1 || o.Parallel > MaxParallel:
		return bad("Parallel", o.Parallel, "1 to %d", MaxParallel)
	case o.FlushDelay < 0 || o.FlushDelay > MaxFlushDelay:
		return bad("FlushDelay", o.FlushDelay, "0 to %v", MaxFlushDelay)
	case o.ImageSize%4096 != 0 || o.ImageSize < MinImageSize(o.FS) || o.ImageSize > MaxImageSize:
		return bad("ImageSize", o.ImageSize, "a multiple of 4096 from %d (%d MiB, the least %s takes) to %d (%d GiB)",
			MinImageSize(o.FS), MinImageSize(o.FS)>>20, o.FS, int64(MaxImageSize), MaxImageSize>>30)
	case !command && o.Load == nil && int64(o.Writers)*int64(o.Records)*recordSize > o.ImageSize/2:
		// The records must fit with room to spare for metadata and the
		// journal, or the workload fails with ENOSPC half way.
		return bad("ImageSize", o.ImageSize, "at least twice the records' %d bytes (%d writers x %d records x %d)",
			int64(o.Writers)*int64(o.Records)*recordSize, o.Writers, o.Records, recordSize)
	}
	return nil
}

// LabResult is what a run recorded and what its replays found.
type LabResult struct {
	Options LabOptions // as run, defaults filled in
	Ops     int        // operations logged
	Flushes int
	Acked   int // records acknowledged by the workload
	// Acks are a Command's acknowledgements, in the order it made them.
	Acks []Ack
	// States is how many crash states the run meant to replay: the flush
	// points, the end of the log, the Epoch states and the random states
	// cut after mkfs, less Duplicates: those whose image and obligations
	// an earlier state has (dedupe.go). Generated counts them all.
	States, Generated, Duplicates int
	// EpochTruncated: the Epoch states stopped at EpochLimit.
	EpochTruncated bool
	// Recording is the ID of the recording saved (Save) or replayed
	// (Load); empty otherwise.
	Recording string
	// Phases are where the run's time went, in order; their times sum to
	// RunLab's.
	Phases []Phase
	Replay ReplayReport
	Lost   int // replays in which an acknowledged record was missing or wrong
	// Interrupted: the context ended before the run finished. The counts
	// cover what was done: the ops logged so far, the states replayed.
	Interrupted bool
	Recorded    time.Duration
}

const recordSize = 4096

// Phase is one stage of a run and the time it took.
type Phase struct {
	Name string
	Time time.Duration
}

// phaseClock cuts a run's time into phases.
type phaseClock struct {
	last time.Time
	out  *[]Phase
}

// tick ends the phase under way, name.
func (c *phaseClock) tick(name string) {
	now := time.Now()
	*c.out = append(*c.out, Phase{name, now.Sub(c.last)})
	c.last = now
}

// ack is one acknowledged record: writer w's record i, acknowledged once
// the log held seq operations.
type ack struct {
	w, i int
	seq  uint64
}

// RunLab records the workload on a fresh file system through the recorder,
// then replays the crash states of the log and checks, in each, that every
// record acknowledged before the crash point is there. It validates opt
// and runs Preflight before it creates anything. When ctx ends, it stops
// (the replays under way finish), cleans up, sets Interrupted and returns
// what was done with an error wrapping context.Cause(ctx).
func RunLab(ctx context.Context, opt LabOptions) (res LabResult, err error) {
	opt = opt.withDefaults()
	res = LabResult{Options: opt}
	clock := &phaseClock{last: time.Now(), out: &res.Phases}
	defer clock.tick("the rest")
	if err := opt.Validate(); err != nil {
		return res, err
	}
	if opt.Workload == CommandWorkload && opt.Load == nil {
		argv, err := ResolveCommand(opt.Command)
		if err != nil {
			return res, &OptionError{Field: "Command", Value: strings.Join(opt.Command, " "), Want: "a program to run: " + err.Error()}
		}
		opt.Command, res.Options.Command = argv, argv
	}
	if err := Preflight(opt.FS); err != nil {
		return res, err
	}
	clock.tick("pre-flight")
	progress := func(format string, args ...any) {
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf(format, args...))
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = true
		return res, fmt.Errorf("stopped before recording: %w", context.Cause(ctx))
	}
	var (
		ops     []Op
		acks    []ack
		cmdAcks []Ack
		ready   uint64
	)
	if r := opt.Load; r != nil {
		ops, cmdAcks, ready, res.Recording = r.Ops, r.Acks, r.Ready, r.ID
		for _, a := range r.RecordAcks {
			acks = append(acks, ack{a.W, a.I, a.Seq})
		}
		res.Acked, res.Acks = len(acks)+len(cmdAcks), cmdAcks
		res.Ops, res.Flushes = len(ops), countFlushes(ops)
		progress("replaying recording %s: %d ops (%d flushes), %d acknowledged", r.ID, res.Ops, res.Flushes, res.Acked)
	} else {
		ops, acks, cmdAcks, ready, err = recordRun(ctx, opt, &res, progress, clock.tick)
		if err != nil {
			return res, err
		}
		clock.tick("remove the recording's directory")
	}
	// A state's obligations: the acknowledgements at or before its cut.
	// Those of a later cut include those of an earlier one, so their
	// number names them.
	var ackSeqs []uint64
	for _, a := range acks {
		ackSeqs = append(ackSeqs, a.seq)
	}
	for _, a := range cmdAcks {
		ackSeqs = append(ackSeqs, a.Seq)
	}
	obls := func(st CrashState) int {
		n := 0
		for _, seq := range ackSeqs {
			if acknowledgedBy(seq, st.Cut) {
				n++
			}
		}
		return n
	}
	states, truncated := LabStates(ops, opt, ready)
	res.Generated, res.EpochTruncated = len(states), truncated
	clock.tick("compute the crash states")
	states, res.Duplicates = dedupe(states, ops, obls)
	clock.tick("find duplicate images")
	if opt.Shards > 0 {
		states = slices.DeleteFunc(states, func(st CrashState) bool { return st.Index%opt.Shards != opt.Shard-1 })
	}
	res.States = len(states)
	progress("%d ops (%d flushes), %d acknowledged; %d crash states, %d of them duplicates: replaying %d", res.Ops, res.Flushes, res.Acked, res.Generated, res.Duplicates, len(states))
	check := ackedCheck(acks)
	if opt.Workload == CommandWorkload {
		check = commandCheck(opt, cmdAcks)
	}
	rep, err := Replay(ctx, ops, opt.ImageSize, states, opt.FS, check, opt.Parallel)
	clock.tick("replay (build, mount, check, fsck)")
	res.Replay = rep
	for _, r := range rep.Results {
		if r.Status == StatusCheckError || r.CheckErr != nil {
			res.Lost++
		}
	}
	if err != nil && ctx.Err() != nil {
		res.Interrupted = true
		return res, fmt.Errorf("stopped after replaying %d of %d crash states: %w", len(rep.Results), len(states), err)
	}
	if err != nil {
		return res, fmt.Errorf("replay %d crash states: %w", len(states), err)
	}
	return res, nil
}

// recordRun records the workload (RunLab's first half): the log, the
// acknowledgements and the position at which mkfs had finished, saved to
// opt.Save if set.
func recordRun(ctx context.Context, opt LabOptions, res *LabResult, progress func(string, ...any), tick func(string)) (ops []Op, acks []ack, cmdAcks []Ack, ready uint64, err error) {
	// The run's supervisor makes the directory, and undoes whatever is
	// left in it (mounts, loop devices, files) at the end, or when this
	// process dies, however it dies (supervisor.go).
	sup, err := supervise(opt.Progress, opt.Dir)
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("make the lab's directory: %w", err)
	}
	dir, err := sup.mkdirTemp(opt.Dir)
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("make the lab's directory: %w", err)
	}
	defer func() {
		if rerr := sup.release(dir); rerr != nil && err == nil {
			err = fmt.Errorf("clean up the lab's directory: %w", rerr)
		}
	}()
	logPath := filepath.Join(dir, "ops.log")
	tick("start the supervisor")

	start := time.Now()
	acks, cmdAcks, ready, err = record(ctx, opt, dir, logPath, progress, tick)
	res.Recorded = time.Since(start)
	tick("unmount, stop the recorder")
	res.Acked, res.Acks = len(acks)+len(cmdAcks), cmdAcks
	if err != nil {
		if ctx.Err() != nil {
			res.Interrupted = true
			if ops, lerr := ReadLog(logPath); lerr == nil {
				res.Ops, res.Flushes = len(ops), countFlushes(ops)
			}
			return nil, nil, nil, 0, fmt.Errorf("stopped while recording: %w", context.Cause(ctx))
		}
		return nil, nil, nil, 0, fmt.Errorf("record %s on %s: %w", opt.Workload, opt.FS, err)
	}
	if ops, err = ReadLog(logPath); err != nil {
		return nil, nil, nil, 0, err
	}
	res.Ops, res.Flushes = len(ops), countFlushes(ops)
	tick("read the log")
	if opt.Save != "" {
		r := &Recording{FS: opt.FS, ImageSize: opt.ImageSize, Ready: ready, Workload: opt.Workload, Command: opt.Command, Acks: cmdAcks}
		if opt.Workload != CommandWorkload {
			r.Writers, r.Records = opt.Writers, opt.Records
		}
		for _, a := range acks {
			r.RecordAcks = append(r.RecordAcks, RecordAck{a.w, a.i, a.seq})
		}
		if err := r.save(opt.Save, logPath); err != nil {
			return nil, nil, nil, 0, err
		}
		res.Recording = r.ID
		progress("saved the recording to %s (id %s)", opt.Save, r.ID)
		tick("save the recording")
	}
	return ops, acks, cmdAcks, ready, nil
}

// LabStates returns the crash states of a run's log, numbered: the flush
// points and the end of the log, the Epoch states (with opt.Epoch), then
// opt.Random random ones, each cut after op ready (mkfs finished: a crash
// before it leaves no file system and nothing acknowledged), and whether
// the Epoch states stopped at EpochLimit. The same log and options give
// the same states.
func LabStates(ops []Op, opt LabOptions, ready uint64) (states []CrashState, truncated bool) {
	var random []CrashState
	for _, st := range CrashStatesFrom(ops, opt.Random, opt.Seed, ready) {
		switch {
		case st.Kind == Random:
			random = append(random, st)
		default:
			states = append(states, st)
		}
	}
	if opt.Epoch {
		var epoch []CrashState
		epoch, truncated = EpochStates(ops, opt.K, ready)
		states = append(states, epoch...)
	}
	states = append(states, random...)
	for i := range states {
		states[i].Index = i
	}
	return states, truncated
}

func countFlushes(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Kind == OpFlush {
			n++
		}
	}
	return n
}

// record runs the workload on a fresh file system on the recorder's loop
// device and returns the acknowledgements and the log position at which
// mkfs had finished (mkfs syncs the device before it exits).
func record(ctx context.Context, opt LabOptions, dir, logPath string, progress func(string, ...any), tick func(string)) (acks []ack, cmdAcks []Ack, ready uint64, err error) {
	rec, err := StartRecorder(RecorderOptions{Dir: dir, ImageSize: opt.ImageSize, LogPath: logPath, FlushDelay: opt.FlushDelay, Progress: opt.Progress})
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() {
		if cerr := rec.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	dev := rec.Device()
	tick("start the recorder")
	progress("recorder on %s; mkfs.%s", dev, opt.FS)
	mkfs := []string{"mkfs.ext4", "-q", "-F", dev}
	if opt.FS == XFS {
		mkfs = []string{"mkfs.xfs", "-q", "-f", dev}
	}
	if _, err := runTool(ctx, mkfs[0], mkfs[1:]...); err != nil {
		return nil, nil, 0, err
	}
	ready = uint64(rec.Ops())
	tick("mkfs")
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return nil, nil, 0, err
	}
	// A mount(8) killed half-way could leave a mount behind: let it finish.
	if _, err := runTool(context.WithoutCancel(ctx), "mount", "-t", string(opt.FS), dev, mnt); err != nil {
		return nil, nil, 0, err
	}
	defer func() {
		if _, uerr := runTool(context.Background(), "umount", mnt); uerr != nil && err == nil {
			err = uerr
		}
	}()
	tick("mount")
	if opt.Workload == CommandWorkload {
		progress("running %s in %s", quoteCommand(opt.Command), mnt)
		cmdAcks, err := runCommand(ctx, opt, mnt, rec)
		tick("workload")
		if err == nil {
			// The cause of the program's I/O errors (a full log, the
			// recorder's supervisor gone) before what the program made
			// of them.
			err = rec.Err()
		} else if rerr := rec.Err(); rerr != nil && ctx.Err() == nil {
			err = rerr
		}
		return nil, cmdAcks, ready, err
	}
	progress("%d writers x %d records (%s) on %s", opt.Writers, opt.Records, opt.Workload, opt.FS)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, opt.Writers)
	acked := func(a ack) {
		mu.Lock()
		acks = append(acks, a)
		mu.Unlock()
	}
	if opt.Workload == SyncerWriters || opt.Workload == SyncerEarlySample {
		files, err := preallocate(mnt, opt)
		if err != nil {
			return nil, nil, 0, err
		}
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		shared := impl.Handles{Dev: files[0], Queue: &impl.WaitQueue{},
			Seq: impl.FlushSeq{Submitted: &impl.Word{}, Completed: &impl.Word{}, MB: impl.Fence{}}}
		base, err := impl.NewSyncer(shared, impl.GroupCommit)
		if err != nil {
			return nil, nil, 0, err
		}
		for w := 0; w < opt.Writers; w++ {
			h := shared
			h.Dev = files[w]
			wg.Go(func() { errs[w] = syncRecords(ctx, opt, w, files[w], base.Bind(h), rec, acked) })
		}
	} else {
		for w := 0; w < opt.Writers; w++ {
			wg.Go(func() { errs[w] = writeRecords(ctx, opt, mnt, w, rec, acked) })
		}
	}
	wg.Wait()
	tick("workload")
	if ctx.Err() != nil {
		// Every writer stops with the same error: say it once, and keep
		// what was acknowledged.
		return acks, nil, ready, context.Cause(ctx)
	}
	if err := rec.Err(); err != nil {
		// The cause of every writer's EIO (a full log, the recorder's
		// supervisor gone): say it once.
		return nil, nil, 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, 0, err
	}
	return acks, nil, ready, nil
}

func recordData(w, i int) []byte {
	b := make([]byte, recordSize)
	for j := range b {
		b[j] = byte(w*31 + i*7 + j%251)
	}
	binary.LittleEndian.PutUint32(b, uint32(w))
	binary.LittleEndian.PutUint32(b[4:], uint32(i))
	return b
}

func writeRecords(ctx context.Context, opt LabOptions, mnt string, w int, rec *Recorder, acked func(ack)) error {
	f, err := os.OpenFile(filepath.Join(mnt, fmt.Sprintf("w%d", w)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writer %d: %w", w, err)
	}
	defer f.Close()
	for i := 0; i < opt.Records; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := f.WriteAt(recordData(w, i), int64(i)*recordSize); err != nil {
			return fmt.Errorf("writer %d record %d: %w", w, i, err)
		}
		if opt.Workload == EarlyAck {
			acked(ack{w, i, uint64(rec.Ops())}) // wrong on purpose: before fsync
		}
		if err := unix.Fsync(int(f.Fd())); err != nil {
			return fmt.Errorf("writer %d record %d: fsync: %w", w, i, err)
		}
		if opt.Workload == FsyncWriters {
			// Everything the fsync sent was logged before it returned:
			// every crash after this point must keep the record.
			acked(ack{w, i, uint64(rec.Ops())})
		}
	}
	return nil
}

// preallocate creates each writer's file with its records' blocks written
// (zeros) and synced, so that the O_DIRECT record writes are overwrites
// that need no metadata, and opens them with impl.Open.
func preallocate(mnt string, opt LabOptions) ([]*impl.File, error) {
	var files []*impl.File
	for w := 0; w < opt.Writers; w++ {
		path := filepath.Join(mnt, fmt.Sprintf("w%d", w))
		f, err := os.Create(path)
		if err == nil {
			_, err = f.WriteAt(make([]byte, opt.Records*recordSize), 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if f != nil {
			f.Close()
		}
		if err != nil {
			return files, fmt.Errorf("preallocate writer %d's file: %w", w, err)
		}
		df, err := impl.Open(path, impl.OpenOptions{})
		if err != nil {
			return files, fmt.Errorf("preallocate writer %d's file: %w", w, err)
		}
		files = append(files, df)
	}
	return files, nil
}

// syncRecords writes writer w's records with O_DIRECT and makes each
// durable with the shared Syncer, bound to this writer's file (its Flush is
// that file's fdatasync, a cache flush of the whole device).
func syncRecords(ctx context.Context, opt LabOptions, w int, f *impl.File, s *impl.Syncer, rec *Recorder, acked func(ack)) error {
	buf := impl.AlignedBuffer(recordSize, f.MemoryAlignment())
	for i := 0; i < opt.Records; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		copy(buf, recordData(w, i))
		var early int64
		if opt.Workload == SyncerEarlySample {
			early = s.Sample() // wrong on purpose: before the write
		}
		if err := f.WriteAt(buf, int64(i)*recordSize, 0); err != nil {
			return fmt.Errorf("writer %d record %d: %w", w, i, err)
		}
		var err error
		if opt.Workload == SyncerEarlySample {
			err = s.SyncSince(early)
		} else {
			err = s.Sync()
		}
		if err != nil {
			return fmt.Errorf("writer %d record %d: sync: %w", w, i, err)
		}
		acked(ack{w, i, uint64(rec.Ops())})
	}
	return nil
}

// ackedCheck checks that every record acknowledged at or before the crash
// state's cut reads back intact.
func ackedCheck(acks []ack) Check {
	return func(mnt string, st CrashState) error {
		buf := make([]byte, recordSize)
		for _, a := range acks {
			if !acknowledgedBy(a.seq, st.Cut) {
				continue
			}
			f, err := os.Open(filepath.Join(mnt, fmt.Sprintf("w%d", a.w)))
			if err != nil {
				return fmt.Errorf("writer %d's record %d was acknowledged at op %d: %w", a.w, a.i, a.seq, err)
			}
			_, err = f.ReadAt(buf, int64(a.i)*recordSize)
			f.Close()
			if err != nil {
				return fmt.Errorf("writer %d's record %d, acknowledged at op %d, is gone: %w", a.w, a.i, a.seq, err)
			}
			if string(buf) != string(recordData(a.w, a.i)) {
				return fmt.Errorf("writer %d's record %d, acknowledged at op %d, reads back wrong", a.w, a.i, a.seq)
			}
		}
		return nil
	}
}

// acknowledgedBy reports whether a record acknowledged at log position seq
// (its sync returned once the log held seq ops) was acknowledged before a
// crash after op cut. The boundary is inclusive: a crash after op seq
// comes after every op the sync waited for, so the record must be there.
// (The mutation AckOffByOne moves the boundary by one op: the record
// acknowledged exactly at the cut goes unchecked.)
func acknowledgedBy(seq, cut uint64) bool {
	if mutate.On(mutate.AckOffByOne) {
		return seq < cut
	}
	return seq <= cut
}

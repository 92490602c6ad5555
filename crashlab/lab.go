package crashlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flushproof/flushproof/impl"
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

// LabOptions configure one record-and-replay run.
type LabOptions struct {
	FS        FS       // Ext4 or XFS
	Workload  Workload // FsyncWriters or EarlyAck
	Writers   int      // default 8
	Records   int      // records (fsyncs) per writer, default 20
	ImageSize int64    // default 128 MiB (ext4), 320 MiB (xfs)
	Random    int      // random crash states besides the flush points, default 500
	Parallel  int      // replays at once, default 4
	Seed      uint64
	// FlushDelay makes every flush the recorder sees take this long, like
	// a disk whose flush costs milliseconds.
	FlushDelay time.Duration
	Dir        string       // where the lab makes its own directory (default os.TempDir())
	Progress   func(string) // stage lines, if set
	_          struct{}
}

// LabResult is what a run recorded and what its replays found.
type LabResult struct {
	Ops      int // operations logged
	Flushes  int
	Acked    int // records acknowledged by the workload
	Replay   ReplayReport
	Lost     int // replays in which an acknowledged record was missing or wrong
	Recorded time.Duration
}

const recordSize = 4096

// ack is one acknowledged record: writer w's record i, acknowledged once
// the log held seq operations.
type ack struct {
	w, i int
	seq  uint64
}

// RunLab records the workload on a fresh file system through the recorder,
// then replays the crash states of the log and checks, in each, that every
// record acknowledged before the crash point is there.
func RunLab(ctx context.Context, opt LabOptions) (res LabResult, err error) {
	if opt.FS != Ext4 && opt.FS != XFS {
		return res, fmt.Errorf("crashlab: file system %q, want ext4 or xfs", opt.FS)
	}
	if opt.Workload == "" {
		opt.Workload = FsyncWriters
	}
	switch opt.Workload {
	case FsyncWriters, EarlyAck, SyncerWriters, SyncerEarlySample:
	default:
		return res, fmt.Errorf("crashlab: workload %q, want %s, %s, %s or %s", opt.Workload, FsyncWriters, EarlyAck, SyncerWriters, SyncerEarlySample)
	}
	if opt.Writers == 0 {
		opt.Writers = 8
	}
	if opt.Records == 0 {
		opt.Records = 20
	}
	if opt.ImageSize == 0 {
		opt.ImageSize = 128 << 20
		if opt.FS == XFS {
			opt.ImageSize = 320 << 20
		}
	}
	if opt.Parallel == 0 {
		opt.Parallel = 4
	}
	if opt.Writers < 1 || opt.Records < 1 || opt.Random < 0 || opt.Parallel < 1 || opt.FlushDelay < 0 {
		return res, fmt.Errorf("crashlab: writers, records and parallel must be >= 1, random and flush delay >= 0")
	}
	if missing := ReplayTools(opt.FS); len(missing) > 0 {
		return res, fmt.Errorf("crashlab: missing tools for %s: %v", opt.FS, missing)
	}
	progress := func(format string, args ...any) {
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf(format, args...))
		}
	}
	// The run's supervisor makes the directory, and undoes whatever is
	// left in it (mounts, loop devices, files) at the end, or when this
	// process dies, however it dies (supervisor.go).
	sup, err := supervise(opt.Progress, opt.Dir)
	if err != nil {
		return res, fmt.Errorf("crashlab: %w", err)
	}
	dir, err := sup.mkdirTemp(opt.Dir)
	if err != nil {
		return res, fmt.Errorf("crashlab: %w", err)
	}
	defer func() {
		if rerr := sup.release(dir); rerr != nil && err == nil {
			err = fmt.Errorf("crashlab: %w", rerr)
		}
	}()
	logPath := filepath.Join(dir, "ops.log")

	start := time.Now()
	acks, ready, err := record(ctx, opt, dir, logPath, progress)
	if err != nil {
		return res, err
	}
	res.Recorded = time.Since(start)
	ops, err := ReadLog(logPath)
	if err != nil {
		return res, fmt.Errorf("crashlab: read the log: %w", err)
	}
	res.Ops, res.Acked = len(ops), len(acks)
	for _, op := range ops {
		if op.Kind == OpFlush {
			res.Flushes++
		}
	}
	// A crash before mkfs finished leaves no file system and nothing
	// acknowledged: replay the states from the end of mkfs on.
	var states []CrashState
	for _, st := range CrashStates(ops, opt.Random, opt.Seed) {
		if st.Cut >= ready {
			states = append(states, st)
		}
	}
	progress("recorded %d ops (%d flushes), %d records acknowledged in %v; replaying %d crash states", res.Ops, res.Flushes, res.Acked, res.Recorded.Round(time.Millisecond), len(states))
	rep, err := Replay(ctx, ops, opt.ImageSize, states, opt.FS, ackedCheck(acks), opt.Parallel)
	res.Replay = rep
	for _, r := range rep.Results {
		if r.Status == StatusCheckError || r.CheckErr != nil {
			res.Lost++
		}
	}
	return res, err
}

// record runs the workload on a fresh file system on the recorder's loop
// device and returns the acknowledgements and the log position at which
// mkfs had finished (mkfs syncs the device before it exits).
func record(ctx context.Context, opt LabOptions, dir, logPath string, progress func(string, ...any)) (acks []ack, ready uint64, err error) {
	rec, err := StartRecorder(RecorderOptions{Dir: dir, ImageSize: opt.ImageSize, LogPath: logPath, FlushDelay: opt.FlushDelay, Progress: opt.Progress})
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if cerr := rec.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	dev := rec.Device()
	progress("recorder on %s; mkfs.%s", dev, opt.FS)
	mkfs := []string{"mkfs.ext4", "-q", "-F", dev}
	if opt.FS == XFS {
		mkfs = []string{"mkfs.xfs", "-q", "-f", dev}
	}
	if out, err := combinedOutput(command(ctx, mkfs[0], mkfs[1:]...)); err != nil {
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("crashlab: recording interrupted: %w", ctx.Err())
		}
		return nil, 0, fmt.Errorf("crashlab: %v: %w: %s", mkfs, err, out)
	}
	ready = uint64(rec.Ops())
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return nil, 0, fmt.Errorf("crashlab: %w", err)
	}
	// A mount(8) killed half-way could leave a mount behind: let it finish.
	if out, err := combinedOutput(command(context.WithoutCancel(ctx), "mount", "-t", string(opt.FS), dev, mnt)); err != nil {
		return nil, 0, fmt.Errorf("crashlab: mount %s on %s: %w: %s", dev, mnt, err, out)
	}
	defer func() {
		if out, uerr := combinedOutput(command(context.Background(), "umount", mnt)); uerr != nil && err == nil {
			err = fmt.Errorf("crashlab: umount %s: %w: %s", mnt, uerr, out)
		}
	}()
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
			return nil, 0, err
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
			return nil, 0, err
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
	if err := ctx.Err(); err != nil {
		// Every writer stopped for it: say it once.
		return nil, 0, fmt.Errorf("crashlab: recording interrupted: %w", err)
	}
	if err := rec.Err(); err != nil {
		// The cause of every writer's EIO (a full log, the recorder's
		// supervisor gone): say it once.
		return nil, 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	return acks, ready, nil
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
		return fmt.Errorf("crashlab: writer %d: %w", w, err)
	}
	defer f.Close()
	for i := 0; i < opt.Records; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := f.WriteAt(recordData(w, i), int64(i)*recordSize); err != nil {
			return fmt.Errorf("crashlab: writer %d record %d: %w", w, i, err)
		}
		if opt.Workload == EarlyAck {
			acked(ack{w, i, uint64(rec.Ops())}) // wrong on purpose: before fsync
		}
		if err := unix.Fsync(int(f.Fd())); err != nil {
			return fmt.Errorf("crashlab: writer %d record %d: fsync: %w", w, i, err)
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
			return files, fmt.Errorf("crashlab: preallocate %s: %w", path, err)
		}
		df, err := impl.Open(path, impl.OpenOptions{})
		if err != nil {
			return files, fmt.Errorf("crashlab: %w", err)
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
			return fmt.Errorf("crashlab: writer %d record %d: %w", w, i, err)
		}
		var err error
		if opt.Workload == SyncerEarlySample {
			err = s.SyncSince(early)
		} else {
			err = s.Sync()
		}
		if err != nil {
			return fmt.Errorf("crashlab: writer %d record %d: sync: %w", w, i, err)
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
			if a.seq > st.Cut {
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

//go:build linux

package crashlab

// The recorder, as the worker sees it: a loop device whose every write,
// flush, discard and zero-range is logged. The FUSE server behind it runs
// in the run's supervisor process (supervisor.go, recorder_fuse.go), so
// that no signal to the worker, SIGKILL included, can leave the kernel
// waiting for a server that died with it.

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RecorderOptions configure StartRecorder.
type RecorderOptions struct {
	// Dir is where the recorder makes a directory of its own (for the
	// mount point, and for the backing file when /dev/shm cannot hold it);
	// os.TempDir() if empty. Only that new directory is removed at Close.
	Dir string
	// ImageSize is the image's size in bytes, a positive multiple of 4096.
	ImageSize int64
	// LogPath is the log file to create (it must not exist). It outlives
	// the recorder: Close closes it but never removes it.
	LogPath string
	// LogMax bounds the log file's size; 1 GiB if zero. When a record does
	// not fit, the I/O that produced it fails with EIO and the recorder
	// stays failed (Err, Close report ErrLogFull).
	LogMax int64
	// FlushDelay, if positive, delays each flush's reply, to emulate a
	// disk whose cache flush costs that long.
	FlushDelay time.Duration
	// NoLog serves the image without logging anything (LogPath must then
	// be empty): a device whose flushes cost FlushDelay, for benchmarks.
	NoLog bool
	// Progress, if set, gets one line for each leftover of an earlier,
	// dead run that StartRecorder swept away; standard error if nil.
	Progress func(string)

	_ struct{}
}

// Recorder is a running recorder: a loop device whose every write, flush,
// discard and zero-range is logged. The image starts as ImageSize zero
// bytes, so replaying the log onto zeros rebuilds any state it had.
type Recorder struct {
	opt    RecorderOptions
	sup    *supervisorClient
	id     int
	dev    string
	dir    string // the run's directory in opt.Dir
	shmDir string // the run's directory in /dev/shm, or ""
	mnt    string

	ops       atomic.Int64 // the last count the supervisor gave
	closeOnce sync.Once
	closed    atomic.Bool
	failure   error // Err once closed
	closeErr  error
}

// StartRecorder creates the backing file, mounts the FUSE server and
// attaches the loop device, all in the run's supervisor process, after
// sweeping the leftovers of earlier runs that died. It needs root,
// /dev/fuse and loop devices. On error it has undone everything it did.
func StartRecorder(opt RecorderOptions) (*Recorder, error) {
	switch {
	case opt.ImageSize <= 0 || opt.ImageSize%4096 != 0:
		return nil, fmt.Errorf("start recorder: ImageSize %d is not a positive multiple of 4096", opt.ImageSize)
	case opt.LogPath == "" && !opt.NoLog:
		return nil, errors.New("start recorder: LogPath is empty")
	case opt.LogPath != "" && opt.NoLog:
		return nil, errors.New("start recorder: LogPath is set but NoLog says not to log")
	}
	if opt.LogMax == 0 {
		opt.LogMax = 1 << 30
	}
	if opt.Dir == "" {
		opt.Dir = os.TempDir()
	}
	// The supervisor has its own working directory: hand it absolute paths.
	var err error
	if opt.Dir, err = filepath.Abs(opt.Dir); err != nil {
		return nil, fmt.Errorf("start recorder: %w", err)
	}
	if opt.LogPath != "" {
		if opt.LogPath, err = filepath.Abs(opt.LogPath); err != nil {
			return nil, fmt.Errorf("start recorder: %w", err)
		}
	}
	sup, err := supervise(opt.Progress, opt.Dir)
	if err != nil {
		return nil, fmt.Errorf("start recorder: %w", err)
	}
	resp, err := sup.call(request{Op: opRecStart, Start: &recorderSpec{Dir: opt.Dir, ImageSize: opt.ImageSize,
		LogPath: opt.LogPath, LogMax: opt.LogMax, FlushDelay: opt.FlushDelay, NoLog: opt.NoLog}})
	if err != nil {
		return nil, fmt.Errorf("start recorder: %w", err)
	}
	in := resp.Rec
	return &Recorder{opt: opt, sup: sup, id: in.ID, dev: in.Dev, dir: in.Dir, shmDir: in.ShmDir, mnt: in.Mnt}, nil
}

// Device is the loop device, /dev/loopN.
func (r *Recorder) Device() string { return r.dev }

// ImagePath is the FUSE file the loop device sits on.
func (r *Recorder) ImagePath() string { return filepath.Join(r.mnt, imageName) }

// ImageSize is the image's size in bytes.
func (r *Recorder) ImageSize() int64 { return r.opt.ImageSize }

// LogPath is the log file.
func (r *Recorder) LogPath() string { return r.opt.LogPath }

// Ops is the number of operations logged so far (once closed: in all).
// Every operation whose I/O completed before the call is counted.
func (r *Recorder) Ops() int {
	if !r.closed.Load() {
		if resp, err := r.sup.call(request{Op: opRecStatus, Rec: r.id}); err == nil {
			r.ops.Store(resp.Ops)
		}
	}
	return int(r.ops.Load())
}

// Err is the error that made the recorder fail (a full log, a failed
// backing write, its supervisor gone), or nil. Once failed, every write,
// flush and fallocate fails with EIO, so the log is never silently
// incomplete.
func (r *Recorder) Err() error {
	if r.closed.Load() {
		return r.failure
	}
	resp, err := r.sup.call(request{Op: opRecStatus, Rec: r.id})
	if err != nil {
		return fmt.Errorf("recorder (%s): %w", r.dev, err)
	}
	return resp.Failed.err()
}

// Close detaches the loop device, unmounts the FUSE server, and removes
// the backing file and the recorder's directory; the log stays. It returns
// the recorder's failure (Err), if any, and any teardown error. Calling it
// again returns the same.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		resp, err := r.sup.call(request{Op: opRecClose, Rec: r.id})
		if gone := r.sup.err(); err != nil && gone != nil {
			// The supervisor was killed: the kernel aborted the FUSE
			// connection with it, so nothing waits; undo the rest here.
			r.failure = fmt.Errorf("recorder (%s): %w", r.dev, gone)
			r.closeErr = errors.Join(r.failure, releaseHere(r.dir, r.shmDir))
		} else {
			r.ops.Store(resp.Ops)
			r.failure = resp.Failed.err()
			r.closeErr = errors.Join(r.failure, err) // err: the teardown's
		}
		r.closed.Store(true)
	})
	return r.closeErr
}

// CloseOnSignal closes the recorder when the process receives one of sigs
// (os.Interrupt and SIGTERM if none are given), then re-raises the signal
// with its default action, so a command killed by the user leaves no loop
// device or mount behind and still dies of the signal. stop ends the
// watch; call it once the command closed the recorder itself.
func (r *Recorder) CloseOnSignal(sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			if err := r.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "crashlab: %v: %v\n", sig, err)
			}
			signal.Reset(sigs...)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-done:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

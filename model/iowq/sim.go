package iowq

import (
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/flushproof/flushproof/model/explore"
)

// Lock waits: the patch is about efficiency, not correctness. A timed run of
// System counts how often a worker had to wait for the inode's hash,
// for i_rwsem or in inode_dio_wait, and for how long.
//
// The timing is a discrete-event semantics laid over the same transitions
// the explorer checks: every enabled transition fires a fixed delay after
// it became enabled (Latency says how long, per kind of step), the
// earliest first, ties in a random order; a transition that is disabled
// before it fires (a worker about to take i_rwsem finds it taken) starts
// over when it is enabled again. Workers are io-wq threads, each bio is
// served by the disk independently, CPU steps of different workers run in
// parallel. All writes are queued at time 0, as if the application had
// submitted its whole batch at once.

// Latency is the latency model of Simulate.
type Latency struct {
	Dispatch time.Duration // io-wq hands a work item to a worker
	Lock     time.Duration // take or release i_rwsem; wake from a wait
	Submit   time.Duration // iomap_begin and bio submission (also a failed -EAGAIN attempt)
	Device   time.Duration // a bio, from submission until it has landed
	Complete time.Duration // end_io and the CQE
	Read     time.Duration // a direct read of one sector, with i_rwsem held shared
	Jitter   float64       // Device and Read vary uniformly within +-Jitter of the mean (0 to 1)
	_        struct{}
}

// DefaultLatency is a fast NVMe device: about 10 µs per 4 KiB bio, and
// a submission path of well under a microsecond.
func DefaultLatency() Latency {
	return Latency{
		Dispatch: 100 * time.Nanosecond,
		Lock:     50 * time.Nanosecond,
		Submit:   600 * time.Nanosecond,
		Device:   10 * time.Microsecond,
		Complete: 200 * time.Nanosecond,
		Read:     10 * time.Microsecond,
		Jitter:   0.2,
	}
}

func (l Latency) validate() error {
	for _, d := range []time.Duration{l.Dispatch, l.Lock, l.Submit, l.Device, l.Complete, l.Read} {
		if d < 0 {
			return fmt.Errorf("iowq latency model: negative duration in %+v", l)
		}
	}
	if l.Jitter < 0 || l.Jitter > 1 {
		return fmt.Errorf("iowq latency model: jitter %v, want 0 to 1", l.Jitter)
	}
	return nil
}

func (l Latency) jitter(rng *rand.Rand, d time.Duration) time.Duration {
	if l.Jitter == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + l.Jitter*(2*rng.Float64()-1)))
}

// delay is how long transition lb takes once enabled.
func (l Latency) delay(rng *rand.Rand, lb explore.Label) time.Duration {
	switch lb.Kind {
	case kPick:
		return l.Dispatch
	case kMap, kEAGAIN:
		return l.Submit
	case kZero, kLand:
		return l.jitter(rng, l.Device)
	case kEndIO:
		return l.Complete
	case kRead:
		return l.jitter(rng, l.Read)
	}
	return l.Lock
}

// Contention is what timed runs of one configuration did.
type Contention struct {
	Config     Config
	Runs       int
	Writes     int           // writes completed, over all runs
	LockWaits  int           // times a worker found i_rwsem taken
	HashWaits  int           // times a worker found the inode's hash taken
	DrainWaits int           // times inode_dio_wait found direct I/O in flight
	Retries    int           // -EAGAIN from IOMAP_DIO_OVERWRITE_ONLY, retried exclusive
	LockWait   time.Duration // total time workers waited for i_rwsem
	HashWait   time.Duration // ... for the hash
	DrainWait  time.Duration // ... in inode_dio_wait
	Latency    time.Duration // sum over writes: from queued (its worker free for it) to completed
	Elapsed    time.Duration // sum over runs: until the last write completed
	_          struct{}
}

// PerSecond is the simulated throughput in writes per second.
func (c Contention) PerSecond() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Writes) / c.Elapsed.Seconds()
}

// perWrite divides by the number of writes.
func (c Contention) perWrite(n int) float64 {
	if c.Writes == 0 {
		return 0
	}
	return float64(n) / float64(c.Writes)
}

// timer names an enabled transition for the timing: a worker or the
// reader has one at a time; the disk one per bio and one end_io per write.
type timer struct {
	actor, kind uint8
	id, arg     uint16
}

func (s *System) timer(l explore.Label) timer {
	switch {
	case int(l.Actor) != s.disk:
		return timer{actor: l.Actor}
	case l.Kind == kEndIO:
		return timer{actor: l.Actor, kind: l.Kind, id: l.ID}
	}
	return timer{actor: l.Actor, kind: l.Kind, id: l.ID, arg: l.Arg}
}

// Simulate runs cfg runs times under the latency model, with
// schedules drawn from seed, and adds up the waits. Every state of every run
// is checked (System.Check): a timed run is one schedule among those the
// explorer covers, so a violation is an error here too.
func Simulate(cfg Config, lat Latency, runs int, seed uint64) (Contention, error) {
	out := Contention{Config: cfg}
	if err := lat.validate(); err != nil {
		return out, err
	}
	sys, err := NewSystem(cfg)
	if err != nil {
		return out, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x10_3a_11))
	for r := 0; r < runs; r++ {
		if err := sys.timedRun(lat, rng, &out); err != nil {
			return out, fmt.Errorf("timed run %d of %s: %w", r+1, cfg.Row().Name(), err)
		}
		out.Runs++
	}
	return out, nil
}

// timedRun is one run; it adds what happened to c.
func (s *System) timedRun(lat Latency, rng *rand.Rand, c *Contention) error {
	type succ struct {
		l explore.Label
		s State
	}
	var (
		now     time.Duration
		st      = s.Init()[0]
		timers  = map[timer]time.Duration{}
		next    []succ
		why     [maxWorkers]blockReason   // what each worker is blocked on now
		since   [maxWorkers]time.Duration // since when
		episode [maxWorkers]bool          // it has waited since its last step
		queued  [maxWrites]time.Duration  // when each write's worker became free for it
		enabled = map[timer]bool{}
	)
	// observe updates the waits after a step (or at the start). A wait is
	// counted once per step a worker is trying to take, however often the
	// lock or hash changes hands meanwhile; the time counts while it is
	// blocked.
	observe := func() {
		for w := range s.cfg.Workers {
			b := s.blocked(st, w)
			if b == why[w] {
				continue
			}
			d := now - since[w]
			switch why[w] {
			case blockedLock:
				c.LockWait += d
			case blockedHash:
				c.HashWait += d
			case blockedDrain:
				c.DrainWait += d
			}
			if !episode[w] {
				switch b {
				case blockedLock:
					c.LockWaits++
				case blockedHash:
					c.HashWaits++
				case blockedDrain:
					c.DrainWaits++
				}
			}
			episode[w] = episode[w] || (b != notBlocked && b != blockedOwnIO)
			why[w], since[w] = b, now
		}
	}
	observe()
	for {
		if err := s.Check(st); err != nil {
			return err
		}
		next = next[:0]
		s.Next(st, func(l explore.Label, n State) { next = append(next, succ{l, n}) })
		if len(next) == 0 {
			if w := explore.Blocked[State](s, st); w != 0 {
				return fmt.Errorf("deadlock: %s wait", explore.ActorList(s.actors, w))
			}
			break
		}
		clear(enabled)
		best, nBest := -1, 0
		for i, sc := range next {
			k := s.timer(sc.l)
			enabled[k] = true
			at, ok := timers[k]
			if !ok {
				at = now + lat.delay(rng, sc.l)
				timers[k] = at
			}
			switch {
			case best < 0 || at < timers[s.timer(next[best].l)]:
				best, nBest = i, 1
			case at == timers[s.timer(next[best].l)]:
				nBest++ // reservoir sampling among the ties
				if rng.IntN(nBest) == 0 {
					best = i
				}
			}
		}
		for k := range timers {
			if !enabled[k] {
				delete(timers, k)
			}
		}
		l := next[best].l
		now = timers[s.timer(l)]
		delete(timers, s.timer(l))
		switch l.Kind {
		case kEAGAIN:
			c.Retries++
		case kEndIO:
			c.Writes++
			c.Latency += now - queued[l.ID-1]
		case kWaitUnlock, kUnlock:
			if w := int(l.Actor); int(next[best].s.op[w]) < len(s.cfg.Workers[w]) {
				queued[s.curWrite(next[best].s, w)-1] = now
			}
		}
		st = next[best].s
		if w := int(l.Actor); w < len(s.cfg.Workers) {
			episode[w] = false
		}
		observe()
	}
	c.Elapsed += now
	return nil
}

// ContentionCase is one line of the lock-wait report.
type ContentionCase struct {
	Workload string
	Config   Config
}

// PatchWorkload is the patch's benchmark in small: 8 workers, each
// writing 2 aligned blocks over a written file of 4 blocks (the patch: 8
// threads writing 4 KiB each to one file on XFS).
func PatchWorkload(submit Submit, fs FS) Config {
	c := Config{Submit: submit, FS: fs, Layout: "WWWW", Size: 8}
	for w := 0; w < 8; w++ {
		c.Workers = append(c.Workers, []Write{{Block: w % 4, Aligned: true}, {Block: (w + 1) % 4, Aligned: true}})
	}
	return c
}

// MixedWorkload is the same 8 workers on a preallocated (unwritten)
// file of 4 blocks: each first writes one sector (unaligned, sub-block
// zeroing), then a whole block.
func MixedWorkload(submit Submit, fs FS) Config {
	c := Config{Submit: submit, FS: fs, Layout: "UUUU", Size: 8}
	for w := 0; w < 8; w++ {
		c.Workers = append(c.Workers, []Write{{Block: w / 2, Sector: w % 2}, {Block: (w + 1) % 4, Aligned: true}})
	}
	return c
}

// ContentionCases lists the report's lines: the correct file systems,
// hashed and unhashed, on the patch's workload and on the mixed one.
func ContentionCases() []ContentionCase {
	var out []ContentionCase
	for _, wl := range []struct {
		name string
		make func(Submit, FS) Config
	}{{"patch: 8x2 aligned overwrites", PatchWorkload}, {"mixed: 8x(1 unaligned + 1 aligned), unwritten", MixedWorkload}} {
		for _, fs := range FileSystems() {
			if fs.Mutant() {
				continue
			}
			for _, sub := range []Submit{Hashed, Unhashed} {
				out = append(out, ContentionCase{Workload: wl.name, Config: wl.make(sub, fs)})
			}
		}
	}
	return out
}

// ContentionReport simulates every case of ContentionCases.
func ContentionReport(lat Latency, runs int, seed uint64) ([]Contention, error) {
	var out []Contention
	for i, c := range ContentionCases() {
		r, err := Simulate(c.Config, lat, runs, seed+uint64(i))
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// WriteContention prints the lock-wait report as a table: per workload,
// io-wq submission and file system, waits per write for i_rwsem, the hash
// and inode_dio_wait, -EAGAIN retries per write, the mean time a write's
// worker spent waiting, the mean write latency and the simulated throughput.
func WriteContention(w io.Writer, lat Latency, runs int, seed uint64) error {
	rs, err := ContentionReport(lat, runs, seed)
	if err != nil {
		return err
	}
	cases := ContentionCases()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tSUBMIT\tFS\tWRITES\tLOCK WAITS/W\tHASH WAITS/W\tDIO WAITS/W\t-EAGAIN/W\tWAITED/W\tLATENCY\tWRITES/S")
	for i, r := range rs {
		waited := time.Duration(0)
		if r.Writes > 0 {
			waited = (r.LockWait + r.HashWait + r.DrainWait) / time.Duration(r.Writes)
		}
		lat := time.Duration(0)
		if r.Writes > 0 {
			lat = r.Latency / time.Duration(r.Writes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%v\t%v\t%.0fK\n", cases[i].Workload, r.Config.Submit, r.Config.FS, r.Writes,
			r.perWrite(r.LockWaits), r.perWrite(r.HashWaits), r.perWrite(r.DrainWaits), r.perWrite(r.Retries),
			waited.Round(10*time.Nanosecond), lat.Round(10*time.Nanosecond), r.PerSecond()/1000)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "(%d timed runs per line, seed %d; latencies: dispatch %v, lock %v, submit %v, device %v +-%.0f%%, complete %v)\n",
		runs, seed, lat.Dispatch, lat.Lock, lat.Submit, lat.Device, lat.Jitter*100, lat.Complete)
	return err
}

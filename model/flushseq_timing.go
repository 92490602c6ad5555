package model

import (
	"math/rand/v2"
	"strings"
	"time"
)

// FsyncLatency is a latency model for the flush-sequence protocol: how long
// a data write and a cache flush take from submission to completion (each
// drawn uniformly within +-Jitter of the mean), and how long a task works
// between an fsync's return and its next write (uniform in [0, Think]). CPU
// steps take no time; tasks that can act at the same moment act in a random
// order.
type FsyncLatency struct {
	Write  time.Duration
	Flush  time.Duration
	Think  time.Duration
	Jitter float64 // 0 to 1
	// Overwrite is the share of fsyncs with no metadata to log (fdatasync
	// after an overwrite): their log force has nothing to do. The others
	// append, so their log force always has a transaction to write.
	Overwrite float64
}

func (l FsyncLatency) draw(rng *rand.Rand, mean time.Duration) time.Duration {
	if l.Jitter <= 0 {
		return mean
	}
	f := 1 + l.Jitter*(2*rng.Float64()-1)
	return time.Duration(float64(mean) * f)
}

// FsyncTiming is what one timed run of FsyncSystem did.
type FsyncTiming struct {
	Fsyncs  int           // fsyncs that returned 0
	Skipped int           // of those, the ones that returned without a flush of their own
	Flushes int           // flushes submitted
	Unsafe  int           // fsyncs that returned 0 with their write not durable (a crash then loses it)
	Elapsed time.Duration // simulated time until every task finished
	// Exposed are the windows in which an acknowledged write was not
	// durable: from an unsafe return until a flush made it (or a later
	// write of the block) durable. A crash in a window loses that task's
	// fsynced block.
	Exposed []Window
}

// Window is an interval of simulated time, [From, To).
type Window struct{ From, To time.Duration }

// CrashReplays picks n crash times uniformly in [0, Elapsed) and returns in
// how many of them some fsynced block would be lost.
func (f FsyncTiming) CrashReplays(n int, seed uint64) int {
	if f.Elapsed <= 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))
	lost := 0
	for i := 0; i < n; i++ {
		at := time.Duration(rng.Int64N(int64(f.Elapsed)))
		for _, w := range f.Exposed {
			if w.From <= at && at < w.To {
				lost++
				break
			}
		}
	}
	return lost
}

// SkipShare is Skipped / Fsyncs.
func (f FsyncTiming) SkipShare() float64 {
	if f.Fsyncs == 0 {
		return 0
	}
	return float64(f.Skipped) / float64(f.Fsyncs)
}

// SimulateFsync runs the flush-sequence program (FsyncProgram) once in the
// model world under a latency model: the same code that the rapid runs
// check, scheduled by time instead of at random. Device steps happen when
// their latency has passed; tasks take no time between device calls except
// their think time after an fsync; among the steps possible at one moment
// the choice is random (seeded). A mutant's fsync that returns with its
// write not durable is counted in Unsafe and the run goes on; the windows in
// which an acknowledged write is not durable are kept for crash replays.
// There are no flush failures (they have no latency model).
func SimulateFsync(v FsyncVariant, tasks, fsyncs int, m MemoryModel, lat FsyncLatency, seed uint64) (FsyncTiming, error) {
	p := &FsyncProgram{Variant: v, Fsyncs: fsyncs, LogForce: true, Continue: true}
	w, err := NewWorld(p.WorldConfig(tasks, m))
	if err != nil {
		return FsyncTiming{}, err
	}
	c := &timedChooser{w: w, p: p, lat: lat, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		taskDue: make([]time.Duration, tasks), writeDue: make([]time.Duration, tasks),
		flushDue: make([]time.Duration, tasks), joinedAt: make([]time.Duration, tasks),
		exposedSince: make([]time.Duration, tasks)}
	for t := range c.exposedSince {
		c.exposedSince[t] = -1
	}
	if _, err := p.Run(w, c); err != nil {
		return FsyncTiming{}, err
	}
	c.out.Fsyncs, c.out.Skipped, c.out.Unsafe = p.Returned, p.Skipped, p.Unsafe
	c.out.Elapsed = c.now
	for t := range c.exposedSince {
		c.closeWindow(t) // exposed until the end of the run
	}
	return c.out, nil
}

// timedChooser schedules a world run by simulated time.
type timedChooser struct {
	w   *World
	p   *FsyncProgram
	lat FsyncLatency
	rng *rand.Rand
	now time.Duration

	taskDue, writeDue, flushDue, joinedAt []time.Duration
	exposedSince                          []time.Duration // per task: since when its acknowledged write is not durable; -1 if it is
	out                                   FsyncTiming
	ready                                 []int
}

func (c *timedChooser) closeWindow(t int) {
	if c.exposedSince[t] >= 0 {
		c.out.Exposed = append(c.out.Exposed, Window{c.exposedSince[t], c.now})
		c.exposedSince[t] = -1
	}
}

// due is when an action can happen.
func (c *timedChooser) due(a Action) time.Duration {
	switch a.Kind {
	case ActWriteDone:
		return c.writeDue[a.Task]
	case ActFlushDone:
		return c.flushDue[a.Task]
	case ActDrain:
		return c.now // TSO store buffers drain at once
	case ActChoice:
		if a.Name == iclogEscape {
			// A log force whose iclog nobody else wrote writes it after
			// waiting about as long as a flush takes.
			return max(c.taskDue[a.Task], c.joinedAt[a.Task]+c.lat.Flush)
		}
	}
	return c.taskDue[a.Task]
}

// Choose implements Chooser.
func (c *timedChooser) Choose(acts []Action) int {
	c.ready = c.ready[:0]
	// A log force chooses by the workload; other task steps happen now, in
	// random order; otherwise the earliest device step.
	for i, a := range acts {
		if a.Kind == ActChoice && strings.HasPrefix(a.Name, "log force: ") && a.Name != iclogEscape {
			if c.taskDue[a.Task] <= c.now {
				return c.logForce(acts, a.Task)
			}
			continue
		}
		if a.Task >= 0 && a.Kind != ActWriteDone && a.Kind != ActFlushDone && a.Kind != ActFlushFail && a.Kind != ActDrain &&
			a.Name != iclogEscape && c.taskDue[a.Task] <= c.now {
			c.ready = append(c.ready, i)
		}
	}
	if len(c.ready) > 0 {
		return c.ready[c.rng.IntN(len(c.ready))]
	}
	earliest := time.Duration(-1)
	for i, a := range acts {
		if a.Kind == ActFlushFail {
			continue
		}
		switch d := c.due(a); {
		case earliest < 0 || d < earliest:
			earliest, c.ready = d, append(c.ready[:0], i)
		case d == earliest:
			c.ready = append(c.ready, i)
		}
	}
	c.now = max(c.now, earliest)
	return c.ready[c.rng.IntN(len(c.ready))]
}

// logForce picks what task a's log force does: nothing if this fsync has no
// metadata to log (the Overwrite share); otherwise, as for an append
// workload, its transaction joins the iclog that another task writes next
// (if none does soon, it writes the iclog itself: iclogEscape).
func (c *timedChooser) logForce(acts []Action, a int) int {
	want := logJoin
	if c.rng.Float64() < c.lat.Overwrite {
		want = logNothing
	} else if c.w.cfg.Tasks == 1 {
		want = logOwn
	}
	for i, x := range acts {
		if x.Task == a && x.Kind == ActChoice && x.Name == want {
			return i
		}
	}
	panic("timed chooser: log force choice not offered")
}

// Observe implements Observer.
func (c *timedChooser) Observe(ev WorldEvent) {
	t := ev.Task
	switch ev.Kind {
	case ActWrite:
		c.writeDue[t] = c.now + c.lat.draw(c.rng, c.lat.Write)
	case ActFlush:
		c.flushDue[t] = c.now + c.lat.draw(c.rng, c.lat.Flush)
		c.out.Flushes++
	case ActChoice:
		if ev.Note == logJoin {
			c.joinedAt[t] = c.now
		}
	case ActNote:
		if strings.HasPrefix(ev.Note, "fsync returns") && c.lat.Think > 0 {
			c.taskDue[t] = c.now + time.Duration(c.rng.Int64N(int64(c.lat.Think)+1))
		}
		if ev.Note == "fsync returns 0" && !c.w.Survives(t, c.p.acked[t]) {
			c.exposedSince[t] = c.now
		}
	}
	for u, since := range c.exposedSince {
		if since >= 0 && c.w.Survives(u, c.p.acked[u]) {
			c.closeWindow(u) // a later flush made it durable after all
		}
	}
}

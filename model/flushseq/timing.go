package flushseq

import (
	"fmt"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"math/rand/v2"
	"time"
)

// Latency is a latency model for the flush-sequence protocol: how long
// a data write and a cache flush take from submission to completion (each
// drawn uniformly within +-Jitter of the mean), and how long a task works
// between an fsync's return and its next write (uniform in [0, Think]). CPU
// steps take no time; tasks that can act at the same moment act in a random
// order.
type Latency struct {
	Write  time.Duration
	Flush  time.Duration
	Think  time.Duration
	Jitter float64 // 0 to 1
	// Overwrite is the share of fsyncs with no metadata to log (fdatasync
	// after an overwrite): their log force has nothing to do. The others
	// append, so their log force always has a transaction to write.
	Overwrite float64
}

func (l Latency) draw(rng *rand.Rand, mean time.Duration) time.Duration {
	if l.Jitter <= 0 {
		return mean
	}
	f := 1 + l.Jitter*(2*rng.Float64()-1)
	return time.Duration(float64(mean) * f)
}

// Timing is what one timed run of flush-sequence code did.
type Timing struct {
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
func (f Timing) CrashReplays(n int, seed uint64) int {
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
func (f Timing) SkipShare() float64 {
	if f.Fsyncs == 0 {
		return 0
	}
	return float64(f.Skipped) / float64(f.Fsyncs)
}

// Code is flush-sequence code that runs in the model world and that
// a latency model can time: the straight-line program (Program), or a
// workload driving impl.Syncer, the code hwbench measures. Each task
// writes block task id and fsyncs it, round after round; at each fsync's
// return it marks Returned or Failed (Task.Reached) after
// updating Acked. A run that returns with a write not durable is counted
// in Counts().Unsafe and goes on (it does not fail the run).
type Code interface {
	// world.Config returns the world the code needs for tasks tasks.
	WorldConfig(tasks int, m memory.Model) world.Config
	// Run runs every task in w, with ch choosing each step.
	Run(w *world.World, ch world.Chooser) (world.Outcome, error)
	// Acked returns the data of task's last fsync that returned 0, nil if
	// none did.
	Acked(task int) []byte
	// Counts returns what the fsyncs of the run did.
	Counts() Counts
}

// Counts counts the fsyncs of a run.
type Counts struct {
	Returned int // fsyncs that returned 0
	Skipped  int // of those, the ones without a flush of their own
	Failed   int // fsyncs that returned an error
	Unsafe   int // fsyncs that returned 0 with their write not durable
}

// Simulate runs the flush-sequence program (Program, with the log
// force of an append workload) once under a latency model; see
// SimulateCode.
func Simulate(v Variant, tasks, fsyncs int, m memory.Model, lat Latency, seed uint64) (Timing, error) {
	return SimulateCode(&Program{Variant: v, Fsyncs: fsyncs, LogForce: true, Continue: true}, tasks, m, lat, seed)
}

// SimulateCode runs code once in the model world under a latency
// model: the same code that the rapid runs check, scheduled by time instead
// of at random. Device steps happen when their latency has passed; tasks
// take no time between device calls except their think time after an
// fsync (from its Returned or Failed milestone); among the steps
// possible at one moment the choice is random (seeded). An fsync that
// returns with its write not durable is counted in Unsafe; the windows in
// which an acknowledged write is not durable are kept for crash replays.
// There are no flush failures (they have no latency model).
func SimulateCode(code Code, tasks int, m memory.Model, lat Latency, seed uint64) (Timing, error) {
	if tasks < 1 {
		return Timing{}, fmt.Errorf("simulate fsync code: %d tasks", tasks)
	}
	w, err := world.New(code.WorldConfig(tasks, m))
	if err != nil {
		return Timing{}, fmt.Errorf("simulate fsync code: %w", err)
	}
	c := &timedChooser{w: w, code: code, lat: lat, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		taskDue: make([]time.Duration, tasks), writeDue: make([]time.Duration, tasks),
		writeAt: make([]time.Duration, tasks), preflushDue: make([]time.Duration, tasks),
		flushDue: make([]time.Duration, tasks), joinedAt: make([]time.Duration, tasks),
		exposedSince: make([]time.Duration, tasks)}
	for t := range c.exposedSince {
		c.exposedSince[t], c.preflushDue[t] = -1, -1
	}
	if _, err := code.Run(w, c); err != nil {
		return Timing{}, err
	}
	n := code.Counts()
	c.out.Fsyncs, c.out.Skipped, c.out.Unsafe = n.Returned, n.Skipped, n.Unsafe
	c.out.Elapsed = c.now
	for t := range c.exposedSince {
		c.closeWindow(t) // exposed until the end of the run
	}
	return c.out, nil
}

// timedChooser schedules a world run by simulated time.
type timedChooser struct {
	w    *world.World
	code Code
	lat  Latency
	rng  *rand.Rand
	now  time.Duration

	taskDue, writeDue, flushDue, joinedAt []time.Duration
	// writeAt: when a task's write was submitted. preflushDue: when the
	// preflush of its write with REQ_PREFLUSH ends, a flush's latency after
	// that, drawn when the step is first offered (-1 until then, so that
	// writes without one draw nothing and timed runs without preflush are
	// the same as before); the data then takes a write's latency
	// (blk-flush.c sends it after the flush).
	writeAt, preflushDue []time.Duration
	exposedSince         []time.Duration // per task: since when its acknowledged write is not durable; -1 if it is
	out                  Timing
	ready                []int
}

func (c *timedChooser) closeWindow(t int) {
	if c.exposedSince[t] >= 0 {
		c.out.Exposed = append(c.out.Exposed, Window{c.exposedSince[t], c.now})
		c.exposedSince[t] = -1
	}
}

// due is when an action can happen.
func (c *timedChooser) due(a world.Action) time.Duration {
	switch a.Kind {
	case world.ActWriteDone:
		return c.writeDue[a.Task]
	case world.ActWritePreflushed:
		if c.preflushDue[a.Task] < 0 {
			c.preflushDue[a.Task] = c.writeAt[a.Task] + c.lat.draw(c.rng, c.lat.Flush)
		}
		return c.preflushDue[a.Task]
	case world.ActFlushDone:
		return c.flushDue[a.Task]
	case world.ActDrain:
		return c.now // TSO store buffers drain at once
	case world.ActChoice:
		if a.Milestone == logEscape {
			// A log force whose iclog nobody else wrote writes it after
			// waiting about as long as a flush takes.
			return max(c.taskDue[a.Task], c.joinedAt[a.Task]+c.lat.Flush)
		}
	}
	return c.taskDue[a.Task]
}

// Choose implements Chooser.
func (c *timedChooser) Choose(acts []world.Action) int {
	c.ready = c.ready[:0]
	// A log force chooses by the workload; other task steps happen now, in
	// random order; otherwise the earliest device step.
	for i, a := range acts {
		if a.Kind == world.ActChoice && isLogForceChoice(a.Milestone) {
			if c.taskDue[a.Task] <= c.now {
				return c.logForce(acts, a.Task)
			}
			continue
		}
		if a.Task >= 0 && !a.Kind.Machine() && a.Milestone != logEscape && c.taskDue[a.Task] <= c.now {
			c.ready = append(c.ready, i)
		}
	}
	if len(c.ready) > 0 {
		return c.ready[c.rng.IntN(len(c.ready))]
	}
	earliest := time.Duration(-1)
	for i, a := range acts {
		if a.Kind == world.ActFlushFail {
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
// (if none does soon, it writes the iclog itself: LogEscape).
func (c *timedChooser) logForce(acts []world.Action, a int) int {
	want := LogJoin
	if c.rng.Float64() < c.lat.Overwrite {
		want = LogNothing
	} else if c.w.Config().Tasks == 1 {
		want = LogOwn
	}
	for i, x := range acts {
		if x.Task == a && x.Kind == world.ActChoice && x.Milestone == (Milestone{Step: want}) {
			return i
		}
	}
	panic("timed chooser: log force choice not offered")
}

// Observe implements Observer.
func (c *timedChooser) Observe(ev world.Event) {
	t := ev.Task
	switch ev.Kind {
	case world.ActWrite:
		c.writeDue[t] = c.now + c.lat.draw(c.rng, c.lat.Write)
		c.writeAt[t] = c.now
	case world.ActWritePreflushed:
		c.writeDue[ev.Of] = c.now + c.lat.draw(c.rng, c.lat.Write)
		c.preflushDue[ev.Of] = -1
		c.out.Flushes++
	case world.ActFlush:
		c.flushDue[t] = c.now + c.lat.draw(c.rng, c.lat.Flush)
		c.out.Flushes++
	case world.ActChoice:
		if ev.Milestone == (Milestone{Step: LogJoin}) {
			c.joinedAt[t] = c.now
		}
	case world.ActMilestone:
		m, _ := ev.Milestone.(Milestone)
		if (m.Step == Returned || m.Step == Failed) && c.lat.Think > 0 {
			c.taskDue[t] = c.now + time.Duration(c.rng.Int64N(int64(c.lat.Think)+1))
		}
		if m.Step == Returned && !c.w.Survives(t, c.code.Acked(t)) {
			c.exposedSince[t] = c.now
		}
	}
	for u, since := range c.exposedSince {
		if since >= 0 && c.w.Survives(u, c.code.Acked(u)) {
			c.closeWindow(u) // a later flush made it durable after all
		}
	}
}

// isLogForceChoice reports whether m is one of the log force's first
// choices (nothing, own iclog, another task's), which the workload decides.
func isLogForceChoice(m world.Milestone) bool {
	f, ok := m.(Milestone)
	return ok && (f.Step == LogNothing || f.Step == LogOwn || f.Step == LogJoin)
}

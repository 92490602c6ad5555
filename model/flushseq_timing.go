package model

import (
	"fmt"
	"math/rand/v2"
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
	// durable: from an unsafe return until the write became durable, or
	// until the task submitted its next write (after which the model stops
	// tracking the old one, so windows can only be too short). A crash in a
	// window loses that task's fsynced block.
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

type timedStep struct {
	l Label
	s FsyncState
}

func (t timedStep) label() Label { return t.l }

// SimulateFsync runs the protocol once under a latency model: the same
// transitions as the exhaustive search (FsyncSystem.Next), scheduled by time
// instead of enumerated. Device steps happen when their latency has passed;
// among the steps possible at one moment the choice is random (seeded).
// A mutant's fsync that returns with its write not durable is counted in
// Unsafe and the run goes on. Use SC or TSO: the run only needs one
// execution, and Relaxed bounds the number of flushes tightly.
func SimulateFsync(cfg FsyncConfig, lat FsyncLatency, seed uint64) (FsyncTiming, error) {
	sys, err := NewFsyncSystem(cfg)
	if err != nil {
		return FsyncTiming{}, err
	}
	if cfg.FlushFailures {
		return FsyncTiming{}, fmt.Errorf("simulate fsync: flush failures have no latency model")
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	st := sys.Init()[0]
	var now time.Duration
	var writeDue, flushDue, taskDue, joinedAt [maxFsTasks]time.Duration
	var flushedThisRound [maxFsTasks]bool
	var out FsyncTiming
	var exposedSince [maxFsTasks]time.Duration // -1: the acknowledged write is durable
	for t := range exposedSince {
		exposedSince[t] = -1
	}
	closeWindow := func(t int) {
		if exposedSince[t] >= 0 {
			out.Exposed = append(out.Exposed, Window{exposedSince[t], now})
			exposedSince[t] = -1
		}
	}
	for {
		var tasks, device []timedStep
		sys.Next(st, func(l Label, n FsyncState) {
			if int(l.Actor) < cfg.Tasks && taskDue[l.Actor] <= now && l.Kind != kLogEscape {
				tasks = append(tasks, timedStep{l, n})
			} else {
				device = append(device, timedStep{l, n}) // a device step, or a task still thinking
			}
		})
		due := func(l Label) time.Duration {
			if l.Kind == kLogEscape {
				// A log force whose iclog nobody else wrote writes it
				// after waiting about as long as a flush takes.
				return max(taskDue[l.Actor], joinedAt[l.Actor]+lat.Flush)
			}
			if int(l.Actor) < cfg.Tasks {
				return taskDue[l.Actor]
			}
			switch l.Kind {
			case kDevWrite:
				return writeDue[l.ID]
			case kDevFlushOK:
				return flushDue[l.ID]
			}
			return now // memory steps (TSO) are immediate
		}
		var pick timedStep
		switch {
		case len(tasks) > 0:
			pick = tasks[rng.IntN(len(tasks))]
			if pick.l.Kind == kLogNothing || pick.l.Kind == kLogOwn || pick.l.Kind == kLogJoin {
				pick = logForcePolicy(rng, tasks, pick.l.Actor, rng.Float64() < lat.Overwrite)
			}
		case len(device) > 0:
			earliest := due(device[0].l)
			var ready []timedStep
			for _, d := range device {
				switch t := due(d.l); {
				case t < earliest:
					earliest, ready = t, []timedStep{d}
				case t == earliest:
					ready = append(ready, d)
				}
			}
			if earliest > now {
				now = earliest
			}
			pick = ready[rng.IntN(len(ready))]
		default:
			for t := 0; t < cfg.Tasks; t++ {
				if st.task[t].pc != pcFinished {
					return out, fmt.Errorf("simulate fsync: stuck at %v with %s not finished", now, sys.actors[t])
				}
			}
			out.Elapsed = now
			for t := 0; t < cfg.Tasks; t++ {
				closeWindow(t) // exposed until the end of the run
			}
			return out, nil
		}
		t := int(pick.l.Actor)
		switch pick.l.Kind {
		case kWrite, kWriteReadS:
			closeWindow(t)
			writeDue[t] = now + lat.draw(rng, lat.Write)
			flushedThisRound[t] = false
		case kLogJoin:
			joinedAt[t] = now
		case kSubmitF:
			flushDue[t] = now + lat.draw(rng, lat.Flush)
			flushedThisRound[t] = true
			out.Flushes++
		case kReturn:
			if lat.Think > 0 {
				taskDue[t] = now + time.Duration(rng.Int64N(int64(lat.Think)+1))
			}
			if int16(pick.l.Arg) == 0 {
				out.Fsyncs++
				if !flushedThisRound[t] {
					out.Skipped++
				}
			}
		}
		st = pick.s
		if st.lost != 0 {
			out.Unsafe++
			exposedSince[st.lost-1] = now
			st.lost = 0
		}
		for u := 0; u < cfg.Tasks; u++ {
			if exposedSince[u] >= 0 && st.dur&(1<<u) != 0 {
				closeWindow(u) // a later flush made it durable after all
			}
		}
	}
}

// logForcePolicy chooses what the log force of task a does: nothing if this
// fsync has no metadata to log; otherwise, as for an append workload, its
// transaction joins the iclog that another task writes next (if none does
// soon, it writes the iclog itself: see kLogEscape in SimulateFsync).
func logForcePolicy[T interface{ label() Label }](rng *rand.Rand, steps []T, a uint8, nothing bool) T {
	var joins []T
	var own, none T
	for _, s := range steps {
		switch l := s.label(); {
		case l.Actor != a:
		case l.Kind == kLogJoin:
			joins = append(joins, s)
		case l.Kind == kLogOwn:
			own = s
		case l.Kind == kLogNothing:
			none = s
		}
	}
	if nothing {
		return none
	}
	if len(joins) > 0 {
		return joins[rng.IntN(len(joins))]
	}
	return own // a single task has nobody to wait for
}

package world

import (
	"fmt"
	"strings"
)

// The trace of a run: its events and their rendering as a timeline.

func (w *World) record(ev Event) {
	if w.quiet {
		return
	}
	ev.Step = w.step
	w.trace = append(w.trace, ev)
	if w.obs != nil {
		w.obs.Observe(ev)
	}
}

// Format renders the last n events of the trace (all if n <= 0), one per
// line: the step, who acted, and what happened.
func (w *World) Format(n int) string {
	evs := w.trace
	if n > 0 && len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	var b strings.Builder
	if len(evs) < len(w.trace) {
		fmt.Fprintf(&b, "(%d earlier events not shown)\n", len(w.trace)-len(evs))
	}
	for _, ev := range evs {
		who := "device"
		if ev.Task >= 0 {
			who = fmt.Sprintf("task %d", ev.Task)
		}
		fmt.Fprintf(&b, "%7d  %-7s  %s\n", ev.Step, who, w.describe(ev))
	}
	return b.String()
}

func (w *World) word(loc int) string {
	if loc < len(w.cfg.WordNames) {
		return w.cfg.WordNames[loc]
	}
	return fmt.Sprintf("w%d", loc)
}

func (w *World) describe(ev Event) string {
	switch ev.Kind {
	case ActLoad:
		if ev.Stale {
			return fmt.Sprintf("load %s -> %d (stale: a newer store exists)", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("load %s -> %d", w.word(ev.Loc), ev.Val)
	case ActStore:
		if ev.Note != "" {
			return fmt.Sprintf("store %s = %d (%s)", w.word(ev.Loc), ev.Val, ev.Note)
		}
		return fmt.Sprintf("store %s = %d", w.word(ev.Loc), ev.Val)
	case ActFence:
		return "smp_mb()"
	case ActIncReturn:
		if ev.Stale {
			return fmt.Sprintf("inc_return(%s) -> %d (read a store older than the newest)", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("inc_return(%s) -> %d", w.word(ev.Loc), ev.Val)
	case ActCAS:
		if ev.OK {
			return fmt.Sprintf("cmpxchg(%s) -> %d", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("cmpxchg(%s) fails", w.word(ev.Loc))
	case ActWrite:
		var flags []string
		if ev.Note != "" {
			flags = append(flags, ev.Note) // PREFLUSH
		}
		if ev.OK {
			flags = append(flags, "FUA")
		}
		fl := ""
		if flags != nil {
			fl = " (" + strings.Join(flags, ", ") + ")"
		}
		return fmt.Sprintf("submit write of b%d, version %d%s", ev.Loc, ev.Val, fl)
	case ActFlush:
		return fmt.Sprintf("submit flush (tag %d)", ev.Val)
	case ActRead:
		return fmt.Sprintf("read b%d -> version %d", ev.Loc, ev.Val)
	case ActWake, ActChoice, ActNote, ActMilestone:
		return ev.Note
	case ActStart:
		return "starts"
	case ActQueue:
		return "Wake: a change under the queue's lock"
	case ActWriteDone:
		return fmt.Sprintf("task %d's write of b%d (version %d) completes", ev.Of, ev.Loc, ev.Val)
	case ActFlushDone:
		return fmt.Sprintf("task %d's flush (tag %d) completes", ev.Of, ev.Val)
	case ActFlushFail:
		return fmt.Sprintf("task %d's flush (tag %d) fails (EIO)", ev.Of, ev.Val)
	case ActDrain:
		return fmt.Sprintf("store buffer of task %d drains one store", ev.Of)
	case ActBarrier:
		return fmt.Sprintf("the barrier after task %d's read-modify-write takes effect", ev.Of)
	}
	return ev.Kind.String()
}

// placed describes where a store went in modification order: "" for the
// end, else how many stores it was placed before.
func placed(newer int) string {
	if newer == 0 {
		return ""
	}
	return fmt.Sprintf("placed before %d newer store(s)", newer)
}

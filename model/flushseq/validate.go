package flushseq

import (
	"fmt"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"strings"
)

// Trace validation (docs/flushseq.md, "The protocol as code"): every step that
// Program takes in the model world must be a step that System,
// the state machine the explorer proves things about, can take. The two
// are written differently (straight-line code with blocking calls; program
// counters and successor enumeration), so a drift between them, in either
// the protocol or the semantics of memory and device, shows up as a trace
// the state machine cannot follow.
//
// Both sides are projected onto the same observations (the world's side by
// event kind and typed milestone, never by note text): a task's loads (with
// the value read), read-modify-writes, stores, fences, write and flush
// submissions, log-force branches, wake-ups and fsync returns; the device's
// completions and failures; store buffers draining. What only one side has
// as a step of its own is invisible: System's "sees its write
// complete" (the world resumes the task at completion), the world's smp_mb
// under SC (System omits the no-op) and the world's wake-up at the end
// of an asynchronous flush (System wakes the task with the flush), and
// under LKMM the world's pending barrier taking effect as a step of its
// own (System completes it inside the barrier or step that meets it).

type obsKind uint8

const (
	oLoad obsKind = iota + 1
	oInc
	oCAS
	oStore
	oFence
	oWrite
	oFlush
	oWriteDone
	oFlushOK
	oFlushFail
	oDrain
	oReturn
	oLog
	oLogWoken
	oJoinWake
)

type obs struct {
	actor int // task, or -1 for the device and memory system
	kind  obsKind
	loc   int
	val   int64
	ok    bool
}

// projectWorld projects a world event; false means invisible. Protocol
// steps are recognised by their typed milestone (Milestone, and the
// world's QueueWoken for code waiting on a spec.WaitQueue), never by the
// text of a note. An error is a milestone this validator does not know: a
// trace of some other protocol, or a step added without its projection.
func projectWorld(ev world.Event, m memory.Model) (obs, bool, error) {
	t := ev.Task
	switch ev.Kind {
	case world.ActLoad:
		return obs{actor: t, kind: oLoad, loc: ev.Loc, val: ev.Val}, true, nil
	case world.ActIncReturn:
		return obs{actor: t, kind: oInc, loc: ev.Loc, val: ev.Val}, true, nil
	case world.ActCAS:
		return obs{actor: t, kind: oCAS, loc: ev.Loc, val: ev.Val, ok: ev.OK}, true, nil
	case world.ActStore:
		return obs{actor: t, kind: oStore, loc: ev.Loc, val: ev.Val}, true, nil
	case world.ActFence:
		return obs{actor: t, kind: oFence}, m != memory.SC, nil
	case world.ActWrite:
		return obs{actor: t, kind: oWrite}, true, nil
	case world.ActFlush:
		return obs{actor: t, kind: oFlush}, true, nil
	case world.ActWriteDone:
		return obs{actor: -1, kind: oWriteDone, loc: ev.Of}, true, nil
	case world.ActFlushDone:
		return obs{actor: -1, kind: oFlushOK, loc: ev.Of}, true, nil
	case world.ActFlushFail:
		return obs{actor: -1, kind: oFlushFail, loc: ev.Of}, true, nil
	case world.ActDrain:
		return obs{actor: -1, kind: oDrain, loc: ev.Of}, true, nil
	case world.ActBarrier:
		// LKMM: System completes a pending barrier inside the next
		// barrier or step that meets it (memory.Memory.Fences, Settle).
		return obs{}, false, nil
	}
	switch ms := ev.Milestone.(type) {
	case nil:
		// A note, or a choice or wake-up that means nothing to the
		// protocol (the end of an asynchronous flush: System wakes
		// the task with the flush).
		return obs{}, false, nil
	case world.QueueWoken:
		// Code using a spec.WaitQueue (impl.Syncer) waits on it only for
		// the flushes it joins or lets drain.
		return obs{actor: t, kind: oJoinWake}, true, nil
	case Milestone:
		switch ms.Step {
		case Returned:
			return obs{actor: t, kind: oReturn, val: 0}, true, nil
		case Failed:
			return obs{actor: t, kind: oReturn, val: 1}, true, nil
		case LogNothing, LogOwn, LogJoin, LogEscape:
			for i, st := range fsyncLogSteps {
				if st == ms.Step {
					return obs{actor: t, kind: oLog, val: int64(i)}, true, nil
				}
			}
		case LogOut:
			return obs{actor: t, kind: oLogWoken}, true, nil
		case JoinWoken, DrainWoken:
			return obs{actor: t, kind: oJoinWake}, true, nil
		}
	}
	return obs{}, false, fmt.Errorf("milestone %T %v is not one of the flush-sequence protocol", ev.Milestone, ev.Milestone)
}

// projectLabel projects a step of System; false means invisible.
func projectLabel(l explore.Label) (obs, bool) {
	t, id, arg := int(l.Actor), int(l.ID), int64(int16(l.Arg))
	switch l.Kind {
	case kWrite:
		return obs{actor: t, kind: oWrite}, true
	case kMB:
		return obs{actor: t, kind: oFence}, true
	case kReadS:
		return obs{actor: t, kind: oLoad, loc: WordSubmitted, val: arg}, true
	case kSkip, kNoSkip:
		return obs{actor: t, kind: oLoad, loc: WordCompleted, val: int64(id)}, true
	case kJoinLoad:
		return obs{actor: t, kind: oLoad, loc: WordSubmitted, val: int64(id)}, true
	case kJoinWait, kDrained:
		return obs{actor: t, kind: oJoinWake}, true
	case kNumber:
		return obs{actor: t, kind: oInc, loc: WordSubmitted, val: arg}, true
	case kSubmitF:
		return obs{actor: t, kind: oFlush}, true
	case kDoneLoad:
		return obs{actor: t, kind: oLoad, loc: WordCompleted, val: arg}, true
	case kDoneCAS:
		return obs{actor: t, kind: oCAS, loc: WordCompleted, val: arg, ok: id == 1}, true
	case kDoneStore:
		return obs{actor: t, kind: oStore, loc: WordCompleted, val: arg}, true
	case kReturn:
		return obs{actor: t, kind: oReturn, val: arg}, true
	case kDevWrite:
		return obs{actor: -1, kind: oWriteDone, loc: id}, true
	case kDevFlushOK:
		return obs{actor: -1, kind: oFlushOK, loc: id}, true
	case kDevFlushFail:
		return obs{actor: -1, kind: oFlushFail, loc: id}, true
	case kMemFlush:
		return obs{actor: -1, kind: oDrain, loc: id}, true
	case kLogNothing, kLogOwn, kLogJoin, kLogEscape:
		i := map[uint8]int64{kLogNothing: 0, kLogOwn: 1, kLogJoin: 2, kLogEscape: 3}[l.Kind]
		return obs{actor: t, kind: oLog, val: i}, true
	case kLogWoken:
		return obs{actor: t, kind: oLogWoken}, true
	}
	return obs{}, false // kSeeWrite
}

// TraceValidation is what ValidateTrace found.
type TraceValidation struct {
	Events int  // observations matched
	Lost   bool // FsyncSystem reached a state where an fsync returned 0 with its write not durable
	States int  // the most states FsyncSystem could be in at once
}

// ValidateTrace follows a model-world trace of Program (variant,
// memory model, tasks, fsyncs, flush failures, log force and waiter sleeps
// as in cfg) in System and reports an error at the first observation
// that no state System can be in allows. cfg must be within
// System's bounds.
func ValidateTrace(cfg Config, trace []world.Event) (TraceValidation, error) {
	sys, err := NewSystem(cfg)
	if err != nil {
		return TraceValidation{}, err
	}
	var res TraceValidation
	cur := map[State]bool{}
	for _, s := range sys.Init() {
		cur[s] = true
	}
	// closure adds what invisible steps reach.
	closure := func() {
		stack := make([]State, 0, len(cur))
		for s := range cur {
			stack = append(stack, s)
		}
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			sys.Next(s, func(l explore.Label, n State) {
				if _, vis := projectLabel(l); !vis {
					n = sys.normalize(n)
					if !cur[n] {
						cur[n] = true
						stack = append(stack, n)
					}
				}
			})
		}
	}
	for i, ev := range trace {
		o, vis, err := projectWorld(ev, cfg.Memory)
		if err != nil {
			return res, fmt.Errorf("trace event %d (step %d): %w", i, ev.Step, err)
		}
		if !vis {
			continue
		}
		closure()
		res.States = max(res.States, len(cur))
		next := map[State]bool{}
		var offered []string
		for s := range cur {
			sys.Next(s, func(l explore.Label, n State) {
				p, vis := projectLabel(l)
				if vis && p == o {
					next[sys.normalize(n)] = true
				} else if vis && len(offered) < 40 {
					offered = append(offered, fmt.Sprintf("%s: %s", sys.actors[min(int(l.Actor), len(sys.actors)-1)], sys.Describe(l)))
				}
			})
		}
		if len(next) == 0 {
			return res, fmt.Errorf("trace event %d (step %d, %s) is not a step of the state machine; it could take: %s",
				i, ev.Step, describeObs(ev), strings.Join(offered, "; "))
		}
		cur = next
		res.Events++
	}
	for s := range cur {
		res.Lost = res.Lost || s.lost != 0
	}
	return res, nil
}

func describeObs(ev world.Event) string {
	who := "device"
	if ev.Task >= 0 {
		who = fmt.Sprintf("task %d", ev.Task)
	}
	s := fmt.Sprintf("%s %v loc=%d val=%d ok=%v of=%d", who, ev.Kind, ev.Loc, ev.Val, ev.OK, ev.Of)
	if ev.Milestone != nil {
		s += fmt.Sprintf(" milestone %T{%v}", ev.Milestone, ev.Milestone)
	}
	return s
}

package world

import (
	"fmt"

	"github.com/flushproof/flushproof/model/memory"
)

// The scheduler: which actions are enabled in a state (actions), and
// the step that performs one (perform).

// actions lists what may happen next, in a fixed order.
func (w *World) actions(acts []Action) []Action {
	for _, t := range w.tasks {
		if t.done {
			continue
		}
		r := &t.req
		switch r.kind {
		case ActLoad:
			for i := range w.mem.Readable(t.id, r.loc) {
				acts = append(acts, Action{Kind: ActLoad, Task: t.id, Arg: i})
			}
		case ActStore, ActIncReturn, ActCAS:
			n, err := w.memChoices(t.id, r)
			if err != nil {
				// One action, which fails the run.
				acts = append(acts, Action{Kind: r.kind, Task: t.id, Arg: -1})
				continue
			}
			for i := range n {
				acts = append(acts, Action{Kind: r.kind, Task: t.id, Arg: i})
			}
		case ActChoice:
			for i, b := range r.branches {
				if b.When == nil || b.When() {
					k := ActChoice
					if b.Wake {
						k = ActWake
					}
					acts = append(acts, Action{Kind: k, Task: t.id, Arg: i, Name: b.Name, Milestone: b.Milestone})
				}
			}
		case ActFlush:
			if r.waitForDone {
				if t.flushEnded {
					acts = append(acts, Action{Kind: ActWake, Task: t.id, Name: "flush ended"})
				}
				continue
			}
			acts = append(acts, Action{Kind: ActFlush, Task: t.id})
		case 0: // waiting for the device
		default:
			acts = append(acts, Action{Kind: r.kind, Task: t.id, Block: r.block})
		}
	}
	for _, p := range w.writes {
		if p.unsent {
			acts = append(acts, Action{Kind: ActWritePreflushed, Task: p.task, Block: p.block})
			continue
		}
		acts = append(acts, Action{Kind: ActWriteDone, Task: p.task, Block: p.block})
	}
	for _, f := range w.flush {
		acts = append(acts, Action{Kind: ActFlushDone, Task: f.task})
		if w.cfg.FlushFailures && !w.cfg.NoCache {
			// Without a volatile cache the block layer ends an empty
			// flush at once with success (blk-flush.c, blk_insert_flush).
			acts = append(acts, Action{Kind: ActFlushFail, Task: f.task})
		}
	}
	if w.cfg.Memory == memory.TSO {
		for _, th := range w.mem.Buffered() {
			acts = append(acts, Action{Kind: ActDrain, Task: th})
		}
	}
	for _, th := range w.mem.Pending() {
		acts = append(acts, Action{Kind: ActBarrier, Task: th})
	}
	return acts
}

// memChoices is the number of results of r, a task's store or
// read-modify-write (one, except under LKMM), or the memory's refusal.
func (w *World) memChoices(t int, r *request) (int, error) {
	var ks []int
	var err error
	if r.kind == ActStore {
		ks, err = w.mem.StoreChoices(t, r.loc)
	} else {
		ks, err = w.mem.RMWChoices(t, r.loc, true, r.kind == ActCAS, r.rmw())
	}
	return len(ks), err
}

// rmw is the function of a read-modify-write request.
func (r *request) rmw() func(int64) (int64, bool) {
	if r.kind == ActCAS {
		old, new := r.old, r.val
		return func(v int64) (int64, bool) { return new, v == old }
	}
	return func(v int64) (int64, bool) { return v + 1, true }
}

func (w *World) perform(a Action) {
	switch a.Kind {
	case ActWriteDone:
		w.writeDone(a)
		return
	case ActWritePreflushed:
		w.preflushDone(a)
		return
	case ActFlushDone, ActFlushFail:
		w.flushDone(a)
		return
	case ActDrain:
		w.mem.Drain(a.Task)
		w.record(Event{Kind: ActDrain, Task: -1, Of: a.Task})
		return
	case ActBarrier:
		w.mem.Complete(a.Task)
		w.record(Event{Kind: ActBarrier, Task: -1, Of: a.Task})
		return
	}
	t := w.tasks[a.Task]
	r := t.req
	t.req = request{}
	var resp response
	ev := Event{Kind: a.Kind, Task: t.id, Loc: r.loc}
	if a.Arg < 0 {
		_, err := w.memChoices(t.id, &r)
		w.Fail(fmt.Errorf("model world: task %d: %w", t.id, err))
		return
	}
	switch a.Kind {
	case ActWrite, ActFlush, ActRead:
		// I/O: under LKMM the barrier after the task's last fully
		// ordered RMW takes effect first. Memory operations (a wake-up
		// from a wait queue is a barrier) complete it themselves; a step
		// of control alone (a choice, the end of a wait for the device)
		// is no event and leaves it pending, as in the state machines.
		w.mem.Settle(t.id)
	}
	if (a.Kind == ActWrite || a.Kind == ActRead) && !w.noSeq {
		// Not on a replay's path to a known state: every step there was
		// checked when the state after it was first reached.
		w.checkSymmetric(t.id, r.block, a.Kind, r.data)
	}
	switch a.Kind {
	case ActLoad:
		newest := len(w.mem.Readable(t.id, r.loc)) - 1
		resp.val = w.mem.Load(t.id, r.loc, a.Arg)
		ev.Val, ev.Stale = resp.val, a.Arg < newest
	case ActStore:
		ks, _ := w.mem.StoreChoices(t.id, r.loc)
		w.mem.StoreAt(t.id, r.loc, r.val, false, a.Arg)
		ev.Val, ev.Note = r.val, placed(ks[a.Arg])
	case ActFence:
		w.mem.Fence(t.id)
	case ActIncReturn, ActCAS:
		ks, _ := w.mem.RMWChoices(t.id, r.loc, true, r.kind == ActCAS, r.rmw())
		old, new, stored := w.mem.RMWAt(t.id, r.loc, true, r.kind == ActCAS, r.rmw(), a.Arg)
		ev.Stale = ks[a.Arg] > 0 // under LKMM, a store older than the newest
		if a.Kind == ActIncReturn {
			resp.val, ev.Val = new, new
		} else {
			resp.ok, resp.val = stored, old
			ev.Val, ev.OK = r.val, stored
		}
	case ActChoice:
		resp.val = int64(a.Arg)
		ev.Val, ev.Note, ev.Milestone = int64(a.Arg), a.Name, a.Milestone
	case ActStart:
		// Nothing but the task's own code, which runs as it resumes.
	case ActQueue:
		w.queueChange(t, r.change)
	case ActWake:
		ev.Note, ev.Milestone = a.Name, a.Milestone
		if r.kind == ActChoice {
			// Sleeping on a wait queue and being woken imply a full
			// barrier (memory-barriers.txt, "Sleep and wake-up
			// functions"). The end of a flush, like the end of any
			// device call, is not assumed to order memory.
			resp.val = int64(a.Arg)
			ev.Val = int64(a.Arg)
			w.mem.Fence(t.id)
		}
		if r.kind == ActFlush {
			resp.Err = t.flushErr
			ev.OK = t.flushErr == nil
			t.flushEnded = false
		}
	case ActRead:
		b := &w.blocks[r.block]
		copy(r.data, b.data[b.done])
		resp.val = int64(b.done) // what the task learns: the search's key has it
		ev.Loc, ev.Val = r.block, int64(b.done)
	case ActWrite:
		b := &w.blocks[r.block]
		w.clock++
		b.data = append(b.data, append([]byte(nil), r.data...))
		b.submitted = append(b.submitted, w.clock)
		b.ended = append(b.ended, notEnded)
		v := len(b.data) - 1
		p := &pendingWrite{task: t.id, block: r.block, version: v, fua: r.fua}
		if r.preflush && !w.cfg.NoCache { // stripped without a cache (rule 4)
			p.preCover = w.doneSince()
			p.unsent = true
		}
		b.unsent = append(b.unsent, p.unsent)
		w.writes = append(w.writes, p)
		ev.Loc, ev.Val, ev.OK = r.block, int64(v), r.fua
		if r.preflush {
			ev.Note = "PREFLUSH"
		}
		w.record(ev)
		return // the task waits for the device
	case ActFlush:
		w.clock++
		f := &pendingFlush{task: t.id, tag: r.tag, async: r.async, cover: w.doneSince()}
		w.flush = append(w.flush, f)
		ev.Val = r.tag
		if r.onSubmit != nil {
			r.onSubmit()
		}
		if !r.async {
			w.record(ev)
			return // the task waits for the device
		}
		t.flushEnded, t.flushErr = false, nil
	}
	w.record(ev)
	t.resp = resp
	t.resume()
}

// queueChange is the step of t's Wake: it runs change under the queue's
// lock.
func (w *World) queueChange(t *Task, change func()) {
	// The queue's lock orders the waker's memory accesses before the change
	// for whoever sees the change (spin_unlock, then the next spin_lock),
	// and wake_up is a full barrier when it wakes a task
	// (memory-barriers.txt, "Sleep and wake-up functions"): the change is
	// not a memory operation here, so that ordering is a full barrier of
	// the waker (stronger than a release when nobody sleeps).
	w.mem.Fence(t.id)
	s := w.srch
	if s == nil || w.noSeq {
		change()
		return
	}
	if w.shared == nil || s.opt.Exact {
		change()
		w.wakeLog = s.logWake(w.wakeLog, t.id, t.seq)
		return
	}
	// The change may read the shared state into the task's own variables
	// (who is the leader, what has drained): what the task saw becomes one
	// of its results, as if Wake returned it.
	t.seq = s.extendShared(t.seq, w.shared())
	change()
}

package world

import "github.com/flushproof/flushproof/model/memory"

// Which steps commute. A step's footprint is what it read and changed as
// it was taken: the kind of step and the handle it was on (its request, or
// the write or flush the device ends), and what was seen while it ran (the
// task's code ran on, called MustSurvive, finished, failed the run). Two
// steps of different tasks whose footprints do not conflict commute: from
// a state where both are enabled, taking them in either order reaches the
// same state key, and neither disables the other. That is the independence
// a partial-order reduction of the search needs (CommuteCheck, in the
// package's tests, tests it on every pair of steps of every state of
// random programs); nothing in it comes from what a program declares. No
// search uses it yet.
//
// What the footprint rests on, besides the handles' semantics:
//   - a task's code, between its calls, reads the Go state tasks share
//     but changes it only in a WaitQueue change or a flush's onSubmit
//     (the contract the state key rests on too, Program);
//   - a Select's conditions read that state and the device;
//   - a MustSurvive (and, with SearchOptions.Exact, every step) reads the
//     device;
//   - a task that finishes is forgotten by the memory, which may drop
//     stores of any location.
type footprint struct {
	task   int  // whose step: the task that asked for it, or whose write, flush, buffer or barrier the device or memory ends
	code   bool // the task's code ran on after the step
	shared bool // it may have changed Go state tasks share (a WaitQueue change, a flush's onSubmit)
	query  bool // it is a Select's branch: enabled by conditions that read the shared state and the device
	loc    int  // the memory location it loaded or stored (-1: none)
	store  bool // it stored to loc
	memAll bool // it changed the memory beyond loc (a fence, a drain, a barrier, an I/O's settling, a finished task)
	block  int  // the device block it read, wrote or ended a write to (-1: none)
	device bool // it read or changed the device beyond block (a flush, a preflush, an obligation)
	failed bool // it failed the run
}

// conflicts reports whether the steps of footprints x and y may not
// commute.
func (x footprint) conflicts(y footprint) bool {
	switch {
	case x.task == y.task, x.failed, y.failed:
		return true
	case x.shared && (y.code || y.shared || y.query), y.shared && (x.code || x.query):
		return true
	}
	xMem, yMem := x.loc >= 0 || x.memAll, y.loc >= 0 || y.memAll
	switch {
	case x.memAll && yMem, y.memAll && xMem:
		return true
	case x.loc >= 0 && x.loc == y.loc && (x.store || y.store):
		return true
	}
	xDev, yDev := x.block >= 0 || x.device || x.query, y.block >= 0 || y.device || y.query
	switch {
	case x.device && yDev, y.device && xDev:
		return true
	case x.block >= 0 && (x.block == y.block || y.query), y.block >= 0 && x.query:
		return true
	}
	return false
}

// footprintBefore is the part of a's footprint that the state before it
// tells: the handle and the kind of step. takeFootprint adds what was
// seen while it ran.
func (w *World) footprintBefore(a Action) footprint {
	f := footprint{task: a.Task, loc: -1, block: -1}
	lkmm := w.cfg.Memory == memory.LKMM
	switch a.Kind {
	case ActWriteDone:
		for _, p := range w.writes {
			if p.task == a.Task && p.block == a.Block && !p.unsent {
				f.block = p.block
				f.device = p.fua || w.cfg.NoCache // durable at its end: rule 6 for the block's older versions
			}
		}
		f.memAll = w.cfg.WaiterSleeps
		return f
	case ActWritePreflushed, ActFlushDone, ActFlushFail:
		f.device = true
		return f
	case ActDrain, ActBarrier:
		f.memAll = true
		return f
	}
	r := &w.tasks[a.Task].req
	switch a.Kind {
	case ActLoad:
		// Under LKMM a load also settles the thread's pending events and
		// records the read, which the memory's encoding numbers in the
		// order of events: two loads, even of one location, need not
		// reach one key in either order (CommuteCheck found it).
		f.loc, f.memAll = r.loc, lkmm
	case ActStore:
		f.loc, f.store, f.memAll = r.loc, true, lkmm
	case ActIncReturn, ActCAS:
		// Fully ordered: a fence on each side but under SC, where
		// every step is.
		f.loc, f.store, f.memAll = r.loc, true, w.cfg.Memory != memory.SC
	case ActFence:
		f.memAll = true
	case ActWrite:
		f.block, f.memAll = r.block, lkmm
		f.device = r.preflush
	case ActRead:
		f.block, f.memAll = r.block, lkmm
	case ActFlush:
		f.device, f.memAll = true, lkmm
		f.shared = r.onSubmit != nil
	case ActChoice:
		f.query = true
	case ActWake:
		f.query = r.kind == ActChoice
		f.memAll = r.kind == ActChoice // waking is a full barrier
	case ActQueue:
		f.shared, f.memAll = true, true
	}
	return f
}

// takeFootprint takes action a (enabled) as takeAction does (takeStep)
// and returns its footprint.
func (w *World) takeFootprint(a Action) footprint {
	f := w.footprintBefore(a)
	t := w.tasks[a.Task]
	wasDone, resumed := t.done, t.resumes
	w.devRead = false
	w.takeStep(a)
	f.code = t.resumes != resumed
	f.memAll = f.memAll || t.done && !wasDone
	f.device = f.device || w.devRead || len(w.obl) > 0
	f.failed = w.fail != nil
	return f
}

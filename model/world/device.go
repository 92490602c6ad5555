package world

import (
	"fmt"
)

// The model world's device: each block's versions, the writes and flushes
// in flight, what their ends make durable (spec.Contract's rules), and the
// World queries of what a crash may leave.

// blockVersions is one block of the world's device. Version v > 0 is the
// v-th write submitted to the block; version 0 is the initial content.
type blockVersions struct {
	data [][]byte // data[v] is version v's content
	// submitted[v]: the clock when version v's write was submitted (with
	// REQ_PREFLUSH: when its preflush ended and its data was sent, the
	// moment rule 6 orders it from).
	submitted []int64
	// unsent[v]: version v's write carries REQ_PREFLUSH and its preflush has
	// not ended: its data was not sent, a crash cannot leave it.
	unsent []bool
	ended  []int64 // ended[v]: the clock when it ended; notEnded while in flight
	done   int     // newest completed version: what a read returns
	// doneSince is the latest submission clock of a completed write to the
	// block (-1: none): a flush submitted now covers that write and every
	// older completed one, and making those durable means only that.
	doneSince int64
	// durableSince is the latest submission clock of a durable write to the
	// block (-1: none). Version v may survive a crash iff its write had not
	// ended by then (rule 6 of spec.Contract).
	durableSince int64
	floor        int // versions below floor can never survive a crash again
}

// notEnded is the end clock of a write in flight: later than any clock.
const notEnded = int64(1) << 62

type pendingWrite struct {
	task, block, version int
	fua                  bool
	preCover             []int64 // REQ_PREFLUSH: per block, doneSince at submission; nil without
	unsent               bool    // REQ_PREFLUSH: the preflush has not ended, the data not sent
}

type pendingFlush struct {
	task  int
	cover []int64 // per block: doneSince when the flush was submitted
	tag   int64
	async bool
}

func (w *World) writeDone(a Action) {
	i := 0
	for i < len(w.writes) && !(w.writes[i].task == a.Task && w.writes[i].block == a.Block) {
		i++
	}
	p := w.writes[i]
	w.writes = append(w.writes[:i], w.writes[i+1:]...)
	w.clock++
	b := &w.blocks[p.block]
	b.done = max(b.done, p.version)
	b.ended[p.version] = w.clock
	b.doneSince = max(b.doneSince, b.submitted[p.version])
	if p.fua || w.cfg.NoCache {
		// Durable at completion. (Emulated FUA is treated like native: its
		// post-flush also covers other completed writes, but a write seen
		// without its data-done promises only itself; spec.Contract.)
		b.durableSince = max(b.durableSince, b.submitted[p.version])
		b.raiseFloor()
	}
	w.record(Event{Kind: ActWriteDone, Task: -1, Loc: p.block, Val: int64(p.version), OK: true, Of: p.task})
	t := w.tasks[p.task]
	if w.cfg.WaiterSleeps {
		w.mem.Fence(t.id)
	}
	t.resp = response{}
	t.resume()
}

// preflushDone ends the preflush step of a write with REQ_PREFLUSH
// (spec.Contract, rule 7): the writes it covers are durable, and the data
// is sent now, so it may land, over every write ended by now.
func (w *World) preflushDone(a Action) {
	var p *pendingWrite
	for _, q := range w.writes {
		if q.task == a.Task && q.block == a.Block && q.unsent {
			p = q
			break
		}
	}
	w.clock++
	w.makeDurable(p.preCover)
	p.unsent = false
	b := &w.blocks[p.block]
	b.unsent[p.version] = false
	b.submitted[p.version] = w.clock
	w.record(Event{Kind: ActWritePreflushed, Task: -1, Loc: p.block, Val: int64(p.version), OK: true, Of: p.task})
}

func (w *World) flushDone(a Action) {
	i := 0
	for w.flush[i].task != a.Task {
		i++
	}
	f := w.flush[i]
	w.flush = append(w.flush[:i], w.flush[i+1:]...)
	w.clock++
	ok := a.Kind == ActFlushDone
	if ok {
		w.makeDurable(f.cover)
	}
	w.record(Event{Kind: a.Kind, Task: -1, Val: f.tag, OK: ok, Of: f.task})
	t := w.tasks[f.task]
	var err error
	if !ok {
		err = ErrFlushFailed
	}
	if f.async {
		t.flushEnded, t.flushErr = true, err
		return
	}
	t.resp = response{Err: err}
	t.resume()
}

// FlushInFlight reports whether a flush submitted with tag has not ended.
func (w *World) FlushInFlight(tag int64) bool {
	w.query("FlushInFlight")
	for _, f := range w.flush {
		if f.tag == tag {
			return true
		}
	}
	return false
}

// FlushInFlightBy reports whether task has a flush in flight.
func (w *World) FlushInFlightBy(task int) bool {
	w.query("FlushInFlightBy")
	for _, f := range w.flush {
		if f.task == task {
			return true
		}
	}
	return false
}

// doneSince returns, per block, the latest submission clock of a completed
// write: what a flush (or a preflush) submitted now covers.
func (w *World) doneSince() []int64 {
	cover := make([]int64, len(w.blocks))
	for b := range w.blocks {
		cover[b] = w.blocks[b].doneSince
	}
	return cover
}

// makeDurable makes durable, per block, the completed writes a flush or
// preflush covered.
func (w *World) makeDurable(cover []int64) {
	for b, since := range cover {
		bv := &w.blocks[b]
		bv.durableSince = max(bv.durableSince, since)
		bv.raiseFloor()
	}
}

// mayLeave reports whether version v of the block may survive a crash now.
func (bv *blockVersions) mayLeave(v int) bool {
	if v == 0 {
		return bv.durableSince < 0
	}
	return !bv.unsent[v] && bv.ended[v] > bv.durableSince
}

// raiseFloor skips the versions that can never survive again: durableSince
// only grows, and an ended write stays ended. A version whose data is not
// sent yet may still survive later: the floor stops there.
func (bv *blockVersions) raiseFloor() {
	for bv.floor < len(bv.data)-1 && !bv.unsent[bv.floor] && !bv.mayLeave(bv.floor) {
		bv.floor++
	}
}

// query fails the run when a task's own code calls the World query
// name: the device's state is shared, and reading it without a
// scheduling point hides the runs where it changes just before
// (docs/world.md, "Scheduling points"). When conditions, observers and
// checks after a run call it between steps.
func (w *World) query(name string) {
	if w.inTask != 0 && w.fail == nil {
		w.Fail(fmt.Errorf("task %d called World.%s in its own code: a task reads the device's state only through its handles' calls (scheduling points); World.%s is for When conditions, observers and checks", w.inTask-1, name, name))
	}
}

// MayLeave returns the contents a crash now may leave in block b, oldest
// version first: the data of every write to b that had not ended when the
// latest durable write to b was submitted (that write included), and the
// initial content while no write to b is durable. Without a durable write,
// that is every version.
func (w *World) MayLeave(b int) [][]byte {
	w.query("MayLeave")
	bv := &w.blocks[b]
	var out [][]byte
	for v := bv.floor; v < len(bv.data); v++ {
		if bv.mayLeave(v) {
			out = append(out, bv.data[v])
		}
	}
	return out
}

// MayLeaveVersions is MayLeave as version numbers: version v > 0 is the v-th
// write submitted to block b, 0 its initial content.
func (w *World) MayLeaveVersions(b int) []int {
	w.query("MayLeaveVersions")
	bv := &w.blocks[b]
	var out []int
	for v := bv.floor; v < len(bv.data); v++ {
		if bv.mayLeave(v) {
			out = append(out, v)
		}
	}
	return out
}

// Survives reports whether a crash now keeps data in block b: every content
// a crash may leave there is the newest version of b holding data or a
// later version. It is false if b never held data. It is stricter than the
// contract's obligation (Task.MustSurvive), which also lets a crash leave
// an older write still in flight when the data's write was sent.
func (w *World) Survives(b int, data []byte) bool {
	bv := &w.blocks[b]
	v := bv.newest(data)
	if v < 0 {
		return false
	}
	for u := bv.floor; u < v; u++ {
		if bv.mayLeave(u) {
			return false
		}
	}
	return true
}

// newest returns the newest version of the block holding data, -1 if none.
func (bv *blockVersions) newest(data []byte) int {
	for v := len(bv.data) - 1; v >= 0; v-- {
		if string(bv.data[v]) == string(data) {
			return v
		}
	}
	return -1
}

// leftBefore returns the versions a crash may leave now that are ordered
// before version v (spec.Contract, rule 6): they ended before v's data was
// sent. When it is empty, v's obligation holds (spec.Obligation). Once it is empty
// it stays empty: such a version has ended, and a crash may leave it only
// while its end is after the block's latest durable write was sent, which
// only moves forward.
func (bv *blockVersions) leftBefore(v int) []int {
	var out []int
	for u := bv.floor; u < len(bv.data); u++ {
		if u != v && bv.mayLeave(u) && bv.ended[u] < bv.submitted[v] {
			out = append(out, u)
		}
	}
	return out
}

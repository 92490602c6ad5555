package world

import "fmt"

// obligation is a MustSurvive: a crash at any later point must leave
// version of block, or a version not ordered before it.
type obligation struct {
	task, block int
	version     int    // -1: the block never held the data
	bit         uint64 // the call site's bit (Search.Judged)
}

// MustSurvive states the obligation of a durability operation that
// returned success (an fsync, an O_DSYNC write): a crash from now on
// leaves in block b the data, or the data of a write not ordered before it
// (one that had not completed when the data's write was sent; in practice
// a newer one). The data's write is the newest version of b holding data.
//
// It is checked at once, which covers a crash at any
// later point too: once no version ordered before the data's may be left,
// none ever may again (blockVersions.leftBefore). A search with
// SearchOptions.Exact keeps the obligation and checks it again after every
// later step, which tests that claim.
func (t *Task) MustSurvive(b int, data []byte) {
	w := t.w
	w.devRead = true
	o := obligation{task: t.id, block: b, version: -1, bit: w.judgeSite("MustSurvive")}
	if b >= 0 && b < len(w.blocks) {
		o.version = w.blocks[b].newest(data)
	}
	if w.checkObligation(o); w.srch != nil && w.srch.opt.Exact {
		w.obl = append(w.obl, o)
	}
	if !w.quiet {
		w.record(Event{Kind: ActNote, Task: t.id, Note: fmt.Sprintf("b%d must survive a crash", b)})
	}
}

// Assert fails the run with the message if ok is false: an obligation of
// the program's own.
func (t *Task) Assert(ok bool, format string, args ...any) {
	t.w.judgeSite("Assert")
	if !ok {
		t.w.Fail(fmt.Errorf("task %d: assertion failed: %s", t.id, fmt.Sprintf(format, args...)))
	}
}

func (w *World) checkObligations() {
	for _, o := range w.obl {
		if w.fail != nil {
			return
		}
		w.judged |= o.bit
		w.checkObligation(o)
	}
}

func (w *World) checkObligation(o obligation) {
	switch {
	case o.block < 0 || o.block >= len(w.blocks):
		w.Fail(fmt.Errorf("task %d: MustSurvive: no block %d", o.task, o.block))
		return
	case o.version < 0:
		w.Fail(fmt.Errorf("task %d: MustSurvive: block %d never held the data", o.task, o.block))
		return
	}
	if left := w.blocks[o.block].leftBefore(o.version); left != nil {
		w.Fail(fmt.Errorf("task %d's write to block %d (version %d) is not durable: a crash now may leave versions %v of the block, written before it",
			o.task, o.block, o.version, left))
	}
}

package odsync

import (
	"fmt"
	"math/bits"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// taskSteps yields task t's next steps, one function per phase of
// blkdev_write_iter, in the order the code runs them:
//
//	start           startCall (kiocb_invalidate_pages' write-and-wait, if needed)
//	direct part     directPart (then writeEnded, a device step)
//	fallback        bufferedFallback
//	write-and-wait  writeAndWaitSubmit, writeAndWaitDone (kiocb_invalidate_pages,
//	                direct_write_fallback, blkdev_fsync)
//	sync            genericWriteSync (after decide)
//	return          writeReturn
//
// A phase with nothing to do goes on to the next in the same step.
func (s *System) taskSteps(st State, t int, yield func(explore.Label, State)) {
	switch st.task[t].pc {
	case pcStart:
		s.startCall(st, t, yield)
	case pcDirect:
		s.directPart(st, t, yield)
	case pcBuffered:
		s.bufferedFallback(st, t, yield)
	case pcWBWrite:
		s.writeAndWaitSubmit(st, t, yield)
	case pcWBWait:
		s.writeAndWaitDone(st, t, yield)
	case pcSync:
		s.genericWriteSync(st, t, yield)
	case pcReturn:
		s.writeReturn(st, t, yield)
	}
}

// startCall starts the next write() call: kiocb_invalidate_pages writes
// back and waits for the range's busy pages first, if there are any.
func (s *System) startCall(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	n.task[t] = task{pc: pcDirect, round: tk.round + 1, unseen: tk.unseen}
	if n.busy(s.rangeOf(t)) != 0 {
		// kiocb_invalidate_pages: filemap_write_and_wait_range first.
		// (Only the fallback-dirty mutant leaves dirty pages behind.)
		n.task[t].pc, n.task[t].wbMask, n.task[t].wbFor = pcWBWrite, s.rangeOf(t), callerInvalidate
	}
	s.taskSteps(n, t, yield)
}

// directPart chooses how many blocks go direct (none, a prefix, or all)
// and submits their bio.
func (s *System) directPart(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	for k := 0; k <= s.cfg.Blocks; k++ {
		n := st
		nt := &n.task[t]
		nt.k = uint8(k)
		if k == 0 {
			// kiocb_invalidate_pages -EBUSY: blkdev_direct_write returns 0.
			nt.pc = pcBuffered
			yield(s.label(t, odkDirect, 0, 0), n)
			continue
		}
		// mutant MutantDropFUA: the bio is a plain write; dio_bio_write_op
		// (block/fops.c) adds REQ_FUA for a dsync iocb.
		id := s.submit(&n, s.prefix(t, k), s.cfg.Variant.directFUA(), tk.round)
		nt.pc, nt.wait = pcDirectWait, uint8(id)
		yield(s.label(t, odkDirect, id, k), n)
	}
}

// bufferedFallback is blkdev_buffered_write: the blocks that did not go
// direct are dirtied in the page cache; direct_write_fallback then writes
// them back and waits.
func (s *System) bufferedFallback(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	nt := &n.task[t]
	rest := s.rangeOf(t) &^ s.prefix(t, int(tk.k))
	for bm := rest; bm != 0; bm &= bm - 1 {
		b := bits.TrailingZeros8(bm)
		if n.page[b].st != pageClean {
			panic(fmt.Sprintf("odsync model: buffered write into b%d, whose page is busy", b))
		}
		n.page[b] = page{st: pageDirty, ver: tk.round}
	}
	if s.cfg.Variant.leavesFallbackDirty() {
		// mutant MutantFallbackDirty: no filemap_write_and_wait_range; the
		// pages are left dirty and the whole count is returned.
		// direct_write_fallback (fs/libfs.c) writes the range back and
		// waits for it before returning.
		nt.n = uint8(s.cfg.Blocks)
		s.decide(&n, t, true)
	} else {
		nt.pc, nt.wbMask, nt.wbFor = pcWBWrite, rest, callerFallback
	}
	yield(s.label(t, odkBuffered, 0, int(rest)), n)
}

// writeAndWaitSubmit submits one write-back of the dirty pages of wbMask
// (pages the flusher is already writing are only waited for).
func (s *System) writeAndWaitSubmit(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	dirty := st.pagesIn(tk.wbMask, pageDirty)
	n.task[t].pc = pcWBWait
	if dirty == 0 {
		// Nothing to submit: only pages the flusher is writing.
		s.taskSteps(n, t, yield)
		return
	}
	ver := st.page[bits.TrailingZeros8(dirty)].ver
	for bm := dirty; bm != 0; bm &= bm - 1 {
		if st.page[bits.TrailingZeros8(bm)].ver != ver {
			panic("odsync model: one write-back of two versions")
		}
	}
	id := s.submit(&n, dirty, false, ver)
	for bm := dirty; bm != 0; bm &= bm - 1 {
		n.page[bits.TrailingZeros8(bm)] = page{st: pageWriteback, ver: ver, wid: uint8(id)}
	}
	yield(s.label(t, odkWBSubmit, id, int(dirty)|int(tk.wbFor)<<8), n)
}

// writeAndWaitDone waits until no page of wbMask is under write-back, checks
// errors as its caller does, and returns to the caller.
func (s *System) writeAndWaitDone(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	if st.busy(tk.wbMask) != 0 {
		return // __filemap_fdatawait_range: pages still under write-back
	}
	n := st
	nt := &n.task[t]
	failed := false
	switch tk.wbFor {
	case callerInvalidate, callerFallback:
		failed = n.asEIO // filemap_check_errors: test_and_clear_bit(AS_EIO)
		n.asEIO = false
	}
	switch {
	case tk.wbFor == callerSyncRange:
		nt.pc = pcSync // the range is clean now: the errseq check and the flush
	case tk.wbFor == callerInvalidate && failed:
		nt.pc, nt.failed = pcReturn, true
	case tk.wbFor == callerInvalidate:
		nt.pc = pcDirect
	case failed && tk.k > 0:
		// direct_write_fallback: only the direct bytes are reported,
		// and generic_write_sync still runs (ret > 0): its errseq check
		// reports the fallback's error, so write() fails.
		nt.n = tk.k
		if mutate.On(mutate.ODSyncShortSkipsSync) {
			nt.pc, nt.skipped = pcReturn, true // mutation: the short write returns without the sync
			break
		}
		s.decide(&n, t, true)
	case failed:
		nt.pc, nt.failed = pcReturn, true
	default:
		nt.n = uint8(s.cfg.Blocks)
		s.decide(&n, t, true)
	}
	nt.wbMask, nt.wbFor = 0, 0
	errArg := 0
	if failed {
		errArg = 1
	}
	yield(s.label(t, odkWBDone, 0, int(tk.wbFor)|errArg<<8), n)
}

// genericWriteSync is blkdev_fsync: file_write_and_wait_range, the errseq
// check, then an empty PREFLUSH waited for (its end is a device step).
func (s *System) genericWriteSync(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	nt := &n.task[t]
	if mask := s.prefix(t, int(tk.n)); st.busy(mask) != 0 {
		// file_write_and_wait_range. Not reached by the variants here
		// (the fallback leaves its range clean), kept for fidelity.
		nt.pc, nt.wbMask, nt.wbFor = pcWBWrite, mask, callerSyncRange
		s.taskSteps(n, t, yield)
		return
	}
	// file_check_and_advance_wb_err: report an errseq error this
	// file has not seen; clear AS_EIO in any case.
	n.asEIO = false
	if tk.unseen {
		nt.unseen, nt.failed, nt.pc = false, true, pcReturn
		yield(s.label(t, odkFlush, 0, 0), n)
		return
	}
	n.nf++
	id := int(n.nf)
	s.apply(&n, spec.Event{Kind: spec.FlushSubmit, ID: id})
	n.flive |= 1 << (id - 1)
	nt.pc, nt.wait = pcFlushWait, uint8(id)
	yield(s.label(t, odkFlush, id, 0), n)
}

// writeReturn is write() returning: the blocks it returns are acknowledged
// (Check holds a crash to them from now on).
func (s *System) writeReturn(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := st
	ret := 0
	if !tk.failed {
		ret = int(tk.n)
		for bm := s.prefix(t, ret); bm != 0; bm &= bm - 1 {
			n.acked[bits.TrailingZeros8(bm)] = tk.round
		}
	}
	arg := ret
	if tk.skipped {
		arg |= 1 << 8
	}
	n.task[t] = task{pc: pcStart, round: tk.round, unseen: tk.unseen}
	if int(tk.round) == s.cfg.Writes {
		n.task[t].pc = pcDone
	}
	yield(s.label(t, odkReturn, int(tk.round), arg), n)
}

// flusherSteps: wb_workfn may write back any dirty page (WB_SYNC_NONE).
func (s *System) flusherSteps(st State, yield func(explore.Label, State)) {
	for b := 0; b < s.cfg.Tasks*s.cfg.Blocks; b++ {
		if st.page[b].st != pageDirty {
			continue
		}
		n := st
		id := s.submit(&n, 1<<b, false, st.page[b].ver)
		n.page[b] = page{st: pageWriteback, ver: st.page[b].ver, wid: uint8(id)}
		yield(s.label(s.flusher, odkBackground, id, 1<<b), n)
	}
}

func (s *System) deviceSteps(st State, yield func(explore.Label, State)) {
	// st is this call's own copy: no need for another one of its contract.
	st.dev.DeviceEvents(s.cfg.Failures, func(e spec.Event) { s.deviceStep(st, e, yield) })
}

// deviceStep applies a device event and wakes whoever waited for it (the
// wake-up only moves the woken task's own program counter, so it commutes
// with every other step and is not a step of its own).
func (s *System) deviceStep(st State, e spec.Event, yield func(explore.Label, State)) {
	n := st
	s.apply(&n, e)
	switch e.Kind {
	case spec.WriteDataDone:
		n.post |= 1 << (e.ID - 1)
	case spec.WriteComplete, spec.WriteFail:
		ok := e.Kind == spec.WriteComplete
		bit := uint32(1) << (e.ID - 1)
		n.live &^= bit
		n.post &^= bit
		if !ok {
			n.failed |= bit
		}
		s.writeEnded(&n, e.ID, ok)
	case spec.FlushComplete, spec.FlushFail:
		n.flive &^= 1 << (e.ID - 1)
		for t := 0; t < s.cfg.Tasks; t++ {
			if tk := &n.task[t]; tk.pc == pcFlushWait && int(tk.wait) == e.ID {
				if mutate.On(mutate.WaiterNeverWakes) {
					continue // mutation: the flush's end wakes nobody (submit_bio_wait never returns)
				}
				tk.pc, tk.wait = pcReturn, 0
				tk.failed = e.Kind == spec.FlushFail
			}
		}
	}
	yield(s.label(s.device, odkDevice, e.ID, int(e.Kind)), n)
}

func (s *System) writeEnded(n *State, id int, ok bool) {
	wrote := false
	for b := range n.page {
		if p := &n.page[b]; p.st == pageWriteback && int(p.wid) == id {
			// end of page write-back; invalidate_mapping_pages then drops
			// the clean page (and a failed one is not redirtied).
			*p = page{}
			wrote = true
		}
	}
	if wrote && !ok {
		// mapping_set_error: AS_EIO and the mapping's errseq_t.
		n.asEIO = true
		for t := 0; t < s.cfg.Tasks; t++ {
			n.task[t].unseen = true
		}
	}
	for t := 0; t < s.cfg.Tasks; t++ {
		tk := &n.task[t]
		if tk.pc != pcDirectWait || int(tk.wait) != id {
			continue
		}
		tk.wait = 0
		switch {
		case !ok: // blkdev_direct_write returns the error: no fallback, no sync
			tk.pc, tk.failed = pcReturn, true
		case int(tk.k) == s.cfg.Blocks:
			tk.n = tk.k
			s.decide(n, t, false)
		default:
			tk.pc = pcBuffered
		}
	}
}

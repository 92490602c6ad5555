package flushseq

import (
	"errors"
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
)

// withPC is st with task t moved to pc.
func withPC(st State, t int, pc uint8) State {
	st.task[t].pc = pc
	return st
}

// taskSteps yields task t's next steps, one function per phase of fsync, in
// the order the code runs them:
//
//	writeback        submitWrite, seeWrite
//	sample S         readSEarly (mutant), barrier, readS
//	log force        logForce, logWait
//	decide skip      decideSkip
//	join (ours)      joinLoad, drain, joinWait, joinRecheck
//	own flush        numberFlush, submitFlush, then flushEnded (device step)
//	advance          doneLoad, doneCAS
//	return           fsyncReturn
//
// A phase that takes no step of its own (an smp_mb under SC, a check that
// cannot skip) goes on to the next phase in the same step.
func (s *System) taskSteps(st State, t int, yield func(explore.Label, State)) {
	switch st.task[t].pc {
	case pcWrite:
		s.submitWrite(st, t, yield)
	case pcEarlyS:
		s.readSEarly(st, t, yield)
	case pcWaitW:
		s.seeWrite(st, t, yield)
	case pcMB:
		s.barrier(st, t, yield)
	case pcReadS:
		s.readS(st, t, yield)
	case pcLogForce:
		s.logForce(st, t, yield)
	case pcLogWait:
		s.logWait(st, t, yield)
	case pcCheck:
		s.decideSkip(st, t, yield)
	case pcJoinLoad:
		s.joinLoad(st, t, yield)
	case pcDrain:
		s.Drain(st, t, yield)
	case pcJoin:
		s.joinWait(st, t, yield)
	case pcJoinRecheck:
		s.joinRecheck(st, t, yield)
	case pcNumber:
		s.numberFlush(st, t, yield)
	case pcSubmit:
		s.submitFlush(st, t, yield)
	case pcWaitF:
		// Woken by the device's flush completion, which also moves this
		// task on (see flushEnded).
	case pcDoneLoad:
		s.doneLoad(st, t, yield)
	case pcDoneCAS:
		s.doneCAS(st, t, yield)
	case pcReturn:
		s.fsyncReturn(st, t, yield)
	}
}

// submitWrite starts a round: the data write is in flight, no longer
// durable, and covered by no flush yet.
func (s *System) submitWrite(st State, t int, yield func(explore.Label, State)) {
	// I/O is after the barrier of the task's last fully ordered RMW
	// (LKMM: one still pending completes first, in every order with
	// other threads' pending ones); memory operations complete it
	// themselves, and steps of control alone (the return of fsync, a log
	// force's branch) leave it pending.
	for _, c := range st.mem.Settle(t) {
		n := withPC(st, t, pcWaitW)
		n.mem = c.Mem
		n.task[t].round++
		n.task[t].failed = false
		n.wst[t] = 1
		n.dur &^= 1 << t
		for f := range n.flush {
			n.flush[f].cover &^= 1 << t
		}
		yield(alt(lab(t, kWrite, int(n.task[t].round), 0), c.Alt), n)
	}
}

// seeWrite is the task observing its write's completion word.
func (s *System) seeWrite(st State, t int, yield func(explore.Label, State)) {
	// The task's barrier is not pending: it took no fully ordered RMW
	// since it submitted the write (submitWrite), so LoadNewest has one
	// result and Fences' orders are the step's only ones.
	ls := st.mem.LoadNewest(t, locDone(t))
	if len(ls) != 1 {
		panic(fmt.Sprintf("fsync model: task %d waits for its write with its barrier pending (%d results)", t, len(ls)))
	}
	l := ls[0]
	if st.wst[t] != 2 || l.Val != int64(st.task[t].round) {
		return
	}
	m := l.Mem
	cs := []memory.Choice{{Mem: m}}
	if s.cfg.WaiterSleeps {
		cs = m.Fences(t)
	}
	for _, c := range cs {
		n := withPC(st, t, pcMB)
		if s.cfg.Variant.readsSFirst() {
			// mutant MutantReadBeforeWriteback: S was read before the write
			// (readSEarly); the patch reads it only after the write completed.
			n.task[t].pc = s.afterS()
		}
		n.mem = c.Mem
		yield(alt(lab(t, kSeeWrite, 0, 0), c.Alt), n)
	}
}

// readSEarly samples S at the start of the round, before the data write.
func (s *System) readSEarly(st State, t int, yield func(explore.Label, State)) {
	// mutant MutantReadBeforeWriteback: the patch samples S after
	// file_write_and_wait_range, so that a flush numbered above S was
	// submitted after the write completed.
	newest := int(st.mem.Newest(locSubmitted))
	for _, r := range st.mem.Load(t, locSubmitted) {
		n := withPC(st, t, pcWrite)
		n.mem, n.task[t].s = r.Mem, int8(r.Val)
		yield(alt(lab(t, kReadS, newest, int(r.Val)), r.Alt.Orders()), n)
	}
}

// barrier is the smp_mb before reading S.
func (s *System) barrier(st State, t int, yield func(explore.Label, State)) {
	n := withPC(st, t, pcReadS)
	fences := s.cfg.Variant.fencesBeforeS()
	// mutant MutantNoMB: no barrier here; the patch has smp_mb() between seeing
	// the write complete and reading bt_flush_submitted.
	if !fences || s.cfg.Memory == memory.SC {
		// No barrier, or one that is a no-op under SC: go straight to
		// the read, no step of its own.
		s.taskSteps(n, t, yield)
		return
	}
	for _, c := range st.mem.Fences(t) {
		n.mem = c.Mem
		yield(alt(lab(t, kMB, 0, 0), c.Alt), n)
	}
}

// readS reads S, possibly a stale value under a weak memory model.
func (s *System) readS(st State, t int, yield func(explore.Label, State)) {
	newest := int(st.mem.Newest(locSubmitted))
	for _, r := range st.mem.Load(t, locSubmitted) {
		n := withPC(st, t, s.afterS())
		n.mem, n.task[t].s = r.Mem, int8(r.Val)
		yield(alt(lab(t, kReadS, newest, int(r.Val)), r.Alt.Orders()), n)
	}
}

// logForce picks one of the three branches.
func (s *System) logForce(st State, t int, yield func(explore.Label, State)) {
	n := withPC(st, t, pcCheck)
	yield(lab(t, kLogNothing, 0, 0), n)
	// Writing the iclog is a flush of its own, numbered like fsync's,
	// and when it succeeds fsync returns without another one.
	n = withPC(st, t, s.ownFlush())
	yield(lab(t, kLogOwn, 0, 0), n)
	// Or its transaction goes into the iclog that another task writes
	// next: it waits for the next flush another task submits (armed in
	// submitFlush) to end.
	if s.cfg.Tasks > 1 {
		n = withPC(st, t, pcLogWait)
		n.task[t].logWait = 0
		yield(lab(t, kLogJoin, 0, 0), n)
	}
}

// logWait waits for the iclog another task writes, or writes it itself.
func (s *System) logWait(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	if tk.logWait == 0 {
		// Nobody has written the iclog yet: the log force may write it
		// itself (xlog pushes the iclog when no one else does).
		n := withPC(st, t, s.ownFlush())
		yield(lab(t, kLogEscape, 0, 0), n)
		return
	}
	u := int(tk.logWait - 1)
	if st.flush[u].st == 1 {
		return
	}
	n := withPC(st, t, pcCheck)
	n.task[t].logWait = 0
	for _, c := range st.mem.Fences(t) { // woken from sleep: a full barrier
		n.mem = c.Mem
		yield(alt(lab(t, kLogWoken, u, 0), c.Alt), n)
	}
}

// decideSkip reads completed and skips the flush when a flush numbered above
// S has completed.
func (s *System) decideSkip(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	v := s.cfg.Variant
	// mutant MutantDAXSkips: a DAX task reads the counters like any other; the
	// patch never lets a DAX file skip, since another task's PREFLUSH does
	// not cover CPU stores.
	if !v.numbersFlushes() || (s.dax(t) && !v.daxSkips()) {
		// No counter to read: the task's own flush, numbered the way the
		// variant numbers it (MutantNumberAfterSubmit submits first).
		s.taskSteps(withPC(st, t, s.ownFlush()), t, yield)
		return
	}
	for _, r := range st.mem.Load(t, locCompleted) {
		c := int8(r.Val)
		skip := c > tk.s
		if v.skipsOnEqual() {
			// mutant MutantGreaterEqual: skips on completed >= S; the patch
			// needs completed > S, a flush numbered after S.
			skip = c >= tk.s
		}
		n := st
		n.mem = r.Mem
		if skip {
			n.task[t].pc = pcReturn
			yield(alt(lab(t, kSkip, int(c), int(tk.s)), r.Alt.Orders()), n)
			continue
		}
		n.task[t].pc = pcNumber
		if v.numbersAfterSubmit() {
			n.task[t].pc = pcSubmit // mutant NumberAfterSubmit: see numberFlush
		}
		if v.joinsInFlight() {
			n.task[t].pc = pcJoinLoad
		}
		yield(alt(lab(t, kNoSkip, int(c), int(tk.s)), r.Alt.Orders()), n)
	}
}

// joinLoad reads submitted: a flush numbered above S to wait for, or none.
func (s *System) joinLoad(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	for _, r := range st.mem.Load(t, locSubmitted) {
		n := withPC(st, t, pcNumber)
		n.mem = r.Mem
		if r.Val > int64(tk.s) {
			n.task[t].pc, n.task[t].wait = pcJoin, int8(r.Val)
		} else if s.cfg.Variant.drainsFirst() && !tk.drained {
			// Nothing to join yet: let the flushes in flight end
			// first (others pile up behind them), then check again.
			n.task[t].pc = pcDrain
		}
		yield(alt(lab(t, kJoinLoad, int(r.Val), int(tk.s)), r.Alt.Orders()), n)
	}
}

// drain waits on the flushes numbered <= S from their numbering to their
// flush_done (the Syncer's registry of flushes in flight), then checks again.
func (s *System) Drain(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	for u := 0; u < s.cfg.Tasks; u++ {
		switch st.task[u].pc {
		case pcSubmit, pcWaitF, pcDoneLoad, pcDoneCAS:
			if u != t && st.task[u].seq <= tk.s {
				return
			}
		}
	}
	n := withPC(st, t, pcCheck)
	n.task[t].drained = true
	for _, c := range st.mem.Fences(t) { // woken: a full barrier
		n.mem = c.Mem
		yield(alt(lab(t, kDrained, 0, int(tk.s)), c.Alt), n)
	}
}

// joinWait is woken when the joined flush has ended.
func (s *System) joinWait(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	for f := 0; f < s.cfg.Tasks; f++ {
		if st.flush[f].st == 1 && st.flush[f].seq == tk.wait {
			return // still in flight
		}
	}
	// Woken (a full barrier), then re-check completed; the task no longer
	// waits for a flush.
	n := withPC(st, t, pcJoinRecheck)
	n.task[t].wait = 0
	for _, c := range st.mem.Fences(t) {
		n.mem = c.Mem
		yield(alt(lab(t, kJoinWait, int(tk.wait), 0), c.Alt), n)
	}
}

// joinRecheck reads completed again: skip if the joined flush helped, else
// issue one of its own.
func (s *System) joinRecheck(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	if mutate.On(mutate.JoinNoFallback) {
		// The joined flush is taken for a success without looking: no
		// flush of its own replaces a failed one.
		yield(lab(t, kSkip, int(tk.s)+1, int(tk.s)), withPC(st, t, pcReturn))
		return
	}
	for _, r := range st.mem.Load(t, locCompleted) {
		n := withPC(st, t, pcNumber)
		n.mem = r.Mem
		if c := int8(r.Val); c > tk.s {
			n.task[t].pc = pcReturn
			yield(alt(lab(t, kSkip, int(c), int(tk.s)), r.Alt.Orders()), n)
		} else if !mutate.On(mutate.WaiterNeverWakes) {
			// mutation WaiterNeverWakes: the waiter that finds the joined
			// flush did not help (it failed) has no step: it never goes
			// on to the flush of its own that replaces it.
			yield(alt(lab(t, kNoSkip, int(c), int(tk.s)), r.Alt.Orders()), n)
		}
	}
}

// numberFlush takes the flush's number.
func (s *System) numberFlush(st State, t int, yield func(explore.Label, State)) {
	inc := func(old int64) (int64, bool) { return old + 1, true }
	var rs []memory.RMWResult
	var err error
	if s.cfg.Variant.numbersRelaxed() {
		// mutant MutantRelaxedNumber: an unordered increment, so the
		// number may reach other tasks after the flush was submitted; the
		// patch's atomic64_inc_return is fully ordered. The increment lies
		// after the return that completed > S takes: a control dependency
		// on the load of completed, which LKMM orders before its store.
		rs, err = st.mem.RMWOrdered(t, locSubmitted, inc, memory.RMWOrder{Deps: 1 << locCompleted})
	} else {
		rs, err = st.mem.RMW(t, locSubmitted, inc)
	}
	if errors.Is(err, memory.ErrUnordered) {
		panic(fmt.Sprintf("fsync model: %v", err))
	}
	if err != nil {
		panic(fmt.Sprintf("fsync model: %v (raise the memory bounds)", err))
	}
	for _, r := range rs {
		s.numbered(st, t, r.New, r.Mem, r.Alt, yield)
	}
}

// numbered is the task after inc_return gave seq.
func (s *System) numbered(st State, t int, seq int64, m memory.Memory, a memory.Alt, yield func(explore.Label, State)) {
	n := withPC(st, t, pcSubmit)
	n.mem, n.task[t].seq = m, int8(seq)
	if s.cfg.Variant.numbersAfterSubmit() {
		// mutant MutantNumberAfterSubmit: the flush was submitted before it was
		// numbered, so it may have ended already; the patch numbers it in
		// xfs_buftarg_flush_start, before submitting it.
		n.task[t].pc = pcWaitF
		n.flush[t].seq = int8(seq)
		if f := n.flush[t].st; f == 2 || f == 3 {
			s.flushEnded(&n, t, f == 2) // it ended before it was numbered
		}
	}
	yield(alt(lab(t, kNumber, 0, int(seq)), a), n)
}

// submitFlush submits the flush: it covers the writes completed now (a DAX
// task's only its own), and it writes the iclog that log forces wait for.
func (s *System) submitFlush(st State, t int, yield func(explore.Label, State)) {
	for _, c := range st.mem.Settle(t) { // I/O: see submitWrite
		n := st
		n.mem = c.Mem
		s.submitFlushSettled(n, t, c.Alt, yield)
	}
}

func (s *System) submitFlushSettled(st State, t int, a memory.Alt, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := withPC(st, t, pcWaitF)
	if s.cfg.Variant.numbersAfterSubmit() {
		n.task[t].pc = pcNumber // mutant NumberAfterSubmit: see numberFlush
	}
	var completed uint8
	for u := 0; u < s.cfg.Tasks; u++ {
		if st.wst[u] == 2 && (!s.dax(u) || u == t) {
			completed |= 1 << u
		}
	}
	n.flush[t] = flushState{st: 1, cover: completed, seq: tk.seq}
	for j := 0; j < s.cfg.Tasks; j++ {
		if j != t && n.task[j].pc == pcLogWait && n.task[j].logWait == 0 {
			n.task[j].logWait = int8(t + 1) // this flush writes the iclog j waits for
		}
	}
	yield(alt(lab(t, kSubmitF, 0, int(tk.seq)), a), n)
}

// doneLoad reads completed for the cmpxchg.
func (s *System) doneLoad(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	if s.cfg.Variant.storesCompleted() {
		// BenignPlainStore (benign): completed = seq may lower it,
		// which only costs skips.
		ms, err := st.mem.Stores(t, locCompleted, int64(tk.seq))
		if err != nil {
			panic(fmt.Sprintf("fsync model: %v (raise the memory bounds)", err))
		}
		for _, c := range ms {
			n := withPC(st, t, pcReturn)
			n.mem = c.Mem
			yield(alt(lab(t, kDoneStore, 0, int(tk.seq)), c.Alt), n)
		}
		return
	}
	for _, r := range st.mem.Load(t, locCompleted) {
		n := st
		n.mem, n.task[t].C = r.Mem, int8(r.Val)
		if int8(r.Val) >= tk.seq {
			n.task[t].pc = pcReturn
		} else {
			n.task[t].pc = pcDoneCAS
		}
		yield(alt(lab(t, kDoneLoad, 0, int(r.Val)), r.Alt.Orders()), n)
	}
}

// doneCAS is cmpxchg(completed, c, seq); on failure it loads again.
func (s *System) doneCAS(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	rs, err := st.mem.RMWCond(t, locCompleted, func(old int64) (int64, bool) { return int64(tk.seq), old == int64(tk.C) })
	if err != nil {
		panic(fmt.Sprintf("fsync model: %v (raise the memory bounds)", err))
	}
	for _, r := range rs {
		n := st
		n.mem = r.Mem
		okArg := 0
		if r.Stored {
			n.task[t].pc = pcReturn
			okArg = 1
		} else {
			n.task[t].pc = pcDoneLoad
		}
		yield(alt(lab(t, kDoneCAS, okArg, int(tk.seq)), r.Alt), n)
	}
}

// fsyncReturn ends the round.
func (s *System) fsyncReturn(st State, t int, yield func(explore.Label, State)) {
	tk := st.task[t]
	n := withPC(st, t, s.roundStart())
	// fsync returns: its locals end with the call.
	n.task[t].drained = false
	n.task[t].s, n.task[t].seq, n.task[t].C, n.task[t].wait = 0, 0, 0, 0
	if int(tk.round) == s.cfg.Fsyncs {
		n.task[t].pc = pcFinished
	}
	failed := tk.failed
	if !failed && st.dur&(1<<t) == 0 {
		n.lost = int8(t + 1)
	}
	code := 0
	if failed {
		code = 1
	}
	yield(lab(t, kReturn, 0, code), n)
}

func (s *System) deviceSteps(st State, yield func(explore.Label, State)) {
	d := s.device()
	for t := 0; t < s.cfg.Tasks; t++ {
		if st.wst[t] == 1 {
			ms, err := st.mem.StoresVisible(d, locDone(t), int64(st.task[t].round))
			if err != nil {
				panic(fmt.Sprintf("fsync model: %v (raise the memory bounds)", err))
			}
			for _, c := range ms {
				n := st
				n.wst[t] = 2
				n.mem = c.Mem
				yield(alt(lab(d, kDevWrite, t, 0), c.Alt), n)
			}
		}
		if st.flush[t].st == 1 {
			n := st
			n.dur |= st.flush[t].cover
			s.flushEnded(&n, t, true)
			yield(explore.Label{Actor: uint8(d), Kind: kDevFlushOK, ID: uint16(t), Arg: uint16(uint8(st.flush[t].seq)) | uint16(st.flush[t].cover)<<8}, n)
			if s.cfg.FlushFailures {
				n := st
				s.flushEnded(&n, t, false)
				yield(lab(d, kDevFlushFail, t, 0), n)
			}
		}
	}
}

// flushEnded ends task t's flush and wakes t in the same step: what the
// woken task does first touches only its own state, so it commutes with
// every other step and need not be interleaved (a partial-order reduction
// that keeps every reachable outcome). A flush that ends before the task
// numbered it (the number-after-submit mutant) wakes nobody yet.
func (s *System) flushEnded(n *State, t int, ok bool) {
	n.flush[t].st = 3
	if ok {
		n.flush[t].st = 2
	}
	if n.task[t].pc != pcWaitF {
		return
	}
	n.flush[t].st = 0
	switch v := s.cfg.Variant; {
	case !v.numbersFlushes():
		n.task[t].pc = pcReturn
		n.task[t].failed = !ok
	case ok:
		n.task[t].pc = pcDoneLoad
	case v.advancesOnFailure():
		// mutant MutantAdvanceOnFailure: flush_done runs although the flush
		// failed, so completed advances past a flush that made nothing
		// durable; the patch calls xfs_buftarg_flush_done on success only.
		// This fsync still returns the error; another task's may then
		// skip on it.
		n.task[t].pc = pcDoneLoad
		n.task[t].failed = true
	default:
		n.task[t].pc = pcReturn
		n.task[t].failed = true
	}
}

// roundStart is where a task starts a round.
func (s *System) roundStart() uint8 {
	if s.cfg.Variant.readsSFirst() {
		return pcEarlyS // mutant ReadBeforeWriteback: see readSEarly
	}
	return pcWrite
}

// afterS is where a task goes once it has S.
func (s *System) afterS() uint8 {
	if s.cfg.LogForce {
		return pcLogForce
	}
	return pcCheck
}

// ownFlush is where a task goes to issue a flush of its own.
func (s *System) ownFlush() uint8 {
	if v := s.cfg.Variant; !v.numbersFlushes() || v.numbersAfterSubmit() {
		return pcSubmit // unnumbered, or mutant NumberAfterSubmit: see numberFlush
	}
	return pcNumber
}

package durable

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/spec"
)

// durableValue reports whether v, or newer data, survives on block b:
// some write of v to b is durable, or is ordered before a durable write
// to b (a crash can no longer leave anything older than it), or was such
// a write and the contract forgot it (gone).
func (s *durSystem) durableValue(st *State, b int, v int64) bool {
	if v >= 0 && v < 64 && st.gone[b]&(1<<v) != 0 {
		return true
	}
	for w := 1; w <= st.dev.Writes(); w++ {
		if st.dev.WriteBlocks(w)&(1<<b) == 0 || int64(st.val[w-1]) != v {
			continue
		}
		if st.dev.Durable(w) {
			return true
		}
		for d := 1; d <= st.dev.Writes(); d++ {
			if d != w && st.dev.WriteBlocks(d)&(1<<b) != 0 && st.dev.Durable(d) && st.dev.OrderedBefore(w, d) {
				return true
			}
		}
	}
	return false
}

// Check: a fault is a FaultError; a failed check, and a crash image (or,
// without crashes, a final state) where the final condition does not
// hold, are violations.
func (s *durSystem) Check(st State) error {
	if f := st.op.fault; f.kind != 0 {
		in := s.op.code[f.thread][f.pc]
		return &FaultError{Line: in.line, Col: in.col, Msg: s.faultText(f)}
	}
	if b := st.bad; b.kind != 0 {
		if s.op.speculating(st.op) {
			return nil // judged where the guesses are borne out (Next)
		}
		return s.badText(&st, b)
	}
	if !s.finalJudged(st) {
		return nil
	}
	if s.cfg.Crash == CrashNone {
		return s.judge(&st, nil)
	}
	images := 1
	for _, b := range s.blocks {
		set := st.dev.Allowed(b)
		n := bits.OnesCount32(set.Writes)
		if set.Initial {
			n++
		}
		if images *= n; images > maxImages {
			return &FaultError{Msg: fmt.Sprintf("%s: more than %d crash images of the blocks the final condition names at one point of a run: name fewer blocks in the final condition, or state the obligations with assert_durable", s.op.test.Name, maxImages)}
		}
	}
	img := make([]int8, spec.MaxBlocks)
	return s.crashImages(&st, 0, img)
}

// maxImages bounds the crash images judged at one state: beyond it the
// row is an error rather than a search that seems to hang.
const maxImages = 1 << 16

// crashImages judges the condition on every crash image of the blocks
// s.blocks[k:], the earlier ones set in img.
func (s *durSystem) crashImages(st *State, k int, img []int8) error {
	if k == len(s.blocks) {
		return s.judge(st, img)
	}
	b := s.blocks[k]
	set := st.dev.Allowed(b)
	if set.Initial {
		img[b] = 0
		if err := s.crashImages(st, k+1, img); err != nil {
			return err
		}
	}
	for m := set.Writes; m != 0; m &= m - 1 {
		w := 0
		for m&(1<<w) == 0 {
			w++
		}
		img[b] = st.val[w]
		if err := s.crashImages(st, k+1, img); err != nil {
			return err
		}
	}
	return nil
}

// ErrCondition is wrapped by a violation of the final condition.
var ErrCondition = errors.New("the final condition does not hold")

// judge evaluates the final condition, and runs the recovery code, on st
// and the crash image img (nil without a crash).
func (s *durSystem) judge(st *State, img []int8) error {
	if s.op.test.Quant != 0 {
		if err := s.judgeCond(st, img); err != nil {
			return err
		}
	}
	if s.rec != nil && img != nil {
		return s.runRecovery(st, img)
	}
	return nil
}

// judgeCond evaluates the final condition on st and the crash image img
// (nil without a crash).
func (s *durSystem) judgeCond(st *State, img []int8) error {
	regs := func(t int, name string) int64 {
		if t < 0 || t >= len(s.op.regs) {
			return 0
		}
		i, ok := s.op.regs[t][name]
		if !ok {
			return 0
		}
		return int64(st.op.regs[t][i])
	}
	locIdx := func(name string) int {
		for i, l := range s.op.test.Locs {
			if l == name {
				return i
			}
		}
		return -1
	}
	loc := func(name string) int64 {
		if b := s.op.test.BlockOf(name); b >= 0 {
			return int64(img[b])
		}
		l := locIdx(name)
		return s.op.real(l, int64(st.op.mem.Newest(l)))
	}
	v, err := s.op.test.Cond.Eval(regs, loc)
	if err != nil {
		return &FaultError{Line: s.op.test.CondLine, Col: s.op.test.CondCol, Msg: fmt.Sprintf("final condition: %v", err)}
	}
	holds := v != 0
	if s.op.test.Quant == litmus.NotExists {
		holds = !holds
	}
	if holds {
		return nil
	}
	var parts []string
	for _, b := range s.blocks {
		parts = append(parts, fmt.Sprintf("blk%d=%d", b, img[b]))
	}
	where := "when every thread has finished"
	if img != nil {
		where = "after a crash here"
		if len(parts) > 0 {
			where += ", which may leave " + strings.Join(parts, " ")
		}
	}
	return fmt.Errorf("%w %s: %s %s", ErrCondition, where, s.op.test.Quant, s.op.test.Cond)
}

// badText explains a failed check.
func (s *durSystem) badText(st *State, b fault) error {
	in := s.op.code[b.thread][b.pc]
	ch := in.check
	eval := func(e litmus.Expr) int64 {
		v, _ := e.Eval(func(_ int, name string) int64 { return int64(st.op.regs[b.thread][s.op.regs[b.thread][name]]) }, nil)
		return v
	}
	if b.kind == badAssert {
		return fmt.Errorf("line %d: P%d: assert(%s) fails", in.line, b.thread, litmus.CExpr(ch.Cond))
	}
	blk, v := eval(ch.Block), eval(ch.Val)
	var ws []string
	for w := 1; w <= st.dev.Writes(); w++ {
		if st.dev.WriteBlocks(w)&(1<<blk) == 0 {
			continue
		}
		state := "in flight"
		if ended, failed := st.dev.WriteEnded(w); failed {
			state = "failed"
		} else if ended {
			state = "completed"
		}
		if st.dev.Durable(w) {
			state += ", durable"
		} else {
			state += ", not durable"
		}
		ws = append(ws, fmt.Sprintf("W%d (value %d) %s", w, st.val[w-1], state))
	}
	if len(ws) == 0 {
		ws = append(ws, "no write to it was submitted")
	}
	return fmt.Errorf("line %d: P%d: assert_durable(%s, %s) fails: no durable write of %d to block %d (a crash now may lose it): %s",
		in.line, b.thread, litmus.CExpr(ch.Block), litmus.CExpr(ch.Val), v, blk, strings.Join(ws, "; "))
}

func (s *durSystem) faultText(f fault) string {
	in := s.op.code[f.thread][f.pc]
	switch f.kind {
	case faultBlock:
		return fmt.Sprintf("line %d: P%d: a block number outside the 0..%d the device has", in.line, f.thread, spec.MaxBlocks-1)
	case faultFlags:
		return fmt.Sprintf("line %d: P%d: write flags other than REQ_FUA, REQ_PREFLUSH and REQ_SYNC", in.line, f.thread)
	case faultDevice:
		return fmt.Sprintf("line %d: P%d: more than %d writes or %d flushes in one run, which the device holds: fewer rounds (loop iterations) or threads", in.line, f.thread, spec.MaxWrites, spec.MaxFlushes)
	case faultValue:
		return fmt.Sprintf("line %d: P%d: a value a block cannot hold (it holds -128..127)", in.line, f.thread)
	case faultLocalLoop:
		return fmt.Sprintf("line %d: P%d: %d steps in a row that touch neither memory nor the device: a loop that never ends", in.line, f.thread, maxChain)
	case faultBios:
		return fmt.Sprintf("line %d: P%d: a %dth bio of one thread in flight, and a thread has at most %d: wait for one (bio_wait) before submitting another", in.line, f.thread, ioSlots, ioSlots-1)
	case faultBusy:
		return fmt.Sprintf("line %d: P%d: a bio submitted while the one this submit_bio sent before has not ended and run its bi_end_io: the checker gives each submit_bio call one bio in flight at a time", in.line, f.thread)
	case faultHandle:
		return fmt.Sprintf("line %d: P%d: %s: the handle names no bio of this thread in flight (a register that submit_bio set, waited for once)", in.line, f.thread, s.stmtText(in, &vals{}))
	}
	return s.op.faultText(f)
}

package durable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/spec"
)

// Recovery code (litmus.Test.Recovery): compiled as a thread is, but run
// alone and to its end on each crash image where the final condition is
// judged, as a file system's journal recovery runs at mount (fs/jbd2/
// recovery.c): it reads blocks of the image and shared memory as the
// crash left it, may write blocks of the image (a replay), and asserts.
// It is not a thread of the search: it adds no state.

// recovery is a file's recovery code compiled.
type recovery struct {
	code []instr
	regs map[string]int // register -> index (one per name: nothing is stored)
	line int
}

// maxRecoverySteps bounds one run of the recovery code: beyond it the run
// is a fault (a loop that does not end), not a search that seems to hang.
const maxRecoverySteps = 1 << 16

// ErrRecovery is wrapped by an assert of the recovery code that fails.
var ErrRecovery = errors.New("recovery fails")

// compileRecovery compiles t's recovery code with the threads' locations.
// It may read memory, read and write blocks, branch, loop and assert; it
// runs alone, so a wait, a lock, a store to memory or an assert_durable
// (which speaks of a run still going) is refused at its line.
func compileRecovery(sys *opSystem, t *litmus.Test, file string) (*recovery, error) {
	th := t.Recovery
	locIndex := map[string]int{}
	for i, l := range t.Locs {
		locIndex[l] = i
	}
	c := &compiler{sys: sys, m: sys.model, name: t.Name, thread: len(t.Threads), locs: locIndex, regs: map[string]int{}, labels: map[string]int{}, wrote: map[string]bool{}, dep: newDepAnalysis(),
		durable: true, file: file}
	if err := c.checkLabels(th.Body); err != nil {
		return nil, err
	}
	if err := c.stmts(th.Body); err != nil {
		return nil, err
	}
	for i := range c.code {
		switch in := &c.code[i]; {
		case in.kind == iJump && in.label != "":
			in.target = c.labels[in.label]
		case in.kind == iJump && in.target == returnTarget:
			in.target = len(c.code)
		}
	}
	for _, in := range c.code {
		bad := ""
		switch in.kind {
		case iAccess:
			if info := in.access.Op.Info(); info.Writes || info.Fence && in.access.Op != litmus.OpBarrier {
				bad = in.access.Op.String() + "()"
			}
		case iAwait, iCompletion, iNop:
			bad = "a wait or a wake-up"
		case iCheck:
			if in.check.Durable {
				bad = "assert_durable(), which speaks of a run going on (recovery asserts what the image holds: assert(read_block(...) == v)),"
			}
		case iDevSubmit:
			if in.dev.Kind != litmus.DevWrite && in.dev.Kind != litmus.DevFlush {
				bad = "submit_bio() (recovery waits for its writes: submit_bio_wait())"
			}
		}
		if bad != "" {
			return nil, &litmus.Error{File: file, Line: in.line, Col: in.col, Msg: "recovery() runs alone after the crash, with no thread beside it: " + bad + " is not allowed there"}
		}
	}
	return &recovery{code: c.code, regs: c.regs, line: th.Line}, nil
}

// runRecovery runs the recovery code on the crash image img (a copy: its
// writes change only it) with memory as st holds it.
func (s *durSystem) runRecovery(st *State, img []int8) error {
	rc := s.rec
	regs := make([]int64, len(rc.regs))
	val := func(_ int, name string) int64 { return regs[rc.regs[name]] }
	eval := func(in instr, e litmus.Expr) (int64, error) {
		v, err := e.Eval(val, nil)
		if err != nil {
			return 0, &FaultError{Line: in.line, Col: in.col, Msg: fmt.Sprintf("line %d: recovery(): %v", in.line, err)}
		}
		return v, nil
	}
	set := func(r string, v int64) {
		if r != "" {
			regs[rc.regs[r]] = v
		}
	}
	image := make([]int8, len(img))
	copy(image, img)
	block := func(in instr, e litmus.Expr) (int, error) {
		b, err := eval(in, e)
		if err != nil {
			return 0, err
		}
		if b < 0 || b >= spec.MaxBlocks {
			return 0, &FaultError{Line: in.line, Col: in.col, Msg: fmt.Sprintf("line %d: recovery(): block %d outside the 0..%d the device has", in.line, b, spec.MaxBlocks-1)}
		}
		return int(b), nil
	}
	for pc, steps := 0, 0; pc < len(rc.code); steps++ {
		if steps == maxRecoverySteps {
			in := rc.code[pc]
			return &FaultError{Line: in.line, Col: in.col, Msg: fmt.Sprintf("line %d: recovery() ran %d steps without ending: a loop that never ends", in.line, maxRecoverySteps)}
		}
		in := rc.code[pc]
		pc++
		switch in.kind {
		case iAssign:
			v, err := eval(in, in.assign.Val)
			if err != nil {
				return err
			}
			set(in.assign.Reg, v)
		case iBranch:
			v, err := eval(in, in.cond)
			if err != nil {
				return err
			}
			if v == 0 {
				pc = in.target
			}
		case iJump:
			pc = in.target
		case iAccess:
			if in.access.Op.Info().Fence {
				continue
			}
			set(in.access.Reg, s.op.real(in.loc, int64(st.op.mem.Newest(in.loc))))
		case iDevRead:
			b, err := block(in, in.dev.Block)
			if err != nil {
				return err
			}
			set(in.dev.Reg, int64(image[b]))
		case iDevSubmit:
			if in.dev.Kind != litmus.DevWrite {
				continue // a flush: the image is what stays
			}
			b, err := block(in, in.dev.Block)
			if err != nil {
				return err
			}
			v, err := eval(in, in.dev.Val)
			if err != nil {
				return err
			}
			if v < -128 || v > 127 {
				return &FaultError{Line: in.line, Col: in.col, Msg: fmt.Sprintf("line %d: recovery(): a value a block cannot hold (it holds -128..127)", in.line)}
			}
			for i := 0; i < max(in.dev.Blocks, 1); i++ {
				if b+i >= spec.MaxBlocks {
					return &FaultError{Line: in.line, Col: in.col, Msg: fmt.Sprintf("line %d: recovery(): a write of %d blocks from block %d, past the device's %d", in.line, in.dev.Blocks, b, spec.MaxBlocks)}
				}
				image[b+i] = int8(v)
			}
		case iDevWait:
			set(in.dev.Reg, 0)
		case iCheck:
			v, err := eval(in, in.check.Cond)
			if err != nil {
				return err
			}
			if v == 0 {
				var parts []string
				for _, b := range s.blocks {
					parts = append(parts, fmt.Sprintf("blk%d=%d", b, img[b]))
				}
				return fmt.Errorf("%w: line %d: %s fails after a crash here, which may leave %s", ErrRecovery, in.line, checkText(in.check), strings.Join(parts, " "))
			}
		}
	}
	return nil
}

// recoveryBlocks are the blocks whose crash images the recovery code can
// tell apart: those it reads, when every read names a constant block;
// otherwise every block.
func recoveryBlocks(rc *recovery) []int {
	seen := map[int]bool{}
	for _, in := range rc.code {
		if in.kind != iDevRead {
			continue
		}
		b := in.dev.Block
		if !b.IsConst || b.Const < 0 || b.Const >= spec.MaxBlocks {
			all := make([]int, spec.MaxBlocks)
			for i := range all {
				all[i] = i
			}
			return all
		}
		seen[int(b.Const)] = true
	}
	var out []int
	for b := range spec.MaxBlocks {
		if seen[b] {
			out = append(out, b)
		}
	}
	return out
}

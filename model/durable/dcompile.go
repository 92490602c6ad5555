package durable

import (
	"maps"
	"slices"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// Compiling the durability statements (Test): loops and jumps become
// branches and jumps, a goto a jump to its label's position, a device
// call a submit and a wait (or a read), a wait_event a load that waits
// for its condition, an assertion a check.

// instruction kinds of the durability statements.
const (
	iDevSubmit  uint8 = iota + 16 // submit the write or flush of dev
	iDevWait                      // wait for the thread's command to end; Reg gets 0 or -EIO
	iDevRead                      // Reg = the block's content
	iAwait                        // the load of a wait_event: taken only when cond holds
	iNop                          // wake_up: orders nothing here (docs/durable-litmus.md)
	iCheck                        // assert_durable or assert
	iCompletion                   // complete, complete_all, wait_for_completion: an RMW of the count that acquires and releases
)

// loopCtx is a loop being compiled: where its break and continue jumps
// are, to be patched, and the dependency states they leave.
type loopCtx struct {
	breaks, continues []int
	breakDeps         []depState
	contDeps          []depState
}

// returnTarget marks a jump to the thread's end (return), patched once the
// thread is compiled.
const returnTarget = -1

// durableStmt compiles a loop, a jump, a goto, a label, a device call or
// a check.
func (c *compiler) durableStmt(s *litmus.Stmt) error {
	switch {
	case s.Loop != nil:
		return c.loop(s)
	case s.Jump != 0:
		return c.jump(s)
	case s.Goto != "":
		// The target is the label's position, patched once the whole
		// thread is compiled (compileDurable): a label may come later,
		// and a loop compiles its body more than once.
		c.code = append(c.code, instr{kind: iJump, line: s.Line, col: s.Col, label: s.Goto, jump: "goto " + s.Goto})
		return nil
	case s.Label != "":
		// Every pass of a loop over its body records the label again:
		// the last pass's code is the one kept, and its position is the
		// last recorded.
		c.labels[s.Label] = len(c.code)
		c.dep.label()
		return nil
	case s.Check != nil:
		ch := s.Check
		for _, e := range []litmus.Expr{ch.Block, ch.Val, ch.Cond} {
			if err := c.expr(e, s.Line); err != nil {
				return err
			}
		}
		c.code = append(c.code, instr{kind: iCheck, line: s.Line, col: s.Col, check: ch})
		return nil
	}
	d := s.Dev
	if d.Kind.IsCompletion() {
		return c.completion(s)
	}
	for _, e := range []litmus.Expr{d.Block, d.Val, d.Flags} {
		if d.Kind != litmus.DevWait {
			if err := c.expr(e, s.Line); err != nil {
				return err
			}
		}
	}
	// reg records that the call writes its register, with no load's
	// value (for the dependency analysis).
	reg := func() error {
		if d.Reg == "" {
			return nil
		}
		if err := c.write(d.Reg, s.Line); err != nil {
			return err
		}
		c.dep.assign(&litmus.Assign{Reg: d.Reg, Val: litmus.C(0)})
		return nil
	}
	emit := func(kind uint8) { c.code = append(c.code, instr{kind: kind, line: s.Line, col: s.Col, dev: d}) }
	switch d.Kind {
	case litmus.DevWrite, litmus.DevFlush:
		emit(iDevSubmit)
		if err := reg(); err != nil {
			return err
		}
		emit(iDevWait)
	case litmus.DevSubmit:
		// The handle is set at the submission; nothing waits here.
		emit(iDevSubmit)
		return reg()
	case litmus.DevBioWait, litmus.DevReap:
		if err := reg(); err != nil {
			return err
		}
		emit(iDevWait)
	case litmus.DevRead:
		if err := reg(); err != nil {
			return err
		}
		emit(iDevRead)
	case litmus.DevWake:
		emit(iNop)
	case litmus.DevWait:
		a := d.Load
		l, ok := c.locs[a.Loc]
		if !ok {
			return c.errf(s.Line, "%s on %q, which is not a location", a.Op, a.Loc)
		}
		if err := c.write(a.Reg, s.Line); err != nil {
			return err
		}
		if err := c.expr(d.Val, s.Line); err != nil {
			return err
		}
		deps := c.dep.access(a, 0, l)
		c.code = append(c.code, instr{kind: iAwait, line: s.Line, col: s.Col, access: a, loc: l, cond: d.Val, dev: d, deps: deps, rdeps: c.dep.raw})
	default:
		return c.errf(s.Line, "unknown device call %v", d.Kind)
	}
	return nil
}

// completion compiles a call on a completion: reinit_completion is the
// plain store its DevOp.Load is; the others an iCompletion, whose
// access's Op (release) is for the dependency analysis and the memory's
// orderings.
func (c *compiler) completion(s *litmus.Stmt) error {
	d := s.Dev
	a := d.Load
	if !supported(c.m, a.Op) {
		return c.errf(s.Line, "%w: %s has no release or acquire, which %s() needs", litmus.ErrNotInModel, c.m, d.Kind)
	}
	l, ok := c.locs[a.Loc]
	if !ok {
		return c.errf(s.Line, "%s() on %q, which is not a location", d.Kind, a.Loc)
	}
	kind := iCompletion
	if d.Kind == litmus.DevReinit {
		kind = iAccess
	}
	deps := c.dep.access(a, 0, l)
	c.code = append(c.code, instr{kind: kind, line: s.Line, col: s.Col, access: a, loc: l, dev: d, deps: deps, rdeps: c.dep.raw})
	return nil
}

// jump compiles break, continue and return.
func (c *compiler) jump(s *litmus.Stmt) error {
	if s.Jump == litmus.Return {
		c.code = append(c.code, instr{kind: iJump, line: s.Line, col: s.Col, target: returnTarget, jump: "return"})
		return nil
	}
	if len(c.loops) == 0 {
		return c.errf(s.Line, "%w: %s outside a loop in P%d", litmus.ErrUnsupported, litmus.StmtKind(s), c.thread)
	}
	l := c.loops[len(c.loops)-1]
	if s.Jump == litmus.Break {
		l.breaks = append(l.breaks, len(c.code))
		l.breakDeps = append(l.breakDeps, c.dep.st.clone())
	} else {
		l.continues = append(l.continues, len(c.code))
		l.contDeps = append(l.contDeps, c.dep.st.clone())
	}
	c.code = append(c.code, instr{kind: iJump, line: s.Line, col: s.Col, jump: litmus.StmtKind(s)})
	return nil
}

// checkLabels refuses, in a thread's code, a label defined twice and a
// goto to a label the thread does not define, at the statement.
func (c *compiler) checkLabels(body []litmus.Stmt) error {
	defined := map[string]*litmus.Stmt{}
	var names []string
	var gotos []*litmus.Stmt
	var walk func(body []litmus.Stmt) error
	walk = func(body []litmus.Stmt) error {
		for i := range body {
			s := &body[i]
			switch {
			case s.Label != "":
				if first, ok := defined[s.Label]; ok {
					c.cur = s
					return c.errf(s.Line, "label %s defined twice in P%d (first at line %d)", s.Label, c.thread, first.Line)
				}
				defined[s.Label] = s
				names = append(names, s.Label)
			case s.Goto != "":
				gotos = append(gotos, s)
			case s.If != nil:
				if err := walk(s.If.Then); err != nil {
					return err
				}
				if err := walk(s.If.Else); err != nil {
					return err
				}
			case s.Loop != nil:
				if err := walk(s.Loop.Body); err != nil {
					return err
				}
				if err := walk(s.Loop.Post); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(body); err != nil {
		return err
	}
	for _, s := range gotos {
		if defined[s.Goto] == nil {
			c.cur = s
			return c.errf(s.Line, "goto %s: P%d has no label %s%s", s.Goto, c.thread, s.Goto, litmus.DidYouMean(s.Goto, names))
		}
	}
	return nil
}

// maxLoopPasses bounds the passes of the dependency analysis over a loop
// (each pass only removes taint or adds loads, so it settles long before).
const maxLoopPasses = 200

// loop compiles "while (cond) body" with its for's post: at the head a
// branch out of the loop when cond is 0, the body, the post (where
// continue goes), a jump back to the head. The dependency analysis runs
// over the loop until the state at its head no longer changes: a load in
// the loop numbers the same bit on every pass (its number is reset), and
// a location it loads also holds poisonBit at the head, so that no store
// is said to depend on every load of it (an earlier iteration's load is
// another one). The code of the last pass is kept.
func (c *compiler) loop(s *litmus.Stmt) error {
	l := s.Loop
	if err := c.expr(l.Cond, s.Line); err != nil {
		return err
	}
	start, next, overflow := len(c.code), c.dep.next, c.dep.overflow
	entry := c.dep.st.clone()
	head := entry.clone()
	for pass := 0; ; pass++ {
		if pass == maxLoopPasses {
			return c.errf(s.Line, "the dependency analysis of the loop in P%d did not settle", c.thread)
		}
		c.code, c.dep.next, c.dep.overflow = c.code[:start], next, overflow
		c.dep.st = head.clone()
		ctx := &loopCtx{}
		c.loops = append(c.loops, ctx)
		br := len(c.code)
		c.code = append(c.code, instr{kind: iBranch, line: s.Line, col: s.Col, cond: l.Cond})
		c.dep.branch(l.Cond)
		if err := c.stmts(l.Body); err != nil {
			return err
		}
		cont := len(c.code)
		for _, d := range ctx.contDeps {
			c.dep.st = meet(c.dep.st, d)
		}
		if err := c.stmts(l.Post); err != nil {
			return err
		}
		c.code = append(c.code, instr{kind: iJump, line: s.Line, col: s.Col, target: start, jump: "back to the loop's test"})
		exit := len(c.code)
		c.code[br].target = exit
		for _, i := range ctx.breaks {
			c.code[i].target = exit
		}
		for _, i := range ctx.continues {
			c.code[i].target = cont
		}
		c.loops = c.loops[:len(c.loops)-1]
		nh := loopBack(entry, c.dep.st)
		if nh.equal(head) {
			out := head.clone()
			for _, d := range ctx.breakDeps {
				out = meet(out, d)
			}
			out.ctrl = entry.ctrl
			c.dep.st = out
			return nil
		}
		head = nh
	}
}

// compileDurable compiles t for the durability checker under m.
func compileDurable(m memory.Model, t *litmus.Test, file string) (*opSystem, error) {
	if err := memoryLimits(t); err != nil {
		return nil, err
	}
	sys := &opSystem{model: m, test: t, scope: memory.ScopeFor(m)}
	locIndex := map[string]int{}
	for i, l := range t.Locs {
		locIndex[l] = i
		sys.init = append(sys.init, t.Init[l])
		if err := initFits(t, i, t.Init[l]); err != nil {
			return nil, err
		}
	}
	for ti, regs := range t.RegInit {
		for r, v := range regs {
			if !fits16(v) {
				return nil, t.LimitErr(t.RegInitPos(ti, r), "initial value %d:%s=%d beyond the -32768..32767 a register holds", ti, r, v)
			}
		}
	}
	for ti, th := range t.Threads {
		c := &compiler{sys: sys, m: m, name: t.Name, thread: ti, locs: locIndex, regs: map[string]int{}, labels: map[string]int{}, wrote: map[string]bool{}, dep: newDepAnalysis(),
			durable: true, file: file, hasRMW: hasOp(th.Body, litmus.Op.IsRMW), hasLock: hasOp(th.Body, func(o litmus.Op) bool { return o == litmus.OpSpinLock })}
		if ti < len(t.RegInit) {
			// In name order: registers are numbered as they are met, and
			// two threads alike must number theirs alike (findSymmetry
			// compares their code).
			for _, r := range slices.Sorted(maps.Keys(t.RegInit[ti])) {
				if err := c.reg(r, 0); err != nil {
					return nil, err
				}
			}
		}
		if err := c.checkLabels(th.Body); err != nil {
			return nil, err
		}
		if err := c.stmts(th.Body); err != nil {
			return nil, err
		}
		if len(c.code) > 250 {
			return nil, t.LimitErr(litmus.Pos{Line: th.Line, Col: th.Col}, "P%d compiles to %d instructions, more than the 250 a thread may have: split the thread, or unroll fewer loop iterations", ti, len(c.code))
		}
		// Jumps to the end (return) and gotos, in the final code (a
		// loop's earlier passes left none behind).
		for i := range c.code {
			switch in := &c.code[i]; {
			case in.kind == iJump && in.label != "":
				in.target = c.labels[in.label] // checkLabels: every goto's label is defined
			case in.kind == iJump && in.target == returnTarget:
				in.target = len(c.code)
			}
		}
		if len(c.regs) > MaxRegs {
			if err := c.allocRegs(t, th); err != nil {
				return nil, err
			}
		}
		markArith(c.code)
		markReadBack(c.code)
		markRetries(c.code, c.regs, condRegs(t.Cond, ti, c.regs))
		sys.code = append(sys.code, c.code)
		sys.regs = append(sys.regs, c.regs)
		sys.written = append(sys.written, c.written)
	}
	sys.startAhead()
	return sys, nil
}

// liveRegs computes, per instruction of a thread's code, the registers
// (bit i: register index i) that some path from it reads before writing:
// the others hold values nothing will look at. keep are live everywhere
// (those the final condition names). An instruction reads before it
// writes (r = r + 1 reads r); a wait_event's load writes its register
// and then its condition reads it. Registers that share an index
// (allocRegs) share its bit: it is live where one of them is.
func liveRegs(code []instr, regs map[string]int, keep uint8) []uint8 {
	use, def := regUseDef(code, regs)
	live := liveness(code, use, def, uint64(keep))
	out := make([]uint8, len(live))
	for i, l := range live {
		out[i] = uint8(l) // indices below MaxRegs
	}
	return out
}

// regUseDef gives, per instruction, the registers it reads before it
// writes (use) and those it writes (def), bit i for index i (< 64).
func regUseDef(code []instr, regs map[string]int) (use, def []uint64) {
	mask := func(e litmus.Expr) uint64 {
		var m uint64
		e.Regs(func(r string) { m |= 1 << regs[r] })
		return m
	}
	bit := func(r string) uint64 {
		if r == "" {
			return 0
		}
		return 1 << regs[r]
	}
	use = make([]uint64, len(code))
	def = make([]uint64, len(code))
	for i, in := range code {
		switch in.kind {
		case iAssign:
			use[i], def[i] = mask(in.assign.Val), bit(in.assign.Reg)
		case iBranch:
			use[i] = mask(in.cond)
		case iAccess:
			use[i], def[i] = mask(in.access.Val)|mask(in.access.Expect), bit(in.access.Reg)
		case iDevSubmit:
			use[i] = mask(in.dev.Block) | mask(in.dev.Val) | mask(in.dev.Flags)
			if in.dev.Kind == litmus.DevSubmit {
				def[i] = bit(in.dev.Reg)
			}
		case iDevWait:
			def[i] = bit(in.dev.Reg)
			if in.dev.Kind == litmus.DevBioWait {
				use[i] = mask(in.dev.Val)
			}
		case iDevRead:
			use[i], def[i] = mask(in.dev.Block), bit(in.dev.Reg)
		case iAwait:
			// The load writes the register, then the condition reads it
			// and the others: live before are the others.
			w := bit(in.access.Reg)
			use[i], def[i] = mask(in.cond)&^w, w
		case iCheck:
			use[i] = mask(in.check.Block) | mask(in.check.Val) | mask(in.check.Cond)
		}
	}
	return use, def
}

// successors calls f with the instructions (len(code): the end) that may
// run after code[i]: the next, a branch's target too, a jump's target
// alone.
func successors(code []instr, i int, f func(int)) {
	switch code[i].kind {
	case iJump:
		f(code[i].target)
	case iBranch:
		f(i + 1)
		f(code[i].target)
	default:
		f(i + 1)
	}
}

// liveness is liveRegs over use and def (regUseDef): live[i] before
// instruction i, live[len(code)] = keep at the end. The jumps may go
// anywhere (loops, gotos): it iterates to the fixpoint.
func liveness(code []instr, use, def []uint64, keep uint64) []uint64 {
	live := liveAtEnd(code, use, def, keep)
	for i := range live {
		live[i] |= keep // keep at every instruction: before, it is read at the end or written first
	}
	return live
}

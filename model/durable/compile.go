package durable

import (
	"fmt"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// Compiling a test for Operational: its threads as straight code with jumps.

// supported reports whether the model runs op.
func supported(m memory.Model, op litmus.Op) bool {
	if m != memory.Relaxed {
		return true // SC, TSO and LKMM have every primitive
	}
	switch op {
	case litmus.OpReadOnce, litmus.OpWriteOnce, litmus.OpMb, litmus.OpAddReturn, litmus.OpFetchAdd, litmus.OpXchg, litmus.OpCmpxchg:
		return true
	}
	return false
}

func compile(m memory.Model, t *litmus.Test) (*opSystem, error) {
	if err := litmus.MemoryOnly(t); err != nil {
		return nil, err
	}
	if m != memory.SC && m != memory.TSO && m != memory.Relaxed && m != memory.LKMM {
		return nil, fmt.Errorf("litmus: unknown memory model %v", m)
	}
	if err := memoryLimits(t); err != nil {
		return nil, err
	}
	if t.Quant == 0 {
		return nil, fmt.Errorf("%s: no final condition", t.Name)
	}
	sys := &opSystem{model: m, test: t, scope: memory.ScopeFor(m)}
	locIndex := map[string]int{}
	for i, l := range t.Locs {
		locIndex[l] = i
		sys.init = append(sys.init, t.Init[l])
	}
	for l, v := range t.Init {
		if _, ok := locIndex[l]; !ok {
			return nil, fmt.Errorf("%s: initial value of %s, which is not in Locs", t.Name, l)
		}
		if err := initFits(t, locIndex[l], v); err != nil {
			return nil, err
		}
	}
	for ti, th := range t.Threads {
		c := &compiler{sys: sys, m: m, name: t.Name, thread: ti, locs: locIndex, regs: map[string]int{}, wrote: map[string]bool{}, dep: newDepAnalysis(),
			hasRMW: hasOp(th.Body, litmus.Op.IsRMW), hasLock: hasOp(th.Body, func(o litmus.Op) bool { return o == litmus.OpSpinLock })}
		if err := c.stmts(th.Body); err != nil {
			return nil, err
		}
		if len(c.code) > 255 {
			return nil, t.LimitErr(litmus.Pos{Line: th.Line, Col: th.Col}, "P%d compiles to %d instructions, more than the 255 a thread may have: split the thread or shorten its code", ti, len(c.code))
		}
		markArith(c.code)
		markReadBack(c.code)
		var outcome uint64 // an outcome holds every register the thread writes
		for _, r := range c.written {
			outcome |= 1 << c.regs[r]
		}
		markRetries(c.code, c.regs, outcome)
		sys.code = append(sys.code, c.code)
		sys.regs = append(sys.regs, c.regs)
		sys.written = append(sys.written, c.written)
	}
	return sys, nil
}

type compiler struct {
	sys     *opSystem
	m       memory.Model
	name    string
	thread  int
	locs    map[string]int
	code    []instr
	loops   []*loopCtx   // the loops the code being compiled is in, innermost last
	cur     *litmus.Stmt // the statement being compiled
	file    string       // the file's name, for errors (durable)
	durable bool         // the durability statements are allowed (compileDurable)
	regs    map[string]int
	labels  map[string]int // per label: its position in the code (in a loop, the last pass's: dcompile.go)
	wrote   map[string]bool
	written []string
	dep     *depAnalysis
	hasRMW  bool // the thread has a read-modify-write (atomicFence)
	hasLock bool // the thread has a spin_lock (atomicFence)
}

// reg numbers register name, one index per name. Operational's threads
// have at most MaxRegs names; the durability checker's up to maxRegNames,
// which allocRegs then maps onto MaxRegs registers.
func (c *compiler) reg(name string, line int) error {
	if _, ok := c.regs[name]; ok {
		return nil
	}
	if c.durable && len(c.regs) == maxRegNames {
		return c.errf(line, "%w: %s is a %d%s register name of P%d, and a thread names at most %d (and holds at most %d live at once): reuse a register whose value is no longer needed", litmus.ErrUnsupported, name, maxRegNames+1, ordinal(maxRegNames+1), c.thread, maxRegNames, MaxRegs)
	}
	if !c.durable && len(c.regs) == MaxRegs {
		return c.errf(line, "%w: %s is a %d%s register of P%d, and a thread holds at most %d: reuse a register whose value is no longer needed", litmus.ErrUnsupported, name, MaxRegs+1, ordinal(MaxRegs+1), c.thread, MaxRegs)
	}
	c.regs[name] = len(c.regs)
	return nil
}

func (c *compiler) write(name string, line int) error {
	if err := c.reg(name, line); err != nil {
		return err
	}
	if !c.wrote[name] {
		c.wrote[name] = true
		c.written = append(c.written, name)
	}
	return nil
}

func (c *compiler) expr(e litmus.Expr, line int) error {
	if e.Loc != "" {
		return c.errf(line, "location %s read in an expression of P%d", e.Loc, c.thread)
	}
	var err error
	e.Regs(func(r string) {
		if err == nil {
			err = c.reg(r, line)
		}
	})
	return err
}

func (c *compiler) stmts(body []litmus.Stmt) error {
	for i := range body {
		s := &body[i]
		c.cur = s
		switch {
		case s.Access != nil:
			a := s.Access
			if !supported(c.m, a.Op) {
				return c.errf(s.Line, "%w: %s does not support %s", litmus.ErrNotInModel, c.m, a.Op)
			}
			as, err := c.atomicFence(body, i)
			if err != nil {
				return err
			}
			info := a.Op.Info()
			loc := -1
			if !info.Fence {
				l, ok := c.locs[a.Loc]
				if !ok {
					return c.errf(s.Line, "%s on %q, which is not a location", a.Op, a.Loc)
				}
				loc = l
			}
			for _, e := range []litmus.Expr{a.Val, a.Expect} {
				if err := c.expr(e, s.Line); err != nil {
					return err
				}
			}
			if a.Reg != "" {
				if !info.Returns {
					return c.errf(s.Line, "%s returns no value", a.Op)
				}
				if err := c.write(a.Reg, s.Line); err != nil {
					return err
				}
			}
			deps := c.dep.access(a, as, loc)
			c.code = append(c.code, instr{kind: iAccess, line: s.Line, col: s.Col, access: a, loc: loc, fence: as, deps: deps, rdeps: c.dep.raw})
		case s.Assign != nil:
			if err := c.expr(s.Assign.Val, s.Line); err != nil {
				return err
			}
			if err := c.write(s.Assign.Reg, s.Line); err != nil {
				return err
			}
			c.dep.assign(s.Assign)
			c.code = append(c.code, instr{kind: iAssign, line: s.Line, col: s.Col, assign: s.Assign})
		case s.If != nil:
			if err := c.expr(s.If.Cond, s.Line); err != nil {
				return err
			}
			branch := len(c.code)
			c.code = append(c.code, instr{kind: iBranch, line: s.Line, col: s.Col, cond: s.If.Cond})
			before := c.dep.branch(s.If.Cond)
			if err := c.stmts(s.If.Then); err != nil {
				return err
			}
			first := c.dep.otherArm(before, s.If.Cond)
			if len(s.If.Else) == 0 {
				c.dep.join(before, first)
				c.code[branch].target = len(c.code)
				c.code[branch].end = len(c.code)
				continue
			}
			jump := len(c.code)
			c.code = append(c.code, instr{kind: iJump, line: s.Line, col: s.Col})
			c.code[branch].target = len(c.code)
			if err := c.stmts(s.If.Else); err != nil {
				return err
			}
			c.dep.join(before, first)
			c.code[jump].target = len(c.code)
			c.code[branch].end = len(c.code)
		case c.durable && (s.Loop != nil || s.Jump != 0 || s.Dev != nil || s.Check != nil || s.Goto != "" || s.Label != ""):
			if err := c.durableStmt(s); err != nil {
				return err
			}
		default:
			return c.errf(s.Line, "empty statement in P%d", c.thread)
		}
	}
	return nil
}

// atomicFence is what the access at body[i] does as a fence under
// memory.LKMM: smp_mb__before_atomic and smp_mb__after_atomic make the
// read-modify-write after or before them fully ordered, which is smp_mb at
// the fence when that RMW is the very next or last statement (then the
// events the fence separates are those that linux-kernel.bell's mb for it
// relates: fencerel(Before-atomic) ; [RMW] ; po? and po? ; [RMW] ;
// fencerel(After-atomic)), and nothing when the thread has no
// read-modify-write at all. Otherwise, with other accesses between, the
// fence is refused (memory.Memory would order those too). Every other
// access, and every fence under the other models, is itself (OpMb for
// smp_mb, OpRmb, OpWmb; OpBarrier for those that order nothing here).
func (c *compiler) atomicFence(body []litmus.Stmt, i int) (litmus.Op, error) {
	op := body[i].Access.Op
	if !op.Info().Fence {
		return 0, nil
	}
	if c.m != memory.LKMM {
		return op, nil
	}
	var adj int
	is, has := litmus.Op.IsRMW, c.hasRMW
	switch op {
	case litmus.OpMbBeforeAtomic:
		adj = i + 1
	case litmus.OpMbAfterAtomic:
		adj = i - 1
	case litmus.OpMbAfterSpinlock:
		// [M] ; po? ; [LKW] ; fencerel(After-spinlock) ; [M]: the same
		// with spin_lock for the RMW.
		adj, is, has = i-1, func(o litmus.Op) bool { return o == litmus.OpSpinLock }, c.hasLock
	default:
		return op, nil
	}
	if adj >= 0 && adj < len(body) && body[adj].Access != nil && is(body[adj].Access.Op) {
		return litmus.OpMb, nil
	}
	if !has {
		return litmus.OpBarrier, nil
	}
	return 0, c.errf(body[i].Line, "%w: %s with a statement other than the read-modify-write or lock it orders next to it in P%d, which memory.LKMM cannot order exactly", litmus.ErrUnsupported, op, c.thread)
}

// hasOp reports whether a thread's code has an access whose op is.
func hasOp(body []litmus.Stmt, is func(litmus.Op) bool) bool {
	for _, s := range body {
		if s.Access != nil && is(s.Access.Op) {
			return true
		}
		if s.If != nil && (hasOp(s.If.Then, is) || hasOp(s.If.Else, is)) {
			return true
		}
		if s.Loop != nil && (hasOp(s.Loop.Body, is) || hasOp(s.Loop.Post, is)) {
			return true
		}
		if s.Dev != nil && s.Dev.Load != nil && is(s.Dev.Load.Op) {
			return true
		}
	}
	return false
}

// errf is an error at line of the thread being compiled: for the
// durability checker an *Error naming the file, line and column (the
// statement's); otherwise "name: line N: ...".
func (c *compiler) errf(line int, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if !c.durable {
		return fmt.Errorf("%s: line %d: %w", c.name, line, err)
	}
	col := 0
	if c.cur != nil && c.cur.Line == line {
		col = c.cur.Col
	}
	return &litmus.Error{File: c.file, Line: line, Col: col, Msg: err.Error(), Err: err}
}

// initFits refuses an initial value of location i whose values (within
// the -128..127 of it memory.Memory holds) a register could not hold.
func initFits(t *litmus.Test, i int, v int64) error {
	if !fits16(v-128) || !fits16(v+127) {
		return t.LimitErr(t.LocPos(i), "initial value %s=%d: registers hold -32768..32767 and a location's values lie within -128..127 of its initial value, so it must lie within -32640..32640: scale the values down", t.Locs[i], v)
	}
	return nil
}

// memoryLimits refuses a test with more threads or locations than the
// explorer's memory holds, at the first thread or location beyond them.
func memoryLimits(t *litmus.Test) error {
	// Pointers, plain accesses, RCU and the rest of the LKMM language
	// that only the LKMM reference runs (litmus.Feature).
	if err := t.Refuse("the explorer (SC, TSO, Relaxed, LKMM)", 0); err != nil {
		return err
	}
	if n := len(t.Threads); n > memory.MaxThreads {
		th := t.Threads[memory.MaxThreads]
		return t.LimitErr(litmus.Pos{Line: th.Line, Col: th.Col}, "P%d is thread %d of %d, and the checker's memory holds at most %d threads: merge threads that run one after another, or check fewer tasks", memory.MaxThreads, memory.MaxThreads+1, n, memory.MaxThreads)
	}
	if n := len(t.Locs); n > memory.MaxLocations {
		return t.LimitErr(t.LocPos(memory.MaxLocations), "%s is shared location %d of %d, and the checker's memory holds at most %d: keep what one thread alone uses in registers, merge flags into one location, or check fewer tasks", t.Locs[memory.MaxLocations], memory.MaxLocations+1, n, memory.MaxLocations)
	}
	return nil
}

// ordinal is the suffix of n's English ordinal: "st", "nd", "rd" or "th".
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

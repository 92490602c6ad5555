package durable

import (
	"errors"
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// The durability checker's transition system: the threads of a litmus
// file over memory.Memory (the memory models of Operational) and a block
// device whose every rule is spec.Contract's. A device call is two steps
// of its thread, the submission and the wait for the command's end; the
// device's steps are the events Contract.DeviceEvents offers (completions
// in any order, failures where the file allows them). An assertion that
// fails, and a crash after which the final condition does not hold, are
// violations; a thread that can never go on is a deadlock.

// Failures says which device commands may fail with EIO.
type Failures uint8

// The failures a file may allow.
const (
	FailFlush Failures = 1 << iota // a flush may fail
	FailWrite                      // a write may fail
)

func (f Failures) String() string {
	switch f {
	case 0:
		return "none"
	case FailFlush:
		return "flush"
	case FailWrite:
		return "write"
	}
	return "flush,write"
}

// CrashMode says where the checker crashes the machine to judge the final
// condition.
type CrashMode uint8

// The crash modes.
const (
	CrashAny  CrashMode = iota // at every state: every prefix of every run
	CrashEnd                   // once every thread has finished
	CrashNone                  // never: the condition is judged when every thread has finished
)

func (c CrashMode) String() string {
	switch c {
	case CrashEnd:
		return "end"
	case CrashNone:
		return "none"
	}
	return "any"
}

// Config is one run of the checker over a file.
type Config struct {
	Model    memory.Model
	Device   spec.Config
	Failures Failures
	Crash    CrashMode
}

// State is a state of the durability checker's search, as
// [Test.Search]'s result holds them: the threads over memory, the
// device (spec.Contract) and the bios in flight. Comparable, opaque.
type State struct {
	op  opState
	dev spec.Contract
	// io, per thread and slot: the command it will wait for, a write's
	// number or a flush's number | ioFlush; 0 none. Slot 0 is the
	// command of a call that waits at once (submit_bio_wait,
	// blkdev_issue_flush), slots 1.. the bios of submit_bio, whose
	// handle is the slot.
	io    [memory.MaxThreads][ioSlots]uint8
	val   [spec.MaxWrites]int8 // per write: the value it wrote
	cache [spec.MaxBlocks]int8 // per block: what a read returns (the newest completed write)
	bad   fault                // the check that failed (badAssert, badDurable)
	// gone, per block: the values 0..63 (bit v) of writes the contract
	// forgot (spec.Contract.Forget): each was ordered before a durable
	// write to the block, so "v or newer data survives" holds forever.
	gone [spec.MaxBlocks]uint64
}

// ioSlots bounds the commands a thread has in flight: one call that
// waits at once and ioSlots-1 bios of submit_bio.
const ioSlots = 4

// io values besides a write's number and a flush's number | ioFlush: the
// thread's command ended, and the contract forgot it (Canonical), with
// its result.
const (
	ioFlush   = 0x80
	ioDoneOK  = 0x7e
	ioDoneEIO = 0x7f
)

// What failed (State.bad.kind).
const (
	badAssert  uint8 = iota + 1 // assert(e) was false
	badDurable                  // assert_durable(b, v): no durable write of v to b
)

// durSystem is a file compiled for one Config.
type durSystem struct {
	op     *opSystem
	cfg    Config
	blocks []int // the blocks the final condition names
	full   bool  // WithoutReductions
	// live, per thread and instruction: the registers some path from it
	// reads before writing (liveRegs); Canonical zeroes the others.
	live [][]uint8
	// local, per thread and instruction: a step that touches nothing but
	// the thread's own registers and program counter (an assignment of a
	// register the final condition does not name, a branch, a forward
	// jump, wake_up, a check), which Next takes alone (see Next).
	local [][]bool
	reads bool // some thread reads a block (the cache matters)
	// sym are the classes of interchangeable threads (findSymmetry);
	// noSym turns the symmetry and the renumbering off alone.
	sym     []symClass
	noSym   bool
	locIdx  []int  // 0, 1, ... one per location (memory.Memory.ThreadKey's)
	daemons uint64 // threads that need not finish (Test.Daemons)
	// fixed, per thread: the handles (bit k) its submit_bio calls with a
	// fixed Slot take, which a handle taken at run time skips.
	fixed [memory.MaxThreads]uint8
	// obNames are the obligations (explore.Obligations): each check
	// (assert, assert_durable) in thread and line order, then the final
	// condition; obBit, per thread and instruction, a check's bit (0 for
	// the other instructions), finalBit the final condition's.
	obNames     []string
	obBit       [][]uint64
	finalBit    uint64
	chainChecks [][]bool // per thread and instruction: the chain after its step may run a check
	// rec is the recovery code (litmus.Test.Recovery), run on each crash
	// image where the final condition is judged; nil for none.
	rec *recovery
}

// FaultError is a run the checker cannot judge: a value, block or
// command out of the model's bounds, or a store memory.LKMM cannot place.
// The row is an error, not a verdict.
type FaultError struct {
	Line, Col int // where in the file, 0 if nowhere in particular
	Msg       string
}

func (e *FaultError) Error() string { return e.Msg }

// Reduces implements explore.InnerReducer.
func (s *durSystem) Reduces() bool { return !s.full } // chains of local steps, under every model

// WithoutReductions implements explore.InnerReducer.
func (s *durSystem) WithoutReductions() explore.System[State] {
	u := *s
	op := *s.op
	op.full = true
	u.op, u.full = &op, true
	return &u
}

func (s *durSystem) threads() int { return len(s.op.code) }

// Actors are the threads, the memory (TSO's store buffers) and the device.
func (s *durSystem) Actors() []string { return append(s.op.Actors(), "device") }

func (s *durSystem) Init() []State {
	raw := s.rawInit()
	out := make([]State, 0, len(raw))
	for _, st := range raw {
		out = append(out, s.startChains(st, nil))
	}
	return out
}

// rawInit are the initial states before any thread's first local steps.
func (s *durSystem) rawInit() []State {
	ops := s.op.Init()
	out := make([]State, 0, len(ops))
	for _, o := range ops {
		st := State{op: o, dev: spec.NewContract(s.cfg.Device)}
		for t := range s.op.code {
			if t < len(s.op.test.RegInit) {
				for r, v := range s.op.test.RegInit[t] {
					st.op.regs[t][s.op.regs[t][r]] = int16(v) // fits (compileDurable)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// startChains takes the local steps each thread of a raw initial state
// starts with (Next), adding the checks they run to *judged (if not nil).
func (s *durSystem) startChains(st State, judged *uint64) State {
	if s.full {
		return st
	}
	for t, code := range s.op.code {
		st, _ = s.chainJudged(st, t, false, judged)
		if int(st.op.pc[t]) >= len(code) && st.op.fault.kind == 0 && st.bad.kind == 0 {
			st.op.mem.DropReader(t)
		}
	}
	return st
}

// Unfinished: the threads not at their end.
func (s *durSystem) Unfinished(st State) uint64 {
	if st.op.fault.kind != 0 || st.bad.kind != 0 {
		return 0
	}
	var m uint64
	for t, code := range s.op.code {
		if int(st.op.pc[t]) < len(code) || s.op.pending(st.op, t) {
			m |= 1 << t
		}
	}
	return m &^ s.daemons
}

// Speculative implements explore.Speculator: a state where a thread has a
// load pending (ahead.go). One with no step is a run whose guess no value
// bears out, or that ran ahead of a wait_event whose condition never
// holds: no execution, and no deadlock (the run that did not run ahead
// meets the wait).
func (s *durSystem) Speculative(st State) bool { return s.op.anyPending(st.op) }

// finished reports whether every thread has finished, with no access
// pending.
func (s *durSystem) finished(st State) bool { return !s.op.anyPending(st.op) && s.Unfinished(st) == 0 }

// Waiting says where thread t waits in st (explore.WaitDescriber): its
// line and statement, and, for a thread that waits inside a loop (a
// server that waits for work forever), that Daemons: lets it not finish.
func (s *durSystem) Waiting(st State, t int) string {
	if t >= len(s.op.code) || int(st.op.pc[t]) >= len(s.op.code[t]) {
		return ""
	}
	pc := int(st.op.pc[t])
	in := s.op.code[t][pc]
	text := fmt.Sprintf("P%d waits at line %d, %s", t, in.line, s.stmtText(in, &vals{}))
	for i := pc; i < len(s.op.code[t]); i++ {
		if j := s.op.code[t][i]; (j.kind == iJump || j.kind == iBranch) && j.target <= pc {
			return text + fmt.Sprintf(", in a loop: if P%d is a server that waits for work forever, say so in the header (Daemons: P%d)", t, t)
		}
	}
	return text
}

// Next yields every step of st's threads, memory and device. One
// reduction (off in WithoutReductions): a thread's step is followed, in
// the same transition, by the local steps after it (chain): steps that
// touch nothing but the thread's own registers and program counter, so
// they commute with every other step, no other step disables them, and
// neither Check nor the final condition sees them until a later step
// (partial-order reduction: every run has a run of the same steps,
// reordered, that takes them at once). A check (assert_durable) reads
// the device's durable set, which only grows, so checking it earlier is
// never more lenient. The verdicts are the same; the timeline shows the
// local steps with the step they follow (DescribeFrom).
func (s *durSystem) Next(st State, yield func(explore.Label, State)) {
	if st.op.fault.kind != 0 {
		return
	}
	if st.bad.kind != 0 {
		if s.op.speculating(st.op) {
			// A check failed while a store rests on a guess
			// (ahead.go): it is judged once the stores already made
			// bear the guesses out; only satisfactions run.
			for t := range s.op.code {
				s.op.aheadSteps(st.op, t, func(lb explore.Label, o opState) {
					n := st
					n.op = o
					lb.Actor = uint8(t)
					yield(lb, n)
				})
			}
		}
		return
	}
	nt := s.threads()
	st.op.mem.Steps(func(t int, m memory.Memory) {
		n := st
		n.op.mem = m
		lb := explore.Label{Actor: uint8(nt), ID: uint16(t)}
		for l := range s.op.test.Locs {
			if m.Newest(l) != st.op.mem.Newest(l) {
				lb.Kind, lb.Arg = uint8(l+1), uint16(uint8(m.Newest(l)))
				break
			}
		}
		yield(lb, n)
	})
	for t, code := range s.op.code {
		pc := int(st.op.pc[t])
		y := func(lb explore.Label, n State) {
			lb.Actor = uint8(t)
			if lb.Kind != kindLate {
				lb.ID = uint16(pc)
				n.op = s.op.afterStep(n.op, t, pc)
			}
			if !s.full {
				n, _ = s.chain(n, t, false)
			}
			if int(n.op.pc[t]) >= len(code) && n.op.fault.kind == 0 && n.bad.kind == 0 && !s.op.pending(n.op, t) {
				n.op.mem.DropReader(t)
			}
			yield(lb, n)
		}
		s.op.aheadSteps(st.op, t, func(lb explore.Label, o opState) {
			n := st
			n.op = o
			y(lb, n)
		})
		if pc >= len(code) {
			continue
		}
		s.step(st, t, code[pc], y)
	}
	s.deviceSteps(st, yield)
}

// maxChain bounds a chain of local steps: a loop that runs longer without
// touching memory or the device is a fault (it would never end).
const maxChain = 1000

// chain takes thread t's local steps from st until its next step is not
// local, it has finished, or a check failed; with texts, it describes
// them.
func (s *durSystem) chain(st State, t int, texts bool) (State, []string) {
	return s.chainJudged(st, t, texts, nil)
}

// chainJudged is chain that also adds to *judged (if not nil) the bits of
// the checks the chain runs.
func (s *durSystem) chainJudged(st State, t int, texts bool, judged *uint64) (State, []string) {
	code := s.op.code[t]
	var out []string
	for k := 0; ; k++ {
		pc := int(st.op.pc[t])
		if pc >= len(code) || !s.local[t][pc] || st.bad.kind != 0 || st.op.fault.kind != 0 || s.op.pending(st.op, t) {
			return st, out // (a thread with a pending access runs its local steps one by one: ahead.go)
		}
		if judged != nil {
			*judged |= s.obBit[t][pc]
		}
		if k == maxChain {
			st.op.fault = fault{kind: faultLocalLoop, thread: uint8(t), pc: uint8(pc)}
			return st, out
		}
		var next State
		var lab explore.Label
		n := 0
		s.step(st, t, code[pc], func(lb explore.Label, x State) {
			next, lab, n = x, lb, n+1
		})
		if n != 1 {
			panic(fmt.Sprintf("litmus: local step at line %d has %d results", code[pc].line, n))
		}
		if texts {
			lab.Actor, lab.ID = uint8(t), uint16(pc)
			// render's pointer escapes: a copy taken here keeps st on
			// the stack (chainJudged runs for every successor).
			before := st
			text, _ := s.render(&before, lab) // from the state before the step
			out = append(out, text)
		}
		st = next
	}
}

// deviceSteps are the device's events, as the contract offers them.
func (s *durSystem) deviceSteps(st State, yield func(explore.Label, State)) {
	dev := s.threads() + 1
	st.dev.DeviceEvents(s.cfg.Failures != 0, func(e spec.Event) {
		if e.Kind == spec.WriteFail && s.cfg.Failures&FailWrite == 0 || e.Kind == spec.FlushFail && s.cfg.Failures&FailFlush == 0 {
			return
		}
		n := st
		if err := n.dev.Apply(e); err != nil {
			panic(fmt.Sprintf("litmus: the contract refused %v, which it offered: %v", e, err))
		}
		if e.Kind == spec.WriteComplete {
			for bm := n.dev.WriteBlocks(e.ID); bm != 0; bm &= bm - 1 {
				n.cache[lowBit(bm)] = st.val[e.ID-1]
			}
		}
		yield(explore.Label{Actor: uint8(dev), Kind: uint8(e.Kind), ID: uint16(e.ID)}, n)
	})
}

func lowBit(m uint8) int {
	for b := 0; b < 8; b++ {
		if m&(1<<b) != 0 {
			return b
		}
	}
	return -1
}

// Label kinds of the durability steps (Label.Kind of a thread's step).
const (
	kindDevErr uint8 = iota + 8 // a wait: Arg is the error (0 or EIO)
	kindRead                    // a read: Arg is the value
	kindFailed                  // a check that failed
	kindSubmit                  // a submission: Arg is the command's number
	kindFault                   // a step the checker cannot take (a fault)
)

// step yields thread t's successors for in.
func (s *durSystem) step(st State, t int, in instr, yield func(explore.Label, State)) {
	switch in.kind {
	case iAccess, iAssign, iBranch, iJump, iAwait:
		s.op.step(st.op, t, in, func(lb explore.Label, o opState) {
			n := st
			n.op = o
			yield(lb, n)
		})
		return
	}
	if s.op.pending(st.op, t) && in.kind != iNop {
		// A device call, completion or check is ordered after the
		// thread's pending accesses (ahead.go); wake_up orders nothing.
		s.op.stepAhead(st.op, t, in, s.op.ahead.thread(st.op.ahead, t), func(lb explore.Label, o opState) {
			n := st
			n.op = o
			yield(lb, n)
		})
		return
	}
	if in.arith && s.op.arithFails(st.op, t, in) {
		n := st
		n.op.fault = fault{kind: faultArith, thread: uint8(t), pc: st.op.pc[t]}
		yield(explore.Label{Kind: kindFault}, n)
		return
	}
	eval := func(e litmus.Expr) int64 {
		v, err := e.Eval(func(_ int, name string) int64 { return int64(st.op.regs[t][s.op.regs[t][name]]) }, nil)
		if err != nil {
			panic(err) // compile checked every expression
		}
		return v
	}
	n := st
	n.op.pc[t]++
	failWith := func(f fault) {
		n.op.pc[t] = st.op.pc[t]
		n.op.fault = f
		yield(explore.Label{Kind: kindFault}, n)
	}
	fail := func(kind uint8) { failWith(fault{kind: kind, thread: uint8(t), pc: st.op.pc[t]}) }
	setReg := func(n *State, name string, v int64) {
		if name != "" {
			n.op.regs[t][s.op.regs[t][name]] = int16(v) // 0, -EIO or a block's value
		}
	}
	// settled yields n after t's pending barrier (LKMM), in every order:
	// a device call is not a memory operation, but a fully ordered RMW
	// orders every later event of its thread (memory.Memory.Settle).
	settled := func(n State, lb explore.Label) {
		for _, c := range n.op.mem.Settle(t) {
			m := n
			m.op.mem = c.Mem
			lb.Alt = uint16(c.Alt)
			yield(lb, m)
		}
	}
	switch in.kind {
	case iNop:
		yield(explore.Label{}, n)
	case iCheck:
		ch := in.check
		ok := false
		if ch.Durable {
			b, v := eval(ch.Block), eval(ch.Val)
			ok = b >= 0 && b < spec.MaxBlocks && s.durableValue(&st, int(b), v)
		} else {
			ok = eval(ch.Cond) != 0
		}
		if ok {
			yield(explore.Label{}, n)
			return
		}
		n.op.pc[t] = st.op.pc[t]
		kind := badAssert
		if ch.Durable {
			kind = badDurable
		}
		n.bad = fault{kind: kind, thread: uint8(t), pc: st.op.pc[t]}
		yield(explore.Label{Kind: kindFailed}, n)
	case iDevSubmit:
		d := in.dev
		if d.Kind == litmus.DevFlush || d.Flush {
			slot := 0
			if d.Slot > 0 { // a flush bio another thread reaps
				slot = d.Slot
				if n.io[t][slot] != 0 {
					fail(faultBusy)
					return
				}
			}
			id := n.dev.Flushes() + 1
			if id > spec.MaxFlushes || id >= ioFlush {
				fail(faultDevice)
				return
			}
			if err := n.dev.Apply(spec.Event{Kind: spec.FlushSubmit, ID: id}); err != nil {
				fail(faultDevice)
				return
			}
			n.io[t][slot] = uint8(id) | ioFlush
			settled(n, explore.Label{Kind: kindSubmit, Arg: uint16(id)})
			return
		}
		b, v, fl := eval(d.Block), eval(d.Val), eval(d.Flags)
		nb := int64(max(d.Blocks, 1))
		switch {
		case b < 0 || b+nb > spec.MaxBlocks:
			fail(faultBlock)
			return
		case fl&^(litmus.ReqFUA|litmus.ReqPreflush|litmus.ReqSync) != 0:
			fail(faultFlags)
			return
		case v < -128 || v > 127:
			fail(faultValue)
			return
		}
		id := n.dev.Writes() + 1
		if id > spec.MaxWrites {
			fail(faultDevice)
			return
		}
		slot := 0 // a call that waits at once
		switch {
		case d.Kind == litmus.DevSubmit && d.Slot > 0:
			// A bio another thread reaps (its bi_end_io): its fixed
			// handle must be free.
			slot = d.Slot
			if n.io[t][slot] != 0 {
				fail(faultBusy)
				return
			}
		case d.Kind == litmus.DevSubmit:
			// The lowest free slot is the bio's handle; a bio no
			// register holds is never waited for and takes none.
			slot = -1
			if d.Reg != "" {
				for slot = 1; slot < ioSlots && (n.io[t][slot] != 0 || s.fixed[t]&(1<<slot) != 0); slot++ {
				}
				if slot == ioSlots {
					fail(faultBios)
					return
				}
				setReg(&n, d.Reg, int64(slot))
			}
		}
		if err := n.dev.Apply(spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: uint8((1<<nb - 1) << b), FUA: fl&litmus.ReqFUA != 0, Preflush: fl&litmus.ReqPreflush != 0}); err != nil {
			fail(faultDevice)
			return
		}
		n.val[id-1] = int8(v)
		if slot >= 0 {
			n.io[t][slot] = uint8(id)
		}
		settled(n, explore.Label{Kind: kindSubmit, Arg: uint16(id)})
	case iDevWait:
		slot, owner := 0, t
		switch in.dev.Kind {
		case litmus.DevReap:
			owner, slot = in.dev.Owner, in.dev.Slot
			if st.io[owner][slot] == 0 {
				return // not submitted (again) yet: the actor waits
			}
		case litmus.DevBioWait:
			h := eval(in.dev.Val)
			if h < 1 || h >= ioSlots || st.io[t][h] == 0 {
				fail(faultHandle)
				return
			}
			slot = int(h)
		}
		id := int(st.io[owner][slot])
		var ended, failed bool
		switch {
		case id == ioDoneOK:
			ended = true
		case id == ioDoneEIO:
			ended, failed = true, true
		case id&ioFlush != 0:
			ended, failed = st.dev.FlushEnded(id &^ ioFlush)
		default:
			ended, failed = st.dev.WriteEnded(id)
		}
		if !ended {
			return // the thread waits
		}
		n.io[owner][slot] = 0
		errv := int64(0)
		if failed {
			errv = -litmus.EIO
		}
		setReg(&n, in.dev.Reg, errv)
		settled(n, explore.Label{Kind: kindDevErr, Arg: uint16(-errv)})
	case iDevRead:
		b := eval(in.dev.Block)
		if b < 0 || b >= spec.MaxBlocks {
			fail(faultBlock)
			return
		}
		v := int64(st.cache[b])
		setReg(&n, in.dev.Reg, v)
		settled(n, explore.Label{Kind: kindRead, Arg: uint16(uint8(int8(v)))})
	case iCompletion:
		// complete(), complete_all(), wait_for_completion(): the count
		// changed in one RMW that acquires and releases (the
		// completion's wait.lock taken, the count changed, the lock
		// released). A wait is taken only where it reads a positive
		// count; with none, its thread sleeps until a complete().
		wait := in.dev.Kind == litmus.DevWaitDone
		rangeFault := false
		f := func(d int64) (int64, bool) {
			old := s.op.real(in.loc, d)
			nv := old + 1 // complete: past CompleteAll it stays done for all
			switch {
			case in.dev.Kind == litmus.DevCompleteAll:
				nv = litmus.CompleteAll
			case wait && old <= 0:
				return 0, false
			case wait && old >= litmus.CompleteAll:
				nv = old
			case wait:
				nv = old - 1
			}
			dv, ok := s.op.stored(in.loc, nv)
			rangeFault = rangeFault || !ok
			return dv, true
		}
		rs, err := st.op.mem.RMWOrdered(t, in.loc, f, memory.RMWOrder{Acquire: true, Release: true, Deps: in.deps | in.rdeps})
		switch {
		case errors.Is(err, memory.ErrUnordered):
			failWith(unordered(err, t, st.op.pc[t]))
			return
		case rangeFault:
			fail(faultRange)
			return
		case err != nil:
			fail(faultMemory)
			return
		}
		for _, r := range rs {
			if !r.Stored {
				continue // a wait that read no completion: not this way
			}
			m := n
			m.op.mem = r.Mem
			yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(r.Old))), Alt: uint16(r.Alt)}, m)
		}
	default:
		panic(fmt.Sprintf("litmus: no step for instruction kind %d", in.kind))
	}
}

// Canonical zeroes what no step will read: the registers dead at each
// thread's instruction (liveRegs), if no thread reads a block the cache,
// and under LKMM the marks of loads no later store reads
// (opSystem.forgetMarks). Two states that differ only there have the
// same futures. (A
// failed check's registers are live where it stopped: its explanation
// reads them.)
func (s *durSystem) Canonical(st State) State {
	for t := range s.op.code {
		live := s.live[t][st.op.pc[t]]
		for r := range st.op.regs[t] {
			if live&(1<<r) == 0 {
				st.op.regs[t][r] = 0
			}
		}
	}
	if !s.reads {
		st.cache = [spec.MaxBlocks]int8{}
	}
	if !s.full {
		s.op.forgetMarks(&st.op)
	}
	if s.noSym || st.op.ahead != 0 {
		return st // (a state with pending accesses is not sorted: their order is the threads')
	}
	return s.canonicalize(st)
}

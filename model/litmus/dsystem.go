package litmus

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
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

// DurableConfig is one run of the checker over a file.
type DurableConfig struct {
	Model    memory.Model
	Device   spec.Config
	Failures Failures
	Crash    CrashMode
}

// durState is a state of the checker; comparable.
type durState struct {
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

// What failed (durState.bad.kind).
const (
	badAssert  uint8 = iota + 1 // assert(e) was false
	badDurable                  // assert_durable(b, v): no durable write of v to b
)

// Faults of the durability statements (opState.fault.kind), after
// Operational's.
const (
	faultBlock     uint8 = iota + 10 // a block number out of range
	faultFlags                       // flags other than REQ_FUA and REQ_PREFLUSH
	faultDevice                      // the contract refused a command (more than its bounds)
	faultValue                       // a value a block cannot hold
	faultLocalLoop                   // maxChain local steps in a row
	faultBios                        // a submit_bio with ioSlots-1 bios of its thread in flight
	faultHandle                      // a bio_wait on a handle that names no bio in flight
)

// durSystem is a file compiled for one DurableConfig.
type durSystem struct {
	op     *opSystem
	cfg    DurableConfig
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
	daemons uint64 // threads that need not finish (Durable.Daemons)
	// obNames are the obligations (explore.Obligations): each check
	// (assert, assert_durable) in thread and line order, then the final
	// condition; obBit, per thread and instruction, a check's bit (0 for
	// the other instructions), finalBit the final condition's.
	obNames     []string
	obBit       [][]uint64
	finalBit    uint64
	chainChecks [][]bool // per thread and instruction: the chain after its step may run a check
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
func (s *durSystem) WithoutReductions() explore.System[durState] {
	u := *s
	op := *s.op
	op.full = true
	u.op, u.full = &op, true
	return &u
}

func (s *durSystem) threads() int { return len(s.op.code) }

// Actors are the threads, the memory (TSO's store buffers) and the device.
func (s *durSystem) Actors() []string { return append(s.op.Actors(), "device") }

func (s *durSystem) Init() []durState {
	raw := s.rawInit()
	out := make([]durState, 0, len(raw))
	for _, st := range raw {
		out = append(out, s.startChains(st, nil))
	}
	return out
}

// rawInit are the initial states before any thread's first local steps.
func (s *durSystem) rawInit() []durState {
	ops := s.op.Init()
	out := make([]durState, 0, len(ops))
	for _, o := range ops {
		st := durState{op: o, dev: spec.NewContract(s.cfg.Device)}
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
func (s *durSystem) startChains(st durState, judged *uint64) durState {
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
func (s *durSystem) Unfinished(st durState) uint64 {
	if st.op.fault.kind != 0 || st.bad.kind != 0 {
		return 0
	}
	var m uint64
	for t, code := range s.op.code {
		if int(st.op.pc[t]) < len(code) {
			m |= 1 << t
		}
	}
	return m &^ s.daemons
}

func (s *durSystem) finished(st durState) bool { return s.Unfinished(st) == 0 }

// Waiting says where thread t waits in st (explore.WaitDescriber): its
// line and statement, and, for a thread that waits inside a loop (a
// server that waits for work forever), that Daemons: lets it not finish.
func (s *durSystem) Waiting(st durState, t int) string {
	if t >= len(s.op.code) || int(st.op.pc[t]) >= len(s.op.code[t]) {
		return ""
	}
	pc := int(st.op.pc[t])
	in := s.op.code[t][pc]
	text := fmt.Sprintf("P%d waits at line %d, %s", t, in.line, s.stmtText(in))
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
func (s *durSystem) Next(st durState, yield func(explore.Label, durState)) {
	if st.op.fault.kind != 0 || st.bad.kind != 0 {
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
		if pc >= len(code) {
			continue
		}
		s.step(st, t, code[pc], func(lb explore.Label, n durState) {
			lb.Actor, lb.ID = uint8(t), uint16(pc)
			if !s.full {
				n, _ = s.chain(n, t, false)
			}
			if int(n.op.pc[t]) >= len(code) && n.op.fault.kind == 0 && n.bad.kind == 0 {
				n.op.mem.DropReader(t)
			}
			yield(lb, n)
		})
	}
	s.deviceSteps(st, yield)
}

// maxChain bounds a chain of local steps: a loop that runs longer without
// touching memory or the device is a fault (it would never end).
const maxChain = 1000

// chain takes thread t's local steps from st until its next step is not
// local, it has finished, or a check failed; with texts, it describes
// them.
func (s *durSystem) chain(st durState, t int, texts bool) (durState, []string) {
	return s.chainJudged(st, t, texts, nil)
}

// chainJudged is chain that also adds to *judged (if not nil) the bits of
// the checks the chain runs.
func (s *durSystem) chainJudged(st durState, t int, texts bool, judged *uint64) (durState, []string) {
	code := s.op.code[t]
	var out []string
	for k := 0; ; k++ {
		pc := int(st.op.pc[t])
		if pc >= len(code) || !s.local[t][pc] || st.bad.kind != 0 || st.op.fault.kind != 0 {
			return st, out
		}
		if judged != nil {
			*judged |= s.obBit[t][pc]
		}
		if k == maxChain {
			st.op.fault = fault{faultLocalLoop, uint8(t), uint8(pc)}
			return st, out
		}
		var next durState
		var lab explore.Label
		n := 0
		s.step(st, t, code[pc], func(lb explore.Label, x durState) {
			next, lab, n = x, lb, n+1
		})
		if n != 1 {
			panic(fmt.Sprintf("litmus: local step at line %d has %d results", code[pc].line, n))
		}
		if texts {
			lab.Actor, lab.ID = uint8(t), uint16(pc)
			out = append(out, s.Describe(lab))
		}
		st = next
	}
}

// DescribeFrom describes a step taken from st with the local steps that
// follow it in the same transition (Next).
func (s *durSystem) DescribeFrom(st durState, l explore.Label) string {
	text := s.Describe(l)
	t := int(l.Actor)
	if s.full || t >= s.threads() {
		return text
	}
	pc := int(l.ID)
	var after durState
	found := false
	s.step(st, t, s.op.code[t][pc], func(lb explore.Label, n durState) {
		lb.Actor, lb.ID = uint8(t), uint16(pc)
		if lb == l && !found {
			after, found = n, true
		}
	})
	if !found {
		return text
	}
	_, more := s.chain(after, t, true)
	if len(more) == 0 {
		return text
	}
	return text + "\n" + strings.Join(more, "\n")
}

// deviceSteps are the device's events, as the contract offers them.
func (s *durSystem) deviceSteps(st durState, yield func(explore.Label, durState)) {
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
func (s *durSystem) step(st durState, t int, in instr, yield func(explore.Label, durState)) {
	switch in.kind {
	case iAccess, iAssign, iBranch, iJump:
		s.op.step(st.op, t, in, func(lb explore.Label, o opState) {
			n := st
			n.op = o
			yield(lb, n)
		})
		return
	}
	eval := func(e Expr) int64 {
		v, err := e.Eval(func(_ int, name string) int64 { return int64(st.op.regs[t][s.op.regs[t][name]]) }, nil)
		if err != nil {
			panic(err) // compile checked every expression
		}
		return v
	}
	n := st
	n.op.pc[t]++
	fail := func(kind uint8) {
		n.op.pc[t] = st.op.pc[t]
		n.op.fault = fault{kind, uint8(t), st.op.pc[t]}
		yield(explore.Label{Kind: kindFault}, n)
	}
	setReg := func(n *durState, name string, v int64) {
		if name != "" {
			n.op.regs[t][s.op.regs[t][name]] = int16(v) // 0, -EIO or a block's value
		}
	}
	// settled yields n after t's pending barrier (LKMM), in every order:
	// a device call is not a memory operation, but a fully ordered RMW
	// orders every later event of its thread (memory.Memory.Settle).
	settled := func(n durState, lb explore.Label) {
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
		n.bad = fault{kind, uint8(t), st.op.pc[t]}
		yield(explore.Label{Kind: kindFailed}, n)
	case iDevSubmit:
		d := in.dev
		if d.Kind == DevFlush {
			id := n.dev.Flushes() + 1
			if id > spec.MaxFlushes || id >= ioFlush {
				fail(faultDevice)
				return
			}
			if err := n.dev.Apply(spec.Event{Kind: spec.FlushSubmit, ID: id}); err != nil {
				fail(faultDevice)
				return
			}
			n.io[t][0] = uint8(id) | ioFlush
			settled(n, explore.Label{Kind: kindSubmit, Arg: uint16(id)})
			return
		}
		b, v, fl := eval(d.Block), eval(d.Val), eval(d.Flags)
		switch {
		case b < 0 || b >= spec.MaxBlocks:
			fail(faultBlock)
			return
		case fl&^(ReqFUA|ReqPreflush|ReqSync) != 0:
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
		if d.Kind == DevSubmit {
			// The lowest free slot is the bio's handle; a bio no
			// register holds is never waited for and takes none.
			slot = -1
			if d.Reg != "" {
				for slot = 1; slot < ioSlots && n.io[t][slot] != 0; slot++ {
				}
				if slot == ioSlots {
					fail(faultBios)
					return
				}
				setReg(&n, d.Reg, int64(slot))
			}
		}
		if err := n.dev.Apply(spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: 1 << b, FUA: fl&ReqFUA != 0, Preflush: fl&ReqPreflush != 0}); err != nil {
			fail(faultDevice)
			return
		}
		n.val[id-1] = int8(v)
		if slot >= 0 {
			n.io[t][slot] = uint8(id)
		}
		settled(n, explore.Label{Kind: kindSubmit, Arg: uint16(id)})
	case iDevWait:
		slot := 0
		if in.dev.Kind == DevBioWait {
			h := eval(in.dev.Val)
			if h < 1 || h >= ioSlots || st.io[t][h] == 0 {
				fail(faultHandle)
				return
			}
			slot = int(h)
		}
		id := int(st.io[t][slot])
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
		n.io[t][slot] = 0
		errv := int64(0)
		if failed {
			errv = -EIO
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
	case iAwait:
		load := st.op.mem.Load
		if in.access.Op == OpLoadAcquire {
			load = st.op.mem.LoadAcquire
		}
		for i, r := range load(t, in.loc) {
			m := n
			m.op.mem = r.Mem
			v := s.op.real(in.loc, r.Val)
			setReg(&m, in.access.Reg, v)
			c, err := in.cond.Eval(func(_ int, name string) int64 { return int64(m.op.regs[t][s.op.regs[t][name]]) }, nil)
			if err != nil {
				panic(err)
			}
			if c == 0 {
				continue // not yet: the thread sleeps until a store makes it true
			}
			yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(r.Val))) | uint16(i)<<8}, m)
		}
	case iCompletion:
		// complete(), complete_all(), wait_for_completion(): the count
		// changed in one RMW that acquires and releases (the
		// completion's wait.lock taken, the count changed, the lock
		// released). A wait is taken only where it reads a positive
		// count; with none, its thread sleeps until a complete().
		wait := in.dev.Kind == DevWaitDone
		rangeFault := false
		f := func(d int64) (int64, bool) {
			old := s.op.real(in.loc, d)
			nv := old + 1 // complete: past completeAll it stays done for all
			switch {
			case in.dev.Kind == DevCompleteAll:
				nv = completeAll
			case wait && old <= 0:
				return 0, false
			case wait && old >= completeAll:
				nv = old
			case wait:
				nv = old - 1
			}
			dv, ok := s.op.stored(in.loc, nv)
			rangeFault = rangeFault || !ok
			return dv, true
		}
		rs, err := st.op.mem.RMWOrdered(t, in.loc, f, memory.RMWOrder{Acquire: true, Release: true, Deps: in.deps})
		switch {
		case errors.Is(err, memory.ErrUnordered):
			fail(faultUnordered)
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

// durableValue reports whether v, or newer data, survives on block b:
// some write of v to b is durable, or is ordered before a durable write
// to b (a crash can no longer leave anything older than it), or was such
// a write and the contract forgot it (gone).
func (s *durSystem) durableValue(st *durState, b int, v int64) bool {
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
func (s *durSystem) Check(st durState) error {
	if f := st.op.fault; f.kind != 0 {
		in := s.op.code[f.thread][f.pc]
		return &FaultError{Line: in.line, Col: in.col, Msg: s.faultText(f)}
	}
	if b := st.bad; b.kind != 0 {
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
func (s *durSystem) crashImages(st *durState, k int, img []int8) error {
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

// judge evaluates the final condition on st and the crash image img (nil
// without a crash).
func (s *durSystem) judge(st *durState, img []int8) error {
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
	if s.op.test.Quant == NotExists {
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
func (s *durSystem) badText(st *durState, b fault) error {
	in := s.op.code[b.thread][b.pc]
	ch := in.check
	eval := func(e Expr) int64 {
		v, _ := e.Eval(func(_ int, name string) int64 { return int64(st.op.regs[b.thread][s.op.regs[b.thread][name]]) }, nil)
		return v
	}
	if b.kind == badAssert {
		return fmt.Errorf("line %d: P%d: assert(%s) fails", in.line, b.thread, cExpr(ch.Cond))
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
		in.line, b.thread, cExpr(ch.Block), cExpr(ch.Val), v, blk, strings.Join(ws, "; "))
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
	case faultHandle:
		return fmt.Sprintf("line %d: P%d: %s: the handle names no bio of this thread in flight (a register that submit_bio set, waited for once)", in.line, f.thread, s.stmtText(in))
	}
	return s.op.faultText(f)
}

// Describe renders a step for the timeline, thread steps with their line
// in the file.
func (s *durSystem) Describe(lb explore.Label) string {
	nt := s.threads()
	switch int(lb.Actor) {
	case nt:
		return s.op.Describe(lb)
	case nt + 1:
		k := spec.Kind(lb.Kind)
		e := spec.Event{Kind: k, ID: int(lb.ID)}
		return e.String()
	}
	in := s.op.code[lb.Actor][lb.ID]
	text := ""
	if lb.Kind == kindFault && in.kind >= iDevSubmit {
		return fmt.Sprintf("L%d: %s: beyond the checker's bounds", in.line, s.stmtText(in))
	}
	switch in.kind {
	case iJump:
		text = in.jump
		if text == "" {
			text = "(end of then, skip else)"
		}
	case iBranch:
		taken := "not taken"
		if lb.Arg == 1 {
			taken = "taken"
		}
		text = fmt.Sprintf("if (%s): %s", strings.TrimSuffix(strings.TrimPrefix(cExpr(in.cond), "("), ")"), taken)
	case iAccess, iAssign:
		text = s.op.Describe(lb)
		if a := in.access; a != nil && a.Call != "" {
			text = strings.Replace(text, accessText(a), callText(a), 1)
		}
	case iNop:
		text = in.dev.Kind.String() + "()"
	case iCheck:
		text = checkText(in.check)
		if lb.Kind == kindFailed {
			text += ": FAILS"
		}
	case iDevSubmit:
		if in.dev.Kind == DevFlush {
			text = fmt.Sprintf("blkdev_issue_flush(): F%d submitted", lb.Arg)
		} else {
			text = fmt.Sprintf("%s: W%d submitted", s.stmtText(in), lb.Arg)
		}
	case iDevWait:
		call := in.dev.Kind.String() + "()"
		if in.dev.Kind == DevBioWait {
			call = s.stmtText(in)
		}
		text = fmt.Sprintf("%s returns %d", call, -int(lb.Arg))
		if in.dev.Reg != "" {
			text = in.dev.Reg + " = " + text
		}
	case iCompletion:
		text = fmt.Sprintf("%s(%s): %s was %d", in.access.Call, in.access.Loc, in.access.Loc, s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	case iDevRead:
		text = fmt.Sprintf("%s = read_block(%s) = %d", in.dev.Reg, cExpr(in.dev.Block), int8(uint8(lb.Arg)))
	case iAwait:
		text = fmt.Sprintf("wait_event(%s): %s = %d", cExpr(in.cond), accessText(in.access), s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	}
	if lb.Alt != 0 && in.kind >= iDevSubmit {
		name := func(t int) string { return fmt.Sprintf("P%d", t) }
		text += " (" + memory.Alt(lb.Alt).Text(name, false) + ")"
	}
	return fmt.Sprintf("L%d: %s", in.line, text)
}

func checkText(c *Check) string {
	if c.Durable {
		return fmt.Sprintf("assert_durable(%s, %s)", unparen(cExpr(c.Block)), unparen(cExpr(c.Val)))
	}
	return fmt.Sprintf("assert(%s)", unparen(cExpr(c.Cond)))
}

// flagsText renders write flags as the file would.
func flagsText(e Expr) string {
	if !e.IsConst {
		return cExpr(e)
	}
	var parts []string
	if e.Const&ReqPreflush != 0 {
		parts = append(parts, "REQ_PREFLUSH")
	}
	if e.Const&ReqFUA != 0 {
		parts = append(parts, "REQ_FUA")
	}
	if e.Const&ReqSync != 0 {
		parts = append(parts, "REQ_SYNC")
	}
	if rest := e.Const &^ (ReqFUA | ReqPreflush | ReqSync); rest != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprint(rest))
	}
	return strings.Join(parts, "|")
}

// Canonical zeroes what no step will read: the registers dead at each
// thread's instruction (liveRegs) and, if no thread reads a block, the
// cache. Two states that differ only there have the same futures. (A
// failed check's registers are live where it stopped: its explanation
// reads them.)
func (s *durSystem) Canonical(st durState) durState {
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
	if s.noSym {
		return st
	}
	return s.canonicalize(st)
}

// stmtText renders a durability instruction's call, without results.
func (s *durSystem) stmtText(in instr) string {
	switch {
	case in.check != nil:
		return checkText(in.check)
	case in.dev != nil && (in.dev.Kind == DevWrite || in.dev.Kind == DevSubmit):
		text := fmt.Sprintf("%s(%s, %s, %s)", in.dev.Kind, cExpr(in.dev.Block), cExpr(in.dev.Val), flagsText(in.dev.Flags))
		if in.dev.Kind == DevSubmit && in.dev.Reg != "" {
			text = in.dev.Reg + " = " + text
		}
		return text
	case in.dev != nil && in.dev.Kind == DevBioWait:
		return fmt.Sprintf("bio_wait(%s)", cExpr(in.dev.Val))
	case in.dev != nil && in.dev.Kind.IsCompletion():
		return fmt.Sprintf("%s(%s)", in.dev.Load.Call, in.dev.Load.Loc)
	case in.dev != nil && in.dev.Kind == DevRead:
		return fmt.Sprintf("read_block(%s)", cExpr(in.dev.Block))
	case in.kind == iAwait:
		load := *in.access
		load.Reg = ""
		cond := strings.ReplaceAll(cExpr(in.cond), waitReg, callText(&load))
		return fmt.Sprintf("wait_event(%s)", unparen(cond))
	case in.dev != nil:
		return in.dev.Kind.String() + "()"
	}
	return "?"
}

// unparen drops parentheses around the whole of s.
func unparen(s string) string {
	if !strings.HasPrefix(s, "(") {
		return s
	}
	depth := 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return s
			}
		}
	}
	return s[1 : len(s)-1]
}

// callText renders an access as the file spelled it: atomic_inc(x),
// atomic_add(2, x), r = READ_ONCE(*x).
func callText(a *Access) string {
	if d, ok := devPrims[a.Call]; ok && d.completion != 0 {
		return a.Call + "(" + a.Loc + ")"
	}
	pr, ok := prims[a.Call]
	if !ok {
		return accessText(a)
	}
	var args []string
	vals := []Expr{a.Val}
	if a.Op.IsCmpxchg() {
		vals = []Expr{a.Expect, a.Val}
	}
	for _, k := range pr.args {
		switch k {
		case argDeref:
			args = append(args, "*"+a.Loc)
		case argPtr:
			args = append(args, a.Loc)
		case argVal:
			v := Expr{}
			if len(vals) > 0 {
				v, vals = vals[0], vals[1:]
			}
			if pr.neg && len(v.Args) == 1 && v.Op == "-" {
				v = v.Args[0]
			}
			args = append(args, cExpr(v))
		}
	}
	call := a.Call + "(" + strings.Join(args, ", ") + ")"
	if a.Reg != "" {
		return a.Reg + " = " + call
	}
	return call
}

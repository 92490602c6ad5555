package durable

// The operational models: a test run under model/memory's SC, x86-TSO or
// Relaxed memory, every interleaving explored by model/explore. Each thread
// is an actor whose registers and program counter are part of the state;
// under TSO a store buffer's oldest entry reaching memory is a step of the
// "memory" actor. The final states (every thread at its end, every store
// buffer drained) are the outcomes.
//
// How the primitives map onto memory.Memory:
//   - SC: every primitive is sequentially consistent; fences are no-ops.
//   - TSO: loads and stores are plain (x86 loads are acquires and stores
//     releases already, so smp_load_acquire and smp_store_release are plain
//     too); smp_mb drains the store buffer; smp_rmb, smp_wmb,
//     smp_mb__{before,after}_atomic, smp_mb__after_spinlock and barrier()
//     are compiler barriers only on x86 (arch/x86/include/asm/barrier.h,
//     where atomics are locked instructions); every read-modify-write and
//     spin_lock is a locked instruction that drains the buffer first;
//     spin_unlock is a plain (buffered) store of 0.
//   - Relaxed (the view-based model of memory.Relaxed): only what Memory has:
//     READ_ONCE, WRITE_ONCE, smp_mb and the fully ordered read-modify-writes
//     (atomic_add_return, atomic_fetch_add, xchg, cmpxchg and their inc,
//     dec and sub spellings). Everything else is refused with an error
//     naming the primitive: Relaxed has no acquire, release, partial
//     fence or unordered RMW, and answering with a stronger or weaker
//     primitive in their place would be a wrong answer.
//   - LKMM (memory.LKMM, the explorer's LKMM): every primitive, the
//     orderings beyond smp_mb on a memory declared with UseOrderings
//     (Init). smp_mb__{before,after}_atomic and smp_mb__after_spinlock
//     are smp_mb next to the RMW or lock they order, nothing in a thread
//     without one, and refused otherwise (atomicFence). Threads run ahead
//     of their loads (ahead.go): a load left pending while later stores
//     run gives LKMM's load buffering. A store that follows a load of
//     another location that could not be left pending, with no smp_mb
//     between, is refused (memory.ErrUnordered) unless it depends on that
//     load, through its value or the ifs it lies in (deps.go), or
//     something else orders the two, or Operational.InOrder (which also
//     turns running ahead off).
//   - spin_lock, under SC, TSO and Relaxed, is an atomic test-and-set of
//     the lock word that has no step while the lock is held (the thread
//     waits); spin_unlock stores 0. Under LKMM they are memory.SpinLock
//     and memory.SpinUnlock, which wait the same way. An execution where
//     a thread waits forever for a lock is not an outcome.
//
// Memory holds small values (int8) and starts at 0: a location's value is
// kept as its difference from the location's initial value, so that the
// initial state needs no store. A value out of range, a full TSO store
// buffer or too many live Relaxed stores end the run with an error.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// Operational runs litmus tests under one of model/memory's models by
// exhaustive search of every interleaving.
type Operational struct {
	Model memory.Model
	// MaxStates bounds the search (0: litmus.DefaultMaxStates). A search that
	// reaches it is an error: its outcomes would be incomplete.
	MaxStates int
	// InOrder lets a store follow a load with no smp_mb between under
	// memory.LKMM (memory.ErrUnordered, otherwise an unsupported test):
	// the outcomes are then LKMM's without load buffering and dependencies.
	InOrder bool
	// NoReduce searches without reductions (explore.Options.NoReduce):
	// under memory.LKMM, every result of a pending barrier, none left out
	// as subsumed by another. The outcomes are the same.
	NoReduce bool
	_        struct{}
}

// MaxRegs is the number of registers a thread may use.
const MaxRegs = 8

// Name is the memory model's name, as flushproof check spells it: SC,
// TSO, Relaxed or LKMM (the axiomatic reference is LKMM-ref, model/lkmm).
func (o Operational) Name() string { return o.Model.String() }

// Outcomes returns every final state of t under the model.
func (o Operational) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	sys, r, err := o.run(t)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []litmus.Outcome
	for i := 0; i < r.Len(); i++ {
		s := r.State(i)
		if !sys.final(s) {
			continue
		}
		oc := sys.outcome(s)
		if k := oc.Key(); !seen[k] {
			seen[k] = true
			out = append(out, oc)
		}
	}
	return out, nil
}

// Witness returns a shortest execution of t that ends in an outcome
// satisfying cond (t.Cond for a reachable exists; Not(t.Cond) for a
// violated forall), as timeline steps, with the timeline's columns (one per
// thread, then "memory"). A nil path means no outcome satisfies cond.
func (o Operational) Witness(t *litmus.Test, cond litmus.Expr) ([]explore.Step, []string, error) {
	sys, r, err := o.run(t)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < r.Len(); i++ {
		s := r.State(i)
		if !sys.final(s) {
			continue
		}
		ok, err := sys.outcome(s).Satisfies(cond)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: witness condition: %w", t.Name, err)
		}
		if ok {
			return r.PathTo(i), sys.Actors(), nil
		}
	}
	return nil, sys.Actors(), nil
}

// run compiles t and explores it.
func (o Operational) run(t *litmus.Test) (*opSystem, *explore.Result[opState], error) {
	sys, err := compile(o.Model, t)
	if err != nil {
		return nil, nil, err
	}
	sys.inOrder = o.InOrder
	sys.startAhead()
	budget := o.MaxStates
	if budget == 0 {
		budget = litmus.DefaultMaxStates
	}
	r := explore.Explore[opState](sys, explore.Options{Workers: 1, MaxStates: budget, NoReduce: o.NoReduce})
	if r.Stopped != "" {
		return nil, nil, fmt.Errorf("%s under %s: %w (%s) after %d states: outcomes unknown", t.Name, o.Name(), litmus.ErrCutShort, r.Stopped, r.States)
	}
	if r.Violation != nil {
		return nil, nil, fmt.Errorf("%s under %s: %w", t.Name, o.Name(), r.Violation)
	}
	for i := 0; i < r.Len(); i++ {
		if f := r.State(i).fault; f.kind != 0 {
			return nil, nil, fmt.Errorf("%s under %s: %w: %s", t.Name, o.Name(), litmus.ErrUnsupported, sys.faultText(f))
		}
	}
	return sys, r, nil
}

// instruction kinds of a compiled thread.
const (
	iAccess uint8 = iota + 1
	iAssign
	iBranch // if the condition is 0, jump to target
	iJump
)

type instr struct {
	kind   uint8
	line   int
	col    int // the statement's column, 0 if unknown
	access *litmus.Access
	loc    int // access's location index
	assign *litmus.Assign
	cond   litmus.Expr
	target int
	end    int           // an if's branch: the instruction after its arms (0: a loop's or unknown)
	deps   memory.LocSet // a store's: the locations whose loads it depends on (deps.go)
	rdeps  memory.LocSet // a store its thread may read back: every location it depends on (markReadBack), 0 for others
	fence  litmus.Op     // a fence's: what it does (atomicFence)
	dev    *litmus.DevOp
	check  *litmus.Check
	jump   string // a jump's description in the durability checker's timeline ("break", "goto out", ...)
	label  string // a goto's label, whose position compileDurable patches into target
	// arith: an expression of the instruction divides or shifts (the C
	// front end's "/", "%", "<<", ">>"), which can fail at run time:
	// the step checks them first (arithFails).
	arith bool
	// retry: a cmpxchg whose failures only retry it (markRetries).
	retry bool
}

// markArith sets arith on the instructions whose expressions can fail.
func markArith(code []instr) {
	for i := range code {
		exprsOf(code[i:i+1], func(e litmus.Expr) {
			if canFail(e) {
				code[i].arith = true
			}
		})
	}
}

func canFail(e litmus.Expr) bool {
	switch e.Op {
	case "/", "%", "<<", ">>":
		return true
	}
	for _, a := range e.Args {
		if canFail(a) {
			return true
		}
	}
	return false
}

// arithFails reports whether one of in's expressions fails on thread t's
// registers in st.
func (s *opSystem) arithFails(st opState, t int, in instr) bool {
	failed := false
	regs := func(_ int, name string) int64 { return int64(st.regs[t][s.regs[t][name]]) }
	exprsOf([]instr{in}, func(e litmus.Expr) {
		if _, err := e.Eval(regs, nil); err != nil && canFail(e) {
			failed = true
		}
	})
	return failed
}

// faults that end a run (opState.fault.kind): Operational's, then those
// of the durability statements (durSystem).
const (
	faultRange     uint8 = iota + 1 // a value memory cannot hold
	faultMemory                     // Memory refused a store (full buffer, too many live stores)
	faultUnordered                  // memory.ErrUnordered
	faultRegister                   // a value a register cannot hold

	faultBlock     // a block number out of range
	faultFlags     // flags other than REQ_FUA and REQ_PREFLUSH
	faultDevice    // the contract refused a command (more than its bounds)
	faultValue     // a value a block cannot hold
	faultLocalLoop // maxChain local steps in a row
	faultBios      // a submit_bio with ioSlots-1 bios of its thread in flight
	faultHandle    // a bio_wait on a handle that names no bio in flight
	faultBusy      // a submit_bio into a fixed handle whose bio has not been reaped
	faultArith     // a division by zero or a shift out of range (arith)
)

// fits16 reports whether a register can hold v.
func fits16(v int64) bool { return v >= -32768 && v <= 32767 }

// fault is what stopped a run: its kind, thread and instruction, and for
// faultUnordered the locations of the loads the store is not ordered
// after (cond: a conditional RMW that succeeded ordered some of them).
type fault struct {
	kind, thread, pc uint8
	locs             memory.LocSet
	cond             bool
	// late: the store at pc may be seen before the load of locs, which
	// the checker satisfied first at instruction at, on one way of a
	// guess on its value (ahead.go's satisfyForced): lateGuess, at runs
	// only that way; lateRoom, at forced it for want of room.
	late uint8
	at   uint8
}

// Why a late fault's load was satisfied at its instruction (fault.late).
const (
	lateGuess uint8 = iota + 1
	lateRoom
)

// unordered is a faultUnordered for err (a memory.UnorderedError).
func unordered(err error, t int, pc uint8) fault {
	f := fault{kind: faultUnordered, thread: uint8(t), pc: pc}
	var ue *memory.UnorderedError
	if errors.As(err, &ue) {
		f.locs, f.cond = ue.Locs, ue.Cond
	}
	return f
}

type opState struct {
	mem   memory.Memory
	pc    [memory.MaxThreads]uint8
	regs  [memory.MaxThreads][MaxRegs]int16 // registers hold -32768..32767 (faultRange beyond)
	fault fault
	ahead uint32 // the threads' pending loads and guesses (ahead.go), 0 if none
}

type opSystem struct {
	model   memory.Model
	scope   *memory.Scope // the memories' intern tables (LKMM), as long as the system lives
	test    *litmus.Test
	code    [][]instr
	regs    []map[string]int // per thread: register -> index (the durability checker's may map several names to one: allocRegs)
	written [][]string       // per thread: the registers it writes, in order (Operational's outcomes)
	init    []int64          // per location
	inOrder bool             // Operational.InOrder
	full    bool             // WithoutReductions
	// Running ahead of loads (ahead.go), under LKMM unless inOrder: the
	// tables of the ahead states, per thread and if what it controls, per thread
	// and instruction whether a store may follow.
	ahead       *aheadTables
	path        [][]*pcSet        // per thread and if: what runs only as it goes (up to its immediate post-dominator)
	arms        [][]*pcSet        // per thread and if: its arms (LKMM's control dependency)
	aheadKind   [][]uint8         // per thread and load: aheadPlace, aheadOrdered or aheadLeave
	relUseful   [][]bool          // per thread and release: a store may follow it before what would satisfy it pending
	markReaders [][]memory.LocSet // per thread and instruction (and the end): the locations whose load marks a later store may read
	exposed     [][]pcSet         // per thread and load: the stores that may follow it not ordered after it (no dependency on it, no smp_mb between)
	reach       [][]pcSet         // per thread and instruction: those a path from it reaches before smp_mb, a fully ordered RMW, or an unlock and then a lock
	writesFrom  [][]memory.LocSet // per thread and instruction (and the end): the locations (bit l) a store at it or after it may write
	// barrierLanes, per thread and instruction (and the end): the
	// locations whose views of the thread nothing reads before a full
	// barrier takes them in (memory.Memory.RaiseToBarrier).
	barrierLanes [][]memory.LocSet
	condRegs     []uint64 // per thread: the registers the final condition reads
}

// startAhead turns running ahead of loads on under LKMM (unless inOrder).
func (s *opSystem) startAhead() {
	if s.model != memory.LKMM || s.inOrder {
		s.ahead = nil
		return
	}
	s.ahead = newAheadTables()
	s.computeScopes()
	s.condRegs = make([]uint64, len(s.code))
	for t := range s.code {
		s.condRegs[t] = condRegs(s.test.Cond, t, s.regs[t])
	}
}

// Reduces implements explore.InnerReducer: LKMM memory leaves out
// subsumed results of pending barriers (memory.Memory.Unreduced).
func (s *opSystem) Reduces() bool { return s.model == memory.LKMM && !s.full }

// Canonical forgets what no later step reads: the marks of the loads a
// thread made since its last barrier at the locations no store of it may
// read them at before a full barrier (forgetMarks). Not in the search
// without reductions.
func (s *opSystem) Canonical(st opState) opState {
	if !s.full {
		s.forgetMarks(&st)
	}
	return st
}

// forgetMarks forgets, for each thread with nothing pending, the marks
// memory keeps of its loads (memory.Memory.ForgetMarks) at the locations
// no store of its may read them at from its instruction on before a full
// barrier forgets them (markReaders), and raises its views of the
// locations nothing reads before a full barrier takes them in to what
// that barrier makes of them (barrierLanes, memory.Memory.RaiseToBarrier;
// all of its views where it makes no memory access before it). Then the
// stores no view reaches any more are dropped at every location
// (memory.Memory.Compact), so that a state has one form whichever
// locations its steps compacted. States that differ only there have the
// same futures (TestCanonicalCommutes, TestCanonicalCommutesDurable).
func (s *opSystem) forgetMarks(st *opState) {
	if s.ahead == nil {
		return
	}
	all := s.allLocs()
	for t := range s.code {
		if !s.pending(*st, t) {
			st.mem.ForgetMarks(t, ^s.markReaders[t][st.pc[t]])
			lanes := s.barrierLanes[t][st.pc[t]]
			st.mem.RaiseToBarrier(t, lanes, lanes == all)
		}
	}
	st.mem.Compact()
}

// allLocs is every location of the test (bit l).
func (s *opSystem) allLocs() memory.LocSet { return memory.LocSet(1)<<len(s.test.Locs) - 1 }

// WithoutReductions implements explore.InnerReducer.
func (s *opSystem) WithoutReductions() explore.System[opState] {
	u := *s
	u.full = true
	return &u
}

// Actors are the threads P0.. and the memory (TSO store buffer flushes).
func (s *opSystem) Actors() []string {
	out := make([]string, 0, len(s.code)+1)
	for t := range s.code {
		out = append(out, fmt.Sprintf("P%d", t))
	}
	return append(out, "memory")
}

func (s *opSystem) Init() []opState {
	var readers [memory.MaxLocations]uint8
	orderings, readBack := false, false
	for t, code := range s.code {
		for _, in := range code {
			// A wait_event's load (iAwait) and a completion's RMW
			// (iCompletion) are accesses like any other.
			access := (in.kind == iAccess || in.kind == iAwait || in.kind == iCompletion) && in.access != nil
			if access && in.loc >= 0 {
				readers[in.loc] |= 1 << t
			}
			readBack = readBack || in.rdeps != 0
			orderings = orderings || in.deps != 0 || in.fence == litmus.OpRmb || in.fence == litmus.OpWmb ||
				(access && !in.access.Op.Info().Fence && (in.access.Op.Info().Order == litmus.Acquire || in.access.Op.Info().Order == litmus.Release))
		}
	}
	st := opState{mem: s.scope.New(s.model, readers)}
	if orderings {
		st.mem.UseOrderings()
	}
	if readBack {
		st.mem.ReadsBack()
	}
	for l := range s.test.Locs {
		if s.lockOnly(l) {
			st.mem.LockOnly(l)
		}
	}
	if s.inOrder {
		st.mem.AllowUnordered()
	}
	if s.full {
		st.mem.Unreduced()
	}
	for t, code := range s.code {
		if len(code) == 0 {
			st.mem.DropReader(t)
		}
	}
	return []opState{st}
}

// lockOnly reports whether only spin_lock and spin_unlock access location
// l (memory.Memory.LockOnly).
func (s *opSystem) lockOnly(l int) bool {
	any := false
	for _, code := range s.code {
		for _, in := range code {
			if in.access == nil || in.loc != l {
				continue
			}
			if in.kind != iAccess || in.access.Op != litmus.OpSpinLock && in.access.Op != litmus.OpSpinUnlock {
				return false
			}
			any = true
		}
	}
	return any
}

func (s *opSystem) Check(opState) error { return nil }

// Unfinished is always 0: a thread waiting forever for a lock is an
// execution without an outcome, not an error of the test.
func (s *opSystem) Unfinished(opState) uint64 { return 0 }

// final reports whether st is an outcome: every thread at its end, every
// store buffer drained, no fault.
func (s *opSystem) final(st opState) bool {
	if st.fault.kind != 0 || s.anyPending(st) {
		return false
	}
	for t, code := range s.code {
		if int(st.pc[t]) < len(code) || st.mem.BufferLen(t) > 0 {
			return false
		}
	}
	return true
}

func (s *opSystem) outcome(st opState) litmus.Outcome {
	o := litmus.Outcome{Mem: map[string]int64{}}
	for t := range s.code {
		regs := map[string]int64{}
		for _, r := range s.written[t] {
			regs[r] = int64(st.regs[t][s.regs[t][r]])
		}
		o.Regs = append(o.Regs, regs)
	}
	for l, name := range s.test.Locs {
		o.Mem[name] = s.real(l, int64(st.mem.Newest(l)))
	}
	return o
}

// stored is v as memory keeps it for location loc (its difference from the
// initial value); ok is false if memory cannot hold it.
func (s *opSystem) stored(loc int, v int64) (int64, bool) {
	d := v - s.init[loc]
	return d, d >= -128 && d <= 127
}

// real is the value of location loc that memory keeps as d.
func (s *opSystem) real(loc int, d int64) int64 { return d + s.init[loc] }

// label kinds: whether Arg holds the step's value exactly.
const (
	kindPlain uint8 = iota
	kindValue       // Arg's low byte is the stored value read or replaced
)

func (s *opSystem) Next(st opState, yield func(explore.Label, opState)) {
	if st.fault.kind != 0 {
		return
	}
	mem := len(s.code)
	st.mem.Steps(func(t int, m memory.Memory) {
		n := st
		n.mem = m
		// Which location the flushed store went to, for the timeline: the
		// one whose newest value changed (Kind 0 if none did visibly).
		lb := explore.Label{Actor: uint8(mem), ID: uint16(t)}
		for l := range s.test.Locs {
			if m.Newest(l) != st.mem.Newest(l) {
				lb.Kind, lb.Arg = uint8(l+1), uint16(uint8(m.Newest(l)))
				break
			}
		}
		yield(lb, n)
	})
	for t, code := range s.code {
		pc := int(st.pc[t])
		y := func(lb explore.Label, n opState) {
			lb.Actor = uint8(t)
			if lb.Kind != kindLate {
				lb.ID = uint16(pc)
				n = s.afterStep(n, t, pc)
			}
			if int(n.pc[t]) >= len(code) && n.fault.kind == 0 && !s.pending(n, t) {
				n.mem.DropReader(t) // it loads nothing any more: fewer live stores
			}
			yield(lb, n)
		}
		s.aheadSteps(st, t, y)
		if pc >= len(code) {
			continue
		}
		s.step(st, t, code[pc], y)
	}
}

// step yields thread t's successors for instruction in: under LKMM, with
// a load left pending or what runs ahead of one (ahead.go).
func (s *opSystem) step(st opState, t int, in instr, yield func(explore.Label, opState)) {
	if s.ahead != nil {
		if s.pending(st, t) {
			s.stepAhead(st, t, in, s.ahead.thread(st.ahead, t), yield)
			return
		}
		// Left pending with none pending before, it starts from the
		// thread's state all the same: what the last access satisfied
		// still covers (coverNext, coverBr) stays with it, for afterStep
		// to end.
		if releaseRMW(in) && s.aheadKind[t][st.pc[t]] == aheadLeave && !(in.arith && s.arithFails(st, t, in)) {
			// Its read left pending with its release (ahead.go): what
			// follows may run before both.
			ta := s.ahead.thread(st.ahead, t)
			if v := s.releaseSlot(st, t, in, ta); v >= 0 {
				s.deferRelease(st, t, v, ta, yield)
				return
			}
		}
		if deferrableOp(in) && !(in.arith && s.arithFails(st, t, in)) {
			switch s.aheadKind[t][st.pc[t]] {
			case aheadLeave:
				s.deferLoad(st, t, s.ahead.thread(st.ahead, t), yield)
				s.stepIn(st, t, in, true, yield)
				return
			case aheadOrdered:
				s.stepIn(st, t, in, true, yield)
				return
			}
		}
	}
	s.stepIn(st, t, in, false, yield)
}

// stepAwait is the load of a wait_event (iAwait): one result per store t
// may read that makes the condition hold; none while no store does (the
// thread sleeps until one does). covered as in stepIn.
func (s *opSystem) stepAwait(st opState, t, mt int, in instr, covered bool, yield func(explore.Label, opState)) {
	load := st.mem.Load
	switch {
	case in.access.Op == litmus.OpLoadAcquire:
		load = st.mem.LoadAcquire
	case covered:
		load = st.mem.LoadCovered
	}
	for i, r := range load(mt, in.loc) {
		m := st
		m.pc[t]++
		m.mem = r.Mem
		if in.access.Reg != "" {
			m.regs[t][s.regs[t][in.access.Reg]] = int16(s.real(in.loc, r.Val))
		}
		c, err := in.cond.Eval(func(_ int, name string) int64 { return int64(m.regs[t][s.regs[t][name]]) }, nil)
		if err != nil {
			panic(err)
		}
		if c == 0 {
			continue // not yet: the thread sleeps until a store makes it true
		}
		yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(r.Val))) | uint16(i)<<8}, m)
	}
}

// stepIn yields thread t's successors for instruction in, run at its
// place; covered: a plain load that could have been left pending
// (memory.Memory.LoadCovered).
func (s *opSystem) stepIn(st opState, t int, in instr, covered bool, yield func(explore.Label, opState)) {
	s.stepInAs(st, t, t, in, covered, yield)
}

// stepInAs is stepIn with the access made by memory thread mt: t's, or
// its fork that runs a pending release and the loads before it
// (memory.Memory.Fork, ahead.go).
func (s *opSystem) stepInAs(st opState, t, mt int, in instr, covered bool, yield func(explore.Label, opState)) {
	regs := func(_ int, name string) int64 { return int64(st.regs[t][s.regs[t][name]]) }
	eval := func(e litmus.Expr) int64 {
		v, err := e.Eval(regs, nil)
		if err != nil {
			panic(err) // compile checked every expression
		}
		return v
	}
	n := st
	n.pc[t]++
	failWith := func(f fault) {
		n.fault = f
		yield(explore.Label{}, n)
	}
	fail := func(kind uint8) { failWith(fault{kind: kind, thread: uint8(t), pc: st.pc[t]}) }
	if in.arith && s.arithFails(st, t, in) {
		fail(faultArith)
		return
	}
	switch in.kind {
	case iAwait:
		s.stepAwait(st, t, mt, in, covered, yield)
		return
	case iAssign:
		v := eval(in.assign.Val)
		if !fits16(v) {
			fail(faultRegister)
			return
		}
		n.regs[t][s.regs[t][in.assign.Reg]] = int16(v)
		lb := explore.Label{Arg: uint16(int16(v))}
		if v >= -32768 && v <= 32767 {
			lb.Kind = kindValue
		}
		yield(lb, n)
		return
	case iBranch:
		if eval(in.cond) == 0 {
			n.pc[t] = uint8(in.target)
			yield(explore.Label{Arg: 0}, n)
			return
		}
		yield(explore.Label{Arg: 1}, n)
		return
	case iJump:
		n.pc[t] = uint8(in.target)
		yield(explore.Label{}, n)
		return
	}
	a := in.access
	setReg := func(v int64) {
		if a.Reg != "" {
			n.regs[t][s.regs[t][a.Reg]] = int16(v) // fits: memory's values and initial values are checked (compile)
		}
	}
	switch op := a.Op; {
	case op == litmus.OpReadOnce || op == litmus.OpLoadAcquire:
		load := st.mem.Load
		if op == litmus.OpLoadAcquire {
			load = st.mem.LoadAcquire
		} else if covered {
			load = st.mem.LoadCovered
		}
		for i, r := range load(mt, in.loc) {
			n.mem = r.Mem
			setReg(s.real(in.loc, r.Val))
			yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(r.Val))) | uint16(i)<<8}, n)
		}
	case op == litmus.OpWriteOnce || op == litmus.OpStoreRelease || op == litmus.OpSpinUnlock:
		v := int64(0)
		if op != litmus.OpSpinUnlock {
			v = eval(a.Val)
		}
		d, ok := s.stored(in.loc, v)
		if !ok {
			fail(faultRange)
			return
		}
		store := func() ([]memory.Choice, error) { return st.mem.StoresDep(mt, in.loc, d, in.deps|in.rdeps) }
		switch {
		case op == litmus.OpStoreRelease:
			store = func() ([]memory.Choice, error) { return st.mem.StoresReleaseDep(mt, in.loc, d, in.rdeps) }
		case op == litmus.OpSpinUnlock && s.model == memory.LKMM:
			store = func() ([]memory.Choice, error) { return st.mem.SpinUnlock(mt, in.loc, d) }
		}
		ms, err := store()
		if errors.Is(err, memory.ErrUnordered) {
			failWith(unordered(err, t, st.pc[t]))
			return
		}
		if err != nil {
			fail(faultMemory)
			return
		}
		for _, c := range ms {
			n.mem = c.Mem
			yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(d))), Alt: uint16(c.Alt)}, n)
		}
	case a.Op.Info().Fence:
		var cs []memory.Choice
		switch {
		case in.fence == litmus.OpMb:
			cs = st.mem.Fences(mt)
		case in.fence == litmus.OpRmb && s.model == memory.LKMM:
			cs = st.mem.Rmbs(mt)
		case in.fence == litmus.OpWmb && s.model == memory.LKMM:
			cs = st.mem.Wmbs(mt)
		default:
			yield(explore.Label{}, n)
			return
		}
		for _, c := range cs {
			n.mem = c.Mem
			yield(explore.Label{Alt: uint16(c.Alt)}, n)
		}
	case op == litmus.OpSpinLock && s.model == memory.LKMM:
		free, _ := s.stored(in.loc, 0)
		held, ok := s.stored(in.loc, 1)
		if !ok {
			fail(faultRange)
			return
		}
		cs, err := st.mem.SpinLock(mt, in.loc, free, held)
		if err != nil {
			fail(faultMemory)
			return
		}
		for _, c := range cs {
			n.mem = c.Mem
			yield(explore.Label{Alt: uint16(c.Alt)}, n)
		}
	case op == litmus.OpSpinLock:
		m := st.mem
		if s.model == memory.TSO {
			m = m.Drain(mt) // a locked instruction
		}
		free, _ := s.stored(in.loc, 0)
		held, ok := s.stored(in.loc, 1)
		if !ok {
			fail(faultRange)
			return
		}
		if int64(m.Newest(in.loc)) != free {
			return // held: no step until it is released
		}
		swapped, _, m, err := m.CompareAndSwap(mt, in.loc, free, held)
		if err != nil {
			fail(faultMemory)
			return
		}
		if !swapped {
			return
		}
		n.mem = m
		yield(explore.Label{}, n)
	case op.IsRMW():
		// A read-modify-write: f gives the value to store for the value
		// read (memory keeps differences from the initial value), or
		// false for a cmpxchg that fails.
		rangeFault := false
		f := func(d int64) (int64, bool) {
			old := s.real(in.loc, d)
			var nv int64
			switch {
			case op.IsCmpxchg():
				if old != eval(a.Expect) {
					return 0, false
				}
				nv = eval(a.Val)
			case op.IsXchg():
				nv = eval(a.Val)
			default:
				nv = old + eval(a.Val)
			}
			dv, ok := s.stored(in.loc, nv)
			rangeFault = rangeFault || !ok
			return dv, true
		}
		var rs []memory.RMWResult
		var err error
		switch info := op.Info(); info.Order {
		case litmus.Mb:
			if op.IsCmpxchg() && !in.retry {
				rs, err = st.mem.RMWCond(mt, in.loc, f)
			} else {
				rs, err = st.mem.RMW(mt, in.loc, f)
			}
		default: // only under LKMM and, unordered, TSO and SC (compile)
			rs, err = st.mem.RMWOrdered(mt, in.loc, f, memory.RMWOrder{Acquire: info.Order == litmus.Acquire,
				Release: info.Order == litmus.Release, NoReturn: !info.Returns, Deps: in.deps | in.rdeps, Cond: op.IsCmpxchg() && !in.retry,
				Covered: covered, FailCovered: in.retry})
		}
		if errors.Is(err, memory.ErrUnordered) {
			failWith(unordered(err, t, st.pc[t]))
			return
		}
		if rangeFault {
			fail(faultRange)
			return
		}
		if err != nil {
			fail(faultMemory)
			return
		}
		for _, r := range rs {
			n.mem = r.Mem
			old := s.real(in.loc, r.Old)
			switch {
			case op.IsCmpxchg() || !op.ReturnsNew():
				setReg(old)
			default:
				setReg(s.real(in.loc, r.New))
			}
			yield(explore.Label{Kind: kindValue, Arg: uint16(uint8(int8(r.Old))), Alt: uint16(r.Alt)}, n)
		}
	default:
		panic(fmt.Sprintf("litmus: no step for %s", op))
	}
}

func (s *opSystem) faultText(f fault) string {
	in := s.code[f.thread][f.pc]
	switch f.kind {
	case faultRange:
		return fmt.Sprintf("line %d: P%d: a value of %s beyond the %d..%d from its initial value a location holds: keep the values small (a counter that counts fewer events, a flag of 0 and 1)", in.line, f.thread, s.test.Locs[in.loc], -128, 127)
	case faultRegister:
		return fmt.Sprintf("line %d: P%d: a value beyond the -32768..32767 a register holds: keep the values small", in.line, f.thread)
	case faultArith:
		return fmt.Sprintf("line %d: P%d: a division by zero, or a shift by a negative amount or by more than 62", in.line, f.thread)
	case faultUnordered:
		var names []string
		for l := range s.test.Locs {
			if f.locs&(1<<l) != 0 {
				names = append(names, s.test.Locs[l])
			}
		}
		what := "a load of another location"
		if len(names) > 0 {
			what = "its load of " + strings.Join(names, " and ")
		}
		if f.late != 0 {
			at := s.code[f.thread][f.at].line
			why := fmt.Sprintf("line %d, which runs only when that load reads a value that takes an if its way, is ordered after the load (a store or RMW in the if's arms, smp_rmb, a device call), and the checker cannot run the thread ahead of the load past line %d: it would have to leave line %d pending past this store", at, at, at)
			if f.late == lateRoom {
				why = fmt.Sprintf("the checker satisfied the load first at line %d, with %d accesses or %d guesses already pending on one way of an if on its value, and cannot run the thread ahead of it past line %d", at, maxPend, maxLog, at)
			}
			return fmt.Sprintf("line %d: P%d: LKMM lets this store be seen before %s is satisfied (load buffering) while %s; order this store after the load (smp_store_release, smp_mb, a dependency) where the kernel code does, or check this file under SC and TSO only (Models: SC, TSO)", in.line, f.thread, what, why)
		}
		cond := ""
		if f.cond {
			cond = "; a cmpxchg between orders them only if it succeeds, and LKMM lets it fail by reading a later store"
		}
		return fmt.Sprintf("line %d: P%d: LKMM lets this store be seen before %s is satisfied (load buffering): nothing orders the two (no smp_mb between, no dependency of the store on the value read%s), and the checker could not run the thread ahead of that load here (it satisfies a pending load first at smp_rmb, a device call or a release it cannot leave pending too (a second one), which order the load before themselves but not before the stores after them, at a later access of the load's location (a location's accesses in program order), and when %d accesses or %d guesses are pending, and never leaves a cmpxchg that succeeded pending); order them (smp_load_acquire, smp_store_release, smp_mb) where the kernel code does, or check this file under SC and TSO only (Models: SC, TSO)", in.line, f.thread, what, cond, maxPend, maxLog)
	case faultMemory:
		if s.model == memory.TSO {
			return fmt.Sprintf("line %d: P%d: a %dth store waiting in P%d's store buffer, which holds %d: put an smp_mb (or a fully ordered atomic) between the stores, or store less", in.line, f.thread, memory.MaxBuffered+1, f.thread, memory.MaxBuffered)
		}
		return fmt.Sprintf("line %d: P%d: more than %d stores to %s that some thread may still read (a location holds %d): fewer stores to it, fewer threads, or a reader that takes the lock its writers hold", in.line, f.thread, memory.MaxStores, s.test.Locs[in.loc], memory.MaxStores)
	}
	return "unknown fault"
}

// Describe renders a step for the timeline: the statement, and the value a
// load read or a read-modify-write replaced.
func (s *opSystem) Describe(lb explore.Label) string {
	if int(lb.Actor) == len(s.code) {
		if lb.Kind == 0 {
			return fmt.Sprintf("P%d's oldest buffered store reaches memory", lb.ID)
		}
		l := int(lb.Kind) - 1
		return fmt.Sprintf("P%d's %s=%d reaches memory", lb.ID, s.test.Locs[l], s.real(l, int64(int8(uint8(lb.Arg)))))
	}
	if text, ok := s.describeAhead(int(lb.Actor), lb); ok {
		return text
	}
	in := s.code[lb.Actor][lb.ID]
	switch in.kind {
	case iAssign:
		if lb.Kind == kindValue {
			return fmt.Sprintf("%s = %s (%d)", in.assign.Reg, litmus.CExpr(in.assign.Val), int16(lb.Arg))
		}
		return fmt.Sprintf("%s = %s", in.assign.Reg, litmus.CExpr(in.assign.Val))
	case iBranch:
		if lb.Arg == 1 {
			return fmt.Sprintf("if (%s): taken", litmus.CExpr(in.cond))
		}
		return fmt.Sprintf("if (%s): not taken", litmus.CExpr(in.cond))
	case iJump:
		return "(end of then, skip else)"
	}
	text := litmus.AccessText(in.access)
	if lb.Kind == kindValue {
		v := s.real(in.loc, int64(int8(uint8(lb.Arg))))
		info := in.access.Op.Info()
		switch {
		case info.Reads && info.Writes:
			text += fmt.Sprintf(" reads %s=%d", in.access.Loc, v)
		case info.Reads:
			text += fmt.Sprintf(" = %d", v)
		case !in.access.Val.IsConst:
			text += fmt.Sprintf(" (%s=%d)", in.access.Loc, v)
		}
	}
	if lb.Alt != 0 {
		name := func(t int) string { return fmt.Sprintf("P%d", t) }
		text += " (" + memory.Alt(lb.Alt).Text(name, in.access.Op.Info().Writes) + ")"
	}
	return text
}

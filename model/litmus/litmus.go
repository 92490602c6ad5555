// Package litmus is the litmus test as the memory models see it: threads
// of Linux kernel memory primitives (READ_ONCE, smp_store_release, smp_mb,
// atomic read-modify-writes, locks...) over shared locations, with
// registers, local computation and branches, an initial state, and a final
// condition over registers and memory, as herd7's C litmus files write them
// (tools/memory-model/litmus-tests, Documentation/litmus-tests).
//
//   - [Test], [Thread], [Stmt], [Expr]: the program. [Op] lists the
//     primitives.
//   - [Outcome]: one final state (registers and memory); [Answer]: what a
//     model says of the test's condition, in herd7's words.
//   - [Model]: anything that gives the outcomes of a test, with [Judge]
//     answering its condition. The judges live elsewhere: the axiomatic
//     LKMM reference and the promise-based operational LKMM in model/lkmm,
//     the memory models the explorer runs (SC, TSO, Relaxed, LKMM memory)
//     as durable.Operational. [ErrUnsupported], [ErrNotInModel] and
//     [ErrCutShort] are the refusals every judge uses.
//   - [Parse], [ParseFile]: reading herd7 C files, strictly (parse.go);
//     the durability statements (a block device, assertions, loops,
//     wait_event) are part of the language, and [MemoryOnly] says whether
//     a test has any. The durability checker is model/durable.
//   - [AccessText], [CallText], [CExpr]: a program's pieces rendered as C.
//
// The package imports nothing of this module: it is the language alone.
package litmus

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Test is a litmus test.
type Test struct {
	Name string
	// File is the file's name, as Parse was given it, for errors.
	File string
	// Init gives shared locations their initial values; a location not
	// named here starts at 0.
	Init map[string]int64
	// Locs lists every shared location, in order of first appearance,
	// and LocAt where each first appears (0:0 for a Test not parsed).
	Locs    []string
	LocAt   []Pos
	Threads []Thread
	// Quant and Cond are the final condition: "exists (0:r0=1 /\ x=2)".
	Quant Quantifier
	Cond  Expr
	// Filter, if set, is herd7's filter clause: only the executions whose
	// final state satisfies it count; the others are no outcome at all
	// (Judge and Decide apply it, the models do not).
	Filter *Expr
	// Show lists the locations and registers ("0:r1") of herd7's
	// locations clause: they are printed with the outcomes and change
	// nothing else.
	Show []string
	// Result is the LKMM result the test's header states ("Never",
	// "Sometimes", "Always"), "" if none: the first word of ResultLine.
	Result string
	// ResultLine is the whole of the header's Result: line after
	// "Result:", trimmed, without a "*)" that closes the comment on that
	// line: "Never", "Sometimes DATARACE", "Maybe", "DEADLOCK", "Flag
	// srcu-bad-nesting"; "" if none. It starts with Result.
	ResultLine string
	// RegInit gives registers their initial values, per thread ("{
	// 0:b=1; }"); a register not named starts at 0.
	RegInit []map[string]int64
	// RegInitAt is where the initial state sets each register of
	// RegInit.
	RegInitAt []map[string]Pos
	// CondLine and CondCol are where the final condition starts (its
	// quantifier), 0 without one.
	CondLine, CondCol int
	// Recovery is code that runs alone on each crash image, after the
	// crash: it reads blocks (read_block) and shared memory as the crash
	// left them, may write blocks of the image (a journal's replay), and
	// asserts (assert). A kernel C harness's recovery() (model/kernelc);
	// nil for none. Its Line and Col are where it stands.
	Recovery *Thread
	// Header holds the "Key: value" lines of the header comment that
	// flushproof check reads (durable.go): Expect, Device, Failures,
	// Crash, keyed in lower case, with where each value starts.
	Header map[string]HeaderField
}

// HeaderField is one "Key: value" line of a test's header comment.
type HeaderField struct {
	Value     string
	Line, Col int
}

// Thread is one thread of a test: its registers start at 0.
type Thread struct {
	Body []Stmt
	// Line and Col are where its header (P0) stands, 0 if not parsed.
	Line, Col int
}

// Pos is a place in a file: a line and a column, from 1 (0: unknown).
type Pos struct{ Line, Col int }

// LocPos returns where location i first appears.
func (t *Test) LocPos(i int) Pos {
	if i < len(t.LocAt) {
		return t.LocAt[i]
	}
	return Pos{}
}

// RegInitPos returns where the initial state sets register r of thread th.
func (t *Test) RegInitPos(th int, r string) Pos {
	if th < len(t.RegInitAt) {
		return t.RegInitAt[th][r]
	}
	return Pos{}
}

// LimitErr is a limit of the checker that t passes at at: an *Error
// (wrapping ErrUnsupported) at that place, or, for a test that was not
// parsed from a file, an error naming the test.
func (t *Test) LimitErr(at Pos, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if t.File == "" || at.Line == 0 {
		return fmt.Errorf("%s: %w: %s", t.Name, ErrUnsupported, msg)
	}
	return &Error{File: t.File, Line: at.Line, Col: at.Col, Msg: "unsupported: " + msg, Err: ErrUnsupported}
}

// Quantifier is how the final condition is asked.
type Quantifier uint8

// The quantifiers of herd7's final conditions.
const (
	Exists    Quantifier = iota + 1 // exists C: some outcome satisfies C
	NotExists                       // ~exists C: no outcome satisfies C
	Forall                          // forall C: every outcome satisfies C
)

func (q Quantifier) String() string {
	switch q {
	case Exists:
		return "exists"
	case NotExists:
		return "~exists"
	case Forall:
		return "forall"
	}
	return fmt.Sprintf("Quantifier(%d)", uint8(q))
}

// Stmt is one statement of a thread: exactly one of Access, Assign, If,
// Loop, Jump, Dev, Check, Goto and Label is set. The last six are the
// durability statements (model/durable), which only flushproof check
// runs: the memory models refuse a test that has one (MemoryOnly).
type Stmt struct {
	Access *Access
	Assign *Assign
	If     *If
	Loop   *Loop
	Jump   Jump
	Dev    *DevOp
	Check  *Check
	// Goto is "goto Goto;": the thread goes on at the statement after
	// the label of that name, forward or backward, into or out of loops
	// and the arms of ifs.
	Goto string
	// Label is "Label:", a statement that does nothing: it marks where
	// the next statement stands (the thread's end if none follows) for
	// the gotos to it. A thread defines a label once; labels are the
	// thread's own (two threads may each have one of a name). The
	// parser reads neither: a front end that lowers C builds them
	// (goto, a return from an inlined function, a switch).
	Label string
	Line  int // in the source file, 0 if none
	Col   int // in the source file, 0 if none
}

// Loop is "while (Cond) Body" or "for (...; Cond; Post) Body" (its
// initialisation is the statements before it): Post runs after the body
// and at continue.
type Loop struct {
	Cond Expr
	Body []Stmt
	Post []Stmt
}

// Jump is break, continue or return (which ends the thread).
type Jump uint8

// The jumps.
const (
	Break Jump = iota + 1
	Continue
	Return
)

// DevOp is a call to the block device: a write of Val to block Block with
// Flags (REQ_FUA, REQ_PREFLUSH) that waits for its completion
// (submit_bio_wait), a cache flush that waits for its completion
// (blkdev_issue_flush), or a read of a block (read_block). Reg gets the
// error (0 or -EIO) or the value read.
type DevOp struct {
	Kind  DevKind
	Block Expr
	Val   Expr
	Flags Expr
	Reg   string
	// Blocks is how many consecutive blocks from Block a write (DevWrite,
	// DevSubmit) writes, each with Val, as one write that a crash may
	// tear (0 is 1). The C front end sets it from a bio's size; the
	// litmus dialect writes one block.
	Blocks int
	// Slot is a DevSubmit's fixed handle (1..3) when the bio is reaped
	// by another thread (DevReap, which names it too); 0 for a handle
	// taken at run time.
	Slot int
	// Flush makes a DevSubmit a cache flush (an empty REQ_PREFLUSH bio)
	// instead of a write.
	Flush bool
	// Owner is DevReap's submitting thread.
	Owner int
	// Load is DevWait's read of the condition, into Reg, and a
	// completion call's access to its completion (Loc): an RMW whose Op
	// gives its ordering, for the dependency analysis and the memory's
	// readers.
	Load *Access
}

// DevKind is what a DevOp does.
type DevKind uint8

// The device calls.
const (
	DevWrite DevKind = iota + 1 // r = submit_bio_wait(block, value, flags)
	DevFlush                    // r = blkdev_issue_flush(bdev)
	DevRead                     // r = read_block(block)
	// DevWait is wait_event(wq, cond): the thread goes on once Val, an
	// expression over the register Reg that Load (a read primitive) sets,
	// is true.
	DevWait
	DevWake        // wake_up(wq)
	DevSubmit      // h = submit_bio(block, value, flags): h gets the bio's handle
	DevBioWait     // r = bio_wait(h): wait for the bio handle Val names
	DevComplete    // complete(c)
	DevCompleteAll // complete_all(c)
	DevWaitDone    // wait_for_completion(c)
	DevReinit      // reinit_completion(c)
	// DevReap is the start of a bio's bi_end_io: r = 0 or -EIO once the
	// bio that thread Owner submitted into its handle Slot (a DevSubmit
	// with that Slot) has ended, which frees the handle. The C front end
	// builds it, for the actor that runs a submit_bio's bi_end_io.
	DevReap
)

// IsCompletion reports whether k is a call on a completion.
func (k DevKind) IsCompletion() bool { return k >= DevComplete && k <= DevReinit }

// The flags of DevWrite, as the file writes them (REQ_FUA, REQ_PREFLUSH,
// REQ_SYNC). REQ_SYNC marks a write someone waits for, for the I/O
// scheduler and writeback; the flush machinery (block/blk-flush.c,
// blk_flush_policy) reads only REQ_PREFLUSH and REQ_FUA, so the device
// does nothing with it.
const (
	ReqFUA      = 1
	ReqPreflush = 2
	ReqSync     = 4
)

// EIO is the error a failed command returns, negated: -EIO.
const EIO = 5

// Check is an obligation at a program point: assert_durable(Block, Val)
// (some write of Val to Block is durable: a crash from now on cannot lose
// it) or assert(Cond).
type Check struct {
	Durable bool
	Block   Expr
	Val     Expr
	Cond    Expr
}

// Assign is a local computation: Reg = Val.
type Assign struct {
	Reg string
	Val Expr
}

// If is a branch on registers: a control dependency from the loads that
// gave them.
type If struct {
	Cond Expr
	Then []Stmt
	Else []Stmt
}

// Access is one memory primitive. Loc is the shared location (empty for a
// fence); Val the value stored, added or exchanged; Expect the value
// cmpxchg compares with; Reg the register that gets the value a load or a
// value-returning read-modify-write returns ("" for none).
type Access struct {
	Op  Op
	Loc string
	// Addr, when set, is where the access goes, computed at run time (a
	// pointer in a register: WRITE_ONCE(*(int *)r1, 1)); Loc is "" then.
	// Only the LKMM reference runs such tests (Test.Features).
	Addr   *Expr
	Val    Expr
	Expect Expr
	Reg    string
	// Call is the spelling the file used ("atomic64_inc_return"), for
	// the durability checker's timelines; "" in tests built in Go.
	Call string
}

// Op is a primitive.
type Op uint8

// The primitives. Orderings of read-modify-writes follow
// Documentation/atomic_t.txt: a value-returning RMW without suffix is fully
// ordered (Mb); _relaxed, _acquire and _release give those orderings; an
// RMW that returns nothing (atomic_add, atomic_inc...) is unordered.
const (
	OpReadOnce        Op = iota + 1 // r = READ_ONCE(x)
	OpLoadAcquire                   // r = smp_load_acquire(&x)
	OpWriteOnce                     // WRITE_ONCE(x, v)
	OpStoreRelease                  // smp_store_release(&x, v)
	OpMb                            // smp_mb()
	OpRmb                           // smp_rmb()
	OpWmb                           // smp_wmb()
	OpMbBeforeAtomic                // smp_mb__before_atomic()
	OpMbAfterAtomic                 // smp_mb__after_atomic()
	OpMbAfterSpinlock               // smp_mb__after_spinlock()
	OpBarrier                       // barrier(): compiler only

	// Read-modify-writes: the operation, then the ordering.
	OpAdd          // atomic_add(v, x), atomic_inc, atomic_sub, atomic_dec: no return, unordered
	OpAddReturn    // r = atomic_add_return(v, x) (new value), fully ordered
	OpAddReturnRlx // atomic_add_return_relaxed
	OpAddReturnAcq // atomic_add_return_acquire
	OpAddReturnRel // atomic_add_return_release
	OpFetchAdd     // r = atomic_fetch_add(v, x) (old value), fully ordered
	OpFetchAddRlx  // atomic_fetch_add_relaxed
	OpFetchAddAcq  // atomic_fetch_add_acquire
	OpFetchAddRel  // atomic_fetch_add_release
	OpXchg         // r = xchg(x, v) (old value), fully ordered
	OpXchgRlx      // xchg_relaxed
	OpXchgAcq      // xchg_acquire
	OpXchgRel      // xchg_release
	OpCmpxchg      // r = cmpxchg(x, e, v) (old value): fully ordered if it succeeds, unordered if not
	OpCmpxchgRlx   // cmpxchg_relaxed
	OpCmpxchgAcq   // cmpxchg_acquire (acquire if it succeeds)
	OpCmpxchgRel   // cmpxchg_release (release if it succeeds)

	OpSpinLock   // spin_lock(x)
	OpSpinUnlock // spin_unlock(x)

	// The rest of tools/memory-model/linux-kernel.def: only the LKMM
	// reference runs them (Test.Features).
	OpPlainRead         // r = *x: a plain (unmarked) load
	OpPlainWrite        // *x = v: a plain store
	OpRcuLock           // rcu_read_lock()
	OpRcuUnlock         // rcu_read_unlock()
	OpSyncRcu           // synchronize_rcu(), synchronize_rcu_expedited()
	OpSrcuLock          // r = srcu_read_lock(s), srcu_down_read(s): a load of s (Srcu-lock)
	OpSrcuUnlock        // srcu_read_unlock(s, v), srcu_up_read(s, v): a store of v to s (Srcu-unlock)
	OpSyncSrcu          // synchronize_srcu(s), synchronize_srcu_expedited(s)
	OpMbAfterSrcuUnlock // smp_mb__after_srcu_read_unlock()
	OpMbAfterUnlockLock // smp_mb__after_unlock_lock()
	OpSpinTrylock       // r = spin_trylock(l): 1 and the lock taken, or 0
	OpSpinIsLocked      // r = spin_is_locked(l)
	OpAddUnless         // r = atomic_add_unless(x, v, u): adds v unless x is u; 1 if it added (fully ordered then)

	numOps
)

// Ordering is the ordering a primitive carries.
type Ordering uint8

// The orderings.
const (
	Once    Ordering = iota + 1 // READ_ONCE, WRITE_ONCE, _relaxed, non-returning RMWs
	Acquire                     // smp_load_acquire, _acquire
	Release                     // smp_store_release, _release
	Mb                          // fully ordered
	Plain                       // a plain C access: no ordering, may race
)

// Info says what a primitive is: its kernel name, whether it reads and
// writes memory, whether it returns a value into a register, and its
// ordering.
type Info struct {
	Name    string
	Reads   bool
	Writes  bool
	Returns bool // into Access.Reg
	Fence   bool
	Order   Ordering
}

var infos = [numOps]Info{
	OpReadOnce:        {"READ_ONCE", true, false, true, false, Once},
	OpLoadAcquire:     {"smp_load_acquire", true, false, true, false, Acquire},
	OpWriteOnce:       {"WRITE_ONCE", false, true, false, false, Once},
	OpStoreRelease:    {"smp_store_release", false, true, false, false, Release},
	OpMb:              {"smp_mb", false, false, false, true, Mb},
	OpRmb:             {"smp_rmb", false, false, false, true, Once},
	OpWmb:             {"smp_wmb", false, false, false, true, Once},
	OpMbBeforeAtomic:  {"smp_mb__before_atomic", false, false, false, true, Once},
	OpMbAfterAtomic:   {"smp_mb__after_atomic", false, false, false, true, Once},
	OpMbAfterSpinlock: {"smp_mb__after_spinlock", false, false, false, true, Once},
	OpBarrier:         {"barrier", false, false, false, true, Once},
	OpAdd:             {"atomic_add", true, true, false, false, Once},
	OpAddReturn:       {"atomic_add_return", true, true, true, false, Mb},
	OpAddReturnRlx:    {"atomic_add_return_relaxed", true, true, true, false, Once},
	OpAddReturnAcq:    {"atomic_add_return_acquire", true, true, true, false, Acquire},
	OpAddReturnRel:    {"atomic_add_return_release", true, true, true, false, Release},
	OpFetchAdd:        {"atomic_fetch_add", true, true, true, false, Mb},
	OpFetchAddRlx:     {"atomic_fetch_add_relaxed", true, true, true, false, Once},
	OpFetchAddAcq:     {"atomic_fetch_add_acquire", true, true, true, false, Acquire},
	OpFetchAddRel:     {"atomic_fetch_add_release", true, true, true, false, Release},
	OpXchg:            {"xchg", true, true, true, false, Mb},
	OpXchgRlx:         {"xchg_relaxed", true, true, true, false, Once},
	OpXchgAcq:         {"xchg_acquire", true, true, true, false, Acquire},
	OpXchgRel:         {"xchg_release", true, true, true, false, Release},
	OpCmpxchg:         {"cmpxchg", true, true, true, false, Mb},
	OpCmpxchgRlx:      {"cmpxchg_relaxed", true, true, true, false, Once},
	OpCmpxchgAcq:      {"cmpxchg_acquire", true, true, true, false, Acquire},
	OpCmpxchgRel:      {"cmpxchg_release", true, true, true, false, Release},
	OpSpinLock:        {"spin_lock", true, true, false, false, Acquire},
	OpSpinUnlock:      {"spin_unlock", false, true, false, false, Release},

	OpPlainRead:         {"plain load", true, false, true, false, Plain},
	OpPlainWrite:        {"plain store", false, true, false, false, Plain},
	OpRcuLock:           {"rcu_read_lock", false, false, false, true, Once},
	OpRcuUnlock:         {"rcu_read_unlock", false, false, false, true, Once},
	OpSyncRcu:           {"synchronize_rcu", false, false, false, true, Mb},
	OpSrcuLock:          {"srcu_read_lock", true, false, true, false, Once},
	OpSrcuUnlock:        {"srcu_read_unlock", false, true, false, false, Once},
	OpSyncSrcu:          {"synchronize_srcu", false, false, false, false, Mb},
	OpMbAfterSrcuUnlock: {"smp_mb__after_srcu_read_unlock", false, false, false, true, Once},
	OpMbAfterUnlockLock: {"smp_mb__after_unlock_lock", false, false, false, true, Once},
	OpSpinTrylock:       {"spin_trylock", true, true, true, false, Acquire},
	OpSpinIsLocked:      {"spin_is_locked", true, false, true, false, Once},
	OpAddUnless:         {"atomic_add_unless", true, true, true, false, Mb},
}

// Info returns what op is.
func (op Op) Info() Info {
	if op == 0 || op >= numOps {
		return Info{Name: fmt.Sprintf("Op(%d)", uint8(op))}
	}
	return infos[op]
}

func (op Op) String() string { return op.Info().Name }

// IsRMW reports whether op is an atomic read-modify-write (locks aside).
func (op Op) IsRMW() bool { return op >= OpAdd && op <= OpCmpxchgRel }

// IsCmpxchg reports whether op is a cmpxchg of some ordering.
func (op Op) IsCmpxchg() bool { return op >= OpCmpxchg && op <= OpCmpxchgRel }

// IsXchg reports whether op is an xchg of some ordering.
func (op Op) IsXchg() bool { return op >= OpXchg && op <= OpXchgRel }

// ReturnsNew reports whether a value-returning add returns the new value
// (atomic_add_return) rather than the old one (atomic_fetch_add, xchg,
// cmpxchg).
func (op Op) ReturnsNew() bool { return op >= OpAddReturn && op <= OpAddReturnRel }

// Ops lists every primitive.
func Ops() []Op {
	out := make([]Op, 0, numOps-1)
	for op := Op(1); op < numOps; op++ {
		out = append(out, op)
	}
	return out
}

// Expr is an integer expression over registers, constants and (in a final
// condition) final memory. Exactly one of its forms is set: Const (with
// IsConst), Reg, Loc (final condition only), or Op with its operands.
type Expr struct {
	IsConst bool
	Const   int64
	// Reg is a register; in a final condition Thread says whose
	// ("1:r0" is Thread 1, Reg "r0").
	Reg    string
	Thread int
	// Loc is a shared location's final value (final conditions only).
	Loc string
	// Addr is the address of a shared location, a pointer value: Parse
	// sets IsConst and Const (AddrValue) with it, so an Expr evaluates it
	// as any constant.
	Addr string
	// Op is a unary ("!", "-", "~") or binary operator ("+", "-", "*",
	// "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">",
	// ">=", "&&", "||") over Args. The parser writes none of "~", "/",
	// "%", "<<" and ">>": the C front end (model/kernelc) does.
	Op   string
	Args []Expr
}

// C returns the constant v.
func C(v int64) Expr { return Expr{IsConst: true, Const: v} }

// R returns register name of the thread the expression is evaluated in.
func R(name string) Expr { return Expr{Reg: name} }

// TR returns register name of thread t, for final conditions.
func TR(t int, name string) Expr { return Expr{Reg: name, Thread: t} }

// L returns the final value of location loc, for final conditions.
func L(loc string) Expr { return Expr{Loc: loc} }

// Bin returns a op b.
func Bin(op string, a, b Expr) Expr { return Expr{Op: op, Args: []Expr{a, b}} }

// Not returns !a.
func Not(a Expr) Expr { return Expr{Op: "!", Args: []Expr{a}} }

// Regs calls f with every register e reads (in a thread's code).
func (e Expr) Regs(f func(string)) {
	if e.Reg != "" {
		f(e.Reg)
	}
	for _, a := range e.Args {
		a.Regs(f)
	}
}

// Eval evaluates e: reg gives a register's value (thread t, name), loc a
// location's (final conditions only; nil in a thread's code).
func (e Expr) Eval(reg func(t int, name string) int64, loc func(string) int64) (int64, error) {
	switch {
	case e.IsConst:
		return e.Const, nil
	case e.Reg != "":
		return reg(e.Thread, e.Reg), nil
	case e.Loc != "":
		if loc == nil {
			return 0, fmt.Errorf("litmus: location %s read in an expression of thread code", e.Loc)
		}
		return loc(e.Loc), nil
	}
	vals := make([]int64, len(e.Args))
	for i, a := range e.Args {
		v, err := a.Eval(reg, loc)
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	if len(vals) == 1 {
		switch e.Op {
		case "!":
			return b2i(vals[0] == 0), nil
		case "-":
			return -vals[0], nil
		case "~":
			return ^vals[0], nil
		}
		return 0, fmt.Errorf("litmus: unknown unary operator %q", e.Op)
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("litmus: operator %q with %d operands", e.Op, len(vals))
	}
	a, b := vals[0], vals[1]
	switch e.Op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "&":
		return a & b, nil
	case "|":
		return a | b, nil
	case "^":
		return a ^ b, nil
	case "/", "%":
		// C's: the quotient truncated toward zero; a division by zero
		// is an error, not a value.
		if b == 0 {
			return 0, fmt.Errorf("litmus: division by zero (%d %s 0)", a, e.Op)
		}
		if e.Op == "/" {
			return a / b, nil
		}
		return a % b, nil
	case "<<", ">>":
		if b < 0 || b > 62 {
			return 0, fmt.Errorf("litmus: shift by %d", b)
		}
		if e.Op == "<<" {
			return a << b, nil
		}
		return a >> b, nil
	case "==":
		return b2i(a == b), nil
	case "!=":
		return b2i(a != b), nil
	case "<":
		return b2i(a < b), nil
	case "<=":
		return b2i(a <= b), nil
	case ">":
		return b2i(a > b), nil
	case ">=":
		return b2i(a >= b), nil
	case "&&":
		return b2i(a != 0 && b != 0), nil
	case "||":
		return b2i(a != 0 || b != 0), nil
	}
	return 0, fmt.Errorf("litmus: unknown operator %q", e.Op)
}

// String renders e in herd7's condition syntax where it has one.
func (e Expr) String() string {
	switch {
	case e.Addr != "":
		return e.Addr
	case e.IsConst:
		return fmt.Sprint(e.Const)
	case e.Reg != "":
		return fmt.Sprintf("%d:%s", e.Thread, e.Reg)
	case e.Loc != "":
		return e.Loc
	case len(e.Args) == 1:
		return e.Op + e.Args[0].String()
	case len(e.Args) == 2:
		op := e.Op
		switch op {
		case "&&":
			op = `/\`
		case "||":
			op = `\/`
		case "==":
			op = "="
		}
		return "(" + e.Args[0].String() + " " + op + " " + e.Args[1].String() + ")"
	}
	return "?"
}

// Outcome is one final state of a test: every thread's registers and every
// location's value.
type Outcome struct {
	Regs []map[string]int64 // per thread
	Mem  map[string]int64
	// Flags are the names of the herd7 flags ("data-race",
	// "unmatched-rcu-lock") that some allowed execution ending in this
	// state raises, sorted, each once; nil when none does (or the model
	// raises no flags). They are not part of the state: Key ignores them.
	Flags []string
}

// Satisfies evaluates the test's condition on o.
func (o Outcome) Satisfies(cond Expr) (bool, error) {
	v, err := cond.Eval(func(t int, name string) int64 {
		if t < 0 || t >= len(o.Regs) {
			return 0
		}
		return o.Regs[t][name]
	}, func(loc string) int64 { return o.Mem[loc] })
	return v != 0, err
}

// Key renders o canonically: "0:r0=1; 1:r0=0; x=1; y=1;", threads then
// registers then locations in name order. Two outcomes are the same when
// their keys are; Flags are not in the key.
func (o Outcome) Key() string {
	var b strings.Builder
	for t, regs := range o.Regs {
		names := make([]string, 0, len(regs))
		for n := range regs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "%d:%s=%d; ", t, n, regs[n])
		}
	}
	locs := make([]string, 0, len(o.Mem))
	for l := range o.Mem {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	for _, l := range locs {
		fmt.Fprintf(&b, "%s=%d; ", l, o.Mem[l])
	}
	return strings.TrimSpace(b.String())
}

// ErrUnsupported is wrapped by every refusal of a test the model cannot
// run: a primitive it does not have, a bound of memory.Memory (threads,
// locations, registers, values, store buffer, live stores).
var ErrUnsupported = errors.New("unsupported")

// ErrNotInModel (which wraps ErrUnsupported) is wrapped by the refusal
// of a test that uses a primitive the memory model does not have
// (Relaxed has no acquire, release or lock): the test is fine, the model
// cannot express it.
var ErrNotInModel = fmt.Errorf("%w in this memory model", ErrUnsupported)

// ErrCutShort is wrapped when the search reached its state budget: the
// outcomes are unknown.
var ErrCutShort = errors.New("search cut short")

// ErrNoOutcome is wrapped by the error of Judge and Decide when the model
// gives no outcome at all (or none that the filter keeps): no execution
// of the test is allowed, what herd7 reports as "Observation Never 0 0"
// and the LKMM corpus's Result: lines as DEADLOCK. The message is
// "TEST: MODEL gives no outcome".
var ErrNoOutcome = errors.New("no outcome")

// DefaultMaxStates is the state budget of a model's search (0 in a MaxStates field).
const DefaultMaxStates = 1 << 22

// Model gives the outcomes of litmus tests: every final state some
// execution allowed by the model reaches. A test the model cannot run (a
// primitive it does not support, bounds) is an error naming why.
type Model interface {
	Name() string
	Outcomes(t *Test) ([]Outcome, error)
}

// Answer is what a model says of a test, in herd7's words.
type Answer struct {
	Outcomes []Outcome // sorted by Key
	// Matches counts the outcomes that satisfy the condition.
	Matches int
	// Positive: the condition holds (exists: some outcome satisfies it;
	// ~exists: none does; forall: all do).
	Positive bool
	// Result is "Always", "Sometimes" or "Never": whether every, some or
	// no outcome satisfies the condition (herd7's Observation line); this
	// is what a test's header states.
	Result string
	// Decided says the answer came from a Decider: Outcomes are witnesses,
	// not every outcome, and Matches counts among them.
	Decided bool
	// Flags are the herd7 flags ("data-race"...) raised by some allowed
	// execution whose outcome the filter keeps, sorted, each once; nil
	// when none is. Judge takes the union of the kept outcomes' Flags,
	// Decide the Decision's Flags (with its witnesses').
	Flags []string
}

// Judge runs t under m and answers its condition.
func Judge(m Model, t *Test) (Answer, error) {
	all, err := m.Outcomes(t)
	if err != nil {
		return Answer{}, err
	}
	outs := all[:0:0]
	for _, o := range all {
		keep, err := o.Filtered(t)
		if err != nil {
			return Answer{}, err
		}
		if keep {
			outs = append(outs, o)
		}
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].Key() < outs[j].Key() })
	a := Answer{Outcomes: outs}
	for _, o := range outs {
		a.Flags = UnionFlags(a.Flags, o.Flags)
	}
	for _, o := range outs {
		ok, err := o.Satisfies(t.Cond)
		if err != nil {
			return Answer{}, fmt.Errorf("%s: final condition: %w", t.Name, err)
		}
		if ok {
			a.Matches++
		}
	}
	switch {
	case len(outs) == 0:
		return Answer{}, fmt.Errorf("%s: %s gives %w", t.Name, m.Name(), ErrNoOutcome)
	case a.Matches == len(outs):
		a.Result = "Always"
	case a.Matches > 0:
		a.Result = "Sometimes"
	default:
		a.Result = "Never"
	}
	switch t.Quant {
	case Exists:
		a.Positive = a.Matches > 0
	case NotExists:
		a.Positive = a.Matches == 0
	case Forall:
		a.Positive = a.Matches == len(outs)
	default:
		return Answer{}, fmt.Errorf("%s: no quantifier", t.Name)
	}
	return a, nil
}

// Filtered reports whether o passes t's filter clause (true without one).
func (o Outcome) Filtered(t *Test) (bool, error) {
	if t.Filter == nil {
		return true, nil
	}
	ok, err := o.Satisfies(*t.Filter)
	if err != nil {
		return false, fmt.Errorf("%s: filter: %w", t.Name, err)
	}
	return ok, nil
}

// Decider is a model that answers a test's condition without listing
// every outcome: it looks for one outcome (of an execution the filter
// keeps) that satisfies the condition and one that does not, and stops
// looking for each once it has it. A test with millions of outcomes is
// answered as fast as its two witnesses are found.
type Decider interface {
	Model
	Decide(t *Test) (Decision, error)
}

// Decision is a Decider's answer: an outcome that satisfies the test's
// condition and one that does not, each nil when no allowed execution
// has one.
type Decision struct {
	Sat, Unsat *Outcome
	// Flags are the herd7 flags ("data-race"...) raised by some allowed
	// execution whose outcome the filter keeps, as Answer.Flags: a
	// Decider that raises flags must look at every such execution for
	// them, not only at the two witnesses. nil when none is.
	Flags []string
}

// Decide answers t's condition under m: by m's Decide when m is a
// Decider, then Answer.Decided is set, Outcomes holds the witnesses only
// (one that satisfies the condition, one that does not, where they
// exist) and Matches counts those, Flags are the Decision's (with its
// witnesses'); otherwise by Judge.
func Decide(m Model, t *Test) (Answer, error) {
	d, ok := m.(Decider)
	if !ok {
		return Judge(m, t)
	}
	dec, err := d.Decide(t)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Decided: true, Flags: UnionFlags(nil, dec.Flags)}
	if dec.Sat != nil {
		a.Outcomes = append(a.Outcomes, *dec.Sat)
		a.Matches = 1
		a.Flags = UnionFlags(a.Flags, dec.Sat.Flags)
	}
	if dec.Unsat != nil {
		a.Outcomes = append(a.Outcomes, *dec.Unsat)
		a.Flags = UnionFlags(a.Flags, dec.Unsat.Flags)
	}
	switch {
	case dec.Sat == nil && dec.Unsat == nil:
		return Answer{}, fmt.Errorf("%s: %s gives %w", t.Name, m.Name(), ErrNoOutcome)
	case dec.Unsat == nil:
		a.Result = "Always"
	case dec.Sat != nil:
		a.Result = "Sometimes"
	default:
		a.Result = "Never"
	}
	switch t.Quant {
	case Exists:
		a.Positive = dec.Sat != nil
	case NotExists:
		a.Positive = dec.Sat == nil
	case Forall:
		a.Positive = dec.Unsat == nil
	default:
		return Answer{}, fmt.Errorf("%s: no quantifier", t.Name)
	}
	return a, nil
}

// UnionFlags returns the flags of a and b, sorted, each once, in a new
// slice (neither is changed); nil when both are empty.
func UnionFlags(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	sort.Strings(out)
	k := 0
	for i, f := range out {
		if i == 0 || f != out[k-1] {
			out[k] = f
			k++
		}
	}
	return out[:k]
}

package diocount

import (
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
)

// The state machine of DIO counting (the protocol and the model are
// described in diocount.go).

// Truncate's program counter.
const (
	truncLock uint8 = iota
	truncRead
	truncPrepare
	truncSleep
	truncFree
	truncDone
)

// maxWriters: writers, truncate, the device and i_mutex share Memory's
// threads.
const maxWriters = 5

type writer struct {
	pc     uint8 // index into the writer's program; len(program): finished
	io     uint8 // direct writes started
	queued uint8 // AIO bios submitted that have not landed
	landed uint8 // AIO bios landed whose counted dio_complete has not run
}

// State is a state of System; comparable.
type State struct {
	mem    memory.Memory
	w      [maxWriters]writer
	trunc  uint8 // truncate's program counter
	holder uint8 // i_mutex: 0 free, else actor+1
	freed  bool  // truncate freed the writers' disk blocks
	bad    uint8 // writer+1 whose write landed in a freed block
}

// System is the protocol for the explorer.
type System struct {
	cfg       Config
	unreduced bool          // WithoutReductions
	scope     *memory.Scope // the memories' intern tables (LKMM), as long as the system lives
	n         int           // writers
	prog      [maxWriters][]Op
	actors    []string

	// unorderedLock (tests only) makes inode_unlock publish nothing under
	// Relaxed, to show that the Relaxed verdicts rest on i_mutex's
	// release/acquire.
	unorderedLock bool
}

// NewSystem checks the configuration.
func NewSystem(cfg Config) (*System, error) {
	if len(cfg.Writers) < 1 || len(cfg.Writers) > maxWriters {
		return nil, fmt.Errorf("diocount model: %d writers, want 1 to %d", len(cfg.Writers), maxWriters)
	}
	if cfg.IOs < 1 || cfg.IOs > 100 {
		return nil, fmt.Errorf("diocount model: %d direct writes per writer, want 1 to 100", cfg.IOs)
	}
	if cfg.TruncateAfter < 0 || cfg.TruncateAfter > len(cfg.Writers)*cfg.IOs {
		return nil, fmt.Errorf("diocount model: truncate after %d direct writes, want 0 to %d", cfg.TruncateAfter, len(cfg.Writers)*cfg.IOs)
	}
	if _, ok := variantNames[cfg.Variant]; !ok {
		return nil, fmt.Errorf("diocount model: unknown variant %d", cfg.Variant)
	}
	if cfg.Memory < memory.SC || cfg.Memory > memory.LKMM {
		return nil, fmt.Errorf("diocount model: unknown memory model %d", cfg.Memory)
	}
	s := &System{cfg: cfg, n: len(cfg.Writers), scope: memory.ScopeFor(cfg.Memory)}
	for w, k := range cfg.Writers {
		if k < DAX || k > AIO {
			return nil, fmt.Errorf("diocount model: writer %d has unknown kind %d", w, k)
		}
		s.prog[w] = s.program(k)
		s.actors = append(s.actors, string(rune('A'+w)))
	}
	s.actors = append(s.actors, "truncate", "device")
	if n := s.maxCount(); n > 120 {
		return nil, fmt.Errorf("diocount model: i_dio_count may reach %d, Memory's values stop at 127", n)
	}
	if live := s.relaxedLiveStores(); (cfg.Memory == memory.Relaxed || cfg.Memory == memory.LKMM) && live > memory.MaxStores {
		return nil, fmt.Errorf("diocount model: up to %d live stores to i_dio_count under %v, Memory keeps %d (fewer writers or AIOs)", live, cfg.Memory, memory.MaxStores)
	}
	return s, nil
}

// beginsAfterUnlock reports whether the caller's inode_dio_begin comes after
// the overwrite path dropped i_mutex (mutant MutantBeginAfterUnlock).
func (v Variant) beginsAfterUnlock() bool { return v == MutantBeginAfterUnlock }

// program is a writer's direct write, in program order. The variants differ
// only here (and in the AIO completion, see deviceSteps): the steps
// themselves are the same code for every variant.
func (s *System) program(k Kind) []Op {
	c := s.cfg
	p := []Op{OpLock}
	switch {
	case c.HoldLock:
		p = append(p, OpCallerBegin)
	case c.Variant.beginsAfterUnlock():
		// mutant MutantBeginAfterUnlock: the count is taken without
		// i_mutex; ext4_ext_direct_IO increments it before inode_unlock, as
		// its comment asks.
		p = append(p, OpUnlock, OpCallerBegin)
	default:
		p = append(p, OpCallerBegin, OpUnlock)
	}
	// The callee's count, unless DIO_SKIP_DIO_COUNT. mutant
	// MutantSkipAsync skips it for AIO too, whose bio outlives the
	// caller's count; the patch passes the flag for dax_do_io only (see
	// CalleeSkips).
	counts := !c.Variant.CalleeSkips(k)
	if counts {
		p = append(p, OpCalleeBegin)
	}
	p = append(p, OpMap)
	switch k {
	case DAX:
		p = append(p, OpDAXStore)
	case SyncDIO:
		p = append(p, OpSubmit, opWaitBio)
	case AIO:
		p = append(p, OpSubmit) // then jumps over the callee's end: dio_complete runs it
	}
	if counts {
		p = append(p, OpCalleeEnd)
	}
	p = append(p, OpCallerEnd)
	if c.HoldLock {
		return append(p, OpUnlockEnd)
	}
	return append(p, OpRelock)
}

// maxCount bounds i_dio_count: each writer's current write counts once or
// twice, and each of its earlier AIOs once more until dio_complete.
func (s *System) maxCount() int {
	n := 0
	for _, k := range s.cfg.Writers {
		switch {
		case s.cfg.Variant.CalleeSkips(k):
			n++
		case k == AIO:
			n += 1 + s.cfg.IOs
		default:
			n += 2
		}
	}
	return n
}

// relaxedLiveStores bounds the stores to i_dio_count that a reader may
// still read under Relaxed: the store i_mutex last published, and each
// writer's read-modify-writes after its last release of i_mutex (with
// HoldLock, the holder's, plus every AIO completion still to come).
func (s *System) relaxedLiveStores() int {
	if s.cfg.NoTruncate {
		return 1 // nobody reads the counter with a plain load
	}
	live, holder := 1, 0
	for w, k := range s.cfg.Writers {
		rmws, afterUnlock, unlocked := 0, 0, false
		for _, op := range s.prog[w] {
			if op.CounterRMW() != 0 {
				rmws++
				if unlocked {
					afterUnlock++
				}
			}
			unlocked = unlocked || op == OpUnlock
		}
		pending := 0
		if k == AIO && !s.cfg.Variant.CalleeSkips(k) {
			pending = s.cfg.IOs
		}
		if s.cfg.HoldLock {
			holder = max(holder, rmws)
			live += pending
		} else {
			live += afterUnlock + max(pending-1, 0)
		}
	}
	return live + holder
}

func (s *System) truncActor() int { return s.n }
func (s *System) device() int     { return s.n + 1 }

// Actors implements System.
func (s *System) Actors() []string { return s.actors }

// Init implements System.
func (s *System) Init() []State {
	var readers [memory.MaxLocations]uint8
	st := State{trunc: truncLock}
	if s.cfg.NoTruncate {
		st.trunc = truncDone
	} else {
		readers[locCount] = 1 << mutexThread // until truncate takes i_mutex
	}
	st.mem = s.scope.New(s.cfg.Memory, readers)
	if s.unreduced {
		st.mem.Unreduced()
	}
	return []State{st}
}

// Reduces implements explore.InnerReducer: LKMM memory leaves out
// subsumed results of pending barriers (memory.Memory.Unreduced).
func (s *System) Reduces() bool { return s.cfg.Memory == memory.LKMM && !s.unreduced }

// WithoutReductions implements explore.InnerReducer.
func (s *System) WithoutReductions() explore.System[State] {
	u := *s
	u.unreduced = true
	return &u
}

// Unfinished implements System: the writers with direct writes left, and
// truncate until it freed the blocks (the device never returns; an AIO
// still in flight after its writer returned is the device's).
func (s *System) Unfinished(st State) uint64 {
	var u uint64
	for w := 0; w < s.n; w++ {
		if s.op(st, w) != 0 {
			u |= 1 << w
		}
	}
	if st.trunc != truncDone {
		u |= 1 << s.truncActor()
	}
	return u
}

// Check implements System.
func (s *System) Check(st State) error {
	if st.bad != 0 {
		w := int(st.bad - 1)
		return fmt.Errorf("%s's %v write landed in d%d after truncate freed d%d", s.actors[w], s.cfg.Writers[w], w, w)
	}
	count := st.mem.Newest(locCount)
	if count < 0 {
		return fmt.Errorf("i_dio_count is %d: an inode_dio_end without its inode_dio_begin", count)
	}
	if count != 0 && s.Done(st) {
		return fmt.Errorf("i_dio_count is %d with no direct I/O left: an inode_dio_begin without its inode_dio_end", count)
	}
	return nil
}

// started is the number of direct writes the writers have started.
func (s *System) started(st State) int {
	n := 0
	for w := 0; w < s.n; w++ {
		n += int(st.w[w].io)
	}
	return n
}

// Done reports whether every task finished and no bio is in flight.
func (s *System) Done(st State) bool {
	if st.trunc != truncDone {
		return false
	}
	for w := 0; w < s.n; w++ {
		if int(st.w[w].pc) < len(s.prog[w]) || st.w[w].queued != 0 || st.w[w].landed != 0 {
			return false
		}
	}
	return true
}

// op is writer w's next operation (0 when it finished).
func (s *System) op(st State, w int) Op {
	if pc := int(st.w[w].pc); pc < len(s.prog[w]) {
		return s.prog[w][pc]
	}
	return 0
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	if st.bad != 0 {
		return
	}
	for w := 0; w < s.n; w++ {
		s.writerSteps(st, w, yield)
	}
	s.truncateSteps(st, yield)
	s.deviceSteps(st, yield)
}

func label(actor int, op Op, id, arg int) explore.Label {
	return explore.Label{Actor: uint8(actor), Kind: uint8(op), ID: uint16(id), Arg: uint16(int16(arg))}
}

// alt marks which of a memory operation's results a step took (LKMM).
func alt(l explore.Label, a memory.Alt) explore.Label {
	l.Alt = uint16(a)
	return l
}

// endIO moves writer w past the end of its direct write: the next one, or
// finished.
func (s *System) endIO(n *State, w int) {
	if int(n.w[w].io) < s.cfg.IOs {
		n.w[w].pc = 0
		return
	}
	n.w[w].pc = uint8(len(s.prog[w]))
}

// jump moves writer w to the first of ops at or after its pc.
func (s *System) jump(n *State, w int, ops ...Op) {
	for pc := int(n.w[w].pc); pc < len(s.prog[w]); pc++ {
		for _, o := range ops {
			if s.prog[w][pc] == o {
				n.w[w].pc = uint8(pc)
				return
			}
		}
	}
	panic(fmt.Sprintf("diocount model: writer %d has no %v after pc %d", w, ops, n.w[w].pc))
}

// settled reports whether actor a has no barrier pending (LKMM: the one
// after its last fully ordered RMW). If it has, its only step is that
// barrier taking effect, yielded here, in every order with the other
// threads' pending ones (Memory.Settle): every later step of a is after
// it, and its locks (JoinView) need it done.
func (s *System) settled(st State, a int, yield func(explore.Label, State)) bool {
	if !st.mem.Pending(a) {
		return true
	}
	for _, c := range st.mem.Settle(a) {
		n := st
		n.mem = c.Mem
		yield(alt(label(a, OpBarrier, 0, 0), c.Alt), n)
	}
	return false
}

func (s *System) writerSteps(st State, w int, yield func(explore.Label, State)) {
	if !s.settled(st, w, yield) {
		return
	}
	op := s.op(st, w)
	if op == 0 || op == opWaitBio {
		return // finished, or woken by the device
	}
	n := st
	n.w[w].pc++
	switch op {
	case OpLock:
		if st.holder != 0 {
			return
		}
		n.w[w].io++
		n.mem = acquire(n.mem, w)
		if st.freed {
			n.mem = s.release(n.mem, w)
			s.endIO(&n, w)
			yield(label(w, OpBeyondEOF, int(n.w[w].io), 0), n)
			return
		}
		n.holder = uint8(w + 1)
		yield(label(w, OpLock, int(n.w[w].io), 0), n)
	case OpCallerBegin, OpCalleeBegin, OpCalleeEnd, OpCallerEnd:
		for _, c := range counterRMW(st.mem, w, int64(op.CounterRMW())) {
			n.mem = c.mem
			yield(alt(label(w, op, 0, int(c.v)), c.alt), n)
		}
	case OpUnlock:
		n.holder = 0
		n.mem = s.release(n.mem, w)
		yield(label(w, op, 0, 0), n)
	case OpMap:
		if st.freed {
			// The block is a hole now: nothing is written (the direct
			// write comes up short) and no bio is queued, so for AIO too
			// dio_complete runs in the submitter.
			n.w[w].pc = st.w[w].pc
			s.jump(&n, w, OpCalleeEnd, OpCallerEnd)
			yield(label(w, op, 0, 1), n)
			return
		}
		yield(label(w, op, 0, 0), n)
	case OpDAXStore:
		if st.freed {
			n.bad = uint8(w + 1)
		}
		yield(label(w, op, 0, 0), n)
	case OpSubmit:
		if s.cfg.Writers[w] == AIO {
			n.w[w].queued++
			s.jump(&n, w, OpCallerEnd) // -EIOCBQUEUED: dio_complete ends the callee's count later
		}
		yield(label(w, op, 0, 0), n)
	case OpRelock:
		if st.holder != 0 {
			return
		}
		n.mem = s.release(acquire(n.mem, w), w)
		s.endIO(&n, w)
		yield(label(w, op, 0, 0), n)
	case OpUnlockEnd:
		n.holder = 0
		n.mem = s.release(n.mem, w)
		s.endIO(&n, w)
		yield(label(w, op, 0, 0), n)
	default:
		panic(fmt.Sprintf("diocount model: writer %d at unknown op %d", w, op))
	}
}

func (s *System) truncateSteps(st State, yield func(explore.Label, State)) {
	t := s.truncActor()
	if !s.settled(st, t, yield) {
		return
	}
	n := st
	switch st.trunc {
	case truncLock:
		if st.holder != 0 || s.started(st) < s.cfg.TruncateAfter {
			return
		}
		n.holder = uint8(t + 1)
		n.mem = truncateAcquires(st.mem, t)
		n.trunc = truncRead
		yield(label(t, OpTruncLock, 0, 0), n)
	case truncRead:
		newest := int(st.mem.Newest(locCount))
		for _, r := range st.mem.Load(t, locCount) {
			n.mem, n.trunc = r.Mem, truncPrepare
			if r.Val == 0 {
				n.trunc = truncFree
			}
			yield(alt(label(t, OpWaitRead, newest, int(r.Val)), r.Alt.Orders()), n)
		}
	case truncPrepare:
		for _, c := range st.mem.Fences(t) {
			l := c.Mem.LoadNewest(t, locCount)[0] // its barrier is not pending: one result
			v := l.Val
			n.mem, n.trunc = l.Mem, truncSleep
			if v == 0 {
				n.trunc = truncFree
			}
			yield(alt(label(t, OpWaitPrepare, 0, int(v)), c.Alt), n)
		}
	case truncSleep:
		if st.mem.Newest(locCount) != 0 {
			return // asleep until the inode_dio_end that reaches 0 wakes it
		}
		if mutate.On(mutate.WaiterNeverWakes) {
			return // mutation: that wake-up (inode_dio_end's wake_up_bit) is lost
		}
		for _, c := range st.mem.Fences(t) {
			n.mem = c.Mem.LoadNewest(t, locCount)[0].Mem
			n.trunc = truncFree
			yield(alt(label(t, OpWaitWoken, 0, 0), c.Alt), n)
		}
	case truncFree:
		n.freed = true
		n.holder = 0
		n.mem = withReaders(s.release(st.mem, t), 0) // nobody reads the counter any more
		n.trunc = truncDone
		yield(label(t, OpTruncFree, 0, 0), n)
	}
}

func (s *System) deviceSteps(st State, yield func(explore.Label, State)) {
	d := s.device()
	if !s.settled(st, d, yield) {
		return
	}
	for w := 0; w < s.n; w++ {
		wr := st.w[w]
		if s.op(st, w) == opWaitBio {
			n := st
			n.w[w].pc++ // completed: the writer wakes in dio_await_completion
			if st.freed {
				n.bad = uint8(w + 1)
			}
			yield(label(d, OpBioLands, w, 0), n)
		}
		if wr.queued > 0 {
			n := st
			n.w[w].queued--
			if st.freed {
				n.bad = uint8(w + 1)
			}
			if !s.cfg.Variant.CalleeSkips(AIO) {
				// dio_complete's inode_dio_end is still to come (mutant
				// MutantSkipAsync: no callee count, none to end).
				n.w[w].landed++
			}
			yield(label(d, OpBioLands, w, 1), n)
		}
		if wr.landed > 0 {
			n := st
			n.w[w].landed--
			for _, c := range counterRMW(st.mem, d, -1) {
				n.mem = c.mem
				yield(alt(label(d, OpAIOComplete, w, int(c.v)), c.alt), n)
			}
		}
	}
}

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	text := s.describe(l)
	if l.Alt != 0 {
		text += " (" + memory.Alt(l.Alt).Text(func(t int) string { return s.actors[t] }, Op(l.Kind).CounterRMW() != 0 || Op(l.Kind) == OpAIOComplete) + ")"
	}
	return text
}

func (s *System) describe(l explore.Label) string {
	a, v := int(l.Actor), int(int16(l.Arg))
	callee := func(w int) string {
		if s.cfg.Writers[w] == DAX {
			return "dax_do_io"
		}
		return "__blockdev_direct_IO"
	}
	switch op := Op(l.Kind); op {
	case OpLock:
		if s.cfg.HoldLock {
			return fmt.Sprintf("inode_lock; write %d to b%d (not an overwrite: keeps i_mutex)", l.ID, a)
		}
		return fmt.Sprintf("inode_lock; write %d to b%d: an overwrite", l.ID, a)
	case OpBeyondEOF:
		return fmt.Sprintf("inode_lock; write %d: b%d is past i_size, extends into a new block; inode_unlock", l.ID, a)
	case OpCallerBegin:
		return fmt.Sprintf("inode_dio_begin (ext4) -> %d", v)
	case OpUnlock:
		return "inode_unlock (overwrite: I/O without i_mutex)"
	case OpCalleeBegin:
		return fmt.Sprintf("inode_dio_begin (%s) -> %d", callee(a), v)
	case OpMap:
		if v != 0 {
			return fmt.Sprintf("get_block: b%d is a hole now, nothing to write", a)
		}
		return fmt.Sprintf("get_block: b%d -> d%d", a, a)
	case OpDAXStore:
		return fmt.Sprintf("dax_io: CPU stores land in d%d", a)
	case OpSubmit:
		if s.cfg.Writers[a] == AIO {
			return fmt.Sprintf("submit_bio(d%d); returns -EIOCBQUEUED", a)
		}
		return fmt.Sprintf("submit_bio(d%d); waits for it", a)
	case OpCalleeEnd:
		if s.cfg.Writers[a] == DAX {
			return fmt.Sprintf("inode_dio_end (dax_do_io) -> %d", v)
		}
		return fmt.Sprintf("inode_dio_end (dio_complete) -> %d", v)
	case OpCallerEnd:
		return fmt.Sprintf("inode_dio_end (ext4) -> %d", v)
	case OpRelock:
		return "inode_lock again, returns; inode_unlock"
	case OpUnlockEnd:
		return "returns; inode_unlock"
	case OpBioLands:
		w := int(l.ID)
		if v != 0 {
			return fmt.Sprintf("%s's AIO bio lands in d%d", s.actors[w], w)
		}
		return fmt.Sprintf("%s's bio lands in d%d, completes; %s wakes", s.actors[w], w, s.actors[w])
	case OpAIOComplete:
		return fmt.Sprintf("dio_complete (%s's AIO): inode_dio_end -> %d", s.actors[l.ID], v)
	case OpTruncLock:
		return "inode_lock; i_size = 0 (ext4_setattr)"
	case OpWaitRead:
		if int(l.ID) != v {
			return fmt.Sprintf("inode_dio_wait: i_dio_count -> %d (stale: newest is %d)", v, l.ID)
		}
		return fmt.Sprintf("inode_dio_wait: i_dio_count -> %d", v)
	case OpWaitPrepare:
		if v != 0 {
			return fmt.Sprintf("prepare_to_wait, smp_mb: i_dio_count -> %d, sleeps", v)
		}
		return "prepare_to_wait, smp_mb: i_dio_count -> 0"
	case OpWaitWoken:
		return "woken: i_dio_count -> 0"
	case OpBarrier:
		return "the barrier after its last fully ordered RMW takes effect"
	case OpTruncFree:
		var blocks []string
		for w := 0; w < s.n; w++ {
			blocks = append(blocks, fmt.Sprintf("d%d", w))
		}
		return fmt.Sprintf("ext4_truncate frees %s; inode_unlock", strings.Join(blocks, ","))
	}
	return fmt.Sprintf("step %d", l.Kind)
}

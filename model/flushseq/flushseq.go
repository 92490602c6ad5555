package flushseq

import (
	"fmt"
	"math/bits"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
)

// The xfs fsync flush-sequence protocol as an explicit-state system.
//
// Each task repeatedly writes its own block, waits for the write to complete
// and fsyncs it. The patched fsync:
//
//	file_write_and_wait_range()          write, wait for its completion
//	smp_mb(); S = read(bt_flush_submitted)
//	if completed > S: return 0           a flush numbered after the write
//	                                     completed has completed: skip
//	seq = inc_return(bt_flush_submitted) xfs_buftarg_flush_start
//	blkdev_issue_flush()                 wait for it
//	on success: raise completed to seq   xfs_buftarg_flush_done: cmpxchg loop
//
// Observing a write's completion is a plain load of a completion word that
// the device stores (the message-passing shape: the device completes the
// write after handling another task's flush); with WaiterSleeps, waking up
// implies a full barrier. The device is the contract specialised to one
// block per task: a flush covers the tasks whose current write had completed
// when it was submitted (a DAX task's data only by its own flush, since DAX
// writes are CPU stores that another task's PREFLUSH does not cover).
//
// The obligation: when fsync returns 0, the task's write is durable; a crash
// at that moment would otherwise lose it. It is checked at every return.

// Variant is one version of the fsync code.
type Variant uint8

// The variants: the real ones, the mutants the checker must catch, and the
// benign one it must not flag.
const (
	Baseline                  Variant = iota + 1 // before the patch: always flush
	Patched                                      // the patch
	Improved                                     // ours: join an in-flight flush numbered above S
	MutantReadBeforeWriteback                    // mutant: S read before the data write
	MutantNoMB                                   // mutant: no smp_mb before reading S
	MutantGreaterEqual                           // mutant: skip if completed >= S
	MutantAdvanceOnFailure                       // mutant: flush_done even when the flush failed
	MutantNumberAfterSubmit                      // mutant: inc_return after submitting the flush
	MutantDAXSkips                               // mutant: DAX tasks skip on the counter too
	BenignPlainStore                             // benign: completed = seq, a plain store, not a max
	GroupCommit                                  // ours: improved, but first wait for the earlier flushes in flight
	MutantRelaxedNumber                          // mutant: numbered with inc_return_relaxed (the smp_mb before S kept)
)

var variantNames = map[Variant]string{
	Baseline: "baseline", Patched: "patched", Improved: "improved",
	MutantReadBeforeWriteback: "mutant-read-before-writeback", MutantNoMB: "mutant-no-smp_mb",
	MutantGreaterEqual: "mutant->=", MutantAdvanceOnFailure: "mutant-advance-on-failed-flush",
	MutantNumberAfterSubmit: "mutant-number-after-submit", MutantDAXSkips: "mutant-dax-skips",
	BenignPlainStore: "benign-plain-store-completed", GroupCommit: "group-commit",
	MutantRelaxedNumber: "mutant-inc_return_relaxed",
}

func (v Variant) String() string {
	if s, ok := variantNames[v]; ok {
		return s
	}
	return fmt.Sprintf("FsyncVariant(%d)", uint8(v))
}

// Variants lists every variant.
func Variants() []Variant {
	return []Variant{Baseline, Patched, Improved, GroupCommit, BenignPlainStore,
		MutantReadBeforeWriteback, MutantNoMB, MutantRelaxedNumber, MutantGreaterEqual, MutantAdvanceOnFailure, MutantNumberAfterSubmit, MutantDAXSkips}
}

// InWorld reports whether the model world runs the variant (Program): it
// has no DAX files, and its words (spec.Word) have no relaxed increment.
func (v Variant) InWorld() bool { return v != MutantDAXSkips && v != MutantRelaxedNumber }

// Mutant reports whether the variant is a negative control.
func (v Variant) Mutant() bool {
	return v != Baseline && v != Patched && v != Improved && v != GroupCommit && v != BenignPlainStore
}

// Config is one bounded scenario.
type Config struct {
	Variant       Variant
	Memory        memory.Model
	Tasks         int   // 1 to 4, one block each
	Fsyncs        int   // write+fsync rounds per task
	FlushFailures bool  // a flush may fail with EIO
	DAX           uint8 // tasks (bit t) whose file is DAX
	WaiterSleeps  bool  // observing a write completion implies smp_mb
	LogForce      bool  // the log force may write an iclog itself or wait for another task's
	_             struct{}
}

const (
	locSubmitted = 0
	locCompleted = 1
	// A completion word per task, beside the two sequence numbers; the
	// state's arrays hold 4 tasks (more would grow every state of every
	// run for bounds no proof uses).
	maxFsTasks = min(memory.MaxLocations-2, 4)
)

func locDone(t int) int { return 2 + t }

// maxFlushValue bounds flush numbers, which are stored as int8.
const maxFlushValue = 120

// Program counters of a task.
const (
	pcWrite    uint8 = iota // submit the data write
	pcWaitW                 // wait for it to complete
	pcMB                    // smp_mb
	pcReadS                 // S = read(submitted)
	pcLogForce              // the log force: nothing to do, own iclog, or wait for another's
	pcLogWait               // waiting for the next iclog another task writes
	pcCheck                 // completed > S ?
	pcNumber                // seq = inc_return(submitted)
	pcSubmit                // submit the flush
	pcWaitF                 // wait for the flush
	pcJoin                  // improved: wait for the flush numbered wait, then re-check
	pcDoneLoad              // flush_done: c = read(completed)
	pcDoneCAS               // flush_done: cmpxchg(completed, c, seq)
	pcReturn                // fsync returns 0
	pcFinished
	pcEarlyS      // read-before-writeback: S = read(submitted) before the write
	pcJoinLoad    // improved, no skip: read submitted
	pcJoinRecheck // improved, woken after the joined flush: read completed again
	pcDrain       // group commit: wait until no flush numbered <= S is in flight
)

type task struct {
	pc, round       uint8 // round: fsyncs started
	s, seq, C, wait int8
	logWait         int8 // task+1 whose flush writes the iclog this task waits for (0: not yet submitted)
	failed          bool // this round's flush failed: fsync returns EIO
	drained         bool // group commit: waited for the earlier flushes this round
}

type flushState struct {
	st    uint8 // 0 none, 1 in flight, 2 completed, 3 failed
	cover uint8 // tasks whose current write it covers
	seq   int8
}

// State is a state of System; comparable.
type State struct {
	mem   memory.Memory
	task  [maxFsTasks]task
	wst   [maxFsTasks]uint8 // current write: 0 none, 1 in flight, 2 completed
	dur   uint8             // tasks whose current write is durable
	flush [maxFsTasks]flushState
	lost  int8 // task+1 whose fsync returned 0 with its write not durable
}

// System is the protocol for the explorer.
type System struct {
	cfg       Config
	actors    []string
	unreduced bool          // WithoutReductions
	scope     *memory.Scope // the memories' intern tables (LKMM), as long as the system lives
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

// NewSystem checks the configuration.
func NewSystem(cfg Config) (*System, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &System{cfg: cfg, scope: memory.ScopeFor(cfg.Memory)}
	for t := 0; t < cfg.Tasks; t++ {
		s.actors = append(s.actors, string(rune('A'+t)))
	}
	s.actors = append(s.actors, "device")
	return s, nil
}

// validate checks that the configuration is within System's bounds.
func (cfg Config) validate() error {
	if cfg.Tasks < 1 || cfg.Tasks > maxFsTasks {
		return fmt.Errorf("fsync model: %d tasks, want 1 to %d", cfg.Tasks, maxFsTasks)
	}
	// Every flush may be numbered: under Relaxed each number is a store that
	// may stay live; values are int8 everywhere.
	maxFlushes := maxFlushValue
	if cfg.Memory == memory.Relaxed || cfg.Memory == memory.LKMM {
		maxFlushes = memory.MaxStores - 1
	}
	if cfg.Fsyncs < 1 || cfg.Tasks*cfg.Fsyncs > maxFlushes {
		return fmt.Errorf("fsync model: %d tasks x %d fsyncs: at most %d flushes fit the memory bounds under %v", cfg.Tasks, cfg.Fsyncs, maxFlushes, cfg.Memory)
	}
	if _, ok := variantNames[cfg.Variant]; !ok {
		return fmt.Errorf("fsync model: unknown variant %d", cfg.Variant)
	}
	if cfg.Memory < memory.SC || cfg.Memory > memory.LKMM {
		return fmt.Errorf("fsync model: unknown memory model %d", cfg.Memory)
	}
	return nil
}

func (s *System) device() int { return s.cfg.Tasks }

// Actors implements System.
func (s *System) Actors() []string { return s.actors }

// Init implements System.
func (s *System) Init() []State {
	var readers [memory.MaxLocations]uint8
	all := uint8(1)<<s.cfg.Tasks - 1
	readers[locSubmitted], readers[locCompleted] = all, all
	// The completion words are read only by LoadNewest (a task waits until
	// its write's completion is there), so they have no plain readers;
	// under LKMM the device, which stores them, is one (its view orders
	// its stores).
	if s.cfg.Memory == memory.LKMM {
		for t := 0; t < s.cfg.Tasks; t++ {
			readers[locDone(t)] = 1 << s.device()
		}
	}
	st := State{mem: s.scope.New(s.cfg.Memory, readers)}
	if s.cfg.Variant.numbersRelaxed() {
		st.mem.UseOrderings()
	}
	if s.unreduced {
		st.mem.Unreduced()
	}
	for t := 0; t < s.cfg.Tasks; t++ {
		st.task[t].pc = s.roundStart()
	}
	return []State{st}
}

// Step kinds, for labels.
const (
	kWrite uint8 = iota + 1
	kSeeWrite
	kMB
	kReadS
	kSkip
	kNoSkip
	kNumber
	kSubmitF
	kJoinWait
	kDoneLoad
	kDoneCAS
	kDoneStore
	kReturn
	kDevWrite
	kDevFlushOK
	kDevFlushFail
	kMemFlush
	kLogNothing
	kJoinLoad
	kLogOwn
	kLogJoin
	kLogWoken
	kLogEscape
	kDrained
)

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	text := s.describe(l)
	if l.Alt != 0 {
		store := l.Kind == kDevWrite || l.Kind == kDoneStore || l.Kind == kNumber || (l.Kind == kDoneCAS && l.ID == 1)
		text += " (" + memory.Alt(l.Alt).Text(s.threadName, store) + ")"
	}
	return text
}

func (s *System) describe(l explore.Label) string {
	a, v := int(l.ID), int(int16(l.Arg))
	switch l.Kind {
	case kWrite:
		return fmt.Sprintf("write b%d (round %d)", l.Actor, a)
	case kSeeWrite:
		return "sees its write complete"
	case kMB:
		return "smp_mb()"
	case kReadS:
		if a > v {
			return fmt.Sprintf("S = submitted -> %d (stale: newest is %d)", v, a)
		}
		return fmt.Sprintf("S = submitted -> %d", v)
	case kSkip, kNoSkip:
		// Show the comparison this variant really makes (the >= mutant
		// skips on equality), so that a timeline reads true as printed.
		skip, noSkip := ">", "<="
		if s.cfg.Variant.skipsOnEqual() {
			skip, noSkip = ">=", "<"
		}
		if l.Kind == kSkip {
			return fmt.Sprintf("completed=%d %s S=%d: skip flush", a, skip, v)
		}
		return fmt.Sprintf("completed=%d %s S=%d: no skip", a, noSkip, v)
	case kNumber:
		if s.cfg.Variant.numbersRelaxed() {
			return fmt.Sprintf("seq = inc_return_relaxed(submitted) -> %d", v)
		}
		return fmt.Sprintf("seq = inc_return(submitted) -> %d", v)
	case kSubmitF:
		return fmt.Sprintf("submit flush (seq %d)", v)
	case kJoinWait:
		return fmt.Sprintf("woken: flush seq %d ended", a)
	case kDrained:
		return fmt.Sprintf("woken: no flush numbered <= S=%d in flight", v)
	case kDoneLoad:
		return fmt.Sprintf("c = completed -> %d", v)
	case kDoneCAS:
		if a == 1 {
			return fmt.Sprintf("cmpxchg(completed, c, seq) -> %d", v)
		}
		return "cmpxchg(completed) fails"
	case kDoneStore:
		return fmt.Sprintf("completed = %d", v)
	case kReturn:
		if v != 0 {
			return "fsync returns -EIO"
		}
		return "fsync returns 0"
	case kDevWrite:
		return fmt.Sprintf("%s's write completes", s.actors[a])
	case kDevFlushOK:
		return fmt.Sprintf("%s's flush (seq %d) completes, covers %s", s.actors[a], int8(l.Arg), s.taskList(uint8(l.Arg>>8)))
	case kDevFlushFail:
		return fmt.Sprintf("%s's flush fails (EIO)", s.actors[a])
	case kJoinLoad:
		if a > v {
			return fmt.Sprintf("submitted -> %d > S=%d: wait for flush seq %d", a, v, a)
		}
		return fmt.Sprintf("submitted -> %d, S=%d: own flush", a, v)
	case kLogNothing:
		return "log force: nothing to write"
	case kLogOwn:
		return "log force: writes the iclog (PREFLUSH)"
	case kLogJoin:
		return "log force: waits for the iclog another task writes next"
	case kLogEscape:
		return "log force: nobody wrote the iclog, writes it (PREFLUSH)"
	case kLogWoken:
		return fmt.Sprintf("%s's iclog is out (not this task's flush)", s.actors[a])
	case kMemFlush:
		return fmt.Sprintf("store buffer of %s drains one store", s.threadName(a))
	}
	return fmt.Sprintf("step %d", l.Kind)
}

func (s *System) threadName(t int) string {
	if t < len(s.actors) {
		return s.actors[t]
	}
	return fmt.Sprint(t)
}

func (s *System) taskList(m uint8) string {
	out := ""
	for ; m != 0; m &= m - 1 {
		if out != "" {
			out += ","
		}
		out += s.actors[bits.TrailingZeros8(m)]
	}
	if out == "" {
		return "nothing"
	}
	return out
}

func (s *System) dax(t int) bool { return s.cfg.DAX&(1<<t) != 0 }

// Unfinished implements System: the tasks that have rounds of write and
// fsync left (the device never returns). Which of them wait is the
// explorer's business (explore.Blocked).
func (s *System) Unfinished(st State) uint64 {
	var u uint64
	for t := 0; t < s.cfg.Tasks; t++ {
		if st.task[t].pc != pcFinished {
			u |= 1 << t
		}
	}
	return u
}

// Check implements System.
func (s *System) Check(st State) error {
	if st.lost != 0 {
		t := int(st.lost - 1)
		return fmt.Errorf("%s's fsync returned 0 but its write to b%d (round %d) is not durable: a crash now loses it",
			s.actors[t], t, st.task[t].round)
	}
	return nil
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	if st.lost != 0 {
		return
	}
	for t := 0; t < s.cfg.Tasks; t++ {
		s.taskSteps(st, t, yield)
	}
	s.deviceSteps(st, yield)
	st.mem.Steps(func(th int, m memory.Memory) {
		n := st
		n.mem = m
		yield(explore.Label{Actor: uint8(s.device()), Kind: kMemFlush, ID: uint16(th)}, n)
	})
}

func lab(t int, kind uint8, id int, arg int) explore.Label {
	return explore.Label{Actor: uint8(t), Kind: kind, ID: uint16(id), Arg: uint16(int16(arg))}
}

// alt marks which of a memory operation's results a step took (LKMM).
func alt(l explore.Label, a memory.Alt) explore.Label {
	l.Alt = uint16(a)
	return l
}

// What each variant changes, asked by the phase it changes. The mutants are
// marked again at the step they change.

// readsSFirst: mutant MutantReadBeforeWriteback samples S before the data write.
func (v Variant) readsSFirst() bool { return v == MutantReadBeforeWriteback }

// fencesBeforeS: every variant but mutant MutantNoMB has smp_mb before sampling S.
func (v Variant) fencesBeforeS() bool { return v != MutantNoMB }

// numbersFlushes: every variant but Baseline numbers its flushes and may
// skip on the counters.
func (v Variant) numbersFlushes() bool { return v != Baseline }

// numbersRelaxed: mutant MutantRelaxedNumber numbers its flush with
// atomic64_inc_return_relaxed.
func (v Variant) numbersRelaxed() bool { return v == MutantRelaxedNumber }

// daxSkips: mutant MutantDAXSkips lets a DAX task skip on the counters too.
func (v Variant) daxSkips() bool { return v == MutantDAXSkips }

// skipsOnEqual: mutant MutantGreaterEqual skips when completed == S.
func (v Variant) skipsOnEqual() bool { return v == MutantGreaterEqual }

// numbersAfterSubmit: mutant MutantNumberAfterSubmit submits the flush, then
// numbers it.
func (v Variant) numbersAfterSubmit() bool { return v == MutantNumberAfterSubmit }

// joinsInFlight: Improved and GroupCommit wait for a flush numbered above S
// that is already in flight instead of issuing their own.
func (v Variant) joinsInFlight() bool { return v == Improved || v == GroupCommit }

// drainsFirst: GroupCommit, with nothing to join, first lets the flushes
// numbered up to S end.
func (v Variant) drainsFirst() bool { return v == GroupCommit }

// storesCompleted: the benign BenignPlainStore stores seq into completed
// instead of raising it with a cmpxchg loop.
func (v Variant) storesCompleted() bool { return v == BenignPlainStore }

// advancesOnFailure: mutant MutantAdvanceOnFailure runs flush_done after a failed
// flush.
func (v Variant) advancesOnFailure() bool { return v == MutantAdvanceOnFailure }

// Writeback: file_write_and_wait_range writes the task's block and waits for
// the write's completion.

// Sample S: smp_mb(), then S = atomic64_read(&bt_flush_submitted).

// Log force: it may have nothing to write, write the iclog itself (a
// PREFLUSH), or wait for the iclog another task writes.

// Decide skip: if (!DAX && completed > S) return 0.

// Join (Improved, GroupCommit): a flush numbered above S already submitted
// covers the write as well as one of the task's own would.

// Own flush: xfs_buftarg_flush_start numbers it (seq =
// atomic64_inc_return(&bt_flush_submitted)), then blkdev_issue_flush submits
// it and waits; the device ends it (deviceSteps, flushEnded).

// Advance completed: xfs_buftarg_flush_done raises bt_flush_completed to seq
// with a cmpxchg loop, after a successful flush only (see flushEnded).

// Return: fsync returns 0, or -EIO after a failed flush; returning 0 with
// the write not durable is the violation Check reports.

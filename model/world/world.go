package world

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/flushproof/flushproof/model/memory"
)

// The model world runs protocol code written against spec.Device, spec.Word
// and spec.Fence (the interfaces impl implements too) inside the model. Each
// task is a coroutine (iter.Pull): it runs until it calls into a handle,
// which is a scheduling point. The scheduler collects every action that is
// possible then (a task's pending call; a device completing an in-flight
// write or flush, or failing a flush; under TSO a store buffer draining one
// store; under LKMM the pending barrier after a task's fully ordered RMW
// taking effect; a task's choice among the values a relaxed load may read,
// and under LKMM among the places a store may take in modification order)
// and a Chooser picks one: rapid, a seeded random source or a latency
// model.
// Only one task runs at a time, so runs are deterministic given the
// choices and replay from them.
//
// The device is the contract's (spec.Contract) specialised to whole-block
// writes and tracked per block as versions, without the contract's bound on
// the number of writes. A write is durable when a flush submitted after it
// completed succeeds, when the preflush of a write with REQ_PREFLUSH
// submitted after it completed ends (ActWritePreflushed, spec.Contract
// rule 7: only then is that write's data sent, so until then a crash cannot
// leave it), when it completed with FUA, or at once when the device has no
// cache. A crash may leave, in each block, the data of any write that
// had not ended when the latest durable write to that block was submitted
// (spec.Contract, rule 6: such a write is not ordered before it, so it may
// land after it), or the initial content while no write to the block is
// durable. Emulated FUA is treated like native FUA: a write seen without its
// data-done event promises only itself (spec.Contract, rule 3). Memory is
// memory.Wide: Memory's semantics without its size bounds. Under LKMM a
// task's I/O first lets the barrier after the task's last fully ordered
// RMW take effect, as the explorer's Memory.Settle does; a store the
// memory refuses (memory.ErrUnordered) fails the run.

// Config describes a world.
type Config struct {
	Memory        memory.Model
	NoCache       bool     // the device has no volatile cache: a completed write is durable
	Tasks         int      // threads of the protocol
	Words         int      // shared atomic64 words
	Blocks        int      // device blocks
	BlockSize     int      // bytes per block (default 8)
	FlushFailures bool     // a flush may fail with EIO (with a volatile cache only: spec.Contract, rule 4)
	WaiterSleeps  bool     // returning from a write implies smp_mb (the waiter slept)
	Crash         int      // the machine crashes before step Crash (0: never)
	MaxSteps      int      // a run longer than this is an error (default 1,000,000)
	WordNames     []string // for traces
}

// ActionKind is what a scheduling choice does.
type ActionKind uint8

// The actions.
const (
	ActLoad      ActionKind = iota + 1 // a task's plain load reads one of the values it may read
	ActStore                           // a task's plain store
	ActFence                           // smp_mb
	ActIncReturn                       // atomic64_inc_return
	ActCAS                             // atomic64_try_cmpxchg
	ActWrite                           // a task submits a write
	ActFlush                           // a task submits a flush
	ActRead                            // a task reads a block
	ActWake                            // a task waiting on a condition is woken (a full barrier)
	ActChoice                          // a task takes one branch of a choice of its own
	ActWriteDone                       // the device completes a write
	ActFlushDone                       // the device completes a flush
	ActFlushFail                       // the device fails a flush (EIO)
	// ActWritePreflushed: the preflush step of a write with REQ_PREFLUSH
	// completed and the block layer sent its data (spec.WritePreflushed);
	// the task still waits for the write.
	ActWritePreflushed
	ActDrain     // TSO: a thread's oldest buffered store reaches memory
	ActBarrier   // LKMM: the barrier after a thread's fully ordered RMW takes effect
	ActNote      // not a choice: a task's annotation in the trace
	ActMilestone // not a choice: a protocol's typed milestone (Task.Reached)
	// ActStart: a task starts, and runs its code up to its first call. No
	// code of a task runs before the scheduler picks this step.
	ActStart
	// ActQueue: a task runs its change under the wait queue's lock and
	// wakes the waiters (spec.WaitQueue.Wake): state other tasks read.
	ActQueue
)

var actNames = [...]string{ActLoad: "load", ActStore: "store", ActFence: "smp_mb",
	ActIncReturn: "inc_return", ActCAS: "cmpxchg", ActWrite: "write", ActFlush: "flush", ActRead: "read",
	ActWake: "wake", ActChoice: "choice", ActWriteDone: "write-done", ActFlushDone: "flush-done",
	ActFlushFail: "flush-fail", ActWritePreflushed: "write-preflushed", ActDrain: "drain", ActBarrier: "barrier", ActNote: "note",
	ActMilestone: "milestone", ActStart: "start", ActQueue: "wake_up"}

func (k ActionKind) String() string {
	if int(k) < len(actNames) && actNames[k] != "" {
		return actNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// Machine reports whether an action of kind k is taken by the machine (the
// device serving a request, or TSO memory draining a store buffer) rather
// than by a task's own code: a chooser that models time lets such steps
// happen when their latency has passed.
func (k ActionKind) Machine() bool {
	switch k {
	case ActWriteDone, ActWritePreflushed, ActFlushDone, ActFlushFail, ActDrain, ActBarrier:
		return true
	}
	return false
}

// Action is one possible next step.
type Action struct {
	Kind ActionKind
	Task int // the task that acts or whose request the device serves
	// Arg is, for ActLoad, the index among the readable values; for
	// ActStore, ActIncReturn and ActCAS, the index among the memory's
	// results (memory.Wide, several under LKMM; -1: the memory refused
	// the operation, which fails the run); for ActChoice, the branch.
	Arg   int
	Name  string // ActChoice and ActWake: what the task chooses or waits for
	Block int    // ActWrite, ActRead: the block
	// Milestone is the typed meaning of an ActChoice or ActWake (the
	// branch's Milestone), for choosers that pick by it; nil if none.
	Milestone Milestone
}

// Chooser picks one of the possible actions.
type Chooser interface {
	Choose(acts []Action) int
}

// Observer, if the Chooser implements it, sees every event as it happens.
type Observer interface {
	Observe(ev Event)
}

// Event is one entry of a run's trace.
type Event struct {
	Step  int
	Kind  ActionKind
	Task  int    // -1: the device or memory system
	Loc   int    // memory events: the word; device events: the block
	Val   int64  // the value loaded or stored, the sequence, or the branch
	OK    bool   // cmpxchg succeeded; a flush or write did not fail
	Of    int    // device events: the task whose request it serves
	Note  string // free text for people (timelines); no logic reads it
	Stale bool   // ActLoad, and ActIncReturn under LKMM: a store older than the newest was read
	// Milestone is the typed meaning of the event for the protocol that
	// emitted it: set on ActMilestone (Task.Reached), and on ActChoice and
	// ActWake from the branch taken. Trace validation and timing read it.
	Milestone Milestone
}

// Milestone is a protocol's typed event in a trace: a step of the protocol
// (an fsync returned 0, a log force joined another task's iclog) that
// trace validation and timed runs follow by its type and value. Its String
// is what a timeline shows. Each protocol defines its own milestone type,
// comparable, so that a validator switches on it.
type Milestone interface {
	String() string
}

// World is one run of protocol code in the model. Create with New,
// then Run.
type World struct {
	cfg   Config
	mem   *memory.Wide
	tasks []*Task
	step  int
	trace []Event
	fail  error
	ch    Chooser
	obs   Observer

	blocks []blockVersions
	writes []*pendingWrite
	flush  []*pendingFlush
	clock  int64 // device events so far: submissions and ends are numbered by it

	inTask int // task+1 whose code runs now (resume), 0 between steps (query)

	searchHooks // the exhaustive search's bookkeeping (search.go)
}

// ErrFlushFailed is the EIO of a failed flush in the model world.
var ErrFlushFailed = errors.New("model world: flush failed (EIO)")

// errCrashed unwinds a task's coroutine when the machine crashes.
var errCrashed = errors.New("model world: crashed")

// New checks the configuration.
func New(cfg Config) (*World, error) {
	if cfg.Tasks < 1 || cfg.Words < 0 || cfg.Blocks < 0 {
		return nil, fmt.Errorf("model world: %d tasks, %d words, %d blocks", cfg.Tasks, cfg.Words, cfg.Blocks)
	}
	if cfg.Memory < memory.SC || cfg.Memory > memory.LKMM {
		return nil, fmt.Errorf("model world: unknown memory model %d", cfg.Memory)
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 8
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 1_000_000
	}
	w := &World{cfg: cfg, mem: memory.NewWide(cfg.Memory, cfg.Tasks, cfg.Words)}
	w.blocks = make([]blockVersions, cfg.Blocks)
	for b := range w.blocks {
		w.blocks[b] = blockVersions{data: [][]byte{make([]byte, cfg.BlockSize)},
			submitted: []int64{-1}, unsent: []bool{false}, ended: []int64{-1}, doneSince: -1, durableSince: -1}
	}
	return w, nil
}

// Config returns the configuration.
func (w *World) Config() Config { return w.cfg }

// Trace returns the events so far.
func (w *World) Trace() []Event { return w.trace }

// Fail stops the run with err (a protocol's obligation was broken); Run
// returns it.
func (w *World) Fail(err error) {
	if w.fail == nil {
		w.fail = err
	}
}

// Outcome is how a run ended.
type Outcome struct {
	Steps   int
	Crashed bool // the machine crashed (WorldConfig.Crash) before every task finished
}

// Run runs body once per task (task ids 0..Tasks-1) to completion, a crash,
// a failure (Fail) or a deadlock, with ch choosing every step.
func (w *World) Run(ch Chooser, body func(t *Task)) (Outcome, error) {
	if w.tasks != nil {
		return Outcome{}, errors.New("model world: Run called twice")
	}
	w.ch = ch
	w.obs, _ = ch.(Observer)
	defer w.close()
	w.start(body)
	var acts []Action
	for {
		if w.cfg.Crash > 0 && w.step+1 >= w.cfg.Crash {
			return Outcome{Steps: w.step, Crashed: true}, nil
		}
		acts = w.actions(acts[:0])
		if len(acts) == 0 {
			var stuck []string
			for _, t := range w.tasks {
				if !t.done {
					stuck = append(stuck, fmt.Sprintf("task %d at %v", t.id, t.req.kind))
				}
			}
			if stuck == nil {
				return Outcome{Steps: w.step}, nil
			}
			return Outcome{Steps: w.step}, fmt.Errorf("model world: deadlock after %d steps: %s", w.step, strings.Join(stuck, ", "))
		}
		if w.step >= w.cfg.MaxSteps {
			return Outcome{Steps: w.step}, fmt.Errorf("model world: more than %d steps", w.cfg.MaxSteps)
		}
		i := ch.Choose(acts)
		if i < 0 || i >= len(acts) {
			return Outcome{Steps: w.step}, fmt.Errorf("model world: chooser picked %d of %d actions", i, len(acts))
		}
		w.step++
		w.perform(acts[i])
		if w.fail != nil {
			return Outcome{Steps: w.step}, w.fail
		}
	}
}

// start makes the tasks, each to run body. None runs yet: each task's
// first step is its start (ActStart), which the scheduler picks as it
// picks any other, so that no code of a task runs before the first choice
// (code before a task's first call may read what another task's code
// changed, and the order of the tasks' starts is a schedule like any
// other).
func (w *World) start(body func(t *Task)) {
	for id := 0; id < w.cfg.Tasks; id++ {
		t := &Task{w: w, id: id, req: request{kind: ActStart}}
		if w.pooled() {
			t.c = w.srch.coro()
		} else {
			t.c = newCoro()
		}
		t.c.job = func() {
			t.yield = t.c.yield
			body(t)
			t.done = true
		}
		w.tasks = append(w.tasks, t)
	}
}

// close ends the tasks' coroutines: a task that has not finished unwinds
// from its pending call.
func (w *World) close() {
	for _, t := range w.tasks {
		if !w.pooled() {
			t.c.stop()
			continue
		}
		if t.started && !t.done {
			t.abort = true
			t.c.next()
		}
		w.srch.release(t.c)
	}
}

// pooled reports whether the world's tasks run on the search's pooled
// coroutines: in a replay of the search, which keeps no trace.
func (w *World) pooled() bool { return w.srch != nil && w.quiet }

// Step returns the number of steps taken so far.
func (w *World) Step() int { return w.step }

// RandomChooser picks uniformly with a seeded generator.
type RandomChooser struct{ Rand *rand.Rand }

// NewRandomChooser returns a RandomChooser seeded with seed.
func NewRandomChooser(seed uint64) *RandomChooser {
	return &RandomChooser{rand.New(rand.NewPCG(seed, 0x3017d))}
}

// Choose implements Chooser.
func (c *RandomChooser) Choose(acts []Action) int { return c.Rand.IntN(len(acts)) }

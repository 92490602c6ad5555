package world

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
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

	// The exhaustive search's bookkeeping (search.go); srch is nil in a
	// run that a Chooser drives.
	srch    *Search
	quiet   bool          // no trace: a replay of the search
	noSeq   bool          // a replay's path to a known state: the tasks' results are restored at its end
	wakeLog uint32        // the order in which tasks ran their WaitQueue changes (interned)
	obl     []obligation  // MustSurvive's obligations (SearchOptions.Exact)
	judged  uint64        // in a search: the obligations judged since the step began (Search.Judged)
	inTask  int           // task+1 whose code runs now (resume), 0 between steps (query)
	shared  func() []byte // Shared
	sym     *Symmetry     // Symmetric
}

// blockVersions is one block of the world's device. Version v > 0 is the
// v-th write submitted to the block; version 0 is the initial content.
type blockVersions struct {
	data [][]byte // data[v] is version v's content
	// submitted[v]: the clock when version v's write was submitted (with
	// REQ_PREFLUSH: when its preflush ended and its data was sent, the
	// moment rule 6 orders it from).
	submitted []int64
	// unsent[v]: version v's write carries REQ_PREFLUSH and its preflush has
	// not ended: its data was not sent, a crash cannot leave it.
	unsent []bool
	ended  []int64 // ended[v]: the clock when it ended; notEnded while in flight
	done   int     // newest completed version: what a read returns
	// doneSince is the latest submission clock of a completed write to the
	// block (-1: none): a flush submitted now covers that write and every
	// older completed one, and making those durable means only that.
	doneSince int64
	// durableSince is the latest submission clock of a durable write to the
	// block (-1: none). Version v may survive a crash iff its write had not
	// ended by then (rule 6 of spec.Contract).
	durableSince int64
	floor        int // versions below floor can never survive a crash again
}

// notEnded is the end clock of a write in flight: later than any clock.
const notEnded = int64(1) << 62

type pendingWrite struct {
	task, block, version int
	fua                  bool
	preCover             []int64 // REQ_PREFLUSH: per block, doneSince at submission; nil without
	unsent               bool    // REQ_PREFLUSH: the preflush has not ended, the data not sent
}

type pendingFlush struct {
	task  int
	cover []int64 // per block: doneSince when the flush was submitted
	tag   int64
	async bool
}

// Task is one thread of protocol code. The calls of its handles (words,
// fences, the device, the wait queue) and Select, WaitUntil and Choose
// are scheduling points; ID, World, Note, Reached, Checkpoint, Assert and
// MustSurvive are not (docs/world.md, "Scheduling points", says why
// leaving each out hides no run).
type Task struct {
	w     *World
	id    int
	c     *coro               // the coroutine the task runs on
	yield func(struct{}) bool // c's yield, once the task runs
	done  bool
	req   request
	resp  response

	// The asynchronous flush (SubmitFlush): out from its submission to
	// the WaitFlush that takes its end; ended, with its error, once the
	// device has ended it.
	flushOut   bool
	flushEnded bool
	flushErr   error

	started bool   // resumed at least once
	forgot  bool   // done, and memory forgot it (resume)
	seq     uint32 // the exhaustive search: the results of the task's calls so far (interned)
	abort   bool   // unwind from the pending call (close), and from any call after it
}

type request struct {
	kind        ActionKind
	loc         int
	val, old    int64
	block       int
	data        []byte
	fua         bool
	preflush    bool
	async       bool
	tag         int64
	onSubmit    func()
	branches    []Branch
	waitForDone bool
	change      func() // ActQueue: the change made under the queue's lock
}

type response struct {
	val int64
	ok  bool
	Err error
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

// coro is a coroutine that runs one task's body after another: a replay
// takes its tasks' coroutines from the search's pool and gives them back,
// so that runs do not each start coroutines and grow their stacks anew;
// any other run stops its own.
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	job   func() // the body to run when resumed idle
}

// newCoro starts a coroutine, idle until its job is set and it is resumed.
// A job that unwinds from a crash (errCrashed) ends quietly; any other
// panic goes to the caller of next.
func newCoro() *coro {
	c := &coro{}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.yield = yield
		for {
			func() {
				defer func() {
					if r := recover(); r != nil && r != errCrashed { //nolint:errorlint // sentinel identity
						panic(r)
					}
				}()
				c.job()
			}()
			c.job = nil
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return c
}

// resume runs the task until its next call or its end. Its first resume
// (its start) is one of its results too, so that the key tells a task
// that has started from one that has not.
func (t *Task) resume() {
	if s := t.w.srch; s != nil && !t.w.noSeq {
		t.seq = s.extend(t.seq, &t.resp)
	}
	t.started = true
	t.w.inTask = t.id + 1
	_, ok := t.c.next()
	t.w.inTask = 0
	if !ok {
		t.done = true
	}
	if t.done && !t.forgot {
		// It takes no step any more: memory forgets its views (and a
		// barrier of its still pending), as the state machines' memory
		// does when a thread ends (memory.Memory.DropReader).
		t.forgot = true
		t.w.mem.Forget(t.id)
	}
}

func (w *World) record(ev Event) {
	if w.quiet {
		return
	}
	ev.Step = w.step
	w.trace = append(w.trace, ev)
	if w.obs != nil {
		w.obs.Observe(ev)
	}
}

// actions lists what may happen next, in a fixed order.
func (w *World) actions(acts []Action) []Action {
	for _, t := range w.tasks {
		if t.done {
			continue
		}
		r := &t.req
		switch r.kind {
		case ActLoad:
			for i := range w.mem.Readable(t.id, r.loc) {
				acts = append(acts, Action{Kind: ActLoad, Task: t.id, Arg: i})
			}
		case ActStore, ActIncReturn, ActCAS:
			n, err := w.memChoices(t.id, r)
			if err != nil {
				// One action, which fails the run.
				acts = append(acts, Action{Kind: r.kind, Task: t.id, Arg: -1})
				continue
			}
			for i := range n {
				acts = append(acts, Action{Kind: r.kind, Task: t.id, Arg: i})
			}
		case ActChoice:
			for i, b := range r.branches {
				if b.When == nil || b.When() {
					k := ActChoice
					if b.Wake {
						k = ActWake
					}
					acts = append(acts, Action{Kind: k, Task: t.id, Arg: i, Name: b.Name, Milestone: b.Milestone})
				}
			}
		case ActFlush:
			if r.waitForDone {
				if t.flushEnded {
					acts = append(acts, Action{Kind: ActWake, Task: t.id, Name: "flush ended"})
				}
				continue
			}
			acts = append(acts, Action{Kind: ActFlush, Task: t.id})
		case 0: // waiting for the device
		default:
			acts = append(acts, Action{Kind: r.kind, Task: t.id, Block: r.block})
		}
	}
	for _, p := range w.writes {
		if p.unsent {
			acts = append(acts, Action{Kind: ActWritePreflushed, Task: p.task, Block: p.block})
			continue
		}
		acts = append(acts, Action{Kind: ActWriteDone, Task: p.task, Block: p.block})
	}
	for _, f := range w.flush {
		acts = append(acts, Action{Kind: ActFlushDone, Task: f.task})
		if w.cfg.FlushFailures && !w.cfg.NoCache {
			// Without a volatile cache the block layer ends an empty
			// flush at once with success (blk-flush.c, blk_insert_flush).
			acts = append(acts, Action{Kind: ActFlushFail, Task: f.task})
		}
	}
	if w.cfg.Memory == memory.TSO {
		for _, th := range w.mem.Buffered() {
			acts = append(acts, Action{Kind: ActDrain, Task: th})
		}
	}
	for _, th := range w.mem.Pending() {
		acts = append(acts, Action{Kind: ActBarrier, Task: th})
	}
	return acts
}

// memChoices is the number of results of r, a task's store or
// read-modify-write (one, except under LKMM), or the memory's refusal.
func (w *World) memChoices(t int, r *request) (int, error) {
	var ks []int
	var err error
	if r.kind == ActStore {
		ks, err = w.mem.StoreChoices(t, r.loc)
	} else {
		ks, err = w.mem.RMWChoices(t, r.loc, true, r.rmw())
	}
	return len(ks), err
}

// rmw is the function of a read-modify-write request.
func (r *request) rmw() func(int64) (int64, bool) {
	if r.kind == ActCAS {
		old, new := r.old, r.val
		return func(v int64) (int64, bool) { return new, v == old }
	}
	return func(v int64) (int64, bool) { return v + 1, true }
}

func (w *World) perform(a Action) {
	switch a.Kind {
	case ActWriteDone:
		w.writeDone(a)
		return
	case ActWritePreflushed:
		w.preflushDone(a)
		return
	case ActFlushDone, ActFlushFail:
		w.flushDone(a)
		return
	case ActDrain:
		w.mem.Drain(a.Task)
		w.record(Event{Kind: ActDrain, Task: -1, Of: a.Task})
		return
	case ActBarrier:
		w.mem.Complete(a.Task)
		w.record(Event{Kind: ActBarrier, Task: -1, Of: a.Task})
		return
	}
	t := w.tasks[a.Task]
	r := t.req
	t.req = request{}
	var resp response
	ev := Event{Kind: a.Kind, Task: t.id, Loc: r.loc}
	if a.Arg < 0 {
		_, err := w.memChoices(t.id, &r)
		w.Fail(fmt.Errorf("model world: task %d: %w", t.id, err))
		return
	}
	switch a.Kind {
	case ActWrite, ActFlush, ActRead:
		// I/O: under LKMM the barrier after the task's last fully
		// ordered RMW takes effect first. Memory operations (a wake-up
		// from a wait queue is a barrier) complete it themselves; a step
		// of control alone (a choice, the end of a wait for the device)
		// is no event and leaves it pending, as in the state machines.
		w.mem.Settle(t.id)
	}
	if (a.Kind == ActWrite || a.Kind == ActRead) && !w.noSeq {
		// Not on a replay's path to a known state: every step there was
		// checked when the state after it was first reached.
		w.checkSymmetric(t.id, r.block, a.Kind, r.data)
	}
	switch a.Kind {
	case ActLoad:
		newest := len(w.mem.Readable(t.id, r.loc)) - 1
		resp.val = w.mem.Load(t.id, r.loc, a.Arg)
		ev.Val, ev.Stale = resp.val, a.Arg < newest
	case ActStore:
		ks, _ := w.mem.StoreChoices(t.id, r.loc)
		w.mem.StoreAt(t.id, r.loc, r.val, false, a.Arg)
		ev.Val, ev.Note = r.val, placed(ks[a.Arg])
	case ActFence:
		w.mem.Fence(t.id)
	case ActIncReturn, ActCAS:
		ks, _ := w.mem.RMWChoices(t.id, r.loc, true, r.rmw())
		old, new, stored := w.mem.RMWAt(t.id, r.loc, true, r.rmw(), a.Arg)
		ev.Stale = ks[a.Arg] > 0 // under LKMM, a store older than the newest
		if a.Kind == ActIncReturn {
			resp.val, ev.Val = new, new
		} else {
			resp.ok, resp.val = stored, old
			ev.Val, ev.OK = r.val, stored
		}
	case ActChoice:
		resp.val = int64(a.Arg)
		ev.Val, ev.Note, ev.Milestone = int64(a.Arg), a.Name, a.Milestone
	case ActStart:
		// Nothing but the task's own code, which runs as it resumes.
	case ActQueue:
		w.queueChange(t, r.change)
	case ActWake:
		ev.Note, ev.Milestone = a.Name, a.Milestone
		if r.kind == ActChoice {
			// Sleeping on a wait queue and being woken imply a full
			// barrier (memory-barriers.txt, "Sleep and wake-up
			// functions"). The end of a flush, like the end of any
			// device call, is not assumed to order memory.
			resp.val = int64(a.Arg)
			ev.Val = int64(a.Arg)
			w.mem.Fence(t.id)
		}
		if r.kind == ActFlush {
			resp.Err = t.flushErr
			ev.OK = t.flushErr == nil
			t.flushEnded = false
		}
	case ActRead:
		b := &w.blocks[r.block]
		copy(r.data, b.data[b.done])
		resp.val = int64(b.done) // what the task learns: the search's key has it
		ev.Loc, ev.Val = r.block, int64(b.done)
	case ActWrite:
		b := &w.blocks[r.block]
		w.clock++
		b.data = append(b.data, append([]byte(nil), r.data...))
		b.submitted = append(b.submitted, w.clock)
		b.ended = append(b.ended, notEnded)
		v := len(b.data) - 1
		p := &pendingWrite{task: t.id, block: r.block, version: v, fua: r.fua}
		if r.preflush && !w.cfg.NoCache { // stripped without a cache (rule 4)
			p.preCover = w.doneSince()
			p.unsent = true
		}
		b.unsent = append(b.unsent, p.unsent)
		w.writes = append(w.writes, p)
		ev.Loc, ev.Val, ev.OK = r.block, int64(v), r.fua
		if r.preflush {
			ev.Note = "PREFLUSH"
		}
		w.record(ev)
		return // the task waits for the device
	case ActFlush:
		w.clock++
		f := &pendingFlush{task: t.id, tag: r.tag, async: r.async, cover: w.doneSince()}
		w.flush = append(w.flush, f)
		ev.Val = r.tag
		if r.onSubmit != nil {
			r.onSubmit()
		}
		if !r.async {
			w.record(ev)
			return // the task waits for the device
		}
		t.flushEnded, t.flushErr = false, nil
	}
	w.record(ev)
	t.resp = resp
	t.resume()
}

func (w *World) writeDone(a Action) {
	i := 0
	for i < len(w.writes) && !(w.writes[i].task == a.Task && w.writes[i].block == a.Block) {
		i++
	}
	p := w.writes[i]
	w.writes = append(w.writes[:i], w.writes[i+1:]...)
	w.clock++
	b := &w.blocks[p.block]
	b.done = max(b.done, p.version)
	b.ended[p.version] = w.clock
	b.doneSince = max(b.doneSince, b.submitted[p.version])
	if p.fua || w.cfg.NoCache {
		// Durable at completion. (Emulated FUA is treated like native: its
		// post-flush also covers other completed writes, but a write seen
		// without its data-done promises only itself; spec.Contract.)
		b.durableSince = max(b.durableSince, b.submitted[p.version])
		b.raiseFloor()
	}
	w.record(Event{Kind: ActWriteDone, Task: -1, Loc: p.block, Val: int64(p.version), OK: true, Of: p.task})
	t := w.tasks[p.task]
	if w.cfg.WaiterSleeps {
		w.mem.Fence(t.id)
	}
	t.resp = response{}
	t.resume()
}

// preflushDone ends the preflush step of a write with REQ_PREFLUSH
// (spec.Contract, rule 7): the writes it covers are durable, and the data
// is sent now, so it may land, over every write ended by now.
func (w *World) preflushDone(a Action) {
	var p *pendingWrite
	for _, q := range w.writes {
		if q.task == a.Task && q.block == a.Block && q.unsent {
			p = q
			break
		}
	}
	w.clock++
	w.makeDurable(p.preCover)
	p.unsent = false
	b := &w.blocks[p.block]
	b.unsent[p.version] = false
	b.submitted[p.version] = w.clock
	w.record(Event{Kind: ActWritePreflushed, Task: -1, Loc: p.block, Val: int64(p.version), OK: true, Of: p.task})
}

func (w *World) flushDone(a Action) {
	i := 0
	for w.flush[i].task != a.Task {
		i++
	}
	f := w.flush[i]
	w.flush = append(w.flush[:i], w.flush[i+1:]...)
	w.clock++
	ok := a.Kind == ActFlushDone
	if ok {
		w.makeDurable(f.cover)
	}
	w.record(Event{Kind: a.Kind, Task: -1, Val: f.tag, OK: ok, Of: f.task})
	t := w.tasks[f.task]
	var err error
	if !ok {
		err = ErrFlushFailed
	}
	if f.async {
		t.flushEnded, t.flushErr = true, err
		return
	}
	t.resp = response{Err: err}
	t.resume()
}

// FlushInFlight reports whether a flush submitted with tag has not ended.
func (w *World) FlushInFlight(tag int64) bool {
	w.query("FlushInFlight")
	for _, f := range w.flush {
		if f.tag == tag {
			return true
		}
	}
	return false
}

// FlushInFlightBy reports whether task has a flush in flight.
func (w *World) FlushInFlightBy(task int) bool {
	w.query("FlushInFlightBy")
	for _, f := range w.flush {
		if f.task == task {
			return true
		}
	}
	return false
}

// doneSince returns, per block, the latest submission clock of a completed
// write: what a flush (or a preflush) submitted now covers.
func (w *World) doneSince() []int64 {
	cover := make([]int64, len(w.blocks))
	for b := range w.blocks {
		cover[b] = w.blocks[b].doneSince
	}
	return cover
}

// makeDurable makes durable, per block, the completed writes a flush or
// preflush covered.
func (w *World) makeDurable(cover []int64) {
	for b, since := range cover {
		bv := &w.blocks[b]
		bv.durableSince = max(bv.durableSince, since)
		bv.raiseFloor()
	}
}

// mayLeave reports whether version v of the block may survive a crash now.
func (bv *blockVersions) mayLeave(v int) bool {
	if v == 0 {
		return bv.durableSince < 0
	}
	return !bv.unsent[v] && bv.ended[v] > bv.durableSince
}

// raiseFloor skips the versions that can never survive again: durableSince
// only grows, and an ended write stays ended. A version whose data is not
// sent yet may still survive later: the floor stops there.
func (bv *blockVersions) raiseFloor() {
	for bv.floor < len(bv.data)-1 && !bv.unsent[bv.floor] && !bv.mayLeave(bv.floor) {
		bv.floor++
	}
}

// query fails the run when a task's own code calls the World query
// name: the device's state is shared, and reading it without a
// scheduling point hides the runs where it changes just before
// (docs/world.md, "Scheduling points"). When conditions, observers and
// checks after a run call it between steps.
func (w *World) query(name string) {
	if w.inTask != 0 && w.fail == nil {
		w.Fail(fmt.Errorf("task %d called World.%s in its own code: a task reads the device's state only through its handles' calls (scheduling points); World.%s is for When conditions, observers and checks", w.inTask-1, name, name))
	}
}

// MayLeave returns the contents a crash now may leave in block b, oldest
// version first: the data of every write to b that had not ended when the
// latest durable write to b was submitted (that write included), and the
// initial content while no write to b is durable. Without a durable write,
// that is every version.
func (w *World) MayLeave(b int) [][]byte {
	w.query("MayLeave")
	bv := &w.blocks[b]
	var out [][]byte
	for v := bv.floor; v < len(bv.data); v++ {
		if bv.mayLeave(v) {
			out = append(out, bv.data[v])
		}
	}
	return out
}

// MayLeaveVersions is MayLeave as version numbers: version v > 0 is the v-th
// write submitted to block b, 0 its initial content.
func (w *World) MayLeaveVersions(b int) []int {
	w.query("MayLeaveVersions")
	bv := &w.blocks[b]
	var out []int
	for v := bv.floor; v < len(bv.data); v++ {
		if bv.mayLeave(v) {
			out = append(out, v)
		}
	}
	return out
}

// Survives reports whether a crash now keeps data in block b: every content
// a crash may leave there is the newest version of b holding data or a
// later version. It is false if b never held data. It is stricter than the
// contract's obligation (Task.MustSurvive), which also lets a crash leave
// an older write still in flight when the data's write was sent.
func (w *World) Survives(b int, data []byte) bool {
	bv := &w.blocks[b]
	v := bv.newest(data)
	if v < 0 {
		return false
	}
	for u := bv.floor; u < v; u++ {
		if bv.mayLeave(u) {
			return false
		}
	}
	return true
}

// newest returns the newest version of the block holding data, -1 if none.
func (bv *blockVersions) newest(data []byte) int {
	for v := len(bv.data) - 1; v >= 0; v-- {
		if string(bv.data[v]) == string(data) {
			return v
		}
	}
	return -1
}

// leftBefore returns the versions a crash may leave now that are ordered
// before version v (spec.Contract, rule 6): they ended before v's data was
// sent. When it is empty, v's obligation holds (spec.Obligation). Once it is empty
// it stays empty: such a version has ended, and a crash may leave it only
// while its end is after the block's latest durable write was sent, which
// only moves forward.
func (bv *blockVersions) leftBefore(v int) []int {
	var out []int
	for u := bv.floor; u < len(bv.data); u++ {
		if u != v && bv.mayLeave(u) && bv.ended[u] < bv.submitted[v] {
			out = append(out, u)
		}
	}
	return out
}

// Step returns the number of steps taken so far.
func (w *World) Step() int { return w.step }

// call makes a request and waits for the scheduler to serve it.
// A call while the task unwinds (a deferred one, such as an Unlock that
// Wakes) unwinds too, without a step: the run is over.
func (t *Task) call(r request) response {
	if t.abort {
		panic(errCrashed)
	}
	t.req = r
	if !t.yield(struct{}{}) || t.abort {
		t.abort = true
		panic(errCrashed)
	}
	return t.resp
}

// ID returns the task's number.
func (t *Task) ID() int { return t.id }

// World returns the task's world.
func (t *Task) World() *World { return t.w }

// Note adds an annotation to the trace; it is not a scheduling point.
func (t *Task) Note(format string, args ...any) {
	if t.w.quiet {
		return
	}
	t.w.record(Event{Kind: ActNote, Task: t.id, Note: fmt.Sprintf(format, args...)})
}

// Reached records that the task reached milestone m of its protocol; it
// is not a scheduling point. Unlike Note, it is read by trace validation
// and by timed runs.
func (t *Task) Reached(m Milestone) {
	t.w.record(Event{Kind: ActMilestone, Task: t.id, Note: m.String(), Milestone: m})
}

// Branch is one way a task may go on in Select.
type Branch struct {
	Name string
	// Milestone, if not nil, is what taking the branch means to the
	// protocol; the event of the choice or wake-up carries it.
	Milestone Milestone
	// When, if not nil, enables the branch; it is evaluated by the
	// scheduler while no task runs and must read only state the protocol
	// keeps outside the modelled memory (a wait queue, a scheduler's
	// decision), never the modelled words.
	When func() bool
	// Wake marks a branch taken by being woken from a wait queue: a full
	// barrier (memory-barriers.txt, "Sleep and wake-up functions").
	Wake bool
}

// Select lets the scheduler pick one of the enabled branches and returns
// its index. The task waits while none is enabled.
func (t *Task) Select(branches ...Branch) int {
	return int(t.call(request{kind: ActChoice, branches: branches}).val)
}

// Choose is Select over branches that are always enabled: nondeterminism
// of the protocol's environment, such as what a log force finds to do.
func (t *Task) Choose(names ...string) int {
	bs := make([]Branch, len(names))
	for i, n := range names {
		bs[i].Name = n
	}
	return t.Select(bs...)
}

// WaitUntil sleeps on a wait queue until cond holds (see Branch.When);
// waking is a full barrier. The wake-up's event carries m (if not nil) and
// its text.
func (t *Task) WaitUntil(m Milestone, cond func() bool) {
	b := Branch{Milestone: m, When: cond, Wake: true}
	if m != nil {
		b.Name = m.String()
	}
	t.Select(b)
}

// WaitQueue returns the task's handle on the world's wait queue. Both of
// its calls are scheduling points: Wake reads and changes state other
// tasks read, so another task may run just before or just after it; its
// change runs in its own step (only one task runs at a time, so the change
// is atomic, as under the queue's lock) after a full barrier of the waker.
// Wait's wake-up, taken when cond holds, is a step too, and a full
// barrier. The changes are Go state, not memory operations: those two
// barriers are the ordering the queue's lock gives.
func (t *Task) WaitQueue() spec.WaitQueue { return worldQueue{t} }

type worldQueue struct{ t *Task }

func (q worldQueue) Wake(change func()) { q.t.call(request{kind: ActQueue, change: change}) }

// queueChange is the step of t's Wake: it runs change under the queue's
// lock.
func (w *World) queueChange(t *Task, change func()) {
	// The queue's lock orders the waker's memory accesses before the change
	// for whoever sees the change (spin_unlock, then the next spin_lock),
	// and wake_up is a full barrier when it wakes a task
	// (memory-barriers.txt, "Sleep and wake-up functions"): the change is
	// not a memory operation here, so that ordering is a full barrier of
	// the waker (stronger than a release when nobody sleeps).
	w.mem.Fence(t.id)
	s := w.srch
	if s == nil || w.noSeq {
		change()
		return
	}
	if w.shared == nil || s.opt.Exact {
		change()
		w.wakeLog = s.logWake(w.wakeLog, t.id, t.seq)
		return
	}
	// The change may read the shared state into the task's own variables
	// (who is the leader, what has drained): what the task saw becomes one
	// of its results, as if Wake returned it.
	t.seq = s.extendShared(t.seq, w.shared())
	change()
}
func (q worldQueue) Wait(cond func() bool) { q.t.WaitUntil(QueueWoken{}, cond) }

// WaitQueueWoken names the wake-up of a task waiting on its WaitQueue.
const WaitQueueWoken = "woken from the wait queue"

// QueueWoken is the milestone of a task woken from its WaitQueue (the
// world's own: the protocol using the queue knows what it waited for).
type QueueWoken struct{}

func (QueueWoken) String() string { return WaitQueueWoken }

// Word returns the task's handle on shared word i.
func (t *Task) Word(i int) *Word { return &Word{t: t, loc: i} }

// Fence returns the task's smp_mb.
func (t *Task) Fence() spec.Fence { return worldFence{t} }

// Device returns the task's handle on the device.
func (t *Task) Device() *Device { return &Device{t: t} }

// Word is a task's handle on a shared atomic64 word; it implements
// spec.Word, and Store (atomic64_set) besides.
type Word struct {
	t   *Task
	loc int
}

var _ spec.Word = (*Word)(nil)

// Load is atomic64_read: the scheduler picks which store it reads.
func (x *Word) Load() int64 { return x.t.call(request{kind: ActLoad, loc: x.loc}).val }

// IncReturn is atomic64_inc_return.
func (x *Word) IncReturn() int64 { return x.t.call(request{kind: ActIncReturn, loc: x.loc}).val }

// CompareAndSwap is atomic64_try_cmpxchg.
func (x *Word) CompareAndSwap(old, new int64) bool {
	return x.t.call(request{kind: ActCAS, loc: x.loc, old: old, val: new}).ok
}

// Store is atomic64_set: a plain store.
func (x *Word) Store(v int64) { x.t.call(request{kind: ActStore, loc: x.loc, val: v}) }

type worldFence struct{ t *Task }

func (f worldFence) Full() { f.t.call(request{kind: ActFence}) }

// Device is a task's handle on the device; it implements spec.Device.
type Device struct{ t *Task }

var _ spec.Device = (*Device)(nil)

// BlockSize implements spec.Device.
func (d *Device) BlockSize() int { return d.t.w.cfg.BlockSize }

func (d *Device) block(p []byte, off int64) (int, error) {
	bs := int64(d.t.w.cfg.BlockSize)
	if off < 0 || off%bs != 0 || int64(len(p)) != bs || off/bs >= int64(len(d.t.w.blocks)) {
		return 0, fmt.Errorf("model world: I/O of %d bytes at %d: one whole block of %d bytes within %d blocks", len(p), off, bs, len(d.t.w.blocks))
	}
	return int(off / bs), nil
}

// WriteAt implements spec.Device: one whole block, returning once the
// device completed it.
func (d *Device) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	b, err := d.block(p, off)
	if err != nil {
		return err
	}
	return d.t.call(request{kind: ActWrite, block: b, data: p, fua: fl&spec.FUA != 0, preflush: fl&spec.Preflush != 0}).Err
}

// ReadAt implements spec.Device: it reads the newest completed write.
func (d *Device) ReadAt(p []byte, off int64) error {
	b, err := d.block(p, off)
	if err != nil {
		return err
	}
	return d.t.call(request{kind: ActRead, block: b, data: p}).Err
}

// Flush implements spec.Device.
func (d *Device) Flush() error { return d.FlushTagged(0, nil) }

// FlushTagged is Flush with a tag for World.FlushInFlight and a hook that
// runs in the step that submits the flush.
func (d *Device) FlushTagged(tag int64, onSubmit func()) error {
	return d.t.call(request{kind: ActFlush, tag: tag, onSubmit: onSubmit}).Err
}

// SubmitFlush submits a flush and returns at once; WaitFlush waits for it.
// At most one asynchronous flush per task at a time: a SubmitFlush before
// the WaitFlush of the one before fails the run.
func (d *Device) SubmitFlush() {
	if d.t.flushOut {
		d.t.w.Fail(fmt.Errorf("model world: task %d called SubmitFlush with its earlier asynchronous flush not yet waited for (at most one per task: WaitFlush first)", d.t.id))
	}
	d.t.flushOut = true
	d.t.call(request{kind: ActFlush, async: true})
}

// WaitFlush waits for the flush SubmitFlush submitted; without one
// outstanding it fails the run.
func (d *Device) WaitFlush() error {
	if !d.t.flushOut {
		d.t.w.Fail(fmt.Errorf("model world: task %d called WaitFlush with no asynchronous flush outstanding (SubmitFlush first)", d.t.id))
	}
	d.t.flushOut = false
	return d.t.call(request{kind: ActFlush, waitForDone: true}).Err
}

// RandomChooser picks uniformly with a seeded generator.
type RandomChooser struct{ Rand *rand.Rand }

// NewRandomChooser returns a RandomChooser seeded with seed.
func NewRandomChooser(seed uint64) *RandomChooser {
	return &RandomChooser{rand.New(rand.NewPCG(seed, 0x3017d))}
}

// Choose implements Chooser.
func (c *RandomChooser) Choose(acts []Action) int { return c.Rand.IntN(len(acts)) }

// Format renders the last n events of the trace (all if n <= 0), one per
// line: the step, who acted, and what happened.
func (w *World) Format(n int) string {
	evs := w.trace
	if n > 0 && len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	var b strings.Builder
	if len(evs) < len(w.trace) {
		fmt.Fprintf(&b, "(%d earlier events not shown)\n", len(w.trace)-len(evs))
	}
	for _, ev := range evs {
		who := "device"
		if ev.Task >= 0 {
			who = fmt.Sprintf("task %d", ev.Task)
		}
		fmt.Fprintf(&b, "%7d  %-7s  %s\n", ev.Step, who, w.describe(ev))
	}
	return b.String()
}

func (w *World) word(loc int) string {
	if loc < len(w.cfg.WordNames) {
		return w.cfg.WordNames[loc]
	}
	return fmt.Sprintf("w%d", loc)
}

func (w *World) describe(ev Event) string {
	switch ev.Kind {
	case ActLoad:
		if ev.Stale {
			return fmt.Sprintf("load %s -> %d (stale: a newer store exists)", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("load %s -> %d", w.word(ev.Loc), ev.Val)
	case ActStore:
		if ev.Note != "" {
			return fmt.Sprintf("store %s = %d (%s)", w.word(ev.Loc), ev.Val, ev.Note)
		}
		return fmt.Sprintf("store %s = %d", w.word(ev.Loc), ev.Val)
	case ActFence:
		return "smp_mb()"
	case ActIncReturn:
		if ev.Stale {
			return fmt.Sprintf("inc_return(%s) -> %d (read a store older than the newest)", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("inc_return(%s) -> %d", w.word(ev.Loc), ev.Val)
	case ActCAS:
		if ev.OK {
			return fmt.Sprintf("cmpxchg(%s) -> %d", w.word(ev.Loc), ev.Val)
		}
		return fmt.Sprintf("cmpxchg(%s) fails", w.word(ev.Loc))
	case ActWrite:
		var flags []string
		if ev.Note != "" {
			flags = append(flags, ev.Note) // PREFLUSH
		}
		if ev.OK {
			flags = append(flags, "FUA")
		}
		fl := ""
		if flags != nil {
			fl = " (" + strings.Join(flags, ", ") + ")"
		}
		return fmt.Sprintf("submit write of b%d, version %d%s", ev.Loc, ev.Val, fl)
	case ActFlush:
		return fmt.Sprintf("submit flush (tag %d)", ev.Val)
	case ActRead:
		return fmt.Sprintf("read b%d -> version %d", ev.Loc, ev.Val)
	case ActWake, ActChoice, ActNote, ActMilestone:
		return ev.Note
	case ActStart:
		return "starts"
	case ActQueue:
		return "Wake: a change under the queue's lock"
	case ActWriteDone:
		return fmt.Sprintf("task %d's write of b%d (version %d) completes", ev.Of, ev.Loc, ev.Val)
	case ActFlushDone:
		return fmt.Sprintf("task %d's flush (tag %d) completes", ev.Of, ev.Val)
	case ActFlushFail:
		return fmt.Sprintf("task %d's flush (tag %d) fails (EIO)", ev.Of, ev.Val)
	case ActDrain:
		return fmt.Sprintf("store buffer of task %d drains one store", ev.Of)
	case ActBarrier:
		return fmt.Sprintf("the barrier after task %d's read-modify-write takes effect", ev.Of)
	}
	return ev.Kind.String()
}

// placed describes where a store went in modification order: "" for the
// end, else how many stores it was placed before.
func placed(newer int) string {
	if newer == 0 {
		return ""
	}
	return fmt.Sprintf("placed before %d newer store(s)", newer)
}

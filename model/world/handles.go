package world

import (
	"fmt"

	"github.com/flushproof/flushproof/spec"
)

// The handles a task's code calls: Task itself, Word, Fence, Device and
// the wait queue. Each call that other tasks can see is a scheduling point
// (a request to the scheduler through Task.call).

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
	resumes int    // how many times it was resumed (takeFootprint)
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

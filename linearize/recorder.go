package linearize

import (
	"fmt"
	"sync"
	"time"

	"github.com/flushproof/flushproof/spec"
)

// Recorder records a History as it happens. It is safe for use by many
// goroutines: each method takes the time and appends the record under one
// lock, so the order of the records is the order of the times, and a
// zero-width operation [t, t+1] has nothing else inside it.
//
// To record a real device, call the Submit/Begin method just before issuing
// the command and the End method just after it returned: the recorded
// interval then contains everything the command did.
type Recorder struct {
	mu      sync.Mutex
	clock   func() int64 // nil: logical
	last    int64        // the last time handed out (or reserved)
	records []Record
	writes  []recWrite
	flushes []recCommand
	reads   []recRead
	crashed bool
}

type recCommand struct {
	task  int
	ended bool
}

type recWrite struct {
	recCommand
	blocks uint8
	fua    bool
}

type recRead struct {
	task  int
	block uint8
	ended bool
}

// NewRecorder returns a recorder with a logical clock: every event gets the
// next integer (a zero-width one two), starting at 1.
func NewRecorder() *Recorder { return &Recorder{} }

// NewRecorderWithClock returns a recorder that takes its times from clock,
// for instance Monotonic(). Times that do not increase (two events in the
// same clock tick) are moved just past the previous one, so they stay
// distinct and in record order.
func NewRecorderWithClock(clock func() int64) *Recorder { return &Recorder{clock: clock} }

// Monotonic returns a clock in nanoseconds since the call, read from Go's
// monotonic clock (immune to wall-clock steps).
func Monotonic() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// now returns the time of the next record; zero-width reserves the tick after
// it. Called with mu held.
func (r *Recorder) now(zeroWidth bool) int64 {
	t := r.last + 1
	if r.clock != nil {
		t = max(r.clock(), t)
	}
	r.last = t
	if zeroWidth {
		r.last++
	}
	return t
}

func (r *Recorder) add(task int, e spec.Event, readCall bool) {
	rec := Record{Task: task, Event: e, ReadCall: readCall}
	rec.Time = r.now(rec.zeroWidth())
	r.records = append(r.records, rec)
}

// SubmitWrite records that task submits a write of blocks (bit i = block i)
// and returns its number (W1, W2, ... in submission order).
func (r *Recorder) SubmitWrite(task int, blocks uint8, fua bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.writes) + 1
	e := spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: blocks, FUA: fua}
	switch {
	case r.crashed:
		return 0, fmt.Errorf("record %v: the device has crashed", e)
	case task < 0:
		return 0, fmt.Errorf("record %v: negative task %d", e, task)
	case blocks == 0:
		return 0, fmt.Errorf("record %v: a write needs at least one block", e)
	case id > spec.MaxWrites:
		return 0, fmt.Errorf("record %v: more than %d writes in one history", e, spec.MaxWrites)
	}
	r.writes = append(r.writes, recWrite{recCommand: recCommand{task: task}, blocks: blocks, fua: fua})
	r.add(task, e, false)
	return id, nil
}

// EndWrite records that write id completed (ok) or failed with EIO.
func (r *Recorder) EndWrite(id int, ok bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := spec.Event{Kind: spec.WriteComplete, ID: id}
	if !ok {
		e.Kind = spec.WriteFail
	}
	var c *recCommand
	if id >= 1 && id <= len(r.writes) {
		c = &r.writes[id-1].recCommand
	}
	return r.end(c, e, "W")
}

// SubmitFlush records that task submits an empty cache flush and returns its
// number (F1, F2, ...).
func (r *Recorder) SubmitFlush(task int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.flushes) + 1
	e := spec.Event{Kind: spec.FlushSubmit, ID: id}
	switch {
	case r.crashed:
		return 0, fmt.Errorf("record %v: the device has crashed", e)
	case task < 0:
		return 0, fmt.Errorf("record %v: negative task %d", e, task)
	case id > spec.MaxFlushes:
		return 0, fmt.Errorf("record %v: more than %d flushes in one history", e, spec.MaxFlushes)
	}
	r.flushes = append(r.flushes, recCommand{task: task})
	r.add(task, e, false)
	return id, nil
}

// EndFlush records that flush id completed (ok) or failed with EIO.
func (r *Recorder) EndFlush(id int, ok bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := spec.Event{Kind: spec.FlushComplete, ID: id}
	if !ok {
		e.Kind = spec.FlushFail
	}
	var c *recCommand
	if id >= 1 && id <= len(r.flushes) {
		c = &r.flushes[id-1]
	}
	return r.end(c, e, "F")
}

// end records the end e of command c (nil if there is no such command);
// prefix names it in errors. The caller holds r.mu.
func (r *Recorder) end(c *recCommand, e spec.Event, prefix string) error {
	switch {
	case r.crashed:
		return fmt.Errorf("record %v: the device has crashed", e)
	case c == nil || c.ended:
		return fmt.Errorf("record %v: %s%d is not in flight", e, prefix, e.ID)
	}
	c.ended = true
	r.add(c.task, e, false)
	return nil
}

// Crash records that power was lost. Commands still in flight never end;
// afterwards only reads may be recorded.
func (r *Recorder) Crash() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.crashed {
		return fmt.Errorf("record crash: the device has already crashed")
	}
	r.crashed = true
	r.add(0, spec.Event{Kind: spec.Crash}, false)
	return nil
}

// BeginRead records that task starts a read of block and returns the read's
// number, to pass to EndRead.
func (r *Recorder) BeginRead(task, block int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.reads) + 1
	if task < 0 || block < 0 || block >= spec.MaxBlocks {
		return 0, fmt.Errorf("record read R%d of block %d by task %d: want a task >= 0 and a block below %d", id, block, task, spec.MaxBlocks)
	}
	r.reads = append(r.reads, recRead{task: task, block: 1 << block})
	r.add(task, spec.Event{Kind: spec.Read, ID: id, Blocks: 1 << block}, true)
	return id, nil
}

// EndRead records that read id returned value: the number of the write whose
// data it found, 0 for the initial content.
func (r *Recorder) EndRead(id, value int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 1 || id > len(r.reads) || r.reads[id-1].ended {
		return fmt.Errorf("record the return of read R%d: it is not in flight", id)
	}
	if value < 0 || value > len(r.writes) {
		return fmt.Errorf("record the return of read R%d: %s was never submitted", id, spec.ContentName(value))
	}
	rd := &r.reads[id-1]
	rd.ended = true
	r.add(rd.task, spec.Event{Kind: spec.Read, ID: id, Blocks: rd.block, Value: value}, false)
	return nil
}

// History returns a copy of what was recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History{Records: append([]Record(nil), r.records...)}
}

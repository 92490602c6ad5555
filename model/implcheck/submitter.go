package implcheck

import (
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/spec"
)

// Submit is impl.Submitter, unchanged, in the model world. Each task submits
// Writes writes (1 if 0) of its own byte of the file, a new value each
// time: with SubBlock, a sub-block write,
// which the file system does as a read-modify-write of the shared block
// (the sub-block zeroing of an unaligned direct write), else a write of a
// block of its own. When every task is done, the file must hold every
// task's last byte. Serialised submission (io-wq hashing by inode) is safe for
// both; parallel submission of sub-block writes loses one (the historical
// ext4 bug of unaligned direct writes under a shared lock): the negative
// control. Parallel aligned writes are the false-positive control.
type Submit struct {
	Serialised bool
	SubBlock   bool
	Tasks      int
	Writes     int
}

// writes is the writes per task.
func (c Submit) writes() int { return max(c.Writes, 1) }

// value is the byte task id writes the round-th time (from 1).
func (c Submit) value(id, round int) byte { return byte(16*round + id + 1) }

// Config is the world: no words, one block per task.
func (c Submit) Config() world.Config {
	return world.Config{Memory: memory.SC, Tasks: c.Tasks, Blocks: c.Tasks}
}

// queueLock is a sync.Locker over a world wait queue: Lock tests and takes
// the lock in one change under the queue's lock, and sleeps until it is
// free when it was held. (Waiting until it is free and then taking it in a
// second change is no lock: another task may take it between the two.)
type queueLock struct {
	q    spec.WaitQueue
	held *bool
}

func (l queueLock) Lock() {
	for {
		took := false
		l.q.Wake(func() {
			if !*l.held {
				*l.held, took = true, true
			}
		})
		if took {
			return
		}
		l.q.Wait(func() bool { return !*l.held })
	}
}

func (l queueLock) Unlock() { l.q.Wake(func() { *l.held = false }) }

// Program is the code the search runs.
func (c Submit) Program() world.Program {
	return func(w *world.World) func(t *world.Task) {
		held, done := new(bool), 0
		// All the state the tasks share outside the device: the lock
		// and the count of tasks done.
		w.Shared(func() []byte { return fmt.Appendf(nil, "%v %d", *held, done) })
		sub := &impl.Submitter{Serialised: c.Serialised}
		return func(t *world.Task) {
			dev := t.Device()
			q := t.WaitQueue()
			s := &impl.Submitter{Serialised: sub.Serialised, Lock: queueLock{q, held}}
			bs := dev.BlockSize()
			block := t.ID()
			if c.SubBlock {
				block = 0
			}
			for round := 1; round <= c.writes(); round++ {
				t.Checkpoint(int64(round)) // nothing of the writes before is used
				err := s.Submit(func() error {
					buf := make([]byte, bs)
					if c.SubBlock {
						if err := dev.ReadAt(buf, 0); err != nil {
							return err
						}
					}
					buf[t.ID()] = c.value(t.ID(), round)
					return dev.WriteAt(buf, int64(block*bs), 0)
				})
				if err != nil {
					w.Fail(fmt.Errorf("task %d: %w", t.ID(), err))
					return
				}
			}
			last := false
			q.Wake(func() { done++; last = done == c.Tasks })
			if !last {
				return
			}
			buf := make([]byte, bs)
			for id := 0; id < c.Tasks; id++ {
				b := id
				if c.SubBlock {
					b = 0
				}
				if err := dev.ReadAt(buf, int64(b*bs)); err != nil {
					w.Fail(err)
					return
				}
				t.Assert(buf[id] == c.value(id, c.writes()), "task %d's last byte of the file is lost (block %d holds %v)", id, b, buf)
			}
		}
	}
}

// Row is the configuration's row.
func (c Submit) Row() verdict.Row {
	name := "impl.Submitter parallel"
	if c.Serialised {
		name = "impl.Submitter serialised"
	}
	config := "aligned"
	if c.SubBlock {
		config = "sub-block"
	}
	bound := fmt.Sprintf("%d %s x %d %s", c.Tasks, verdict.Plural(c.Tasks, "task"), c.writes(), verdict.Plural(c.writes(), "write"))
	return row(c, name, config, bound, !c.Serialised && c.SubBlock)
}

// SubmitChecks are the default rows, at 3 tasks x 1 write: serialised and
// parallel, sub-block and aligned writes; SubmitProofChecks the same at 3
// tasks x 2 writes.
func SubmitChecks() []Submit { return submits(3, 1) }

// SubmitProofChecks: see SubmitChecks.
func SubmitProofChecks() []Submit { return submits(3, 2) }

func submits(tasks, writes int) []Submit {
	var out []Submit
	for _, sub := range []bool{true, false} {
		for _, ser := range []bool{true, false} {
			out = append(out, Submit{Serialised: ser, SubBlock: sub, Tasks: tasks, Writes: writes})
		}
	}
	return out
}

// SubmitProtocol is the catalog entry of impl.Submitter.
func SubmitProtocol() verdict.Protocol {
	return entry("impl.Submitter", "impl.Submitter (I/O to one file serialised or in parallel)",
		func() []verdict.Row { return verdict.Rows(SubmitChecks(), SubmitProofChecks()) },
		submitBound())
}

// submitBound is the bound of the rows: each task writes its own byte of
// a block of 8 (up to 8 tasks), a value per round that no other round
// or task writes (up to 15 rounds: value).
func submitBound() *verdict.Bound {
	b := worldBound("task", "write", "", func(tasks, writes int) []verdict.Row { return verdict.BoundRows(nil, submits(tasks, writes)) })
	b.Tasks.Max, b.Ops.Max = 8, 15
	return b
}

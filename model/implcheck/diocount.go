package implcheck

import (
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
)

// DIO is impl.DIOCounter, unchanged, in the model world, with truncate:
// Writers tasks each issue IOs direct writes to a block of their own, and
// the last task truncates the file.
//
// A direct write takes the inode lock shared (a WaitQueue flag, so that
// the world schedules it), counts itself (DIOCounter.Begin), drops the
// lock and only then submits and waits for its write, as an asynchronous
// direct write does, then ends its count. The lock's ordering is the
// wait queue's: a full barrier at each change and at each wake-up. It skips its write if a
// truncate has begun (the file is shorter). Truncate takes the lock
// exclusive (it waits for the shared holders), waits for the count to
// drain (DIOCounter.Wait) and frees the blocks. The obligation: no direct
// write completes after truncate freed its block.
//
// The negative control skips the count, as the mutant of the patch
// "ext4: Add DIO_SKIP_DIO_COUNT flag to dax_do_io()" does for
// asynchronous direct I/O: truncate no longer waits for a write in flight.
type DIO struct {
	Uncounted bool // the negative control
	Writers   int
	IOs       int
	Memory    memory.Model
}

// Config is the world: one word (the count), a block per writer.
func (c DIO) Config() world.Config {
	return world.Config{Memory: c.Memory, Tasks: c.Writers + 1, Words: 1, Blocks: c.Writers, WordNames: []string{"i_dio_count"}}
}

// inode is the state the tasks share outside the memory: the inode lock
// and whether truncate freed the blocks.
type inode struct {
	shared     int  // holders of the lock, shared
	truncating bool // truncate holds or waits for the lock, exclusive
	freed      bool
}

// Program is the code the search runs.
func (c DIO) Program() world.Program {
	return func(w *world.World) func(t *world.Task) {
		ino := &inode{}
		var counter *impl.DIOCounter
		// All the state the tasks share outside the memory: the inode
		// lock, truncate's progress and the counter's drain count.
		w.Shared(func() []byte {
			var drained uint64
			if counter != nil {
				drained = counter.Drained()
			}
			return fmt.Appendf(nil, "%d %v %v %d", ino.shared, ino.truncating, ino.freed, drained)
		})
		return func(t *world.Task) {
			q := t.WaitQueue()
			if counter == nil { // the first task to start makes it, before its first call
				var err error
				if counter, err = impl.NewDIOCounter(t.Word(0), q); err != nil {
					w.Fail(err)
					return
				}
			}
			dio := counter.Bind(t.Word(0), q)
			if t.ID() == c.Writers {
				q.Wake(func() { ino.truncating = true })
				q.Wait(func() bool { return ino.shared == 0 })
				dio.Wait()
				q.Wake(func() { ino.freed = true })
				t.Note("truncate freed the blocks")
				return
			}
			dev := t.Device()
			for i := 1; i <= c.IOs; i++ {
				t.Checkpoint(int64(i))
				locked := false
				q.Wake(func() {
					if !ino.truncating {
						ino.shared++
						locked = true
					}
				})
				if !locked {
					t.Note("truncate has begun: no write")
					return
				}
				if !c.Uncounted {
					dio.Begin()
				}
				q.Wake(func() { ino.shared-- }) // up_read
				if err := dev.WriteAt(payload(dev, t.ID(), i), int64(t.ID()*dev.BlockSize()), 0); err != nil {
					w.Fail(fmt.Errorf("task %d: write: %w", t.ID(), err))
					return
				}
				freed := false
				q.Wake(func() { freed = ino.freed })
				t.Assert(!freed, "direct write %d to block %d completed after truncate freed the block", i, t.ID())
				if !c.Uncounted {
					dio.End()
				}
			}
		}
	}
}

// Row is the configuration's row.
func (c DIO) Row() verdict.Row {
	name := "impl.DIOCounter counted"
	if c.Uncounted {
		name = "impl.DIOCounter mutant-uncounted"
	}
	bound := fmt.Sprintf("%d %s x %d direct %s, truncate", c.Writers, verdict.Plural(c.Writers, "writer"),
		c.IOs, verdict.Plural(c.IOs, "write"))
	return row(c, name, c.Memory.String(), bound, c.Uncounted)
}

// DIOChecks are the default rows: the count and the uncounted mutant under
// each memory model, 2 writers x 1 write and truncate; DIOProofChecks at
// 2 writers x 2 writes.
func DIOChecks() []DIO      { return dios(2, 1) }
func DIOProofChecks() []DIO { return dios(2, 2) }

func dios(writers, ios int) []DIO {
	var out []DIO
	for _, u := range []bool{false, true} {
		for _, m := range Models() {
			out = append(out, DIO{Uncounted: u, Writers: writers, IOs: ios, Memory: m})
		}
	}
	return out
}

// DIOProtocol is the catalog entry of impl.DIOCounter.
func DIOProtocol() verdict.Protocol {
	return entry("impl.DIOCounter", "impl.DIOCounter (inode_dio_begin/end and inode_dio_wait) with truncate",
		func() []verdict.Row { return verdict.Rows(DIOChecks(), DIOProofChecks()) },
		dioBound())
}

// dioBound is the bound of the rows: writers x direct writes, beside
// the truncating task (so one writer fewer than the tasks a search takes).
func dioBound() *verdict.Bound {
	b := worldBound("writer", "direct write", "and a task that truncates",
		func(writers, ios int) []verdict.Row { return verdict.BoundRows(nil, dios(writers, ios)) })
	b.Tasks.Max--
	return b
}

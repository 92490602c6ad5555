package implcheck

import (
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// Syncer is impl.Syncer, unchanged, in the model world: each task writes
// its own block Syncs times, each time waits for the write and calls Sync;
// when Sync returns nil, a crash from then on must keep the write
// (Task.MustSurvive).
type Syncer struct {
	Policy impl.Policy
	Fault  implfault.Fault // a deliberate bug of the Syncer (a negative control)
	// SampleEarly: the caller samples the flush sequence before its write
	// completed and passes the sample to SyncSince (a negative control: a
	// misuse of the API that Sample's documentation warns against).
	SampleEarly bool
	Tasks       int
	Syncs       int
	Memory      memory.Model
	// NoFlushEIO: flushes never fail (no row has it: the growth
	// measurements of TestSize, -implcheck.noeio).
	NoFlushEIO bool
}

// Config is the world the Syncer runs in: two words (the flush sequence's
// counters), one block per task, flushes that may fail.
func (c Syncer) Config() world.Config {
	return world.Config{Memory: c.Memory, Tasks: c.Tasks, Words: 2, Blocks: c.Tasks, FlushFailures: !c.NoFlushEIO,
		WordNames: flushseq.WordNames}
}

// Program is the code the search runs.
func (c Syncer) Program() world.Program { return c.ProgramUsing(nil) }

// ProgramUsing is Program, calling used (if not nil) with the Syncer once
// the first task has made it: the one adapter of impl.Syncer to the model
// world, for the exhaustive rows here and for impl's rapid walks, which
// read its statistics.
func (c Syncer) ProgramUsing(used func(*impl.Syncer)) world.Program {
	return func(w *world.World) func(t *world.Task) {
		var base *impl.Syncer
		symmetric(w)
		w.Shared(func() []byte {
			if base == nil {
				return nil
			}
			return base.AppendState(nil)
		})
		return func(t *world.Task) {
			dev := t.Device()
			h := impl.Handles{Dev: dev, Queue: t.WaitQueue(),
				Seq: impl.FlushSeq{Submitted: t.Word(flushseq.WordSubmitted), Completed: t.Word(flushseq.WordCompleted), MB: t.Fence()}}
			if base == nil { // the tasks start in order: task 0 makes the shared state
				s, err := impl.NewSyncer(h, c.Policy)
				if err != nil {
					w.Fail(err)
					return
				}
				base = implfault.Syncer(s, c.Fault).(*impl.Syncer)
				if used != nil {
					used(base)
				}
			}
			s := base.Bind(h)
			off := int64(t.ID() * dev.BlockSize())
			for round := 1; round <= c.Syncs; round++ {
				t.Checkpoint(int64(round)) // nothing of the rounds before is used
				data := payload(dev, t.ID(), round)
				var sample int64
				if c.SampleEarly {
					sample = s.Sample()
				}
				if err := dev.WriteAt(data, off, 0); err != nil {
					w.Fail(fmt.Errorf("task %d: write: %w", t.ID(), err))
					return
				}
				var err error
				if c.SampleEarly {
					err = s.SyncSince(sample)
				} else {
					err = s.Sync()
				}
				if err != nil {
					t.Reached(flushseq.Milestone{Step: flushseq.Failed})
					continue
				}
				t.Reached(flushseq.Milestone{Step: flushseq.Returned})
				t.MustSurvive(t.ID(), data)
			}
		}
	}
}

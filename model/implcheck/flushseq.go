package implcheck

import (
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
)

// Misuse is a wrong use of impl.FlushSeq by its caller: a negative control.
type Misuse uint8

// The misuses, each one of the flush sequence's mutants (docs/flushseq.md).
const (
	Correct Misuse = iota
	// SampleFirst samples before the data write (mutant-read-before-writeback).
	SampleFirst
	// DoneOnFailure calls Done for a flush that failed
	// (mutant-advance-on-failed-flush).
	DoneOnFailure
	// StartAfterFlush numbers the flush after it completed
	// (mutant-number-after-submit).
	StartAfterFlush
)

func (m Misuse) String() string {
	return [...]string{"", "mutant-read-before-writeback", "mutant-advance-on-failed-flush", "mutant-number-after-submit"}[m]
}

// variant is the flush sequence's state-machine variant the use is.
func (m Misuse) variant() flushseq.Variant {
	return [...]flushseq.Variant{flushseq.Patched, flushseq.MutantReadBeforeWriteback, flushseq.MutantAdvanceOnFailure, flushseq.MutantNumberAfterSubmit}[m]
}

// FlushSeq is impl.FlushSeq, unchanged, used by fsync code written the way
// xfs_file_fsync is after "xfs: skip the fsync flush when a later flush has
// completed": each task writes its own block and fsyncs it Fsyncs times;
// fsync samples the sequence after the write completed (a full barrier,
// then a read of Submitted), skips the flush if a flush numbered above the
// sample has completed, and otherwise numbers a flush (Start), submits it
// and, if it succeeded, records it (Done). When fsync returns 0 the block
// must survive a crash. Without the log force of the state machine.
type FlushSeq struct {
	Misuse Misuse
	Tasks  int
	Fsyncs int
	Memory memory.Model
}

// Config is the world: the two counters, a block per task, flush EIO.
func (c FlushSeq) Config() world.Config {
	return world.Config{Memory: c.Memory, Tasks: c.Tasks, Words: 2, Blocks: c.Tasks, FlushFailures: true,
		WordNames: flushseq.WordNames}
}

// Program is the code the search runs.
func (c FlushSeq) Program() world.Program {
	return func(w *world.World) func(t *world.Task) {
		symmetric(w)
		return func(t *world.Task) {
			dev := t.Device()
			fs := impl.FlushSeq{Submitted: t.Word(flushseq.WordSubmitted), Completed: t.Word(flushseq.WordCompleted), MB: t.Fence()}
			for i := 1; i <= c.Fsyncs; i++ {
				t.Checkpoint(int64(i))
				data := payload(dev, t.ID(), i)
				var s int64
				if c.Misuse == SampleFirst {
					s = fs.Sample()
				}
				if err := dev.WriteAt(data, int64(t.ID()*dev.BlockSize()), 0); err != nil {
					w.Fail(fmt.Errorf("task %d: write: %w", t.ID(), err))
					return
				}
				if c.Misuse != SampleFirst {
					s = fs.Sample()
				}
				if err := c.fsync(fs, dev.Flush, s); err != nil {
					t.Note("fsync %d: %v", i, err)
					continue
				}
				t.Note("fsync %d returned 0", i)
				t.MustSurvive(t.ID(), data)
			}
		}
	}
}

// fsync is the part of xfs_file_fsync after the sample.
func (c FlushSeq) fsync(fs impl.FlushSeq, flush func() error, s int64) error {
	if fs.FlushedSince(s) {
		return nil
	}
	var seq int64
	if c.Misuse != StartAfterFlush {
		seq = fs.Start()
	}
	err := flush()
	if c.Misuse == StartAfterFlush {
		seq = fs.Start()
	}
	if err == nil || c.Misuse == DoneOnFailure {
		fs.Done(seq)
	}
	return err
}

// Row is the configuration's row.
func (c FlushSeq) Row() verdict.Row {
	name := "impl.FlushSeq xfs-fsync"
	if c.Misuse != Correct {
		name += " " + c.Misuse.String()
	}
	return row(c, name, c.Memory.String(), bound(c.Tasks, c.Fsyncs, "fsync", true), c.Misuse != Correct)
}

// FlushSeqChecks are the default rows: the correct use and each misuse
// under each memory model at 2 tasks x 1 fsync; FlushSeqProofChecks at 2
// tasks x 2 fsyncs; FlushSeqLongChecks at 3 tasks x 2 fsyncs.
func FlushSeqChecks() []FlushSeq      { return flushSeqs(2, 1) }
func FlushSeqProofChecks() []FlushSeq { return flushSeqs(2, 2) }
func FlushSeqLongChecks() []FlushSeq  { return flushSeqs(3, 2) }

func flushSeqs(tasks, fsyncs int) []FlushSeq {
	var out []FlushSeq
	for _, u := range []Misuse{Correct, SampleFirst, DoneOnFailure, StartAfterFlush} {
		for _, m := range Models() {
			out = append(out, FlushSeq{Misuse: u, Tasks: tasks, Fsyncs: fsyncs, Memory: m})
		}
	}
	return out
}

// FlushSeqProtocol is the catalog entry of impl.FlushSeq.
func FlushSeqProtocol() verdict.Protocol {
	return entry("impl.FlushSeq", "impl.FlushSeq in xfs_file_fsync's shape",
		func() []verdict.Row {
			return append(verdict.Rows(FlushSeqChecks(), FlushSeqProofChecks()), verdict.LongRows(FlushSeqLongChecks())...)
		},
		worldBound("task", "fsync", "", func(tasks, fsyncs int) []verdict.Row { return verdict.BoundRows(nil, flushSeqs(tasks, fsyncs)) }))
}

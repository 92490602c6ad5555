package flushseq

import (
	"encoding/binary"
	"fmt"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// Program is the xfs fsync flush-sequence protocol (the patch "xfs: skip
// the fsync flush when a later flush has completed") in straight-line form,
// as the kernel writes it, over the model world's handles: the device
// (spec.Device), the two atomic64 counters (spec.Word) and smp_mb
// (spec.Fence). Where System
// is the protocol as a state machine for exhaustive search, Program is
// the same protocol for runs far beyond the explorer's bounds (any number of
// tasks and fsyncs), with every call a scheduling point of the world.
//
// Variants: every Variant that InWorld reports (all but the DAX mutant and
// the relaxed numbering), group commit included: it waits for the flushes numbered <= S to end as
// impl.Syncer's GroupCommit policy does, and is validated against
// System's GroupCommit like the other variants.
//
// Each task writes its own block Fsyncs times, each time followed by fsync.
// When fsync returns 0 the program checks the obligation at once: a crash
// at that moment must keep the data (World.Survives); a run that also
// crashes (world.Config.Crash) checks again at the crash, for every task's
// last acknowledged write. Each fsync's return is marked in the trace with
// an Milestone (Returned or Failed).
type Program struct {
	Variant  Variant
	Fsyncs   int
	LogForce bool // the log force: nothing, this task's iclog, or another task's next iclog
	// Continue counts an fsync that returned 0 with its write not durable
	// in Unsafe and goes on, instead of failing the run (for timed runs).
	Continue bool

	acked    [][]byte           // per task: the data of its last fsync that returned 0
	logWait  []int              // per task waiting for another task's iclog: the writer's task+1, 0 if none yet, -1 not waiting
	numbered map[int64]struct{} // group commit: flushes from their numbering to their flush_done
	Returned int                // fsyncs that returned 0
	Skipped  int                // of those, the ones without a flush of their own
	Failed   int                // fsyncs that returned an error
	Unsafe   int                // fsyncs that returned 0 with their write not durable (Continue)
}

// The words of the protocol.
const (
	WordSubmitted = 0 // bt_flush_submitted
	WordCompleted = 1 // bt_flush_completed
)

// WordNames names the words for traces.
var WordNames = []string{"submitted", "completed"}

// world.Config returns a world for the program: two words, one block per
// task.
func (p *Program) WorldConfig(tasks int, m memory.Model) world.Config {
	return world.Config{Memory: m, Tasks: tasks, Words: 2, Blocks: tasks, WordNames: WordNames}
}

// Run runs the program in w and then, if the machine crashed, checks every
// acknowledged write against what the crash may leave.
func (p *Program) Run(w *world.World, ch world.Chooser) (world.Outcome, error) {
	if _, ok := variantNames[p.Variant]; !ok || !p.Variant.InWorld() {
		return world.Outcome{}, fmt.Errorf("fsync program: variant %v is not supported in the model world", p.Variant)
	}
	if p.Fsyncs < 1 {
		return world.Outcome{}, fmt.Errorf("fsync program: %d fsyncs", p.Fsyncs)
	}
	n := w.Config().Tasks
	if w.Config().Words < 2 || w.Config().Blocks < n {
		return world.Outcome{}, fmt.Errorf("fsync program: the world needs 2 words and %d blocks", n)
	}
	p.acked = make([][]byte, n)
	p.logWait = make([]int, n)
	p.numbered = map[int64]struct{}{}
	for i := range p.logWait {
		p.logWait[i] = -1
	}
	out, err := w.Run(ch, p.task)
	if err != nil || !out.Crashed {
		return out, err
	}
	for t, data := range p.acked {
		if data != nil && !w.Survives(t, data) {
			return out, fmt.Errorf("crash after step %d: task %d's last fsync returned 0 but its block may come back as an older version", out.Steps, t)
		}
	}
	return out, nil
}

// payload is what task t writes in round r: unique per (t, r).
func payload(buf []byte, t, r int) {
	clear(buf)
	binary.LittleEndian.PutUint32(buf, uint32(t))
	binary.LittleEndian.PutUint32(buf[4:], uint32(r))
}

func (p *Program) task(t *world.Task) {
	dev, sub := t.Device(), t.Word(WordSubmitted)
	bs := dev.BlockSize()
	off := int64(t.ID() * bs)
	for round := 1; round <= p.Fsyncs; round++ {
		data := make([]byte, bs)
		payload(data, t.ID(), round)
		var s int64
		if p.Variant == MutantReadBeforeWriteback {
			s = sub.Load() // the mutant: S read before the data write
		}
		// file_write_and_wait_range: write, wait for completion. The model
		// has no write errors, so the error is only a bad argument.
		if err := dev.WriteAt(data, off, 0); err != nil {
			t.World().Fail(err)
			return
		}
		if p.Variant != MutantReadBeforeWriteback {
			if p.Variant != MutantNoMB {
				t.Fence().Full()
			}
			s = sub.Load()
		}
		flushed, err := p.fsync(t, s)
		if err != nil {
			t.Reached(Milestone{Step: Failed})
			p.Failed++
			continue
		}
		p.acked[t.ID()] = data
		t.Reached(Milestone{Step: Returned})
		p.Returned++
		if !flushed {
			p.Skipped++
		}
		if !t.World().Survives(t.ID(), data) {
			if p.Continue {
				p.Unsafe++
				continue
			}
			t.World().Fail(fmt.Errorf("task %d's fsync returned 0 but its write (round %d) is not durable: a crash now loses it", t.ID(), round))
			return
		}
	}
}

// fsync is everything after S was read: the log force, the check and the
// flush. It reports whether this task submitted a flush.
func (p *Program) fsync(t *world.Task, s int64) (flushed bool, err error) {
	v := p.Variant
	if p.LogForce {
		branches := []world.Branch{logBranch(LogNothing), logBranch(LogOwn), logBranch(LogJoin)}
		if t.World().Config().Tasks == 1 {
			branches = branches[:2] // nobody else writes an iclog
		}
		switch t.Select(branches...) {
		case 1:
			return true, p.flush(t)
		case 2:
			if waited, err := p.waitIclog(t); !waited {
				return true, err // nobody wrote it: this task did
			}
		}
	}
	if v == Baseline {
		return true, p.flush(t)
	}
	completed, sub := t.Word(WordCompleted), t.Word(WordSubmitted)
	for drained := false; ; drained = true {
		c := completed.Load()
		if c > s || (v == MutantGreaterEqual && c >= s) {
			return false, nil // a flush numbered after the write completed has completed
		}
		if v != Improved && v != GroupCommit {
			return true, p.flush(t)
		}
		// A flush numbered above S already submitted: it covers this
		// write; wait for it instead of issuing one, then re-check.
		if seq := sub.Load(); seq > s {
			t.WaitUntil(Milestone{Step: JoinWoken, Seq: seq}, func() bool { return !t.World().FlushInFlight(seq) })
			if completed.Load() > s {
				return false, nil
			}
			return true, p.flush(t)
		}
		if v != GroupCommit || drained {
			return true, p.flush(t)
		}
		// Group commit: nothing to join yet. Let the flushes numbered <= S
		// end first (from their numbering to their flush_done, as
		// impl.Syncer's registry of flushes in flight), meanwhile others
		// pile up behind them; then check again.
		t.WaitUntil(Milestone{Step: DrainWoken, Seq: s}, func() bool {
			for seq := range p.numbered {
				if seq <= s {
					return false
				}
			}
			return true
		})
	}
}

// flush is xfs_buftarg_flush_start, blkdev_issue_flush and
// xfs_buftarg_flush_done (or, for the baseline, the flush alone).
func (p *Program) flush(t *world.Task) error {
	v := p.Variant
	dev := t.Device()
	sub, completed := t.Word(WordSubmitted), t.Word(WordCompleted)
	arm := func() { p.armIclogWaiters(t.ID()) }
	var seq int64
	var err error
	switch v {
	case Baseline:
		return dev.FlushTagged(0, arm)
	case MutantNumberAfterSubmit:
		dev.SubmitFlush() // the mutant: the flush is in flight before it is numbered
		arm()
		seq = sub.IncReturn()
		err = dev.WaitFlush()
	default:
		seq = sub.IncReturn()
		// Registered in the step that numbers it: the code between two
		// scheduling points runs atomically.
		p.numbered[seq] = struct{}{}
		defer delete(p.numbered, seq) // in the step that ends flush_done
		err = dev.FlushTagged(seq, arm)
	}
	if err != nil && v != MutantAdvanceOnFailure {
		return err
	}
	// flush_done: raise completed to seq.
	if v == BenignPlainStore {
		completed.Store(seq)
		return err
	}
	for {
		c := completed.Load()
		if c >= seq || completed.CompareAndSwap(c, seq) {
			return err
		}
	}
}

// waitIclog waits for the next flush another task submits to end (its
// iclog carries this task's transaction). While nobody has submitted one,
// the task may instead write the iclog itself (xlog pushes an iclog that
// nobody else writes): then it reports false and its own flush's result.
func (p *Program) waitIclog(t *world.Task) (bool, error) {
	id := t.ID()
	p.logWait[id] = 0
	i := t.Select(
		world.Branch{Name: logEscape.String(), Milestone: logEscape, When: func() bool { return p.logWait[id] == 0 }},
		world.Branch{Name: logOut.String(), Milestone: logOut, Wake: true, When: func() bool {
			return p.logWait[id] > 0 && !t.World().FlushInFlightBy(p.logWait[id]-1)
		}},
	)
	p.logWait[id] = -1
	if i == 0 {
		return false, p.flush(t)
	}
	return true, nil
}

// The milestones of waitIclog's branches.
var (
	logEscape = Milestone{Step: LogEscape}
	logOut    = Milestone{Step: LogOut}
)

// logBranch is a branch of the log force that it may always take.
func logBranch(step Step) world.Branch {
	m := Milestone{Step: step}
	return world.Branch{Name: m.String(), Milestone: m}
}

// armIclogWaiters is called in the step in which task id submits a flush:
// every task waiting for the next iclog now waits for this flush.
func (p *Program) armIclogWaiters(id int) {
	for u, w := range p.logWait {
		if u != id && w == 0 {
			p.logWait[u] = id + 1
		}
	}
}

// Acked returns the data of task's last fsync that returned 0 (nil if
// none); it implements Code.
func (p *Program) Acked(task int) []byte { return p.acked[task] }

// Counts implements Code.
func (p *Program) Counts() Counts {
	return Counts{Returned: p.Returned, Skipped: p.Skipped, Failed: p.Failed, Unsafe: p.Unsafe}
}

package linearize

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/iowq"
)

// Histories recorded from runs of the io-wq model (iowq.System): the
// schedule is chosen step by step, and the client-visible events become a
// FileHistory whose times are the step numbers. A write is called when its
// worker takes it from io-wq and returns at its end_io; a read is called
// when the reader asks for i_rwsem and returns with what it read. When no
// step is left, every sector is read once more, at the end: the file's
// final content, which is where a write wiped long before any read shows.

// IOWQRun is one recorded run of a iowq.System.
type IOWQRun struct {
	Path    []explore.Step // the steps taken (explore.Replay follows them again)
	Final   iowq.State     // the state the run ended in
	History FileHistory
	// Violation is the first error iowq.System.Check reported along the run
	// (nil if none); the run goes on to the end regardless, so that the
	// final reads show what became of the file.
	Violation error
	_         struct{}
}

// RecordIOWQ runs sys from its initial state until no step is enabled (or
// maxSteps steps were taken; 0 = no limit), choosing each step with choose,
// which gets the enabled steps (at every step, even when only one is
// enabled) and returns the index of the one to take.
func RecordIOWQ(sys *iowq.System, choose func(enabled []explore.Label) int, maxSteps int) (IOWQRun, error) {
	var (
		run    IOWQRun
		labels []explore.Label
		next   []iowq.State
	)
	st := sys.Init()[0]
	for {
		if err := sys.Check(st); err != nil && run.Violation == nil {
			run.Violation = fmt.Errorf("after step %d: %w", len(run.Path), err)
		}
		if maxSteps > 0 && len(run.Path) == maxSteps {
			break
		}
		labels, next = labels[:0], next[:0]
		sys.Next(st, func(l explore.Label, n iowq.State) {
			labels = append(labels, l)
			next = append(next, n)
		})
		if len(labels) == 0 {
			if w := explore.Blocked[iowq.State](sys, st); w != 0 {
				return run, fmt.Errorf("record iowq run: deadlock after %d steps", len(run.Path))
			}
			break
		}
		i := choose(labels)
		if i < 0 || i >= len(labels) {
			return run, fmt.Errorf("record iowq run: step %d: chose %d of %d enabled steps", len(run.Path)+1, i, len(labels))
		}
		l := labels[i]
		run.Path = append(run.Path, explore.Step{Actor: int(l.Actor), Text: sys.Describe(l), Label: l})
		st = next[i]
	}
	run.Final = st
	run.History = IOWQHistory(sys, run.Path, st)
	return run, nil
}

// IOWQHistory builds the file history of a path of sys that ended in final:
// the events of the path (iowq.System.Events) with their step numbers
// as times, writes still in flight marked pending, and a final read of every
// sector after the last step, by a client of its own ("end").
func IOWQHistory(sys *iowq.System, path []explore.Step, final iowq.State) FileHistory {
	labels := make([]explore.Label, len(path))
	for i, st := range path {
		labels[i] = st.Label
	}
	actors := sys.Actors()
	h := FileHistory{Clients: append(append([]string(nil), actors[:len(actors)-1]...), "end")}
	end := len(actors) - 1 // the disk's column holds the final reads
	writeOp := map[int]int{}
	readOp := map[int]int{}
	for _, e := range sys.Events(labels) {
		t := int64(e.Step)
		switch e.Kind {
		case iowq.WriteCall:
			writeOp[e.ID] = len(h.Ops)
			h.Ops = append(h.Ops, FileOp{Client: e.Client, Kind: FileWrite, Sectors: e.Sectors, Value: e.Value, Call: t, Pending: true})
		case iowq.WriteReturn:
			op := &h.Ops[writeOp[e.ID]]
			op.Return, op.Pending = t, false
		case iowq.ReadCall:
			readOp[e.ID] = len(h.Ops)
			h.Ops = append(h.Ops, FileOp{Client: e.Client, Kind: FileRead, Sectors: e.Sectors, Call: t})
		case iowq.ReadReturn:
			op := &h.Ops[readOp[e.ID]]
			op.Return, op.Value = t, e.Value
			delete(readOp, e.ID)
		}
	}
	// A read that never returned constrains nothing.
	var ops []FileOp
	unreturned := map[int]bool{}
	for _, i := range readOp {
		unreturned[i] = true
	}
	for i, op := range h.Ops {
		if !unreturned[i] {
			ops = append(ops, op)
		}
	}
	h.Ops = ops
	t := int64(len(path))
	for s := 0; s < sys.Sectors(); s++ {
		t++
		h.Ops = append(h.Ops, FileOp{Client: end, Kind: FileRead, Sectors: 1 << s, Value: sys.Content(final, s), Call: t, Return: t})
	}
	return h
}

package linearize

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// A device history as porcupine sees it.
//
// The operating system sees a write only twice: when it is submitted and
// when it ends (completes or fails). What matters for the device contract
// happens in between and is invisible: the moment the device applies the
// data to its cache (the write "lands"; device.Device's WriteLand). So each
// command is split into operations whose linearization points are those
// moments:
//
//	write Wn   land   [submitted, ended]  one per block written: the moment the
//	                                      data landed on that block; its output
//	                                      is how the write ended: OK (it must
//	                                      have landed), EIO or InFlight (it may
//	                                      or may not have landed). A write in
//	                                      flight at the crash ends at the crash.
//	           end    [t, t+1]            zero-width, when the OS saw the end:
//	                                      OK or EIO; none if still in flight
//	flush Fn   submit [t, t+1]            zero-width: fixes what Fn covers
//	           end    [t, t+1]            zero-width: OK or EIO
//	crash             [t, t+1]            zero-width
//	read              [called, returned]  the content returned (a write
//	                                      number, 0 = initial), before or
//	                                      after the crash
//
// A zero-width operation [t, t+1] has nothing else recorded inside it, so it
// is ordered against every other operation exactly as the event it stands
// for. porcupine intervals are closed, so a land operation [s, e] and the
// write's end [e, e+1] overlap at e: the checker may try the end first, and
// the models reject an OK end of a write that has not landed.

// OpKind says what one porcupine operation of a device history stands for.
type OpKind uint8

// The operations of a device history.
const (
	OpLand        OpKind = iota + 1 // a write's data reaches the device
	OpWriteEnd                      // the OS learns that a write completed or failed
	OpFlushSubmit                   // a flush is submitted: it covers the writes completed now
	OpFlushEnd                      // the OS learns that a flush completed or failed
	OpCrash                         // power is lost
	OpRead                          // a read of one block
)

var opNames = [...]string{
	OpLand: "lands", OpWriteEnd: "end", OpFlushSubmit: "submit", OpFlushEnd: "end",
	OpCrash: "crash", OpRead: "read",
}

// String names the operation kind.
func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Result is how a command ended, as its operation's output says.
type Result uint8

// The results.
const (
	OK       Result = iota + 1 // completed successfully
	EIO                        // completed with an error
	InFlight                   // had not ended at the crash (or when the history stopped)
)

// String names the result: OK, EIO or "in flight".
func (r Result) String() string {
	switch r {
	case OK:
		return "OK"
	case EIO:
		return "EIO"
	case InFlight:
		return "in flight"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Input is what an operation stands for: porcupine's Operation.Input.
type Input struct {
	Kind   OpKind
	ID     int   // write number (land, write end), flush number (flush ops), read number (read)
	Blocks uint8 // land: the block landed on (one bit); write end: the blocks written; read: the block read (one bit)
	Write  uint8 // land: all the blocks of the write
	FUA    bool  // land, write end: the write had REQ_FUA
}

// Output is what an operation returned: porcupine's Operation.Output.
type Output struct {
	Result Result
	Value  int // read: the content returned (a write number, 0 = initial content)
}

// describeOperation renders an operation for porcupine's visualisation.
func describeOperation(in, out any) string {
	i, o := in.(Input), out.(Output)
	switch i.Kind {
	case OpLand:
		s := fmt.Sprintf("W%d lands on %s", i.ID, spec.BlockList(i.Blocks))
		if i.FUA {
			s += " FUA"
		}
		switch o.Result {
		case OK:
			return s + " (completes)"
		case EIO:
			return s + "? (fails: may not land)"
		}
		return s + "? (in flight: may not land)"
	case OpWriteEnd:
		return fmt.Sprintf("W%d end %v", i.ID, o.Result)
	case OpFlushSubmit:
		return fmt.Sprintf("F%d submit", i.ID)
	case OpFlushEnd:
		return fmt.Sprintf("F%d end %v", i.ID, o.Result)
	case OpCrash:
		return "crash"
	case OpRead:
		return fmt.Sprintf("read %s = %s", spec.BlockList(i.Blocks), spec.ContentName(o.Value))
	}
	return fmt.Sprintf("%v -> %v", in, out)
}

// Record is one OS-visible event of a history.
type Record struct {
	Time int64 // the recorder's clock; strictly increasing along a history
	Task int   // who submitted the command or issued the read (a porcupine client)
	// Event is the event: WriteSubmit, WriteComplete, WriteFail,
	// FlushSubmit, FlushComplete, FlushFail, Crash, or Read. For a read,
	// Event.ID is the read number and Event.Blocks the block read.
	Event spec.Event
	// ReadCall marks the call of a read (Event.Value is not known yet); the
	// record of its return is the next Read record with the same ID.
	ReadCall bool
}

// zeroWidth reports whether the record becomes a zero-width operation
// [Time, Time+1], inside which nothing else may be recorded.
func (r Record) zeroWidth() bool {
	switch r.Event.Kind {
	case spec.WriteComplete, spec.WriteFail, spec.FlushSubmit, spec.FlushComplete, spec.FlushFail, spec.Crash:
		return true
	}
	return false
}

// History is one device lifetime as the OS saw it: commands submitted and
// ended, reads, and at most one crash followed only by reads. Record it with
// a Recorder; check it with Check.
type History struct {
	Records []Record
}

// Tasks returns the number of tasks (one more than the largest task number).
func (h History) Tasks() int {
	n := 0
	for _, r := range h.Records {
		n = max(n, r.Task+1)
	}
	return n
}

type writeSpan struct {
	task        int
	blocks      uint8
	fua         bool
	submit, end int64
	result      Result // InFlight until it ends
}

type readSpan struct {
	task      int
	block     uint8
	call, ret int64
	value     int
	done      bool
}

// Operations encodes the history as porcupine operations (see the table at
// the top of this file). It returns an error if the history is malformed:
// times not increasing, a command ended twice or never submitted, events
// after the crash other than reads.
func (h History) Operations() ([]porcupine.Operation, error) {
	var (
		writes  []writeSpan
		flushes []int // flush number - 1 -> task
		fEnded  []bool
		reads   = map[int]*readSpan{}
		readIDs []int
		ops     []porcupine.Operation
		crashed = false
		crashAt int64
		last    int64
		reserve bool // the previous record is zero-width: nothing at last+1
	)
	crashClient := h.Tasks()
	for i, r := range h.Records {
		e := r.Event
		bad := func(format string, args ...any) error {
			return fmt.Errorf("history record %d (%v at t=%d): %s", i+1, e, r.Time, fmt.Sprintf(format, args...))
		}
		if i > 0 && (r.Time <= last || reserve && r.Time <= last+1) {
			return nil, bad("time does not increase past t=%d", last)
		}
		if r.Task < 0 {
			return nil, bad("negative task %d", r.Task)
		}
		last, reserve = r.Time, r.zeroWidth()
		if crashed && e.Kind != spec.Read {
			return nil, bad("only reads may follow the crash")
		}
		zero := func(client int, in Input, out Output) {
			ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: r.Time, Return: r.Time + 1})
		}
		switch e.Kind {
		case spec.WriteSubmit:
			if e.ID != len(writes)+1 || e.ID > spec.MaxWrites || e.Blocks == 0 {
				return nil, bad("next write is W%d (at most %d), with at least one block", len(writes)+1, spec.MaxWrites)
			}
			if e.Preflush {
				// The models here have no preflush step (spec.Contract,
				// rule 7); dropping the flag would judge a weaker device.
				return nil, bad("writes with REQ_PREFLUSH are not modelled by the porcupine models")
			}
			writes = append(writes, writeSpan{task: r.Task, blocks: e.Blocks, fua: e.FUA, submit: r.Time, result: InFlight})
		case spec.WriteComplete, spec.WriteFail:
			if e.ID < 1 || e.ID > len(writes) || writes[e.ID-1].result != InFlight {
				return nil, bad("W%d is not in flight", e.ID)
			}
			w := &writes[e.ID-1]
			w.end, w.result = r.Time, OK
			if e.Kind == spec.WriteFail {
				w.result = EIO
			}
			zero(w.task, Input{Kind: OpWriteEnd, ID: e.ID, Blocks: w.blocks, FUA: w.fua}, Output{Result: w.result})
		case spec.FlushSubmit:
			if e.ID != len(flushes)+1 || e.ID > spec.MaxFlushes {
				return nil, bad("next flush is F%d (at most %d)", len(flushes)+1, spec.MaxFlushes)
			}
			flushes = append(flushes, r.Task)
			fEnded = append(fEnded, false)
			zero(r.Task, Input{Kind: OpFlushSubmit, ID: e.ID}, Output{Result: OK})
		case spec.FlushComplete, spec.FlushFail:
			if e.ID < 1 || e.ID > len(flushes) || fEnded[e.ID-1] {
				return nil, bad("F%d is not in flight", e.ID)
			}
			fEnded[e.ID-1] = true
			res := OK
			if e.Kind == spec.FlushFail {
				res = EIO
			}
			zero(flushes[e.ID-1], Input{Kind: OpFlushEnd, ID: e.ID}, Output{Result: res})
		case spec.Crash:
			crashed, crashAt = true, r.Time
			zero(crashClient, Input{Kind: OpCrash}, Output{Result: OK})
		case spec.Read:
			if bits.OnesCount8(e.Blocks) != 1 {
				return nil, bad("a read is of exactly one block")
			}
			rs := reads[e.ID]
			if r.ReadCall {
				if rs != nil {
					return nil, bad("read R%d called twice", e.ID)
				}
				reads[e.ID] = &readSpan{task: r.Task, block: e.Blocks, call: r.Time}
				readIDs = append(readIDs, e.ID)
				continue
			}
			if rs == nil || rs.done || rs.block != e.Blocks {
				return nil, bad("read R%d of %s was not called", e.ID, spec.BlockList(e.Blocks))
			}
			if e.Value < 0 {
				return nil, bad("a read returns a write number or 0 (initial content)")
			}
			rs.ret, rs.value, rs.done = r.Time, e.Value, true
		default:
			return nil, bad("not an OS-visible event")
		}
	}
	// A write that never ended lands, if at all, before the crash (or before
	// the history stopped: then nothing after it constrains it anyway).
	stop := last + 2
	if crashed {
		stop = crashAt
	}
	for i, w := range writes {
		end := w.end
		if w.result == InFlight {
			end = stop
		}
		// The device applies a write block by block (device.Device), so
		// each block has its own landing moment.
		for m := w.blocks; m != 0; m &= m - 1 {
			ops = append(ops, porcupine.Operation{
				ClientId: w.task,
				Input:    Input{Kind: OpLand, ID: i + 1, Blocks: 1 << bits.TrailingZeros8(m), Write: w.blocks, FUA: w.fua},
				Output:   Output{Result: w.result},
				Call:     w.submit, Return: end,
			})
		}
	}
	for _, id := range readIDs {
		rs := reads[id]
		if !rs.done {
			continue // a read that never returned constrains nothing
		}
		ops = append(ops, porcupine.Operation{
			ClientId: rs.task,
			Input:    Input{Kind: OpRead, ID: id, Blocks: rs.block},
			Output:   Output{Result: OK, Value: rs.value},
			Call:     rs.call, Return: rs.ret,
		})
	}
	return ops, nil
}

// TaskName names task i in a timeline: A, B, ... Z, then T26, T27, ...
func TaskName(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("T%d", i)
}

// String renders the history as a timeline, one column per task and one for
// the device (the crash), in the style of explore.Timeline. A read whose return
// follows its call directly is one step.
func (h History) String() string {
	tasks := h.Tasks()
	actors := make([]string, 0, tasks+1)
	for i := 0; i < tasks; i++ {
		actors = append(actors, TaskName(i))
	}
	actors = append(actors, "device")
	var path []explore.Step
	inFlight := map[int]bool{}
	for i := 0; i < len(h.Records); i++ {
		r := h.Records[i]
		e := r.Event
		text := e.String()
		actor := r.Task
		switch {
		case e.Kind == spec.Crash:
			actor = tasks
		case e.Kind == spec.Read && r.ReadCall:
			text = fmt.Sprintf("R%d: read %s ...", e.ID, spec.BlockList(e.Blocks))
			if i+1 < len(h.Records) {
				if n := h.Records[i+1]; n.Event.Kind == spec.Read && !n.ReadCall && n.Event.ID == e.ID {
					text = fmt.Sprintf("read %s = %s", spec.BlockList(e.Blocks), spec.ContentName(n.Event.Value))
					i++ // call and return in one step
				}
			}
		case e.Kind == spec.Read:
			text = fmt.Sprintf("R%d: ... = %s", e.ID, spec.ContentName(e.Value))
		case e.Kind == spec.WriteSubmit:
			inFlight[e.ID] = true
		case e.Kind == spec.WriteComplete, e.Kind == spec.WriteFail:
			delete(inFlight, e.ID)
		}
		path = append(path, explore.Step{Actor: actor, Text: text})
	}
	s := explore.Timeline(actors, path)
	if len(inFlight) > 0 {
		var ws []string
		for id := 1; id <= spec.MaxWrites; id++ {
			if inFlight[id] {
				ws = append(ws, fmt.Sprintf("W%d", id))
			}
		}
		s += fmt.Sprintf("never ended (may or may not have landed): %s\n", strings.Join(ws, " "))
	}
	return s
}

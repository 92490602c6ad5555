package linearize

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/spec"
)

// TestRecorderLogicalClock: every event gets the next tick; a zero-width one
// (an end, a flush submission, the crash) reserves the tick after it.
func TestRecorderLogicalClock(t *testing.T) {
	s := newScript(t)
	w := s.write(0, 1, true) // t=1
	f := s.flush(1)          // t=2, reserves 3
	s.endWrite(w, true)      // t=4, reserves 5
	r := s.beginRead(2, 0)   // t=6
	s.endRead(r, w)          // t=7
	s.endFlush(f, false)     // t=8, reserves 9
	s.crash()                // t=10, reserves 11
	s.read(0, 0, w)          // t=12, 13
	var times []int64
	for _, rec := range s.r.History().Records {
		times = append(times, rec.Time)
	}
	assert.Equal(t, []int64{1, 2, 4, 6, 7, 8, 10, 12, 13}, times)
}

// TestRecorderClockThatStalls: times from a clock that does not advance are
// moved just past the previous record, so they stay distinct and ordered.
func TestRecorderClockThatStalls(t *testing.T) {
	r := NewRecorderWithClock(func() int64 { return 100 })
	_, err := r.SubmitWrite(0, 1, false)
	require.NoError(t, err)
	_, err = r.SubmitFlush(0)
	require.NoError(t, err)
	require.NoError(t, r.EndWrite(1, true))
	var times []int64
	for _, rec := range r.History().Records {
		times = append(times, rec.Time)
	}
	assert.Equal(t, []int64{100, 101, 103}, times)
}

// TestRecorderConcurrent: many goroutines on a real clock produce a
// well-formed history (run with -race to check the locking).
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorderWithClock(Monotonic())
	var wg sync.WaitGroup
	for task := 0; task < 8; task++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2; i++ {
				id, err := r.SubmitWrite(task, 1<<(task%3), i == 1)
				assert.NoError(t, err)
				assert.NoError(t, r.EndWrite(id, true))
			}
			f, err := r.SubmitFlush(task)
			assert.NoError(t, err)
			assert.NoError(t, r.EndFlush(f, true))
			rd, err := r.BeginRead(task, task%3)
			assert.NoError(t, err)
			assert.NoError(t, r.EndRead(rd, 0))
		}()
	}
	wg.Wait()
	h := r.History()
	require.Len(t, h.Records, 8*8)
	assert.True(t, sort.SliceIsSorted(h.Records, func(i, j int) bool { return h.Records[i].Time < h.Records[j].Time }))
	ops, err := h.Operations()
	require.NoError(t, err)
	assert.Len(t, ops, 8*(2*2+2+1))
	assert.Equal(t, 8, h.Tasks())
}

// TestRecorderRejectsMisuse: what cannot happen is refused, and says why.
func TestRecorderRejectsMisuse(t *testing.T) {
	cases := []struct {
		name string
		run  func(r *Recorder) error
		want string
	}{
		{"end an unknown write", func(r *Recorder) error { return r.EndWrite(1, true) }, "W1 is not in flight"},
		{"end a write twice", func(r *Recorder) error {
			id, _ := r.SubmitWrite(0, 1, false)
			_ = r.EndWrite(id, true)
			return r.EndWrite(id, false)
		}, "W1 is not in flight"},
		{"write without blocks", func(r *Recorder) error { _, err := r.SubmitWrite(0, 0, false); return err }, "at least one block"},
		{"negative task", func(r *Recorder) error { _, err := r.SubmitFlush(-1); return err }, "negative task"},
		{"end a flush twice", func(r *Recorder) error {
			id, _ := r.SubmitFlush(0)
			_ = r.EndFlush(id, true)
			return r.EndFlush(id, true)
		}, "F1 is not in flight"},
		{"submit after the crash", func(r *Recorder) error {
			_ = r.Crash()
			_, err := r.SubmitWrite(0, 1, false)
			return err
		}, "crashed"},
		{"end after the crash", func(r *Recorder) error {
			id, _ := r.SubmitWrite(0, 1, false)
			_ = r.Crash()
			return r.EndWrite(id, true)
		}, "crashed"},
		{"crash twice", func(r *Recorder) error { _ = r.Crash(); return r.Crash() }, "already crashed"},
		{"read returns a write never submitted", func(r *Recorder) error {
			id, _ := r.BeginRead(0, 0)
			return r.EndRead(id, 1)
		}, "W1 was never submitted"},
		{"read returns twice", func(r *Recorder) error {
			id, _ := r.BeginRead(0, 0)
			_ = r.EndRead(id, 0)
			return r.EndRead(id, 0)
		}, "not in flight"},
		{"read of a block out of range", func(r *Recorder) error { _, err := r.BeginRead(0, spec.MaxBlocks); return err }, "block below"},
		{"too many writes", func(r *Recorder) error {
			for i := 0; i < spec.MaxWrites; i++ {
				id, _ := r.SubmitWrite(0, 1, false)
				_ = r.EndWrite(id, true)
			}
			_, err := r.SubmitWrite(0, 1, false)
			return err
		}, fmt.Sprintf("more than %d writes", spec.MaxWrites)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(NewRecorder())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestOperationsEncoding: the operations of a small history, one of each
// kind, with the intervals of the table in history.go.
func TestOperationsEncoding(t *testing.T) {
	s := newScript(t)
	w1 := s.write(0, 1, true) // t=1
	w2 := s.write(1, 3, false)
	f := s.flush(2)            // t=3, 4
	s.endWrite(w1, true)       // t=5, 6
	s.endFlush(f, true)        // t=7, 8
	s.endWrite(w2, false)      // t=9, 10
	w3 := s.write(0, 2, false) // t=11, in flight at the crash
	r := s.beginRead(1, 0)     // t=12
	s.endRead(r, w1)           // t=13
	s.crash()                  // t=14, 15
	s.read(2, 1, 0)            // t=16, 17
	ops, err := s.r.History().Operations()
	require.NoError(t, err)
	op := func(client int, in Input, out Output, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	assert.Equal(t, []porcupine.Operation{
		op(2, Input{Kind: OpFlushSubmit, ID: f}, Output{Result: OK}, 3, 4),
		op(0, Input{Kind: OpWriteEnd, ID: w1, Blocks: 1, FUA: true}, Output{Result: OK}, 5, 6),
		op(2, Input{Kind: OpFlushEnd, ID: f}, Output{Result: OK}, 7, 8),
		op(1, Input{Kind: OpWriteEnd, ID: w2, Blocks: 3}, Output{Result: EIO}, 9, 10),
		op(3, Input{Kind: OpCrash}, Output{Result: OK}, 14, 15),
		op(0, Input{Kind: OpLand, ID: w1, Blocks: 1, Write: 1, FUA: true}, Output{Result: OK}, 1, 5),
		op(1, Input{Kind: OpLand, ID: w2, Blocks: 1, Write: 3}, Output{Result: EIO}, 2, 9),
		op(1, Input{Kind: OpLand, ID: w2, Blocks: 2, Write: 3}, Output{Result: EIO}, 2, 9),
		op(0, Input{Kind: OpLand, ID: w3, Blocks: 2, Write: 2}, Output{Result: InFlight}, 11, 14),
		op(1, Input{Kind: OpRead, ID: 1, Blocks: 1}, Output{Result: OK, Value: w1}, 12, 13),
		op(2, Input{Kind: OpRead, ID: 2, Blocks: 2}, Output{Result: OK, Value: 0}, 16, 17),
	}, ops)
}

// TestOperationsRejectsMalformed: a hand-made History that no Recorder would
// produce is refused with the offending record.
func TestOperationsRejectsMalformed(t *testing.T) {
	rec := func(time int64, e spec.Event) Record { return Record{Time: time, Event: e} }
	submit := spec.Event{Kind: spec.WriteSubmit, ID: 1, Blocks: 1}
	cases := []struct {
		name string
		h    History
		want string
	}{
		{"time goes back", History{Records: []Record{rec(5, submit), rec(4, spec.Event{Kind: spec.WriteComplete, ID: 1})}}, "time does not increase"},
		{"inside a zero-width operation", History{Records: []Record{rec(1, submit), rec(2, spec.Event{Kind: spec.Crash}), rec(3, spec.Event{Kind: spec.Read, ID: 1, Blocks: 1}), rec(4, spec.Event{Kind: spec.Read, ID: 1, Blocks: 1})}}, "time does not increase"},
		{"submit after the crash", History{Records: []Record{rec(1, spec.Event{Kind: spec.Crash}), rec(3, submit)}}, "only reads may follow the crash"},
		{"write numbers skip", History{Records: []Record{rec(1, spec.Event{Kind: spec.WriteSubmit, ID: 2, Blocks: 1})}}, "next write is W1"},
		{"landing is not visible", History{Records: []Record{rec(1, submit), rec(2, spec.Event{Kind: spec.WriteLand, ID: 1})}}, "not an OS-visible event"},
		{"read of two blocks", History{Records: []Record{{Time: 1, Event: spec.Event{Kind: spec.Read, ID: 1, Blocks: 3}, ReadCall: true}}}, "exactly one block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.h.Operations()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestHistoryString: the timeline has a column per task and one for the
// device; a read whose return follows its call is one step; writes that
// never ended are listed.
func TestHistoryString(t *testing.T) {
	s := newScript(t)
	w := s.write(0, 1, true)
	r := s.beginRead(1, 0)
	s.endWrite(w, true)
	s.endRead(r, w)
	s.write(1, 2, false)
	s.crash()
	s.read(0, 0, w)
	want := "" +
		"step | A                | B               | device\n" +
		"   1 | W1 submit b0 FUA |                 |\n" +
		"   2 |                  | R1: read b0 ... |\n" +
		"   3 | W1 complete      |                 |\n" +
		"   4 |                  | R1: ... = W1    |\n" +
		"   5 |                  | W2 submit b1    |\n" +
		"   6 |                  |                 | crash\n" +
		"   7 | read b0 = W1     |                 |\n" +
		"never ended (may or may not have landed): W2\n"
	assert.Equal(t, want, s.r.History().String())
}

package world_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/model/world/worldtest"
)

// The tests of the scheduling points: every call that reads or changes
// state another task can see lets another task run just before it, so
// that another task may run between two calls in a row.

// TestStateBetweenTwoWakesIsSeen: task 0 raises a flag and lowers it again
// in two changes under the wait queue's lock; task 1 reads the flag under
// the lock. Real code can see the flag raised (another CPU takes the lock
// between the two critical sections), so the search must find that run.
func TestStateBetweenTwoWakesIsSeen(t *testing.T) {
	prog := func(w *world.World) func(t *world.Task) {
		raised := false
		return func(t *world.Task) {
			q := t.WaitQueue()
			if t.ID() == 0 {
				q.Wake(func() { raised = true })
				q.Wake(func() { raised = false })
				return
			}
			seen := false
			q.Wake(func() { seen = raised })
			t.Assert(!seen, "task 1 saw the flag between task 0's two changes")
		}
	}
	r, err := worldtest.Search(world.Config{Memory: memory.SC, Tasks: 2}, prog, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err, "SAFE in %d states: the state between two Wakes is hidden", r.States)
	t.Logf("found in %d steps:\n%s", len(r.Path), r.Timeline)
}

// groupCommit is a group-commit log: appenders queue their records under
// the wait queue's lock and take an LSN; one committer at a time becomes
// the leader, takes the queued records, writes them and flushes, and then
// publishes the LSN durable up to. With twoSteps (the bug), the leader
// takes the queue in one change and empties it in a second one, claiming
// every LSN handed out by then: a record queued between the two is
// dropped, never written, and yet counted durable.
func groupCommit(twoSteps bool) world.Program {
	return func(w *world.World) func(t *world.Task) {
		type rec struct {
			lsn  int
			data []byte
		}
		var (
			queue           []rec
			last, durableTo int
			leader          bool
		)
		return func(t *world.Task) {
			q, dev := t.WaitQueue(), t.Device()
			data := bytes.Repeat([]byte{byte(t.ID() + 1)}, dev.BlockSize())
			var lsn int
			q.Wake(func() { last++; lsn = last; queue = append(queue, rec{lsn, data}) })
			for {
				done, lead := false, false
				q.Wake(func() {
					done = durableTo >= lsn
					if !done && !leader {
						leader, lead = true, true
					}
				})
				if done {
					break
				}
				if !lead {
					q.Wait(func() bool { return !leader || durableTo >= lsn })
					continue
				}
				var batch []rec
				var upTo int
				if twoSteps {
					q.Wake(func() { batch = queue })
					q.Wake(func() { queue, upTo = nil, last })
				} else {
					q.Wake(func() { batch, queue, upTo = queue, nil, last })
				}
				for _, r := range batch {
					if err := dev.WriteAt(r.data, int64((r.lsn-1)*dev.BlockSize()), 0); err != nil {
						w.Fail(err)
						return
					}
				}
				if err := dev.Flush(); err != nil {
					w.Fail(err)
					return
				}
				q.Wake(func() { durableTo, leader = max(durableTo, upTo), false })
			}
			t.MustSurvive(lsn-1, data)
		}
	}
}

// TestGroupCommitLostRecordBetweenWakes: 2 appenders x 1 record. The
// leader that takes the queue and empties it in two changes loses a
// record queued between them; taking and emptying it in one change is
// safe.
func TestGroupCommitLostRecordBetweenWakes(t *testing.T) {
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Blocks: 2}
	bad, err := worldtest.Search(cfg, groupCommit(true), worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, bad.Err, "SAFE in %d states: the lost record is hidden", bad.States)
	assert.Contains(t, bad.Err.Error(), "never held the data")
	t.Logf("the lost record in %d steps (%d states):\n%s", len(bad.Path), bad.States, bad.Timeline)
	good := worldtest.Check(t, cfg, groupCommit(false), worldtest.Options{})
	t.Logf("one change: %s, %d states", good.Verdict(), good.States)
}

// TestTaskStartsAtASchedulingPoint: no code of a task runs before the
// search's first choice. Task 0's first act states an obligation on the
// initial content of block 0 (which holds until some write to the block is
// sent); task 1 writes that same content to block 0. The obligation is
// broken only if task 1's write is sent before task 0 starts, which a
// world that ran each task to its first call before the search hides.
func TestTaskStartsAtASchedulingPoint(t *testing.T) {
	prog := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			dev := t.Device()
			zero := make([]byte, dev.BlockSize())
			if t.ID() == 0 {
				t.MustSurvive(0, zero)
				return
			}
			_ = dev.WriteAt(zero, 0, 0)
		}
	}
	r, err := worldtest.Search(world.Config{Memory: memory.SC, Tasks: 2, Blocks: 1}, prog, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err, "SAFE in %d states: task 0 ran before the search", r.States)
	t.Logf("found in %d steps:\n%s", len(r.Path), r.Timeline)
}

// handleOp is one operation of the world's handles, for the generated
// test below: task 0 calls it twice in a row (first and second), and
// another task's step between the two is what the program detects.
type handleOp struct {
	name string
	// twice is task 0's two calls; it returns what they observed.
	twice func(t *world.Task, sh *opShared) []int64
	// other is task 1's code: it changes what twice observes, or
	// observes what twice changes.
	other func(t *world.Task, sh *opShared) []int64
	// bad reports the outcome only a step of task 1 between task 0's
	// two calls gives.
	bad func(t0, t1 []int64) bool
}

// opShared is the state the generated programs keep under the wait queue.
type opShared struct{ x int }

func blockOf(t *world.Task, v byte) []byte {
	return bytes.Repeat([]byte{v}, t.Device().BlockSize())
}

var handleOps = []handleOp{
	{name: "Word.Load",
		twice: func(t *world.Task, _ *opShared) []int64 { return []int64{t.Word(0).Load(), t.Word(0).Load()} },
		other: func(t *world.Task, _ *opShared) []int64 { t.Word(0).Store(1); return nil },
		bad:   func(t0, _ []int64) bool { return t0[0] != t0[1] }},
	{name: "Word.Store",
		twice: func(t *world.Task, _ *opShared) []int64 { t.Word(0).Store(1); t.Word(0).Store(2); return nil },
		other: func(t *world.Task, _ *opShared) []int64 { return []int64{t.Word(0).Load()} },
		bad:   func(_, t1 []int64) bool { return t1[0] == 1 }},
	{name: "Word.IncReturn",
		twice: func(t *world.Task, _ *opShared) []int64 { return []int64{t.Word(0).IncReturn(), t.Word(0).IncReturn()} },
		other: func(t *world.Task, _ *opShared) []int64 { return []int64{t.Word(0).Load()} },
		bad:   func(_, t1 []int64) bool { return t1[0] == 1 }},
	{name: "Word.CompareAndSwap",
		twice: func(t *world.Task, _ *opShared) []int64 {
			t.Word(0).CompareAndSwap(0, 1)
			t.Word(0).CompareAndSwap(1, 2)
			return nil
		},
		other: func(t *world.Task, _ *opShared) []int64 { return []int64{t.Word(0).Load()} },
		bad:   func(_, t1 []int64) bool { return t1[0] == 1 }},
	{name: "Device.ReadAt",
		twice: func(t *world.Task, _ *opShared) []int64 {
			a, b := blockOf(t, 0), blockOf(t, 0)
			_ = t.Device().ReadAt(a, 0)
			_ = t.Device().ReadAt(b, 0)
			return []int64{int64(a[0]), int64(b[0])}
		},
		other: func(t *world.Task, _ *opShared) []int64 { _ = t.Device().WriteAt(blockOf(t, 9), 0, 0); return nil },
		bad:   func(t0, _ []int64) bool { return t0[0] != t0[1] }},
	{name: "Device.WriteAt",
		twice: func(t *world.Task, _ *opShared) []int64 {
			_ = t.Device().WriteAt(blockOf(t, 1), 0, 0)
			_ = t.Device().WriteAt(blockOf(t, 2), 0, 0)
			return nil
		},
		other: func(t *world.Task, _ *opShared) []int64 {
			b := blockOf(t, 0)
			_ = t.Device().ReadAt(b, 0)
			return []int64{int64(b[0])}
		},
		bad: func(_, t1 []int64) bool { return t1[0] == 1 }},
	{name: "WaitQueue.Wake",
		twice: func(t *world.Task, sh *opShared) []int64 {
			q := t.WaitQueue()
			q.Wake(func() { sh.x = 1 })
			q.Wake(func() { sh.x = 2 })
			return nil
		},
		other: func(t *world.Task, sh *opShared) []int64 {
			var seen int
			t.WaitQueue().Wake(func() { seen = sh.x })
			return []int64{int64(seen)}
		},
		bad: func(_, t1 []int64) bool { return t1[0] == 1 }},
	{name: "Task.Select",
		twice: func(t *world.Task, sh *opShared) []int64 {
			br := []world.Branch{{Name: "x is 0", When: func() bool { return sh.x == 0 }}, {Name: "x is 1", When: func() bool { return sh.x == 1 }}}
			return []int64{int64(t.Select(br...)), int64(t.Select(br...))}
		},
		other: func(t *world.Task, sh *opShared) []int64 { t.WaitQueue().Wake(func() { sh.x = 1 }); return nil },
		bad:   func(t0, _ []int64) bool { return t0[0] != t0[1] }},
}

// TestEveryHandleOpIsASchedulingPoint: for each operation of the handles
// that reads or changes state another task sees, a two-task program that
// can fail only if task 1 runs between task 0's two consecutive calls of
// it must be UNSAFE, and its counterexample must have a step of task 1
// after task 0's first step of the two calls and before its last.
// WaitQueue.Wait is Task.Select with one branch (the same step), so the
// Select case covers it. Fence, Flush and Choose are not here: to every
// other task two of them in a row are one of them (docs/world.md,
// "Scheduling points").
func TestEveryHandleOpIsASchedulingPoint(t *testing.T) {
	for _, op := range handleOps {
		t.Run(op.name, func(t *testing.T) {
			prog := func(w *world.World) func(t *world.Task) {
				sh := &opShared{}
				var t0, t1 []int64
				finished := 0
				return func(t *world.Task) {
					var got []int64
					if t.ID() == 0 {
						got = op.twice(t, sh)
					} else {
						got = op.other(t, sh)
					}
					last := false
					t.WaitQueue().Wake(func() {
						if t.ID() == 0 {
							t0 = got
						} else {
							t1 = got
						}
						finished++
						last = finished == 2
					})
					if last {
						t.Assert(!op.bad(t0, t1), "task 1 ran between task 0's two calls of %s (%v, %v)", op.name, t0, t1)
					}
				}
			}
			cfg := world.Config{Memory: memory.SC, Tasks: 2, Words: 1, Blocks: 1}
			r, err := worldtest.Search(cfg, prog, worldtest.Options{})
			require.NoError(t, err)
			require.Error(t, r.Err, "SAFE in %d states: another task cannot run between two calls of %s", r.States, op.name)
			require.Contains(t, r.Err.Error(), "ran between")

			// Where task 1 ran: between task 0's first and last step of its
			// two calls (its start and its closing Wake left out).
			s, err := world.NewSearch(cfg, prog, world.SearchOptions{})
			require.NoError(t, err)
			w, _ := s.Replay(r.Path)
			require.NotNil(t, w)
			between := false
			var steps0 []int
			for _, ev := range w.Trace() {
				if (ev.Task == 0 || ev.Task < 0 && ev.Of == 0 && ev.Kind.Machine()) && ev.Kind != world.ActStart && ev.Kind != world.ActNote {
					steps0 = append(steps0, ev.Step)
				}
			}
			require.GreaterOrEqual(t, len(steps0), 3, "task 0's steps")
			first, lastStep := steps0[0], steps0[len(steps0)-2] // the last is its closing Wake
			for _, ev := range w.Trace() {
				if ev.Task == 1 && ev.Step > first && ev.Step < lastStep {
					between = true
				}
			}
			assert.True(t, between, "no step of task 1 between steps %d and %d:\n%s", first, lastStep, r.Timeline)
			t.Logf("%s: %d states, %d steps", op.name, r.States, len(r.Path))
		})
	}
}

// TestJudgedCallSites: the search counts the states whose step ran each
// Assert call site; a site under a condition no run meets is not listed,
// and a program that reaches no Assert at all has its first obligation,
// "any Assert or MustSurvive", never judged (worldtest.Check fails it).
func TestJudgedCallSites(t *testing.T) {
	prog := func(reach bool) world.Program {
		return func(w *world.World) func(t *world.Task) {
			return func(t *world.Task) {
				x := t.Word(0)
				x.Store(int64(t.ID() + 1))
				v := x.Load()
				if reach || v > 2 {
					t.Assert(v > 0, "task %d read %d", t.ID(), v)
				}
			}
		}
	}
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Words: 1}
	r, err := worldtest.Search(cfg, prog(true), worldtest.Options{})
	require.NoError(t, err)
	require.True(t, r.Safe)
	require.Len(t, r.Judged, 2, "%v", r.Judged)
	assert.Equal(t, "any Assert or MustSurvive", r.Judged[0].Name)
	assert.Contains(t, r.Judged[1].Name, "Assert at world/schedpoint_test.go:")
	assert.NotZero(t, r.Judged[1].States)
	assert.Equal(t, r.Judged[0].States, r.Judged[1].States)

	r, err = worldtest.Search(cfg, prog(false), worldtest.Options{})
	require.NoError(t, err)
	require.True(t, r.Safe, "no value above 2 is ever stored")
	require.Len(t, r.Judged, 1, "%v", r.Judged)
	assert.True(t, r.Judged[0].Vacuous(), "no Assert ran: %v", r.Judged)
}

// fatalRecorder is a testing.TB that records Fatalf instead of stopping.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Helper()                           {}
func (f *fatalRecorder) Logf(string, ...any)               {}
func (f *fatalRecorder) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

// TestCheckFailsWithoutObligations: worldtest.Check does not pass a
// program no run of which reaches an Assert or a MustSurvive, unless told
// that it checks for deadlocks alone.
func TestCheckFailsWithoutObligations(t *testing.T) {
	prog := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) { t.Word(0).Store(1) }
	}
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Words: 1}
	rec := &fatalRecorder{TB: t}
	worldtest.Check(rec, cfg, prog, worldtest.Options{})
	assert.Contains(t, rec.fatal, "no run reached a Task.Assert or Task.MustSurvive")
	rec = &fatalRecorder{TB: t}
	worldtest.Check(rec, cfg, prog, worldtest.Options{NoObligations: true})
	assert.Empty(t, rec.fatal)
}

// TestWorldQueryInTaskCodeFails: a task that reads the device's state
// through a World query in its own code (to decide whether to flush, say)
// reads shared state without a scheduling point; the run fails naming the
// query. The same query in a When condition is fine.
func TestWorldQueryInTaskCodeFails(t *testing.T) {
	cfg := world.Config{Memory: memory.SC, Tasks: 1, Blocks: 1}
	inCode := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			if !t.World().FlushInFlightBy(0) {
				_ = t.Device().Flush()
			}
		}
	}
	r, err := worldtest.Search(cfg, inCode, worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "task 0 called World.FlushInFlightBy in its own code")

	inWhen := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			t.Device().SubmitFlush()
			t.WaitUntil(nil, func() bool { return !t.World().FlushInFlightBy(0) })
			t.Assert(true, "")
		}
	}
	r, err = worldtest.Search(cfg, inWhen, worldtest.Options{})
	require.NoError(t, err)
	assert.NoError(t, r.Err)
	assert.True(t, r.Safe)
}

// TestJudgedEveryStepInto: a state two steps reach, only one of which
// runs an Assert, counts as judged whichever step reached it first. Task
// 0 loads x, asserts, and loads y; task 1 loads x. The state where both
// have loaded x is reached by task 1's load after task 0's (no Assert in
// that step) and by task 0's load after task 1's (the Assert runs in it).
// The search expands task 0's move first, so it first reaches that state
// by the step without the Assert: counting only the first step missed it.
func TestJudgedEveryStepInto(t *testing.T) {
	prog := func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			x, y := t.Word(0), t.Word(1)
			x.Load()
			if t.ID() == 0 {
				t.Assert(true, "never fails")
				y.Load()
			}
		}
	}
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Words: 2}
	var counts []int
	for range 4 {
		r, err := worldtest.Search(cfg, prog, worldtest.Options{})
		require.NoError(t, err)
		require.True(t, r.Safe)
		require.Len(t, r.Judged, 2, "%v", r.Judged)
		counts = append(counts, r.Judged[1].States)
	}
	// The states after task 0's load (the Assert ran in that step): task
	// 1 not started, started, and done loading x.
	assert.Equal(t, []int{3, 3, 3, 3}, counts)
}

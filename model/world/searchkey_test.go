package world_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/spec"
)

// randomOp is one call of a random task program.
type randomOp struct {
	kind, arg int
}

// randomProgram runs ops[t] in task t and records, when every task has
// finished, what each task's calls returned and what a crash may then
// leave in each block, in outcomes.
func randomProgram(ops [][]randomOp, outcomes *sync.Map, shared bool) world.Program {
	return func(w *world.World) func(t *world.Task) {
		x := 0 // shared state outside the memory: changed under Wake
		logs := make([][]string, len(ops))
		finished := 0
		if shared {
			// The encoding of the state the tasks share (World.Shared):
			// x, which tasks also read into their own variables under
			// Wake, the count of finished tasks, and the logs, which the
			// last task reads under Wake.
			w.Shared(func() []byte { return []byte(fmt.Sprint(x, finished, logs)) })
		}
		return func(t *world.Task) {
			q := t.WaitQueue()
			dev := t.Device()
			buf := make([]byte, dev.BlockSize())
			written := -1 // the block of the task's last write
			for i, op := range ops[t.ID()] {
				var r string
				switch op.kind {
				case 0:
					r = fmt.Sprint(t.Word(op.arg % 2).Load())
				case 1:
					r = fmt.Sprint(t.Word(op.arg % 2).IncReturn())
				case 2:
					r = fmt.Sprint(t.Word(op.arg%2).CompareAndSwap(int64(op.arg/2%2), int64(t.ID()+2)))
				case 3:
					t.Word(op.arg % 2).Store(int64(op.arg))
				case 4:
					t.Fence().Full()
				case 5:
					buf[0] = byte(10*t.ID() + i + 1)
					r = fmt.Sprint(dev.WriteAt(buf, int64(op.arg%2*dev.BlockSize()), spec.WriteFlags(op.arg/2%2)))
					written = op.arg % 2
				case 6:
					r = fmt.Sprint(dev.Flush())
				case 7:
					r = fmt.Sprint(dev.ReadAt(buf, int64(op.arg%2*dev.BlockSize())), buf[0])
				case 8:
					q.Wake(func() {
						if op.arg%2 == 0 {
							x++
						} else {
							x = t.ID() + 1
						}
						r = fmt.Sprint(x)
					})
				case 9:
					q.Wait(func() bool { return x >= 1 })
				case 10:
					if written >= 0 {
						t.MustSurvive(written, buf)
					}
				}
				logs[t.ID()] = append(logs[t.ID()], r)
			}
			last := false
			t.WaitQueue().Wake(func() { finished++; last = finished == len(ops) })
			if last {
				// What a crash may leave in each block now that every task
				// has finished: the device's state, which no task's result
				// shows, enters the outcome. The device is read in a
				// condition, as a task's own code may not read it.
				t.WaitUntil(nil, func() bool {
					var all []string
					for _, l := range logs {
						all = append(all, strings.Join(l, ","))
					}
					for b := range w.Config().Blocks {
						all = append(all, fmt.Sprint(w.MayLeave(b)))
					}
					outcomes.Store(strings.Join(all, " | "), true)
					return true
				})
			}
		}
	}
}

func outcomeList(m *sync.Map) []string {
	var out []string
	m.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	slices.Sort(out)
	return out
}

// drawRandomProgram draws a configuration (a memory model, 2 or 3 tasks,
// two words, two blocks, flush EIO or not) and the calls of each task,
// their kinds (randomProgram's) drawn from kinds.
func drawRandomProgram(t *rapid.T, kinds *rapid.Generator[int]) (world.Config, [][]randomOp) {
	m := rapid.SampledFrom([]memory.Model{memory.SC, memory.TSO, memory.Relaxed, memory.LKMM}).Draw(t, "memory")
	tasks := rapid.IntRange(2, 3).Draw(t, "tasks")
	ops := make([][]randomOp, tasks)
	for i := range ops {
		n := rapid.IntRange(1, 4-tasks+1).Draw(t, "ops")
		for range n {
			ops[i] = append(ops[i], randomOp{kinds.Draw(t, "kind"), rapid.IntRange(0, 3).Draw(t, "arg")})
		}
	}
	return world.Config{Memory: m, Tasks: tasks, Words: 2, Blocks: 2, FlushFailures: rapid.Bool().Draw(t, "flush EIO")}, ops
}

// TestSearchKeyMatchesTree: on random programs of two or three tasks over
// the words, the device (writes, some with FUA, flushes, reads, and
// obligations on the last write) and a wait queue's state, which tasks
// change and read into their own variables under Wake (half of the
// programs declare that state, World.Shared), the search with its
// state key reaches every outcome (every task's results, and what a crash
// at the end may leave in each block) and the same
// verdict as the search of every run (SearchOptions.NoCache): the key
// keeps every state with a different future apart. Under each memory
// model.
func TestSearchKeyMatchesTree(t *testing.T) {
	compared, safe, outcomes := 0, 0, 0
	rapidctl.Check(t, 30, func(t *rapid.T) {
		cfg, ops := drawRandomProgram(t, rapid.IntRange(0, 10))
		m := cfg.Memory
		shared := rapid.Bool().Draw(t, "declares its shared state")
		var got [2]sync.Map
		var res [2]*explore.Result[world.State]
		for i, noCache := range []bool{false, true} {
			s, err := world.NewSearch(cfg, randomProgram(ops, &got[i], shared), world.SearchOptions{NoCache: noCache})
			require.NoError(t, err)
			res[i] = s.Explore(explore.Options{MaxStates: 300_000, Workers: 1})
		}
		if !res[1].Exhausted && res[1].Violation == nil {
			t.Skip("the tree of every run is over the budget")
		}
		require.Equal(t, res[1].Violation == nil, res[0].Violation == nil, "verdicts: %v against the tree's %v", res[0].Violation, res[1].Violation)
		if res[0].Violation == nil {
			require.Equal(t, outcomeList(&got[1]), outcomeList(&got[0]), "%v %v", m, ops)
			safe++
			outcomes += len(outcomeList(&got[0]))
		} else {
			require.Equal(t, len(res[1].Violation.Path), len(res[0].Violation.Path))
		}
		compared++
	})
	t.Logf("%d programs compared, %d without a violation (%d outcomes in all)", compared, safe, outcomes)
}

// TestInFlightSetKeepsVerdicts: keying the writes and flushes in flight
// as a set (appendDeviceKey), not in the order they were submitted, gives
// the verdict, the outcomes and the counterexample length of the search
// that keys them as submitted (SearchOptions.Exact, which differs from the
// default search only there for programs that declare nothing), on random
// programs under each memory model, with no more states; and some of them
// have fewer (the reduction does something).
func TestInFlightSetKeepsVerdicts(t *testing.T) {
	compared, fewer := 0, 0
	rapidctl.Check(t, 30, func(t *rapid.T) {
		// Mostly the device's calls: writes of different tasks in
		// flight together are what the set keys alike.
		cfg, ops := drawRandomProgram(t, rapid.SampledFrom([]int{5, 5, 5, 5, 6, 6, 7, 10, 0, 3, 8, 9}))
		m := cfg.Memory
		var got [2]sync.Map
		var res [2]*explore.Result[world.State]
		for i, exact := range []bool{false, true} {
			s, err := world.NewSearch(cfg, randomProgram(ops, &got[i], false), world.SearchOptions{Exact: exact})
			require.NoError(t, err)
			res[i] = s.Explore(explore.Options{MaxStates: 300_000, Workers: 1, Liveness: true})
		}
		if !res[1].Exhausted && res[1].Violation == nil {
			t.Skip("over the budget")
		}
		require.Equal(t, res[1].Violation == nil, res[0].Violation == nil, "verdicts: %v against %v keyed as submitted", res[0].Violation, res[1].Violation)
		if res[0].Violation == nil {
			require.Equal(t, outcomeList(&got[1]), outcomeList(&got[0]), "%v %v", m, ops)
			require.LessOrEqual(t, res[0].States, res[1].States)
			if res[0].States < res[1].States {
				fewer++
			}
		} else {
			require.Equal(t, res[1].Violation.Kind, res[0].Violation.Kind)
			require.Equal(t, len(res[1].Violation.Path), len(res[0].Violation.Path))
		}
		compared++
	})
	t.Logf("%d programs compared, %d with fewer states", compared, fewer)
	require.Positive(t, fewer, "no program had fewer states with the writes in flight keyed as a set")
}

// TestFootprintsCommute: in every state of random programs under each
// memory model, every two steps whose footprints do not conflict keep
// each other enabled and reach the same state key in either order
// (world.CommuteCheck): the independence a partial-order reduction of the
// search would rest on.
func TestFootprintsCommute(t *testing.T) {
	pairs, independent := 0, 0
	rapidctl.Check(t, 30, func(t *rapid.T) {
		cfg, ops := drawRandomProgram(t, rapid.IntRange(0, 10))
		var got sync.Map
		s, err := world.NewSearch(cfg, randomProgram(ops, &got, rapid.Bool().Draw(t, "declares its shared state")), world.SearchOptions{})
		require.NoError(t, err)
		r := s.Explore(explore.Options{MaxStates: 20_000, Workers: 1})
		if !r.Exhausted && r.Violation == nil {
			t.Skip("over the budget")
		}
		cs, err := world.CommuteCheck(s)
		require.NoError(t, err, "%v %v", cfg.Memory, ops)
		pairs += cs.Pairs
		independent += cs.Independent
	})
	t.Logf("%d pairs of steps enabled together, %d of them independent", pairs, independent)
	require.Positive(t, independent)
}

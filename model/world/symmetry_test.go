package world

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// symOp is one call of a random symmetric program.
type symOp struct{ kind, arg int }

func syncMapKeys(m *sync.Map) []string {
	var out []string
	m.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	slices.Sort(out)
	return out
}

// symmetricProgram runs ops in every task, over the task's own block
// (block t.ID()) and a shared one (block tasks), with data whose first
// byte names the writer; with declare, it declares the tasks symmetric
// (World.Symmetric). It records in outcomes each end state's task results
// as a sorted list: a symmetric search reaches each end state only up to
// a renaming of the tasks.
func symmetricProgram(ops []symOp, tasks int, outcomes *sync.Map, shared, declare bool) Program {
	return func(w *World) func(t *Task) {
		x, finished := 0, 0
		logs := make([]string, tasks)
		if shared {
			// x, the count of finished tasks and their logs, which the
			// last task reads (sorted: the tasks are interchangeable).
			w.Shared(func() []byte { return []byte(fmt.Sprint(x, finished, slices.Sorted(slices.Values(logs)))) })
		}
		if declare {
			w.Symmetric(Symmetry{BlocksPerTask: 1, Relabel: func(dst, d []byte, perm []int) []byte {
				dst = append(dst, d...)
				dst[len(dst)-len(d)] = byte(perm[d[0]-1] + 1)
				return dst
			}})
		}
		return func(t *Task) {
			q := t.WaitQueue()
			dev := t.Device()
			buf := make([]byte, dev.BlockSize())
			written := -1
			block := func(arg int) int {
				if arg%2 == 0 {
					return t.ID()
				}
				return tasks
			}
			// A first load: the tasks start in order, so a change
			// under Wake before their first choice would be ordered by
			// their IDs, and a renamed run would not rename that order.
			log := []string{fmt.Sprint(t.Word(0).Load())}
			for i, op := range ops {
				var r string
				switch op.kind {
				case 0:
					r = fmt.Sprint(t.Word(op.arg % 2).Load())
				case 1:
					r = fmt.Sprint(t.Word(op.arg % 2).IncReturn())
				case 2:
					r = fmt.Sprint(t.Word(op.arg%2).CompareAndSwap(int64(op.arg/2%2), 7))
				case 3:
					t.Word(op.arg % 2).Store(int64(op.arg))
				case 4:
					t.Fence().Full()
				case 5:
					buf[0], buf[1] = byte(t.ID()+1), byte(i+1)
					written = block(op.arg)
					r = fmt.Sprint(dev.WriteAt(buf, int64(written*dev.BlockSize()), spec.WriteFlags(op.arg/2%2)))
				case 6:
					r = fmt.Sprint(dev.Flush())
				case 7:
					r = fmt.Sprint(dev.ReadAt(buf, int64(block(op.arg)*dev.BlockSize())), buf[1])
				case 8:
					q.Wake(func() { x++; r = fmt.Sprint(x) })
				case 9:
					q.Wait(func() bool { return x >= 1 })
				case 10:
					if written >= 0 {
						t.MustSurvive(written, buf)
					}
				}
				log = append(log, r)
			}
			t.WaitQueue().Wake(func() {
				finished++
				logs[t.ID()] = strings.Join(log, ",")
			})
			if finished == tasks {
				sorted := slices.Sorted(slices.Values(logs))
				outcomes.Store(strings.Join(sorted, " | "), true)
			}
		}
	}
}

// drawSymmetric draws a memory model, 2 or 3 tasks, the ops they all run
// (up to opsLimit less the tasks, or 6 if opsLimit is 0) and whether flushes
// may fail.
func drawSymmetric(t *rapid.T, opsLimit int) (Config, []symOp) {
	m := rapid.SampledFrom([]memory.Model{memory.SC, memory.TSO, memory.Relaxed, memory.LKMM}).Draw(t, "memory")
	tasks := rapid.IntRange(2, 3).Draw(t, "tasks")
	most := 6
	if opsLimit > 0 {
		most = opsLimit - tasks
	}
	var ops []symOp
	for range rapid.IntRange(1, most).Draw(t, "ops") {
		ops = append(ops, symOp{rapid.IntRange(0, 10).Draw(t, "kind"), rapid.IntRange(0, 3).Draw(t, "arg")})
	}
	return Config{Memory: m, Tasks: tasks, Words: 2, Blocks: tasks + 1, FlushFailures: rapid.Bool().Draw(t, "flush EIO")}, ops
}

// TestSymmetryKeepsVerdicts: on random programs whose tasks all run the
// same code over blocks of their own and a shared block, the search with
// the tasks declared symmetric (World.Symmetric) reaches the verdict, the
// counterexample length and the end states (up to renaming the tasks) of
// the same search without the declaration, under each memory model; and
// it has no more states.
func TestSymmetryKeepsVerdicts(t *testing.T) {
	compared, safe, fewer := 0, 0, 0
	rapid.Check(t, func(t *rapid.T) {
		cfg, ops := drawSymmetric(t, 5)
		m, tasks := cfg.Memory, cfg.Tasks
		shared := rapid.Bool().Draw(t, "declares its shared state")
		var got [2]sync.Map
		var res [2]*explore.Result[State]
		for i, declare := range []bool{true, false} {
			s, err := NewSearch(cfg, symmetricProgram(ops, tasks, &got[i], shared, declare), SearchOptions{})
			require.NoError(t, err)
			res[i] = s.Explore(explore.Options{MaxStates: 300_000, Workers: 1})
		}
		if !res[1].Exhausted && res[1].Violation == nil {
			t.Skip("over the budget")
		}
		require.Equal(t, res[1].Violation == nil, res[0].Violation == nil, "verdicts: %v against %v without the declaration", res[0].Violation, res[1].Violation)
		if res[0].Violation == nil {
			require.Equal(t, syncMapKeys(&got[1]), syncMapKeys(&got[0]), "%v %v", m, ops)
			require.LessOrEqual(t, res[0].States, res[1].States)
			safe++
			if res[0].States < res[1].States {
				fewer++
			}
		} else {
			require.Equal(t, len(res[1].Violation.Path), len(res[0].Violation.Path))
		}
		compared++
	})
	t.Logf("%d programs compared, %d without a violation, %d of them with fewer states", compared, safe, fewer)
}

// TestSignaturesKeepStates: keying a state by the renamings that sort
// its tasks' signatures, instead of by all of them, gives the same states
// (both keys are the least over a set of renamings that two renamed
// states share), on random symmetric programs under each memory model.
func TestSignaturesKeepStates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, ops := drawSymmetric(t, 5)
		tasks := cfg.Tasks
		shared := rapid.Bool().Draw(t, "shared")
		var states [2]int
		for i, all := range []bool{false, true} {
			var outcomes sync.Map
			s, err := NewSearch(cfg, symmetricProgram(ops, tasks, &outcomes, shared, true), SearchOptions{})
			require.NoError(t, err)
			s.allRenamings = all
			r := s.Explore(explore.Options{MaxStates: 300_000, Workers: 1})
			if !r.Exhausted && r.Violation == nil {
				t.Skip("over the budget")
			}
			states[i] = r.States
		}
		require.Equal(t, states[1], states[0])
	})
}

// TestLookAheadKeepsStates: with no world kept live, every new state takes
// its next step ahead (lookAhead); the search reaches the same states,
// verdicts and counterexample lengths as with live worlds, on random
// symmetric programs with and without the declaration.
func TestLookAheadKeepsStates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, ops := drawSymmetric(t, 6)
		shared, declare := rapid.Bool().Draw(t, "shared"), rapid.Bool().Draw(t, "symmetric")
		var res [2]*explore.Result[State]
		for i, live := range []int{maxLive, 0} {
			var outcomes sync.Map
			s, err := NewSearch(cfg, symmetricProgram(ops, cfg.Tasks, &outcomes, shared, declare), SearchOptions{})
			require.NoError(t, err)
			s.maxLive = live
			res[i] = s.Explore(explore.Options{MaxStates: 300_000})
			if live == 0 && res[i].States > 1 {
				require.Positive(t, s.Reused(), "no step taken ahead")
			}
		}
		require.Equal(t, res[0].States, res[1].States)
		require.Equal(t, res[0].Violation == nil, res[1].Violation == nil)
		if res[0].Violation != nil {
			require.Equal(t, len(res[0].Violation.Path), len(res[1].Violation.Path))
		}
	})
}

// TestSymmetryBrokenPanics: a program declared symmetric whose task
// writes a block another task owns ends its search with a panic that
// says so (an ERROR row), never a verdict.
func TestSymmetryBrokenPanics(t *testing.T) {
	cfg := Config{Memory: memory.SC, Tasks: 2, Blocks: 2}
	prog := func(w *World) func(t *Task) {
		w.Symmetric(Symmetry{BlocksPerTask: 1})
		return func(t *Task) {
			_ = t.Device().WriteAt(make([]byte, 8), 0, 0) // block 0, task 0's
		}
	}
	s, err := NewSearch(cfg, prog, SearchOptions{})
	require.NoError(t, err)
	require.PanicsWithValue(t, "model world: the program declared its tasks symmetric (World.Symmetric), but task 1's write is on block 0, which task 0 owns",
		func() { s.Explore(explore.Options{Workers: 1}) })
}

// TestRenamedKeyIsKeyOfRenamedRun: the key a renaming gives a state is the
// key of the run with its tasks (and their blocks) renamed. A random run
// of a random symmetric program is taken again with every step's task and
// block renamed; the renamed run's own key must equal the renamed key of
// the first, for every renaming, under each memory model. So the least
// renamed key joins a state only with its renamings (which the symmetry
// declaration says have the same futures), and the symmetric search keys
// nothing together that the key keeps apart otherwise.
func TestRenamedKeyIsKeyOfRenamedRun(t *testing.T) {
	renamed := 0
	rapid.Check(t, func(t *rapid.T) {
		cfg, ops := drawSymmetric(t, 0)
		tasks := cfg.Tasks
		var outcomes sync.Map
		s, err := NewSearch(cfg, symmetricProgram(ops, tasks, &outcomes, rapid.Bool().Draw(t, "shared"), true), SearchOptions{})
		require.NoError(t, err)
		w, _ := s.replay(nil, noState, -1)
		var path []packed
		for steps := rapid.IntRange(0, 40).Draw(t, "steps"); steps > 0 && w.fail == nil; steps-- {
			acts := w.actions(nil)
			if len(acts) == 0 {
				break
			}
			path = append(path, pack(w.takeAction(rapid.IntRange(0, len(acts)-1).Draw(t, "choice"))))
		}
		if w.fail != nil {
			// A violation's text names its task: the run ends there,
			// and its state is keyed as it is.
			path = path[:len(path)-1]
			w.close()
			w, _ = s.replay(path, noState, -1)
		}
		rens := renamings(w)
		require.Len(t, rens, map[int]int{2: 2, 3: 6}[tasks])
		for _, r := range rens {
			other := make([]packed, len(path))
			for i, p := range path {
				a := p.action()
				a.Task = r.perm[a.Task]
				switch a.Kind {
				case ActWrite, ActRead, ActWriteDone, ActWritePreflushed:
					a.Block = r.bperm[a.Block]
				}
				other[i] = pack(a)
			}
			w2, _ := s.replay(other, noState, -1)
			require.Equal(t, w.appendKey(nil, r), w2.appendKey(nil, nil), "renaming %v after %d steps", r.order, len(path))
			w2.close()
			renamed++
		}
		w.close()
	})
	t.Logf("%d renamed runs compared", renamed)
}

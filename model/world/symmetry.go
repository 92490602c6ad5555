package world

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/flushproof/flushproof/internal/mutate"
)

// Symmetry declares a program's tasks interchangeable: every task runs
// the same code, and a task's identity shows only in the blocks it owns
// and in the data it writes. Task i owns blocks i*BlocksPerTask to
// (i+1)*BlocksPerTask-1; the blocks after Tasks*BlocksPerTask are shared.
// A run in which tasks i and j trade places (and blocks, and data, as
// Relabel says) is then a run of the program too, with the same verdict;
// so the search keys a state by the least key of its renamings, and
// follows one state of each such class (symmetry reduction, as Murphi's
// scalarsets give: the reduction comes from the declaration, not from a
// list of programs).
//
// What the declaration claims, and the search cannot check in full: the
// tasks' code differs only through Task.ID's use for its own blocks and
// its data; word values, the results a task sees and the state the tasks
// share (World.Shared) never name a task; a task touches no block another
// task owns (a run that does panics: the declaration is wrong). A wrong
// declaration can hide runs: SearchOptions.Exact ignores it, and must give
// the same verdict.
type Symmetry struct {
	BlocksPerTask int
	// Relabel appends to dst data, written by a task, as it would be had
	// every task i been task perm[i] (the task's identity in a record's
	// header, say): as many bytes as data has. Nil if data never names a
	// task. It must not change data, and must give it back unchanged for
	// the identity.
	Relabel func(dst, data []byte, perm []int) []byte
}

// maxSymmetric is the most tasks a symmetry reduction renames: the search
// makes all Tasks! renamings and looks at each for every key (those that
// sort the tasks' signatures are tried). With more tasks the search keeps
// them apart (no reduction: sound, with more states).
const maxSymmetric = 5

// Symmetric declares the program's tasks interchangeable (Symmetry). Call
// it in the Program, before the tasks run.
func (w *World) Symmetric(sym Symmetry) {
	if sym.BlocksPerTask < 0 || sym.BlocksPerTask*w.cfg.Tasks > w.cfg.Blocks {
		panic(fmt.Sprintf("model world: Symmetric: %d tasks own %d blocks each, the device has %d", w.cfg.Tasks, sym.BlocksPerTask, w.cfg.Blocks))
	}
	w.sym = &sym
}

// owner is the task that owns block b under the symmetry declaration
// (-1: shared, or no declaration).
func (w *World) owner(b int) int {
	if w.sym == nil || w.sym.BlocksPerTask == 0 || b >= w.sym.BlocksPerTask*w.cfg.Tasks {
		return -1
	}
	return b / w.sym.BlocksPerTask
}

// checkSymmetric panics if task's access to block breaks the symmetry
// declaration, or its data is not kept by the identity's relabelling.
func (w *World) checkSymmetric(task, block int, kind ActionKind, data []byte) {
	if w.sym == nil {
		return
	}
	if o := w.owner(block); o >= 0 && o != task {
		panic(fmt.Sprintf("model world: the program declared its tasks symmetric (World.Symmetric), but task %d's %v is on block %d, which task %d owns", task, kind, block, o))
	}
	if kind == ActWrite && w.sym.Relabel != nil {
		id := make([]int, w.cfg.Tasks)
		for i := range id {
			id[i] = i
		}
		if got := w.sym.Relabel(nil, data, id); !bytes.Equal(got, data) {
			panic(fmt.Sprintf("model world: Symmetry.Relabel changes task %d's data %x to %x under the identity", task, data, got))
		}
	}
}

// renaming is a permutation of the tasks and of the blocks they own.
type renaming struct {
	order, perm   []int // task order[j] becomes task j; task i becomes task perm[i]
	blocks, bperm []int // likewise for the blocks
}

// renamings are every permutation of the tasks as renamings, the identity
// first; nil if the world has no symmetry to reduce by.
func renamings(w *World) []*renaming {
	n := w.cfg.Tasks
	if w.sym == nil || n < 2 || n > maxSymmetric {
		return nil
	}
	var out []*renaming
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k == n {
			out = append(out, newRenaming(w, append([]int(nil), order...)))
			return
		}
		for i := k; i < n; i++ {
			order[k], order[i] = order[i], order[k]
			gen(k + 1)
			order[k], order[i] = order[i], order[k]
		}
	}
	gen(0)
	return out
}

func newRenaming(w *World, order []int) *renaming {
	r := &renaming{order: order, perm: make([]int, len(order))}
	for j, t := range order {
		r.perm[t] = j
	}
	r.blocks = make([]int, w.cfg.Blocks)
	r.bperm = make([]int, w.cfg.Blocks)
	for b := range r.blocks {
		r.blocks[b] = b
		if o := w.owner(b); o >= 0 {
			k := w.sym.BlocksPerTask
			r.blocks[b] = order[o]*k + b%k
		}
	}
	for j, b := range r.blocks {
		r.bperm[b] = j
	}
	return r
}

// symmetricKey appends the least key among the renamings of w that put
// the tasks in the order of their signatures (signature). A signature is
// the same for a task and its renaming, so the renamings of two states
// that are renamings of each other give the same keys, and the least is
// the same: usually one renaming, when every task has a signature of its
// own, instead of every one.
func (s *Search) symmetricKey(b []byte, w *World, last int8, pre uint8) []byte {
	s.symOnce.Do(func() { s.rens = renamings(w) })
	if len(s.rens) == 0 || s.opt.Exact || s.opt.NoSymmetry {
		return s.appendPreempt(w.appendKey(b, nil), nil, last, pre)
	}
	var sigs, sorted [maxSymmetric]uint64
	for i, t := range w.tasks {
		sigs[i] = t.signature()
	}
	sorted = sigs
	slices.Sort(sorted[:len(w.tasks)])
	var best, k []byte
	for _, r := range s.rens {
		if !s.allRenamings && !r.sorts(sigs[:len(w.tasks)], sorted[:len(w.tasks)]) {
			continue
		}
		k = s.appendPreempt(w.appendKey(k[:0], r), r, last, pre)
		if best == nil || bytes.Compare(k, best) < 0 {
			best = append(best[:0], k...)
		}
	}
	return append(b, best...)
}

// signature is what of the task's state names no other task: its
// results (as the key has them: World.forgets) and its flags.
func (t *Task) signature() uint64 {
	x := uint64(t.seq) << 3
	if t.w.forgets(t) {
		x = 0
	}
	if t.done {
		x |= 1
	}
	if mutate.On(mutate.WorldKeyNoFlushEnd) {
		return x
	}
	if t.flushEnded {
		x |= 2
	}
	if t.flushErr != nil {
		x |= 4
	}
	return x
}

// sorts reports whether r puts tasks of signatures sigs in the order of
// sorted.
func (r *renaming) sorts(sigs, sorted []uint64) bool {
	for j, t := range r.order {
		if sigs[t] != sorted[j] {
			return false
		}
	}
	return true
}

// appendPreempt appends, with SearchOptions.BoundPreemptions, the task
// that ran last (renamed by r) and the preemptions so far.
func (s *Search) appendPreempt(b []byte, r *renaming, last int8, pre uint8) []byte {
	if !s.opt.BoundPreemptions {
		return b
	}
	if r != nil && last >= 0 {
		last = int8(r.perm[last])
	}
	return append(b, byte(last), pre)
}

// renameWakes interns the order of WaitQueue changes id with its tasks
// renamed by perm.
func (s *Search) renameWakes(id uint32, perm []int) uint32 {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	var chain []wakeKey
	for id != 0 {
		k := s.wakeList[id-1]
		chain = append(chain, k)
		id = k.prev
	}
	for i := len(chain) - 1; i >= 0; i-- {
		k := chain[i]
		id = s.internWake(wakeKey{prev: id, task: perm[k.task], seq: k.seq})
	}
	return id
}

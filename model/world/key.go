package world

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flushproof/flushproof/internal/mutate"
)

// forgets reports whether the key leaves out t's results: t finished, so
// it takes no step, and what other tasks may learn of its results, what
// its WaitQueue changes made of them, is in the wake log, or, with
// World.Shared declared, in the encoding of all the state the tasks share,
// both in the key. Not under Exact.
func (w *World) forgets(t *Task) bool {
	return t.done && !w.srch.opt.Exact
}

// appendKey appends the state key (see the top of search.go) of w with
// its tasks renamed by r (nil: none).
func (w *World) appendKey(b []byte, r *renaming) []byte {
	if w.fail != nil {
		// A violation ends the run: its state must not meet one without
		// (a refused store, say, changes nothing else).
		b = append(b, "failed: "...)
		b = append(b, w.fail.Error()...)
		b = append(b, 0)
	}
	var order []int
	if r != nil {
		order = r.order
	}
	b = w.mem.AppendKeyOrder(b, order)
	b = w.appendDeviceKey(b, r)
	for j := range w.tasks {
		t := w.tasks[j]
		if r != nil {
			t = w.tasks[r.order[j]]
		}
		seq := t.seq
		if w.forgets(t) {
			seq = 0
		}
		b = binary.AppendUvarint(b, uint64(seq))
		b = appendBool(b, t.done)
		if !mutate.On(mutate.WorldKeyNoFlushEnd) {
			b = appendBool(b, t.flushEnded)
			b = appendBool(b, t.flushErr != nil)
		}
	}
	if w.shared != nil && !w.srch.opt.Exact {
		sh := w.shared()
		b = binary.AppendUvarint(b, uint64(len(sh)))
		return append(b, sh...)
	}
	if r != nil {
		return binary.AppendUvarint(b, uint64(w.srch.renameWakes(w.wakeLog, r.perm)))
	}
	return binary.AppendUvarint(b, uint64(w.wakeLog))
}

// Checkpoint declares that from here on what the task does depends only on
// vals, its ID and the state it shares (the modelled memory, the device,
// the state it changes under WaitQueue.Wake): nothing it computed from
// earlier calls' results is used any more, but through vals. Typically at
// the top of a loop over operations, with the loop's index. The search
// then keys the task's state by vals and its results since, instead of
// every result since the start: runs that differ only in what the task
// has forgotten meet in one state. A wrong declaration can hide runs;
// SearchOptions.Exact ignores it, and must give the same verdict.
func (t *Task) Checkpoint(vals ...int64) {
	s := t.w.srch
	if s == nil || s.opt.Exact || t.w.noSeq {
		return
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	id := s.internSeq(seqKey{err: 3, val: int64(len(vals))})
	for _, v := range vals {
		id = s.internSeq(seqKey{prev: id, err: 4, val: v})
	}
	t.seq = id
}

// Shared declares f as the encoding of all the state the program's tasks
// share outside the modelled memory and the device (what they change
// under WaitQueue.Wake and read in Wait conditions): equal encodings for
// states in which the tasks would act the same. The search then keys that
// state by f instead of by the order in which tasks changed it. Call it
// in the Program, before the tasks run. SearchOptions.Exact ignores it.
func (w *World) Shared(f func() []byte) { w.shared = f }

func appendBool(b []byte, x bool) []byte {
	if x {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendDeviceKey appends the device's part of the key. A block's clocks
// are only compared with each other and with later clocks, which are
// larger than all (a flush's or a preflush's cover of the block, its
// doneSince, durableSince, its versions' submission and end): so each is
// replaced by its rank among that block's clocks. Versions below a
// block's floor can never be left by a crash again: only their data is
// kept (World.Survives looks for data among all versions).
//
// With a renaming r, block j of the key is block r.blocks[j], the data is
// relabelled (Symmetry.Relabel) and tasks and blocks are renamed.
//
// The writes and the flushes in flight are a set, not a sequence: each is
// found by its task and block (World.enabled, writeDone, flushDone: the
// first of those that match), so two runs that submitted the same ones in
// another order behave alike. They are keyed in the order of their
// (renamed) task and block, the order of submission kept only among
// writes of one task to one block and flushes of one task (the ones a
// lookup tells apart by it): submissions of different tasks then
// commute. SearchOptions.Exact keys them in submission order.
func (w *World) appendDeviceKey(b []byte, r *renaming) []byte {
	writes, flushes := w.inFlightOrder(r)
	var clocks []int64
	for j := range w.blocks {
		i := j
		if r != nil {
			i = r.blocks[j]
		}
		bv := &w.blocks[i]
		clocks = append(clocks[:0], -1, bv.doneSince, bv.durableSince)
		for v := bv.floor; v < len(bv.data); v++ {
			clocks = append(clocks, bv.submitted[v], bv.ended[v])
		}
		for _, p := range writes {
			if p.preCover != nil {
				clocks = append(clocks, p.preCover[i])
			}
		}
		for _, f := range flushes {
			clocks = append(clocks, f.cover[i])
		}
		slices.Sort(clocks)
		clocks = slices.Compact(clocks)
		rank := func(b []byte, c int64) []byte {
			r, _ := slices.BinarySearch(clocks, c)
			return binary.AppendUvarint(b, uint64(r))
		}
		b = binary.AppendUvarint(b, uint64(len(bv.data)))
		b = binary.AppendUvarint(b, uint64(bv.floor))
		b = binary.AppendUvarint(b, uint64(bv.done))
		for v, d := range bv.data {
			if r == nil || w.sym.Relabel == nil || v == 0 { // version 0 is no task's
				b = append(b, d...) // every version has BlockSize bytes
				continue
			}
			n := len(b)
			if b = w.sym.Relabel(b, d, r.perm); len(b)-n != len(d) {
				panic(fmt.Sprintf("model world: Symmetry.Relabel made %d bytes of %d", len(b)-n, len(d)))
			}
		}
		for v := bv.floor; v < len(bv.data); v++ {
			b = appendBool(b, bv.unsent[v])
			b = rank(b, bv.submitted[v])
			b = rank(b, bv.ended[v])
		}
		b = rank(b, bv.doneSince)
		b = rank(b, bv.durableSince)
		for _, p := range writes {
			if p.preCover != nil {
				b = rank(b, p.preCover[i])
			}
		}
		for _, f := range flushes {
			b = rank(b, f.cover[i])
		}
	}
	b = binary.AppendUvarint(b, uint64(len(writes)))
	for _, p := range writes {
		task, block := p.task, p.block
		if r != nil {
			task, block = r.perm[task], r.bperm[block]
		}
		b = binary.AppendUvarint(b, uint64(task))
		b = binary.AppendUvarint(b, uint64(block))
		b = binary.AppendUvarint(b, uint64(p.version))
		b = appendBool(b, p.fua)
		b = appendBool(b, p.unsent)
		b = appendBool(b, p.preCover != nil)
	}
	b = binary.AppendUvarint(b, uint64(len(flushes)))
	for _, f := range flushes {
		task := f.task
		if r != nil {
			task = r.perm[task]
		}
		b = binary.AppendUvarint(b, uint64(task))
		b = binary.AppendVarint(b, f.tag)
		b = appendBool(b, f.async)
	}
	return b
}

// inFlightOrder returns the writes and the flushes in flight in the order
// the key has them (appendDeviceKey): by renamed task and block, stable,
// or as submitted with SearchOptions.Exact.
func (w *World) inFlightOrder(r *renaming) ([]*pendingWrite, []*pendingFlush) {
	if w.srch != nil && w.srch.opt.Exact || len(w.writes) < 2 && len(w.flush) < 2 {
		return w.writes, w.flush
	}
	task := func(t int) int {
		if r != nil {
			return r.perm[t]
		}
		return t
	}
	block := func(b int) int {
		if r != nil {
			return r.bperm[b]
		}
		return b
	}
	byWrite := func(p, q *pendingWrite) int {
		if c := cmp.Compare(task(p.task), task(q.task)); c != 0 {
			return c
		}
		return cmp.Compare(block(p.block), block(q.block))
	}
	byFlush := func(f, g *pendingFlush) int { return cmp.Compare(task(f.task), task(g.task)) }
	writes, flushes := w.writes, w.flush
	if !slices.IsSortedFunc(writes, byWrite) {
		w.keyWrites = append(w.keyWrites[:0], writes...)
		writes = w.keyWrites
		slices.SortStableFunc(writes, byWrite)
	}
	if !slices.IsSortedFunc(flushes, byFlush) {
		w.keyFlushes = append(w.keyFlushes[:0], flushes...)
		flushes = w.keyFlushes
		slices.SortStableFunc(flushes, byFlush)
	}
	return writes, flushes
}

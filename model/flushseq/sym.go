package flushseq

import (
	"bytes"
	"encoding/binary"

	"github.com/flushproof/flushproof/model/memory"
)

// Canonical implements Canonicalizer: tasks are identical (each writes its
// own block and runs the same code), so a state and the state with tasks
// renamed have the same futures up to renaming, and the property ("some
// task's fsync returned with its write not durable") does not depend on
// names. Tasks are sorted by their own state; what refers to other tasks
// (flush coverage, memory views, completion words) is renamed along. Ties
// keep their order, which only costs reduction, never soundness. A DAX task
// is not interchangeable with the others, so with DAX tasks the state is
// left as it is.
func (s *System) Canonical(st State) State {
	st = s.normalize(st)
	n := s.cfg.Tasks
	if s.cfg.DAX != 0 || n < 2 {
		return st
	}
	var keys [maxFsTasks]taskKey
	var perm [memory.MaxThreads]int
	for t := 0; t < n; t++ {
		keys[t] = s.taskKey(&st, t)
		perm[t] = t
	}
	// A stable insertion sort of at most maxFsTasks tasks by key: no
	// allocation on this hot path (every successor is canonicalised).
	for i := 1; i < n; i++ {
		for j := i; j > 0 && bytes.Compare(keys[perm[j]][:], keys[perm[j-1]][:]) < 0; j-- {
			perm[j], perm[j-1] = perm[j-1], perm[j]
		}
	}
	identity := true
	for i := 0; i < n; i++ {
		identity = identity && perm[i] == i
	}
	if identity {
		return st
	}
	for i := n; i < memory.MaxThreads; i++ {
		perm[i] = i // the device and unused threads keep their place
	}
	var inv [memory.MaxThreads]int
	for i := 0; i < memory.MaxThreads; i++ {
		inv[perm[i]] = i
	}
	remap := func(m uint8) uint8 {
		var out uint8
		for u := 0; u < n; u++ {
			if m&(1<<u) != 0 {
				out |= 1 << inv[u]
			}
		}
		return out
	}
	var locs [memory.MaxLocations]int
	for l := 0; l < memory.MaxLocations; l++ {
		locs[l] = l
	}
	for i := 0; i < n; i++ {
		locs[locDone(i)] = locDone(perm[i])
	}
	out := st
	for i := 0; i < n; i++ {
		out.task[i] = st.task[perm[i]]
		if w := st.task[perm[i]].logWait; w != 0 {
			out.task[i].logWait = int8(inv[w-1] + 1)
		}
		out.wst[i] = st.wst[perm[i]]
		out.flush[i] = st.flush[perm[i]]
		out.flush[i].cover = remap(st.flush[perm[i]].cover)
	}
	out.dur = remap(st.dur)
	if st.lost != 0 {
		out.lost = int8(inv[st.lost-1] + 1)
	}
	out.mem = st.mem.Permuted(&perm, &locs)
	return out
}

// taskKey is what task t looks like on its own.
func (s *System) taskKey(st *State, t int) taskKey {
	tk := st.task[t]
	f := st.flush[t]
	m := &st.mem
	d := locDone(t)
	k := taskKey{tk.pc, tk.round, byte(tk.s), byte(tk.seq), byte(tk.C), byte(tk.wait), b2b(tk.failed), b2b(tk.logWait != 0), b2b(tk.drained),
		st.wst[t], b2b(st.dur&(1<<t) != 0), f.st, byte(f.seq), b2b(f.cover&(1<<t) != 0), byte(popcount8(f.cover)),
		m.View(t, locSubmitted), m.View(t, locCompleted), m.View(t, d), byte(len(m.Live(d))), byte(m.BufferLen(t))}
	for i, v := range m.Live(d) {
		k[taskKeyFixed+i] = byte(v)
	}
	binary.BigEndian.PutUint64(k[taskKeyFixed+memory.MaxStores:], m.ThreadKey(t, locSubmitted, locCompleted, d))
	return k
}

// taskKey is what task t looks like on its own: taskKeyFixed bytes of task,
// flush and view state, then its completion word's live stores, then its
// LKMM views (memory.ThreadKey).
type taskKey [taskKeyFixed + memory.MaxStores + 8]byte

const taskKeyFixed = 20

func b2b(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func popcount8(m uint8) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// normalize forgets what cannot influence the future, so that states that
// differ only there are one state: a finished task takes no step any more,
// so its views of memory matter to nobody; it stops being a reader, and the
// stores only its views kept alive are dropped. Nothing else is forgotten:
// what a later step will do (a barrier, say) is never assumed here, and the
// memory checks the declaration (a plain load by a thread that is not a
// reader panics).
func (s *System) normalize(st State) State {
	for t := 0; t < s.cfg.Tasks; t++ {
		if st.task[t].pc == pcFinished {
			st.mem.DropReader(t)
		}
	}
	return st
}

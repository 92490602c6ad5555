package memory

import "github.com/flushproof/flushproof/internal/mutate"

// Wide is Memory without its size bounds: any number of threads and
// locations, int64 values, unbounded store buffers and store histories. It
// is mutable (one execution at a time) and serves the model world, where a
// scheduler walks one path of a large system instead of enumerating states.
// Its semantics are Memory's, operation for operation (see Model); a
// differential test in the suite holds the two together.
type Wide struct {
	model Model
	vals  [][]int64 // per location: stores in modification order (one under SC and TSO)
	view  [][]int   // [thread][location]: index of the oldest store the thread may read (Relaxed)
	buf   [][]bufOp // per thread: its store buffer, oldest first (TSO)
	lk    *wideLK   // LKMM (widelkmm.go)
	gone  []bool    // per thread: it takes no step any more (Forget)
}

type bufOp struct {
	loc int
	val int64
}

// NewWide returns memory for threads threads and locs locations, each
// holding 0.
func NewWide(m Model, threads, locs int) *Wide {
	w := &Wide{model: m, vals: make([][]int64, locs), view: make([][]int, threads),
		buf: make([][]bufOp, threads), gone: make([]bool, threads)}
	for l := range w.vals {
		w.vals[l] = []int64{0}
	}
	for t := range w.view {
		w.view[t] = make([]int, locs)
	}
	if m == LKMM {
		w.lk = newWideLK(threads, locs)
		w.lk.gone = w.gone
	}
	return w
}

// Forget is Memory.DropReader for thread t, which takes no step any more
// (its task finished): its views no longer keep stores live or tell
// memories apart (Relaxed, LKMM), and under LKMM a barrier of its still
// pending is dropped, as Memory.DropReader drops it (lkForget gives
// why). Its store buffer still drains (TSO).
func (w *Wide) Forget(t int) {
	w.gone[t] = true
	if w.lk != nil {
		w.lk.post[t] = false
		clear(w.lk.unord[t])
		clear(w.lk.cond[t])
	}
}

// Model returns the memory model.
func (w *Wide) Model() Model { return w.model }

func (w *Wide) Newest(loc int) int64 {
	if w.lk != nil {
		s := w.lk.st[loc]
		return s[len(s)-1].val
	}
	return w.vals[loc][len(w.vals[loc])-1]
}

// Readable returns the values a plain load of loc by thread t may return,
// oldest first, in the order Memory.Load returns them.
func (w *Wide) Readable(t, loc int) []int64 {
	if w.lk != nil {
		var out []int64
		for _, s := range w.lk.st[loc][w.lk.settledCur(t, loc):] {
			out = append(out, s.val)
		}
		return out
	}
	switch w.model {
	case TSO:
		for i := len(w.buf[t]) - 1; i >= 0; i-- {
			if w.buf[t][i].loc == loc {
				return []int64{w.buf[t][i].val}
			}
		}
	case Relaxed:
		return w.vals[loc][w.view[t][loc]:]
	}
	return []int64{w.Newest(loc)}
}

// Load is a plain load that returns Readable(t, loc)[choice].
func (w *Wide) Load(t, loc, choice int) int64 {
	if w.lk != nil {
		i := w.lk.settledCur(t, loc) + choice
		w.lk.settle(t)
		w.lk.read(t, loc, i)
		v := w.lk.st[loc][i].val
		w.lk.compactAll()
		return v
	}
	vs := w.Readable(t, loc)
	v := vs[choice]
	if w.model == Relaxed {
		w.view[t][loc] += choice
		w.compact(loc)
	}
	return v
}

// LoadNewest is Memory.LoadNewest.
func (w *Wide) LoadNewest(t, loc int) int64 {
	vs := w.Readable(t, loc)
	return w.Load(t, loc, len(vs)-1)
}

// Store is a plain store. It has more than one result under LKMM, where
// it panics: use StoreAt.
func (w *Wide) Store(t, loc int, v int64) {
	w.single("Store")
	switch w.model {
	case TSO:
		w.buf[t] = append(w.buf[t], bufOp{loc, v})
	case Relaxed:
		w.append(t, loc, v)
	default:
		w.vals[loc][0] = v
	}
}

// StoreVisible is Memory.StoreVisible.
func (w *Wide) StoreVisible(t, loc int, v int64) {
	w.single("StoreVisible")
	if w.model == TSO {
		w.vals[loc][0] = v
		return
	}
	w.Store(t, loc, v)
}

func (w *Wide) append(t, loc int, v int64) {
	w.vals[loc] = append(w.vals[loc], v)
	w.view[t][loc] = len(w.vals[loc]) - 1
	w.compact(loc)
}

// Fence is smp_mb() by thread t. Under LKMM the pending barriers of other
// threads are left pending (Complete takes them in).
func (w *Wide) Fence(t int) {
	if w.lk != nil {
		if mutate.On(mutate.FenceWeak) {
			// Takes in and publishes nothing; t's loads still count as
			// ordered before its later stores (Memory's weakFences).
			w.lk.settle(t)
			clear(w.lk.unord[t])
		} else {
			w.lk.fence(t)
		}
		clear(w.lk.cond[t]) // a barrier whatever was read
		w.lk.compactAll()
		return
	}
	if mutate.On(mutate.FenceWeak) {
		return
	}
	w.fence(t)
}

// fence is the full barrier of smp_mb and of fully ordered read-modify-writes.
func (w *Wide) fence(t int) {
	switch w.model {
	case TSO:
		for len(w.buf[t]) > 0 {
			w.Drain(t)
		}
	case Relaxed:
		for loc := range w.view[t] {
			w.view[t][loc] = len(w.vals[loc]) - 1
			w.compact(loc)
		}
	}
}

// IncReturn is atomic64_inc_return (RMWAt under LKMM).
func (w *Wide) IncReturn(t, loc int) int64 {
	w.single("IncReturn")
	_, v, _ := w.rmw(t, loc, true, func(old int64) (int64, bool) { return old + 1, true })
	return v
}

func (w *Wide) orderedStore(t, loc int, v int64) {
	w.fence(t)
	if w.model != Relaxed {
		w.vals[loc][0] = v
		return
	}
	w.append(t, loc, v)
	w.fence(t)
}

// rmwRead is Memory.rmwRead.
func (w *Wide) rmwRead(t, loc int) int64 {
	if w.model == Relaxed && mutate.On(mutate.RMWStale) {
		return w.vals[loc][w.view[t][loc]]
	}
	return w.Newest(loc)
}

// CompareAndSwap is Memory.CompareAndSwap (RMWAt under LKMM).
func (w *Wide) CompareAndSwap(t, loc int, old, new int64) (bool, int64) {
	w.single("CompareAndSwap")
	cur, _, ok := w.rmw(t, loc, true, func(v int64) (int64, bool) { return new, v == old })
	return ok, cur
}

// single panics under LKMM, where op has more than one result.
func (w *Wide) single(op string) {
	if w.lk != nil {
		panic("memory: Wide." + op + " under LKMM, which has more than one result; use the ...At operation")
	}
}

// rmw is Memory.rmw: a read-modify-write under SC, TSO or Relaxed (TSO:
// a locked instruction, after the drain; Relaxed: it reads the newest
// store, the mutation RMWStale aside).
func (w *Wide) rmw(t, loc int, ordered bool, f func(old int64) (int64, bool)) (old, new int64, stored bool) {
	if w.model == TSO {
		w.fence(t)
	}
	cur := w.rmwRead(t, loc)
	v, ok := f(cur)
	if !ok {
		if w.model == Relaxed {
			w.view[t][loc] = len(w.vals[loc]) - 1 // an RMW reads the newest store
			w.compact(loc)
		}
		return cur, cur, false
	}
	switch {
	case ordered:
		w.orderedStore(t, loc, v)
	case w.model == Relaxed:
		w.append(t, loc, v)
	default:
		w.vals[loc][0] = v
	}
	return cur, v, true
}

// Buffered returns the threads with stores in their buffer (TSO).
func (w *Wide) Buffered() []int {
	var out []int
	for t, b := range w.buf {
		if len(b) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// Drain moves thread t's oldest buffered store to memory (TSO).
func (w *Wide) Drain(t int) {
	e := w.buf[t][0]
	w.vals[e.loc][0] = e.val
	w.buf[t] = w.buf[t][1:]
}

// compact drops stores of loc that no thread can read any more, so that a
// long run does not keep every store it made.
func (w *Wide) compact(loc int) {
	low := len(w.vals[loc]) - 1
	for t := range w.view {
		if !w.gone[t] {
			low = min(low, w.view[t][loc])
		}
	}
	if low < 64 {
		return // amortise: drop in batches
	}
	w.vals[loc] = append([]int64(nil), w.vals[loc][low:]...)
	for t := range w.view {
		w.view[t][loc] -= low
	}
}

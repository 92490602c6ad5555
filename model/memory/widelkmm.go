package memory

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"
)

// Wide under LKMM: the semantics of lkmm.go without its bounds (any number
// of threads, locations and live stores, int64 values), mutable, with
// each operation in two parts: its results (the ...Choices methods, each
// result named by how many stores are newer in modification order than
// the one it reads or makes, as memory.Alt does), and the operation with
// the index of the result taken. Where Memory gives a barrier one result
// per order in which other threads' pending barriers complete before it,
// Wide completes a pending barrier as a step of its own (Pending,
// Complete), which the model world schedules like a TSO buffer's drain:
// with many threads the orders are too many to list, and a pending
// barrier commutes with every operation of another thread but a barrier,
// so completing it at any time before its thread's next operation gives
// the same outcomes. Wide has no reductions (it walks one path): it
// allows every result the unreduced Memory does (Memory.Unreduced), which
// the differential test holds, operation by operation.

// wlStore is a live store of a location under LKMM.
type wlStore struct {
	val   int64
	mview []int // its message view (per location: an index into that location's stores)
	glued bool  // a read-modify-write's store, glued to the store before it
}

// wideLK is Wide's LKMM state.
type wideLK struct {
	st            [][]wlStore // per location: live stores in modification order
	cur, acq, rel [][]int     // [thread][location]
	glob          []int
	unord         [][]bool // [thread][location]: loaded since the thread's last full barrier
	cond          [][]bool // [thread][location]: loads only a conditional RMW's barriers ordered (lk.cond)
	post          []bool   // per thread: its barrier after a read-modify-write is pending
	gone          []bool   // per thread: Wide.Forget (shared with Wide)
	anyOrder      bool     // AllowUnordered
}

func newWideLK(threads, locs int) *wideLK {
	k := &wideLK{st: make([][]wlStore, locs), glob: make([]int, locs)}
	for l := range k.st {
		k.st[l] = []wlStore{{mview: make([]int, locs)}}
	}
	k.cur, k.acq, k.rel = make([][]int, threads), make([][]int, threads), make([][]int, threads)
	k.unord, k.cond, k.post = make([][]bool, threads), make([][]bool, threads), make([]bool, threads)
	for t := 0; t < threads; t++ {
		k.cur[t], k.acq[t], k.rel[t] = make([]int, locs), make([]int, locs), make([]int, locs)
		k.unord[t], k.cond[t] = make([]bool, locs), make([]bool, locs)
	}
	return k
}

func joinInto(dst, src []int) {
	for l, i := range src {
		dst[l] = max(dst[l], i)
	}
}

// settledCur is t's view of loc once its pending barrier, if any, has
// completed (without completing it).
func (k *wideLK) settledCur(t, loc int) int {
	if !k.post[t] {
		return k.cur[t][loc]
	}
	return max(k.cur[t][loc], k.acq[t][loc], k.glob[loc])
}

func (k *wideLK) settle(t int) {
	if k.post[t] {
		k.fence(t)
	}
}

// fence is smp_mb by t, every pending barrier of another thread left
// pending.
func (k *wideLK) fence(t int) {
	c := append([]int(nil), k.cur[t]...)
	joinInto(c, k.acq[t])
	joinInto(c, k.glob)
	copy(k.cur[t], c)
	copy(k.acq[t], c)
	copy(k.rel[t], c)
	copy(k.glob, c)
	clear(k.unord[t])
	k.post[t] = false
}

// compactAll is compact at every location, at the end of an operation
// (indices taken during one stay valid).
func (k *wideLK) compactAll() {
	for l := range k.st {
		k.compact(l)
	}
}

// compact drops the stores of loc older than every thread's view, in
// batches, so that a long run keeps few stores: views below the oldest
// kept store point at it, which orders nothing less (every thread's view
// is at or above it).
func (k *wideLK) compact(loc int) {
	low := len(k.st[loc]) - 1
	for t := range k.cur {
		if !k.gone[t] {
			low = min(low, k.cur[t][loc])
		}
	}
	if low < 64 {
		return
	}
	k.st[loc] = append([]wlStore(nil), k.st[loc][low:]...)
	k.st[loc][0].glued = false
	k.views(func(view []int) { view[loc] = max(view[loc]-low, 0) })
}

// views calls f on every view: the threads', the global one and the live
// stores' message views.
func (k *wideLK) views(f func([]int)) {
	for u := range k.cur {
		f(k.cur[u])
		f(k.acq[u])
		f(k.rel[u])
	}
	f(k.glob)
	for l := range k.st {
		for i := range k.st[l] {
			f(k.st[l][i].mview)
		}
	}
}

func (k *wideLK) read(t, loc, i int) {
	k.cur[t][loc] = i
	joinInto(k.acq[t], k.st[loc][i].mview)
	joinInto(k.acq[t], k.cur[t])
	k.unord[t][loc] = true
}

// insert puts t's store of v at index p of loc.
func (k *wideLK) insert(t, loc, p int, v int64, glued bool) {
	k.views(func(view []int) {
		if view[loc] >= p {
			view[loc]++
		}
	})
	mv := append([]int(nil), k.rel[t]...)
	if glued {
		joinInto(mv, k.st[loc][p-1].mview) // rmw-sequence, as lkInsert
	}
	mv[loc] = p
	s := k.st[loc]
	s = append(s, wlStore{})
	copy(s[p+1:], s[p:])
	s[p] = wlStore{val: v, mview: mv, glued: glued}
	k.st[loc] = s
	k.cur[t][loc] = p
	joinInto(k.acq[t], k.cur[t])
}

func (k *wideLK) checkOrdered(t, loc int) error {
	if k.anyOrder {
		return nil
	}
	for l, u := range k.unord[t] {
		if l != loc && (u && !k.post[t] || k.cond[t][l]) {
			return fmt.Errorf("thread %d: %w", t, ErrUnordered)
		}
	}
	return nil
}

// storePlaces lists, in Memory's order, the indices a store by t to loc
// may take (after its pending barrier completed).
func (k *wideLK) storePlaces(t, loc int) []int {
	var out []int
	n := len(k.st[loc])
	for p := n; p > k.settledCur(t, loc); p-- {
		if p < n && k.st[loc][p].glued {
			continue
		}
		out = append(out, p)
	}
	return out
}

// rmwResults lists the results of a read-modify-write by t on loc in
// Memory's order (lkRMW, lkRMWOnce), each as the index of the store it
// reads and whether it stores. f gives the value to store for the value
// read, or false (the failed cmpxchg: a plain read). A fully ordered one
// starts with t's barrier, which its pending one joins (lkRMW).
func (k *wideLK) rmwResults(t, loc int, ordered bool, f func(int64) (int64, bool)) []wlRMW {
	var out []wlRMW
	n := len(k.st[loc])
	gluedNext := func(i int) bool {
		return i+1 < n && k.st[loc][i+1].glued && !mutate.On(mutate.RMWStale)
	}
	for i := k.settledCur(t, loc); i < n; i++ {
		_, ok := f(k.st[loc][i].val)
		if !ok {
			out = append(out, wlRMW{read: i})
		} else if !ordered && !gluedNext(i) {
			out = append(out, wlRMW{read: i, store: true})
		}
	}
	if !ordered {
		return out
	}
	for i := max(k.cur[t][loc], k.acq[t][loc], k.glob[loc]); i < n; i++ {
		if _, ok := f(k.st[loc][i].val); ok && !gluedNext(i) {
			out = append(out, wlRMW{read: i, store: true})
		}
	}
	return out
}

// wlRMW is one result of a read-modify-write.
type wlRMW struct {
	read  int // the index of the store it reads
	store bool
}

func (k *wideLK) rmwAt(t, loc int, ordered, cond bool, f func(int64) (int64, bool), r wlRMW) (old, new int64) {
	if r.store && ordered {
		var kept []bool // t's cond after the store (lkRMW)
		if cond {
			kept = append([]bool(nil), k.cond[t]...)
			for l, u := range k.unord[t] {
				kept[l] = kept[l] || u && !k.post[t] // a pending barrier orders them anyway (lkRMW)
			}
			kept[loc] = true
		}
		k.fence(t) // the leading barrier, which t's pending one joins
		if cond {
			copy(k.cond[t], kept)
		} else {
			clear(k.cond[t])
		}
	} else {
		k.settle(t)
	}
	old = k.st[loc][r.read].val
	k.read(t, loc, r.read)
	if !r.store {
		return old, old
	}
	new, _ = f(old)
	k.insert(t, loc, r.read+1, new, true)
	if ordered {
		k.post[t] = true
	}
	return old, new
}

// Settle is Memory.Settle: thread t takes a step that is not a memory
// operation, and its pending barrier, if any, completes first.
func (w *Wide) Settle(t int) {
	if w.lk != nil {
		w.lk.settle(t)
		w.lk.compactAll()
	}
}

// AllowUnordered is Memory.AllowUnordered.
func (w *Wide) AllowUnordered() {
	if w.lk != nil {
		w.lk.anyOrder = true
	}
}

// Pending returns the threads whose barrier after a read-modify-write is
// pending under LKMM (none under the other models), each of which
// Complete may take effect as a step of its own.
func (w *Wide) Pending() []int {
	if w.lk == nil {
		return nil
	}
	var out []int
	for u, p := range w.lk.post {
		if p {
			out = append(out, u)
		}
	}
	return out
}

// Complete lets thread u's pending barrier take effect (see Pending).
func (w *Wide) Complete(u int) {
	if w.lk == nil || !w.lk.post[u] {
		panic(fmt.Sprintf("memory: thread %d has no pending barrier", u))
	}
	w.lk.fence(u)
	w.lk.compactAll()
}

// newer names the results by how many stores are newer than the index each
// reads or takes (after: a store placed at the index).
func newer(n int, idx []int, after bool) []int {
	out := make([]int, len(idx))
	for i, p := range idx {
		out[i] = n - 1 - p
		if after {
			out[i]++
		}
	}
	return out
}

// StoreChoices lists the results of a plain store by t to loc
// (Memory.Stores): one, except under LKMM, one per place in modification
// order (as the number of stores that will be newer than it), or
// ErrUnordered.
func (w *Wide) StoreChoices(t, loc int) ([]int, error) {
	if w.lk == nil {
		return []int{0}, nil
	}
	if err := w.lk.checkOrdered(t, loc); err != nil {
		return nil, err
	}
	return newer(len(w.lk.st[loc]), w.lk.storePlaces(t, loc), true), nil
}

// StoreAt is the plain store of v by t to loc with result choice (an
// index into StoreChoices); visible as in StoreVisible.
func (w *Wide) StoreAt(t, loc int, v int64, visible bool, choice int) {
	if w.lk == nil {
		if choice != 0 {
			panic(fmt.Sprintf("memory: store result %d of 1", choice))
		}
		if visible {
			w.StoreVisible(t, loc, v)
		} else {
			w.Store(t, loc, v)
		}
		return
	}
	p := w.lk.storePlaces(t, loc)[choice]
	w.lk.settle(t)
	w.lk.insert(t, loc, p, v, false)
	w.lk.compactAll()
}

// RMWChoices lists the results of a read-modify-write by t on loc
// (Memory.RMW, or Memory.RMWUnordered if !ordered), each as the number of
// stores newer than the one it reads: one, except under LKMM; or
// ErrUnordered.
//
// A conditional one (cond: a cmpxchg) orders what its barriers order only
// when it stores (Memory.RMWCond).
func (w *Wide) RMWChoices(t, loc int, ordered, cond bool, f func(old int64) (int64, bool)) ([]int, error) {
	if w.lk == nil {
		return []int{0}, nil
	}
	if !ordered {
		if err := w.lk.checkOrdered(t, loc); err != nil {
			return nil, err
		}
	}
	rs := w.lk.rmwResults(t, loc, ordered, f)
	idx := make([]int, len(rs))
	for i, r := range rs {
		idx[i] = r.read
	}
	return newer(len(w.lk.st[loc]), idx, false), nil
}

// RMWAt is the read-modify-write by t on loc with result choice (an index
// into RMWChoices): the value read, the value stored and whether it
// stored.
func (w *Wide) RMWAt(t, loc int, ordered, cond bool, f func(old int64) (int64, bool), choice int) (old, new int64, stored bool) {
	if w.lk == nil {
		if choice != 0 {
			panic(fmt.Sprintf("memory: read-modify-write result %d of 1", choice))
		}
		return w.rmw(t, loc, ordered, f)
	}
	r := w.lk.rmwResults(t, loc, ordered, f)[choice]
	old, new = w.lk.rmwAt(t, loc, ordered, cond, f, r)
	w.lk.compactAll()
	return old, new, r.store
}

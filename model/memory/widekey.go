package memory

import "encoding/binary"

// AppendKey appends to b an encoding of the memory's state that equal
// states share and that tells apart states with different futures: two
// memories with the same key give every operation the same results, now
// and after any sequence of operations. It is the memory's part of the
// model world's state key (the exhaustive search caches states by it).
//
// The key is that of the memory compacted completely: the stores of a
// location older than the oldest one a thread may read are left out and
// views below it point at it, which is what compact does in batches (a
// view is only ever joined into a thread's view, which is at or above
// that store already). So a memory compacted in a batch and one not yet
// compacted have the same key.
func (w *Wide) AppendKey(b []byte) []byte { return w.AppendKeyOrder(b, nil) }

// AppendKeyOrder appends the key of the memory with its threads renamed:
// thread j of the renamed memory is thread order[j] of w (nil: each keeps
// its name). Only the threads' own parts (views, store buffers, pending
// barriers) move: stores do not record their writer. The model world's
// symmetry reduction (World.Symmetric) keys a state by the least of its
// renamings.
func (w *Wide) AppendKeyOrder(b []byte, order []int) []byte {
	b = append(b, byte(w.model))
	thread := func(j int) int {
		if order == nil {
			return j
		}
		return order[j]
	}
	if w.lk != nil {
		return w.lk.appendKey(b, thread)
	}
	switch w.model {
	case TSO:
		for j := range w.buf {
			t := thread(j)
			b = binary.AppendUvarint(b, uint64(len(w.buf[t])))
			for _, op := range w.buf[t] {
				b = binary.AppendUvarint(b, uint64(op.loc))
				b = binary.AppendVarint(b, op.val)
			}
		}
	case Relaxed:
		for loc := range w.vals {
			low := len(w.vals[loc]) - 1
			for t := range w.view {
				if !w.gone[t] {
					low = min(low, w.view[t][loc])
				}
			}
			live := w.vals[loc][low:]
			b = binary.AppendUvarint(b, uint64(len(live)))
			for _, v := range live {
				b = binary.AppendVarint(b, v)
			}
			for j := range w.view {
				if t := thread(j); !w.gone[t] { // a forgotten thread has no view (Forget)
					b = binary.AppendUvarint(b, uint64(w.view[t][loc]-low+1))
				} else {
					b = binary.AppendUvarint(b, 0)
				}
			}
		}
		return b
	}
	for loc := range w.vals {
		b = binary.AppendVarint(b, w.vals[loc][0])
	}
	return b
}

func (k *wideLK) appendKey(b []byte, thread func(int) int) []byte {
	lows := make([]int, len(k.st))
	for loc := range k.st {
		low := len(k.st[loc]) - 1
		for t := range k.cur {
			if !k.gone[t] {
				low = min(low, k.cur[t][loc])
			}
		}
		lows[loc] = low
	}
	view := func(b []byte, v []int) []byte {
		for loc, i := range v {
			b = binary.AppendUvarint(b, uint64(max(i-lows[loc], 0)))
		}
		return b
	}
	for loc, s := range k.st {
		live := s[lows[loc]:]
		b = binary.AppendUvarint(b, uint64(len(live)))
		for i, st := range live {
			b = binary.AppendVarint(b, st.val)
			b = appendBool(b, st.glued && i > 0) // compact unglues the oldest kept store
			b = view(b, st.mview)
		}
	}
	for j := range k.cur {
		t := thread(j)
		if b = appendBool(b, k.gone[t]); k.gone[t] {
			continue // no views, no pending barrier: see Forget
		}
		b = view(b, k.cur[t])
		b = view(b, k.acq[t])
		b = view(b, k.rel[t])
		for _, u := range k.unord[t] {
			b = appendBool(b, u)
		}
		for _, c := range k.cond[t] {
			b = appendBool(b, c)
		}
		b = appendBool(b, k.post[t])
	}
	b = view(b, k.glob)
	return appendBool(b, k.anyOrder)
}

func appendBool(b []byte, x bool) []byte {
	if x {
		return append(b, 1)
	}
	return append(b, 0)
}

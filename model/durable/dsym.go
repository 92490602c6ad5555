package durable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// Reductions of the durability checker derived from the file and from the
// device's semantics, never from a list a user keeps (Canonical):
//
//   - Numbering: writes and flushes are numbered in submission order, so
//     two runs that submit the same commands in another order reach
//     contracts that differ only in their numbers. Canonical renumbers
//     writes by block (the order among one block's writes kept) and
//     flushes by their state and who waits for them (spec.Contract.Permute:
//     renaming changes nothing a later step, a crash or a check sees).
//   - Symmetry: threads whose code is the same, that are both daemons or
//     both not, and whose initial registers differ only in their own
//     blocks are interchangeable (symClass), as
//     in Murphi's scalarsets: Canonical sorts them by what they look like
//     on their own and renames threads, their blocks, memory's views of
//     them and the commands they wait for along.

// symClass is a set of interchangeable threads.
type symClass struct {
	members []int   // thread numbers, ascending
	handles []int   // the registers (indices) that hold a member's own blocks
	blocks  [][]int // per member, per handle: the block
}

// codeText renders a thread's compiled code without lines: two threads
// with the same text run the same program.
func codeText(code []instr, regs map[string]int) string {
	var b strings.Builder
	names := make([]string, 0, len(regs))
	for r := range regs {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		fmt.Fprintf(&b, "%s=%d ", r, regs[r])
	}
	b.WriteString("\n")
	for _, in := range code {
		fmt.Fprintf(&b, "%d %d %d %d %d %q", in.kind, in.loc, in.target, in.deps, in.fence, in.jump)
		if in.access != nil {
			fmt.Fprintf(&b, " %s", litmus.AccessText(in.access))
		}
		if in.assign != nil {
			fmt.Fprintf(&b, " %s=%s", in.assign.Reg, litmus.CExpr(in.assign.Val))
		}
		if in.kind == iBranch || in.kind == iAwait {
			fmt.Fprintf(&b, " ?%s", litmus.CExpr(in.cond))
		}
		if d := in.dev; d != nil {
			fmt.Fprintf(&b, " dev%d %s %s %s %s %s %d", d.Kind, litmus.CExpr(d.Block), litmus.CExpr(d.Val), litmus.CExpr(d.Flags), d.Reg, litmus.CExpr(valOrZero(d.Load)), d.Blocks)
		}
		if c := in.check; c != nil {
			fmt.Fprintf(&b, " %s", checkText(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// valOrZero is the Val of an access that may be nil.
func valOrZero(a *litmus.Access) litmus.Expr {
	if a == nil {
		return litmus.Expr{}
	}
	return a.Val
}

// blockUses calls f with every expression of code that names a block
// (a device call's or assert_durable's block).
func blockUses(code []instr, f func(litmus.Expr)) {
	for _, in := range code {
		if d := in.dev; d != nil && (d.Kind == litmus.DevWrite || d.Kind == litmus.DevSubmit || d.Kind == litmus.DevRead) {
			f(d.Block)
		}
		if c := in.check; c != nil && c.Durable {
			f(c.Block)
		}
	}
}

// exprsOf calls f with every expression of code.
func exprsOf(code []instr, f func(litmus.Expr)) {
	for _, in := range code {
		if in.access != nil {
			f(in.access.Val)
			f(in.access.Expect)
		}
		if in.assign != nil {
			f(in.assign.Val)
		}
		f(in.cond)
		if d := in.dev; d != nil {
			f(d.Block)
			f(d.Val)
			f(d.Flags)
		}
		if c := in.check; c != nil {
			f(c.Block)
			f(c.Val)
			f(c.Cond)
		}
	}
}

// findSymmetry derives the classes of interchangeable threads from the
// compiled file. Threads are interchangeable when their code is the same,
// their initial registers are the same but for handles, and their handles
// name blocks of their own: a handle is a register the initial state sets,
// no instruction writes, and that is used only as a block number on its
// own (submit_bio_wait(b, ...), assert_durable(b, ...)). Every block a
// member owns must be named by no other thread, no constant, and not by
// the final condition, which must not name a member's registers either.
// Anything else that names a block (a block computed from registers)
// turns the symmetry off: which blocks it reaches is not known.
func findSymmetry(t *litmus.Test, op *opSystem, daemons uint64) []symClass {
	n := len(op.code)
	// Per thread: registers written, registers used other than as a bare
	// block number, and whether a block is named otherwise than by a
	// bare register or a constant.
	handleOK := make([]map[string]bool, n)
	fixed := map[int64]bool{} // blocks named by constants
	for th, code := range op.code {
		written := map[string]bool{}
		for _, in := range code {
			switch {
			case in.assign != nil:
				written[in.assign.Reg] = true
			case in.access != nil && in.access.Reg != "":
				written[in.access.Reg] = true
			case in.dev != nil && in.dev.Reg != "":
				written[in.dev.Reg] = true
			}
		}
		bare := map[string]bool{} // registers used as bare block numbers
		opaque := false
		blockUses(code, func(e litmus.Expr) {
			switch {
			case e.Reg != "" && len(e.Args) == 0:
				bare[e.Reg] = true
			case e.IsConst:
				fixed[e.Const] = true
			default:
				opaque = true
			}
		})
		for _, in := range code {
			if in.dev != nil && (in.dev.Blocks > 1 || in.dev.Kind == litmus.DevReap || in.dev.Slot > 0) {
				// A write of several blocks (a handle would own more
				// than its block), or a bio another thread reaps (its
				// bi_end_io actor names its submitter).
				opaque = true
			}
		}
		if opaque {
			return nil
		}
		other := map[string]bool{} // registers used any other way
		exprsOf(code, func(e litmus.Expr) {
			if e.Reg != "" && len(e.Args) == 0 {
				return // counted where it is a block (bare) or below
			}
			e.Regs(func(r string) { other[r] = true })
		})
		// A bare register that is also a value (submit_bio_wait(0, b, 0))
		// is used otherwise: look at the non-block positions directly.
		for _, in := range code {
			var vals []litmus.Expr
			if in.access != nil {
				vals = append(vals, in.access.Val, in.access.Expect)
			}
			if in.assign != nil {
				vals = append(vals, in.assign.Val)
			}
			vals = append(vals, in.cond)
			if d := in.dev; d != nil {
				vals = append(vals, d.Val, d.Flags)
			}
			if c := in.check; c != nil {
				vals = append(vals, c.Val, c.Cond)
			}
			for _, v := range vals {
				v.Regs(func(r string) { other[r] = true })
			}
		}
		handleOK[th] = map[string]bool{}
		if th < len(t.RegInit) {
			for r := range t.RegInit[th] {
				if bare[r] && !written[r] && !other[r] {
					handleOK[th][r] = true
				}
			}
		}
	}
	// Registers and blocks the final condition names.
	condRegs := map[int]bool{}
	condBlk := map[int]bool{}
	var walk func(e litmus.Expr)
	walk = func(e litmus.Expr) {
		if e.Reg != "" {
			condRegs[e.Thread] = true
		}
		if e.Loc != "" {
			if b := t.BlockOf(e.Loc); b >= 0 {
				condBlk[b] = true
			}
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(t.Cond)
	init := func(th int, r string) int64 {
		if th < len(t.RegInit) {
			return t.RegInit[th][r]
		}
		return 0
	}
	// Group threads by code and by their initial non-handle registers.
	groups := map[string][]int{}
	var order []string
	for th, code := range op.code {
		if condRegs[th] {
			continue
		}
		var key strings.Builder
		fmt.Fprintf(&key, "daemon %v\n", daemons&(1<<th) != 0) // a daemon is not interchangeable with a thread that must finish
		key.WriteString(codeText(code, op.regs[th]))
		var hs []string
		for r := range handleOK[th] {
			hs = append(hs, r)
		}
		sort.Strings(hs)
		fmt.Fprintf(&key, "handles %v\n", hs)
		names := make([]string, 0, len(op.regs[th]))
		for r := range op.regs[th] {
			if !handleOK[th][r] {
				names = append(names, r)
			}
		}
		sort.Strings(names)
		for _, r := range names {
			fmt.Fprintf(&key, "%s=%d ", r, init(th, r))
		}
		k := key.String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], th)
	}
	// Blocks every thread's handles name, to check ownership.
	owners := map[int64]int{}
	for th := range op.code {
		for r := range handleOK[th] {
			b := init(th, r)
			if _, dup := owners[b]; dup {
				owners[b] = -1
			} else {
				owners[b] = th
			}
		}
	}
	var out []symClass
	for _, k := range order {
		ms := groups[k]
		if len(ms) < 2 {
			continue
		}
		var hs []string
		for r := range handleOK[ms[0]] {
			hs = append(hs, r)
		}
		sort.Strings(hs)
		c := symClass{members: ms}
		for _, r := range hs {
			c.handles = append(c.handles, op.regs[ms[0]][r])
		}
		ok := true
		for _, m := range ms {
			var bs []int
			for _, r := range hs {
				b := init(m, r)
				if b < 0 || b >= spec.MaxBlocks || owners[b] != m || fixed[b] || condBlk[int(b)] {
					ok = false
				}
				bs = append(bs, int(b))
			}
			c.blocks = append(c.blocks, bs)
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// canonicalize applies the reductions above to st (dead registers already
// zeroed).
func (s *durSystem) canonicalize(st State) State {
	st = s.forget(st)
	for _, c := range s.sym {
		st = s.sortClass(st, c)
	}
	return s.renumber(st)
}

// forget normalizes the contract and drops the commands it can forget
// (spec.Contract.Forget): the values of dropped writes go to gone, a
// thread waiting for a dropped command keeps its result (ioDoneOK,
// ioDoneEIO). If a dropped write's value is outside the 0..63 gone
// holds, only the normalization is kept.
func (s *durSystem) forget(st State) State {
	g, wm, fm := st.dev.Forget()
	var gone [spec.MaxBlocks]uint64
	for w, m := range wm {
		if m != 0xff {
			continue
		}
		v := st.val[w]
		if v < 0 || v >= 64 {
			st.dev = st.dev.Normalized()
			return st
		}
		for bm := st.dev.WriteBlocks(w + 1); bm != 0; bm &= bm - 1 {
			gone[lowBit(bm)] |= 1 << v
		}
	}
	out := st
	out.dev = g
	out.val = [spec.MaxWrites]int8{}
	for w, m := range wm {
		if m != 0xff {
			out.val[m] = st.val[w]
		}
	}
	for b := range gone {
		out.gone[b] |= gone[b]
	}
	for t := range s.op.code {
		for k := range st.io[t] {
			switch io := int(st.io[t][k]); {
			case io == 0 || io == ioDoneOK || io == ioDoneEIO:
			case io&ioFlush != 0:
				f := io&^ioFlush - 1
				if fm[f] != 0xff {
					out.io[t][k] = (fm[f] + 1) | ioFlush
					continue
				}
				out.io[t][k] = ioDoneOK
				if _, failed := st.dev.FlushEnded(f + 1); failed {
					out.io[t][k] = ioDoneEIO
				}
			default:
				if wm[io-1] != 0xff {
					out.io[t][k] = wm[io-1] + 1
					continue
				}
				out.io[t][k] = ioDoneOK
				if _, failed := st.dev.WriteEnded(io); failed {
					out.io[t][k] = ioDoneEIO
				}
			}
		}
	}
	return out
}

// appendMemberKey appends to b what member k of class c looks like on its
// own: its program counter and registers (not its handles), the command
// it waits for, what memory holds for it, its blocks' writes and cache,
// and whether it is the thread a check or fault stopped.
func (s *durSystem) appendMemberKey(b []byte, st *State, c symClass, k int) []byte {
	t := c.members[k]
	b = append(b, st.op.pc[t])
	for r := range st.op.regs[t] {
		isHandle := false
		for _, h := range c.handles {
			isHandle = isHandle || h == r
		}
		if !isHandle {
			b = binary.BigEndian.AppendUint16(b, uint16(st.op.regs[t][r]))
		}
	}
	for _, x := range st.io[t] {
		switch io := int(x); {
		case io == 0 || io == ioDoneOK || io == ioDoneEIO:
			b = append(b, byte(io))
		case io&ioFlush != 0:
			b = append(b, 1)
			b = binary.BigEndian.AppendUint64(b, st.dev.FlushKey(io&^ioFlush))
		default:
			b = append(b, 2)
			b = binary.BigEndian.AppendUint64(b, st.dev.WriteKey(io)&^0xff)
		}
	}
	m := &st.op.mem
	for l := range s.op.test.Locs {
		b = append(b, m.View(t, l))
	}
	b = append(b, byte(m.BufferLen(t)))
	b = binary.BigEndian.AppendUint64(b, m.ThreadKey(t, s.locIdx...))
	for _, blk := range c.blocks[k] {
		b = append(b, 0xfe, byte(st.cache[blk]))
		b = binary.BigEndian.AppendUint64(b, st.gone[blk])
		for w := 1; w <= st.dev.Writes(); w++ {
			if st.dev.WriteBlocks(w)&(1<<blk) != 0 {
				b = binary.BigEndian.AppendUint64(b, st.dev.WriteKey(w)&^0xff)
				b = append(b, byte(st.val[w-1]))
			}
		}
	}
	var bad byte
	if st.bad.kind != 0 && int(st.bad.thread) == t {
		bad = st.bad.kind
	}
	if st.op.fault.kind != 0 && int(st.op.fault.thread) == t {
		bad |= st.op.fault.kind << 4
	}
	return append(b, bad)
}

// sortClass renames the members of c so that their keys ascend (ties keep
// their order, which costs reduction, never soundness).
func (s *durSystem) sortClass(st State, c symClass) State {
	n := len(c.members)
	// The keys, one after the other in one buffer (ends[k]: where member
	// k's ends), and an insertion sort, which is stable: a class has a
	// few members, and this runs for every state found.
	var arena [1024]byte
	var endArr, permArr [memory.MaxThreads]int
	buf, ends := arena[:0], endArr[:n]
	perm := permArr[:n] // new position k holds old member perm[k]
	for k := range c.members {
		buf = s.appendMemberKey(buf, &st, c, k)
		ends[k] = len(buf)
		perm[k] = k
	}
	key := func(k int) []byte {
		if k == 0 {
			return buf[:ends[0]]
		}
		return buf[ends[k-1]:ends[k]]
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && bytes.Compare(key(perm[j]), key(perm[j-1])) < 0; j-- {
			perm[j], perm[j-1] = perm[j-1], perm[j]
		}
	}
	identity := true
	for k := range perm {
		identity = identity && perm[k] == k
	}
	if identity {
		return st
	}
	return s.permuteClass(st, c, perm)
}

// permuteClass renames the members of c: new member k is old member
// perm[k], with its blocks, memory's view of it and what it waits for.
func (s *durSystem) permuteClass(st State, c symClass, perm []int) State {
	n := len(c.members)
	var threads [memory.MaxThreads]int
	for i := range threads {
		threads[i] = i
	}
	var bperm [spec.MaxBlocks]uint8 // old block -> new block
	for i := range bperm {
		bperm[i] = uint8(i)
	}
	newOf := make(map[int]int, n) // old thread -> new thread
	for k := range perm {
		newT, oldT := c.members[k], c.members[perm[k]]
		threads[newT] = oldT
		newOf[oldT] = newT
		for h := range c.handles {
			bperm[c.blocks[perm[k]][h]] = uint8(c.blocks[k][h])
		}
	}
	out := st
	for k := range perm {
		newT, oldT := c.members[k], c.members[perm[k]]
		out.op.pc[newT] = st.op.pc[oldT]
		out.op.regs[newT] = st.op.regs[oldT]
		for h, r := range c.handles {
			// A handle names the thread's own block: its initial value,
			// or 0 where it is dead (Canonical zeroes dead registers).
			v := int16(c.blocks[k][h])
			if s.live[newT][st.op.pc[oldT]]&(1<<r) == 0 && st.op.regs[oldT][r] == 0 {
				v = 0
			}
			out.op.regs[newT][r] = v
		}
		out.io[newT] = st.io[oldT]
	}
	var locs [memory.MaxLocations]int
	for l := range locs {
		locs[l] = l
	}
	out.op.mem = st.op.mem.Permuted(&threads, &locs)
	if s.op.ahead != nil {
		out.op.ahead = s.op.ahead.permute(st.op.ahead, &threads)
	}
	if st.bad.kind != 0 {
		if nt, ok := newOf[int(st.bad.thread)]; ok {
			out.bad.thread = uint8(nt)
		}
	}
	if st.op.fault.kind != 0 {
		if nt, ok := newOf[int(st.op.fault.thread)]; ok {
			out.op.fault.thread = uint8(nt)
		}
	}
	out.dev = st.dev.PermuteBlocks(&bperm)
	for b := range st.cache {
		out.cache[bperm[b]] = st.cache[b]
		out.gone[bperm[b]] = st.gone[b]
	}
	return out
}

// renumber numbers writes by block (the order among one block's writes
// kept) and flushes by their state and their waiter.
func (s *durSystem) renumber(st State) State {
	nw, nf := st.dev.Writes(), st.dev.Flushes()
	if nw < 2 && nf < 2 {
		return st
	}
	ws := make([]int, nw) // new number-1 -> old number-1
	for i := range ws {
		ws[i] = i
	}
	low := func(w int) int { return lowBit(st.dev.WriteBlocks(w + 1)) }
	sort.SliceStable(ws, func(i, j int) bool { return low(ws[i]) < low(ws[j]) })
	waiter := make([]int, nf) // per flush: the thread (and slot) waiting for it, or 0xff
	for i := range waiter {
		waiter[i] = 0xff
	}
	for t := range s.op.code {
		for k, x := range st.io[t] {
			if io := int(x); io&ioFlush != 0 {
				waiter[io&^ioFlush-1] = t*ioSlots + k
			}
		}
	}
	fs := make([]int, nf)
	for i := range fs {
		fs[i] = i
	}
	fkey := func(f int) uint64 { return st.dev.FlushKey(f+1)<<8 | uint64(waiter[f]) }
	sort.SliceStable(fs, func(i, j int) bool { return fkey(fs[i]) < fkey(fs[j]) })
	wperm := make([]uint8, nw) // old -> new
	same := true
	for k, old := range ws {
		wperm[old] = uint8(k)
		same = same && old == k
	}
	fperm := make([]uint8, nf)
	for k, old := range fs {
		fperm[old] = uint8(k)
		same = same && old == k
	}
	if same {
		return st
	}
	return s.applyNumbering(st, wperm, fperm)
}

// applyNumbering renames write w (1-based) wperm[w-1]+1 and flush f
// fperm[f-1]+1, with the values written and the commands threads wait
// for.
func (s *durSystem) applyNumbering(st State, wperm, fperm []uint8) State {
	nw := len(wperm)
	out := st
	out.dev = st.dev.Permute(wperm, fperm)
	for i := 0; i < nw; i++ {
		out.val[wperm[i]] = st.val[i]
	}
	for t := range s.op.code {
		for k, x := range st.io[t] {
			switch io := int(x); {
			case io == 0 || io == ioDoneOK || io == ioDoneEIO:
			case io&ioFlush != 0:
				out.io[t][k] = (fperm[io&^ioFlush-1] + 1) | ioFlush
			default:
				out.io[t][k] = wperm[io-1] + 1
			}
		}
	}
	return out
}

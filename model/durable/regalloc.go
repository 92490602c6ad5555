package durable

import (
	"math/bits"
	"strings"

	"github.com/flushproof/flushproof/model/litmus"
)

// Register allocation (the durability checker only). A thread's state
// holds MaxRegs registers (opState.regs), but a front end that inlines C
// functions gives every local of every inlined call a name of its own: a
// thread may name up to maxRegNames registers, as long as at most MaxRegs
// of them are live at once. The compiler numbers names as it meets them
// (compiler.reg); a thread with more than MaxRegs names then has its
// names mapped onto MaxRegs indexes (allocRegs), several names to an
// index. Instructions name registers by string, so the thread's regs map
// is all that changes; everything that reads registers looks them up
// there (the steps, the final condition, liveRegs, the timelines, the
// symmetry's handles). A thread with at most MaxRegs names keeps the
// numbering it was compiled with.

// maxRegNames bounds the register names of a thread of the durability
// checker (liveness works on 64-bit masks).
const maxRegNames = 64

// allocRegs maps the register names of the thread just compiled (more
// than MaxRegs of them) onto MaxRegs indexes. Two names interfere (need
// indexes of their own) when
//
//   - one is written at an instruction after which the other is live
//     (with a wait_event's load, also when the other is read by its
//     condition, which runs after the load's write);
//   - both are live at the thread's start, where registers hold their
//     initial values;
//   - one is named by the final condition (live everywhere: it is read
//     after a crash at any point) or set by the initial state (RegInit:
//     the symmetry's handles are written into their index as the block
//     of the thread they are renamed to, dsym.go, so the index is theirs
//     alone): such a register shares its index with no other.
//
// The interference graph is coloured greedily, names in the order they
// were numbered, or, if that needs more than MaxRegs colours, by DSatur
// (ties to the lower number): both depend on the code alone, so two
// threads with the same code get the same map (findSymmetry compares
// them). A thread that needs more than MaxRegs is refused at an
// instruction where more than MaxRegs registers are live, naming them.
func (c *compiler) allocRegs(t *litmus.Test, th litmus.Thread) error {
	n := len(c.regs)
	names := make([]string, n)
	for r, i := range c.regs {
		names[i] = r
	}
	var keep, fixed uint64
	var walk func(e litmus.Expr)
	walk = func(e litmus.Expr) {
		if i, ok := c.regs[e.Reg]; ok && e.Reg != "" && e.Thread == c.thread {
			keep |= 1 << i
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(t.Cond)
	if c.thread < len(t.RegInit) {
		for r := range t.RegInit[c.thread] {
			fixed |= 1 << c.regs[r]
		}
	}
	use, def := regUseDef(c.code, c.regs)
	live := liveness(c.code, use, def, keep)
	// clobbers[i]: the registers that must keep their values across
	// instruction i's writes.
	clobbers := make([]uint64, len(c.code))
	for i, in := range c.code {
		successors(c.code, i, func(s int) { clobbers[i] |= live[s] })
		if in.kind == iAwait {
			clobbers[i] |= use[i]
		}
	}

	all := uint64(1)<<n - 1 // all ones for n == 64
	adj := make([]uint64, n)
	link := func(a int, m uint64) {
		m &^= 1 << a
		adj[a] |= m
		for ; m != 0; m &= m - 1 {
			adj[bits.TrailingZeros64(m)] |= 1 << a
		}
	}
	start := live[0] | keep | fixed
	for m := start; m != 0; m &= m - 1 {
		link(bits.TrailingZeros64(m), start)
	}
	for m := keep | fixed; m != 0; m &= m - 1 {
		link(bits.TrailingZeros64(m), all)
	}
	for i := range c.code {
		for m := def[i]; m != 0; m &= m - 1 {
			link(bits.TrailingZeros64(m), clobbers[i])
		}
	}

	colour, used := colourGreedy(adj)
	if used > MaxRegs {
		colour, used = colourDSatur(adj)
	}
	if used > MaxRegs {
		return c.tooManyLive(th, names, live, def, clobbers, keep|fixed, used)
	}
	regs := make(map[string]int, n)
	for r, i := range c.regs {
		regs[r] = colour[i]
	}
	c.regs = regs
	return nil
}

// colourGreedy colours the graph adj (adj[a]: a's neighbours) in vertex
// order, each vertex the lowest colour its coloured neighbours do not
// have, and returns the colours and how many it used.
func colourGreedy(adj []uint64) ([]int, int) {
	colour := make([]int, len(adj))
	used := 0
	for a := range adj {
		var taken uint64
		for m := adj[a] & (uint64(1)<<a - 1); m != 0; m &= m - 1 {
			taken |= 1 << colour[bits.TrailingZeros64(m)]
		}
		colour[a] = bits.TrailingZeros64(^taken)
		used = max(used, colour[a]+1)
	}
	return colour, used
}

// colourDSatur colours adj by DSatur: next the uncoloured vertex whose
// neighbours have the most distinct colours, then the most uncoloured
// neighbours, then the lowest number; each the lowest colour free.
func colourDSatur(adj []uint64) ([]int, int) {
	n := len(adj)
	colour := make([]int, n)
	sat := make([]uint64, n) // per vertex: its neighbours' colours
	var done uint64
	used := 0
	for k := 0; k < n; k++ {
		best := -1
		for a := 0; a < n; a++ {
			if done&(1<<a) != 0 {
				continue
			}
			if best < 0 {
				best = a
				continue
			}
			sa, sb := bits.OnesCount64(sat[a]), bits.OnesCount64(sat[best])
			da, db := bits.OnesCount64(adj[a]&^done), bits.OnesCount64(adj[best]&^done)
			if sa > sb || sa == sb && da > db {
				best = a
			}
		}
		c := bits.TrailingZeros64(^sat[best])
		colour[best] = c
		done |= 1 << best
		used = max(used, c+1)
		for m := adj[best]; m != 0; m &= m - 1 {
			sat[bits.TrailingZeros64(m)] |= 1 << c
		}
	}
	return colour, used
}

// tooManyLive refuses a thread whose registers allocRegs cannot fit in
// MaxRegs: at the first instruction where more than MaxRegs of them are
// held at once (live before it, or written by it while others stay
// live; exclusive ones, those of the final condition and the initial
// state, held everywhere), naming them; at the thread if no instruction
// holds that many (live ranges that cross so that colouring needs more).
func (c *compiler) tooManyLive(th litmus.Thread, names []string, live, def, clobbers []uint64, exclusive uint64, used int) error {
	list := func(m uint64) string {
		var out []string
		for ; m != 0; m &= m - 1 {
			out = append(out, names[bits.TrailingZeros64(m)])
		}
		return strings.Join(out, ", ")
	}
	for i, in := range c.code {
		for _, m := range []uint64{live[i] | exclusive, def[i] | clobbers[i] | exclusive} {
			if k := bits.OnesCount64(m); k > MaxRegs {
				c.cur = &litmus.Stmt{Line: in.line, Col: in.col}
				return c.errf(in.line, "%w: P%d holds %d registers here (%s), and a thread holds at most %d live at once: end a register's use before another's begins, or reuse one whose value is no longer needed", litmus.ErrUnsupported, c.thread, k, list(m), MaxRegs)
			}
		}
	}
	c.cur = &litmus.Stmt{Line: th.Line, Col: th.Col}
	return c.errf(th.Line, "%w: P%d's %d register names need %d registers to share (their live ranges cross, though no more than %d are live at once), and a thread holds at most %d: reuse a register whose value is no longer needed", litmus.ErrUnsupported, c.thread, len(names), used, MaxRegs, MaxRegs)
}

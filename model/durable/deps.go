package durable

import (
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// Dependencies for memory.LKMM. That model refuses a store that follows a
// load of another location with no smp_mb between, unless the caller says
// the store depends on every such load of that location
// (memory.Memory.StoresDep). The compiler works that out from the code,
// erring on the side of refusing:
//
//   - A store depends on a load through the registers its value is computed
//     from (data) and through the conditions of the ifs it lies in (ctrl),
//     as the LKMM reference's events do (an if's ctrl reaches its arms
//     only). Expect of a cmpxchg is no dependency of its store.
//   - A register's loads are those it depends on on every path to the
//     point (the intersection where the arms of an if meet): a dependency
//     that holds on one path only is no dependency.
//   - A location's loads since the last full barrier are those on any path
//     (the union where the arms meet). smp_mb (and an atomic fence that
//     acts as one, atomicFence), and a fully ordered read-modify-write
//     other than cmpxchg (which may fail and order nothing), start them
//     afresh; so does nothing else. An acquire load is none of them: it is
//     ordered before every later event.
//
//   - A label (litmus.Stmt.Label) is where gotos from anywhere in the
//     thread meet, with states the analysis has not seen (a goto further
//     on, a backward goto that makes a loop): the state there is the
//     weakest (label), and after a goto, up to the next label, the code
//     is not reached (its state is kept, and where it meets another
//     path it only weakens that one's).
//
// A store's deps are the locations whose loads since the last barrier are
// all among the loads it depends on. Dependencies through memory (a store
// the thread reads back, carry-dep in linux-kernel.cat) are not followed,
// so a store that LKMM orders that way is still refused.

// depState is what the analysis knows at a point of a thread's code. Loads
// are numbered in the order they appear in the code, one bit each; past
// 64 the analysis gives up (no deps).
type depState struct {
	taint map[string]uint64           // register: the loads it depends on, on every path
	ctrl  uint64                      // the loads the enclosing if conditions depend on
	loads [memory.MaxLocations]uint64 // per location: its loads since the last full barrier, on any path
	_     struct{}
}

type depAnalysis struct {
	next     int // number of the next load
	overflow bool
	st       depState
	raw      memory.LocSet // the last access's store: every location it depends on (markReadBack)
}

func newDepAnalysis() *depAnalysis {
	return &depAnalysis{st: depState{taint: map[string]uint64{}}}
}

func (d *depAnalysis) regs(e litmus.Expr) uint64 {
	var t uint64
	e.Regs(func(r string) { t |= d.st.taint[r] })
	return t
}

// poisonBit is no load's: a location's loads hold it when a loop may have
// loaded it in an earlier iteration (loopBack), a load no register's
// taint can name, so no store depends on every load of that location.
const poisonBit = 63

// number numbers a read and returns its bit (0 past 63 reads).
func (d *depAnalysis) number() uint64 {
	if d.next == poisonBit {
		d.overflow = true
		return 0
	}
	b := uint64(1) << d.next
	d.next++
	return b
}

// load numbers a read of loc that leaves it unordered and returns its bit.
func (d *depAnalysis) load(loc int) uint64 {
	b := d.number()
	d.st.loads[loc] |= b
	return b
}

// deps is the deps of a store whose value comes from e.
func (d *depAnalysis) deps(e litmus.Expr) memory.LocSet {
	if d.overflow {
		return 0
	}
	on := d.regs(e) | d.st.ctrl
	var out memory.LocSet
	for l, ls := range d.st.loads {
		if ls != 0 && ls&^on == 0 {
			out |= 1 << l
		}
	}
	return out
}

// access steps the analysis over a at loc (fence: what a does as a fence,
// atomicFence) and returns the deps of its store (0 if it stores nothing).
func (d *depAnalysis) access(a *litmus.Access, fence litmus.Op, loc int) memory.LocSet {
	info := a.Op.Info()
	d.raw = 0
	switch {
	case info.Fence:
		if fence == litmus.OpMb {
			d.st.loads = [memory.MaxLocations]uint64{}
		}
		return 0
	case info.Reads && !info.Writes:
		// An acquire load is ordered before every later event: it is no
		// load a store must depend on. Its value still carries the
		// dependency on it.
		b := d.number()
		if a.Op != litmus.OpLoadAcquire {
			b = d.load(loc)
		}
		if a.Reg != "" {
			d.st.taint[a.Reg] = b
		}
		return 0
	case !info.Reads && info.Writes:
		d.raw = d.deps(a.Val)
		return told(info, d.raw, loc)
	}
	// A read-modify-write: its store depends on what its value comes from.
	deps := d.deps(a.Val)
	d.raw = deps
	vt := d.regs(a.Val)
	if info.Order == litmus.Mb && !a.Op.IsCmpxchg() {
		d.st.loads = [memory.MaxLocations]uint64{}
	}
	b := d.load(loc)
	if a.Reg != "" {
		t := b
		if a.Op.ReturnsNew() {
			t |= vt
		}
		d.st.taint[a.Reg] = t
	}
	return told(info, deps, loc)
}

// told is what memory.LKMM is told a store to loc depends on: nothing
// for a fully ordered or a release access (memory orders it after every
// earlier load of its thread and reads no dependency), and no load of
// loc itself (coherence orders that one; memory masks it anyway). A
// memory without stores that need telling runs without UseOrderings.
func told(info litmus.Info, deps memory.LocSet, loc int) memory.LocSet {
	if info.Order == litmus.Mb || info.Order == litmus.Release {
		return 0
	}
	if loc >= 0 {
		deps &^= 1 << loc
	}
	return deps
}

// markReadBack keeps the compiler's rdeps (every location a store
// depends on) only where memory.LKMM needs them: on a store its thread
// may read back (a load of its location follows it on some path). A load
// that reads it is ordered after the loads the store depends on, of its
// own location too and for a release as well ((dep ; [Marked] ; rfi) is
// in linux-kernel.cat's to-r), which told leaves out. A fully ordered
// RMW orders what follows it anyway. Elsewhere rdeps is 0, so that a
// memory that needs no ReadsBack stays smaller.
func markReadBack(code []instr) {
	for p := range code {
		in := &code[p]
		raw := in.rdeps // the compiler's, before this pass
		in.rdeps = 0
		if raw == 0 || in.access == nil || in.access.Op.Info().Order == litmus.Mb {
			continue
		}
		if walkFrom(code, p, func(j instr) walkStep {
			if j.access != nil && j.loc == in.loc && j.access.Op.Info().Reads {
				return walkFound
			}
			return walkOn
		}) {
			in.rdeps = raw
		}
	}
}

func (d *depAnalysis) assign(a *litmus.Assign) { d.st.taint[a.Reg] = d.regs(a.Val) }

// label enters a label: the weakest state, the one that says no store
// depends on anything, whatever paths the gotos to it bring. Fewer
// dependencies is the sound direction (memory.LKMM orders a store after
// the loads it is told it depends on; one it is not told of is refused,
// never placed too early). So:
//
//   - taint: no register depends on any load (a goto's path may have set
//     it from another load, or from none);
//   - ctrl: no enclosing condition is known to have been tested (a goto
//     may come from outside the if or loop the label is in);
//   - loads: every location holds poisonBit, a load no register's taint
//     or ctrl can name (number never hands it out), as a loop's head does
//     for what it loads (loopBack): a goto's path may have loaded any
//     location, with a load no bit numbers here, and a backward goto's
//     loop runs the loads after the label again under the same bits. No
//     store depends on a location until an smp_mb (or a fully ordered
//     RMW) starts its loads afresh; the loads after that are numbered
//     past every bit the state held at the label, so a taint or ctrl
//     from before the label (an if's ctrl, which join restores after an
//     arm the label is in) cannot cover them either.
//
// The state is the same whatever it was before, so a loop whose body has
// a label still settles (loopBack only adds poisonBit, once).
func (d *depAnalysis) label() {
	for r := range d.st.taint {
		d.st.taint[r] = 0
	}
	d.st.ctrl = 0
	for l := range d.st.loads {
		d.st.loads[l] = 1 << poisonBit
	}
}

// branch enters the first arm of an if on cond and returns the state
// before the if.
func (d *depAnalysis) branch(cond litmus.Expr) depState {
	before := d.st.clone()
	d.st.ctrl |= d.regs(cond)
	return before
}

// otherArm ends the first arm of the if that branch entered and enters the
// second (empty if the if has no else), returning the state at the end of
// the first.
func (d *depAnalysis) otherArm(before depState, cond litmus.Expr) depState {
	first := d.st
	d.st = before.clone()
	d.st.ctrl |= d.regs(cond)
	return first
}

// join meets the ends of an if's two arms, given the state before the if
// and at the end of the first arm; ctrl is restored from before the if.
func (d *depAnalysis) join(before, first depState) {
	for r, t := range d.st.taint {
		d.st.taint[r] = t & first.taint[r] // a register neither arm set keeps its taint in both
	}
	for r := range first.taint {
		if _, ok := d.st.taint[r]; !ok {
			d.st.taint[r] = 0
		}
	}
	for l := range d.st.loads {
		d.st.loads[l] |= first.loads[l]
	}
	d.st.ctrl = before.ctrl
}

func (s depState) clone() depState {
	c := s
	c.taint = make(map[string]uint64, len(s.taint))
	for r, t := range s.taint {
		c.taint[r] = t
	}
	return c
}

// DependentStores counts the stores in t's code (plain, or the store of a
// read-modify-write) that memory.LKMM is told depend on loads of other
// locations: the ones the dependency lets through. 0 if memory.LKMM does
// not run t.
func DependentStores(t *litmus.Test) int {
	sys, err := compile(memory.LKMM, t)
	if err != nil {
		return 0
	}
	n := 0
	for _, code := range sys.code {
		for _, in := range code {
			if in.deps != 0 && in.deps&^(1<<in.loc) != 0 {
				n++
			}
		}
	}
	return n
}

// meet is the state where paths from a and b meet (ctrl from a): a
// register depends on the loads it depends on on both, a location's
// loads are those of either.
func meet(a, b depState) depState {
	out := a.clone()
	for r, t := range out.taint {
		out.taint[r] = t & b.taint[r]
	}
	for r := range b.taint {
		if _, ok := out.taint[r]; !ok {
			out.taint[r] = 0
		}
	}
	for l := range out.loads {
		out.loads[l] |= b.loads[l]
	}
	return out
}

// loopBack is the state at a loop's head after one more iteration that
// ended in back, the loop entered in entry: their meet, where every
// location loaded inside the loop (a load entry does not have) also holds
// poisonBit, since the load of an earlier iteration is not the one a
// register holds now.
func loopBack(entry, back depState) depState {
	out := meet(entry, back)
	for l := range out.loads {
		if back.loads[l]&^entry.loads[l] != 0 {
			out.loads[l] |= 1 << poisonBit
		}
	}
	out.ctrl = entry.ctrl
	return out
}

// equal reports whether two states are the same.
func (s depState) equal(o depState) bool {
	if s.ctrl != o.ctrl || s.loads != o.loads || len(s.taint) != len(o.taint) {
		return false
	}
	for r, t := range s.taint {
		if u, ok := o.taint[r]; !ok || u != t {
			return false
		}
	}
	return true
}

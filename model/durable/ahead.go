package durable

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// Running ahead of loads: load buffering under memory.LKMM.
//
// memory.LKMM runs each thread in program order, which is exact unless a
// store must propagate before an earlier load of its thread is satisfied
// (load buffering: LKMM lets a store go before a load it is not ordered
// after). Here a thread may leave a plain load pending and run ahead of
// it, and satisfy the load later; the memory sees the thread's events in
// the order they run, which is a program order of its own: the same events,
// with the pending load moved after what ran ahead of it. Every ordering of
// the source order is kept in that order, so the run is one LKMM allows:
//
//   - A pending load is satisfied before anything ordered after it runs:
//     an instruction that reads its register (a data dependency, the value
//     of a store or an RMW), a store in the arms of an if whose condition
//     read it (a control dependency), an access to its location
//     (coherence), smp_mb, smp_rmb, a release that is not left pending
//     (below), a fully ordered RMW, and everything the durability checker
//     adds (device calls, completions, checks). A load may be satisfied
//     before an acquire it preceded: that orders the two, which only takes
//     outcomes away.
//   - A release (a release store, spin_unlock, a release RMW other than
//     cmpxchg) orders what came before it and nothing after: where a
//     store may follow it, it is left pending too, after the loads
//     pending before it (deferRelease; a release RMW's own read with it).
//     Those loads and the release run on a fork of the thread in memory
//     (memory.Memory.Fork), which the thread takes in (Join) and the
//     release ends (Free), so that the release carries nothing of what
//     ran ahead of it. One release per thread at a time.
//   - Assignments and ifs that read a pending register run ahead on a
//     guess: an assignment keeps its registers' sources (the entry), an if
//     takes both ways. When the load is satisfied the entries are
//     evaluated with its value: a run whose guess was wrong ends there.
//     Where a guessed if decides whether an instruction runs (path, up to
//     its immediate post-dominator) assignments hold their value only
//     under the guess. A store in the if's arms waits for it (LKMM's
//     control dependency); one after an arm that returned does not (LKMM
//     orders nothing there: tools/memory-model "Weaken ctrl dependency
//     definition in explanation.txt") and runs on the guess: what it
//     writes rests on the guess until its load is satisfied
//     (threadAhead.spec, opSystem.speculating). Device calls and checks
//     of the thread wait for every guess (they are ordered after its
//     loads), and nothing is judged while a store rests on a guess: a
//     crash image, the final condition and a failed check are judged
//     where the guesses are borne out by the stores already made (a
//     failed check of another thread waits there for those satisfactions
//     alone). A crash cuts a run in real time: a load the run ahead rests
//     on reads a store made before the crash.

// What it finds: a store that ran ahead of a pending load has propagated
// before that load reads, so another thread can read it and make the store
// the load reads (LB and its kin). The model still refuses
// (memory.ErrUnordered) a store after a load that could not be left
// pending (one satisfied because something above forced it, or with no
// room left), unless it is ordered after it: there load buffering is not
// covered. A load that ran at its place while it could have been left
// pending is memory.Memory.LoadCovered: the run that leaves it pending
// covers the store that follows.
//
// Each thread holds at most maxPend pending accesses (loads, RMWs, a
// release) and maxLog guessed entries; beyond, the load runs at its
// place, not covered.

const (
	maxPend = 3  // pending accesses per thread
	maxLog  = 16 // guessed assignments and ifs per thread
)

// An entry is an assignment or if that ran ahead on a guess: its
// instruction, the way an if went, and the registers it read: regs where
// src is 0, else the item that makes them (aheadItem).
type aheadEntry struct {
	pc   uint8
	dir  uint8  // an if: 1 taken (the condition held), 0 not
	ctrl uint16 // an assignment in what guessed ifs control: those ifs' entries (bit j)
	regs [MaxRegs]int16
	src  [MaxRegs]uint8
}

// threadAhead is one thread's pending loads and guesses. Items are
// numbered from 1: pending load k is item k+1, entry j item maxPend+1+j.
type threadAhead struct {
	nLoad, nLog uint8
	loads       [maxPend]uint8          // the pending loads' instructions, oldest first
	lregs       [maxPend][MaxRegs]int16 // a pending RMW's: the registers when it was left pending (its operands)
	stored      uint8                   // bit k: a store ran ahead of pending load k
	spec        uint16                  // the entries (bit j) of the guessed ifs a store that ran on their path rests on
	// A pending release (deferRelease): relK is one more than its
	// index among the pending accesses (0: none), which are then, before
	// it, the loads it orders (run by its fork, memory thread slot) and,
	// after it, those that ran ahead of it.
	relK, slot uint8
	// fwd is one more than the index of a pending acquire that reads the
	// pending release's store (forward): right after the release, on its
	// fork, when the release runs (0: none).
	fwd uint8
	log [maxLog]aheadEntry
	src [MaxRegs]uint8 // per register: 0 it holds its value, else the item that makes it
	// Loads satisfied because the instruction about to run is ordered
	// after them (a dependency, a control dependency) are covered
	// (memory.Memory.LoadCovered) until it has run (coverNext, locations),
	// or while the thread stays in what the if coverBr[i]-1 controls
	// (coverMask[i]); then memory.Memory.Uncover (afterStep).
	coverNext memory.LocSet
	coverBr   [maxCover]uint8
	coverMask [maxCover]memory.LocSet
}

// maxCover bounds the ifs whose control keeps loads covered.
const maxCover = 4

// How a forced satisfaction covers its load (satisfy).
const (
	coverNone  = iota // forced by what orders nothing after it: not covered
	coverStep         // forced by the next instruction's dependency on it
	coverScope        // forced by a control dependency of what an if controls
	coverKeep         // forced where another run leaves it pending past what follows (forward)
)

func loadItem(k int) uint8  { return uint8(k + 1) }
func entryItem(j int) uint8 { return uint8(maxPend + 1 + j) }

// aheadTables intern the threads' states and their tuples: opState.ahead
// names a tuple, 0 when no thread has a pending load.
type aheadTables struct {
	mu     sync.Mutex
	thIDs  map[threadAhead]uint32
	th     []threadAhead
	tupIDs map[[memory.MaxThreads]uint32]uint32
	tup    [][memory.MaxThreads]uint32
}

func newAheadTables() *aheadTables {
	return &aheadTables{
		thIDs: map[threadAhead]uint32{{}: 0}, th: []threadAhead{{}},
		tupIDs: map[[memory.MaxThreads]uint32]uint32{{}: 0}, tup: [][memory.MaxThreads]uint32{{}},
	}
}

func (a *aheadTables) thread(id uint32, t int) threadAhead {
	if id == 0 {
		return threadAhead{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.th[a.tup[id][t]]
}

func (a *aheadTables) put(id uint32, t int, ta threadAhead) uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	tid, ok := a.thIDs[ta]
	if !ok {
		tid = uint32(len(a.th))
		a.th = append(a.th, ta)
		a.thIDs[ta] = tid
	}
	tup := a.tup[id]
	tup[t] = tid
	return a.tupID(tup)
}

// tupID interns tup (a.mu held).
func (a *aheadTables) tupID(tup [memory.MaxThreads]uint32) uint32 {
	nid, ok := a.tupIDs[tup]
	if !ok {
		nid = uint32(len(a.tup))
		a.tup = append(a.tup, tup)
		a.tupIDs[tup] = nid
	}
	return nid
}

// permute gives the tuple id after renaming threads: thread i of the
// result is thread threads[i] of id.
func (a *aheadTables) permute(id uint32, threads *[memory.MaxThreads]int) uint32 {
	if id == 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var tup [memory.MaxThreads]uint32
	for i := range tup {
		tup[i] = a.tup[id][threads[i]]
	}
	return a.tupID(tup)
}

// masked is regs with only the registers in m (bit i) kept: what an
// instruction reads, so that a snapshot holds nothing a dead register
// would make differ.
func masked(regs [MaxRegs]int16, src [MaxRegs]uint8, m uint64) ([MaxRegs]int16, [MaxRegs]uint8) {
	for r := range regs {
		if m&(1<<r) == 0 {
			regs[r], src[r] = 0, 0
		}
	}
	return regs, src
}

// readRegs is the registers (bit i) instruction in of thread t reads.
func (s *opSystem) readRegs(t int, in instr) uint64 {
	var m uint64
	exprsOf([]instr{in}, func(e litmus.Expr) {
		e.Regs(func(r string) { m |= 1 << s.regs[t][r] })
	})
	return m
}

// pending reports whether thread t has a pending load in st.
func (s *opSystem) pending(st opState, t int) bool {
	return st.ahead != 0 && s.ahead.thread(st.ahead, t).nLoad > 0
}

// anyPending reports whether some thread has a pending load in st.
func (s *opSystem) anyPending(st opState) bool {
	if st.ahead == 0 {
		return false
	}
	for t := range s.code {
		if s.ahead.thread(st.ahead, t).nLoad > 0 {
			return true
		}
	}
	return false
}

// speculating reports whether a store some thread made in st rests on a
// guess not yet borne out (threadAhead.spec): nothing is judged there.
func (s *opSystem) speculating(st opState) bool {
	if st.ahead == 0 {
		return false
	}
	for t := range s.code {
		if s.ahead.thread(st.ahead, t).spec != 0 {
			return true
		}
	}
	return false
}

// condPending reports whether the final condition reads a register that
// a pending load of its thread has yet to set: a crash is not judged
// there (the state where the load is satisfied is).
func (s *opSystem) condPending(st opState) bool {
	if st.ahead == 0 {
		return false
	}
	for t := range s.code {
		ta := s.ahead.thread(st.ahead, t)
		for r, it := range ta.src {
			if it != 0 && s.condRegs[t]&(1<<r) != 0 {
				return true
			}
		}
	}
	return false
}

// afterStep ends the covers of thread t's loads that its step (the
// instruction at pc) to n ended (coverNext; coverBr once n is outside
// what the if controls). After a full barrier there is nothing left to
// uncover: the barrier ordered those loads before everything after it,
// and a cover mark of their location is a later load's.
func (s *opSystem) afterStep(n opState, t, pc int) opState {
	if n.ahead == 0 {
		return n
	}
	ta := s.ahead.thread(n.ahead, t)
	if ta.coverNext == 0 && ta.coverBr[0] == 0 {
		return n
	}
	x := ta
	if pc < len(s.code[t]) && fullBarrier(s.code[t][pc]) {
		x.coverNext, x.coverBr, x.coverMask = 0, [maxCover]uint8{}, [maxCover]memory.LocSet{}
		s.putAhead(&n, t, x)
		return n
	}
	n.mem.Uncover(t, x.coverNext)
	x.coverNext = 0
	k := 0
	for i := 0; i < maxCover && ta.coverBr[i] != 0; i++ {
		if br := int(ta.coverBr[i]) - 1; s.arms[t][br].has(int(n.pc[t])) {
			x.coverBr[k], x.coverMask[k] = ta.coverBr[i], ta.coverMask[i]
			k++
		} else {
			n.mem.Uncover(t, ta.coverMask[i])
		}
	}
	for ; k < maxCover; k++ {
		x.coverBr[k], x.coverMask[k] = 0, 0
	}
	s.putAhead(&n, t, x)
	return n
}

// itemLoads is the pending loads (bit k) item it depends on.
func (ta *threadAhead) itemLoads(it uint8) uint8 {
	if it == 0 {
		return 0
	}
	if it <= maxPend {
		return 1 << (it - 1)
	}
	e := &ta.log[it-maxPend-1]
	var m uint8
	for _, src := range e.src {
		if src != 0 && src < it {
			m |= ta.itemLoads(src)
		}
	}
	for j := 0; j < maxLog; j++ {
		if e.ctrl&(1<<j) != 0 {
			m |= ta.itemLoads(entryItem(j))
		}
	}
	return m
}

// taintMask is the pending loads (bit k) that the registers in reads
// depend on: those it is ordered after by a dependency.
func (s *opSystem) taintMask(ta *threadAhead, t int, in instr) uint8 {
	if ta.nLoad == 0 {
		return 0
	}
	var m uint8
	exprsOf([]instr{in}, func(e litmus.Expr) {
		e.Regs(func(r string) {
			if in.kind == iAwait && r == in.access.Reg {
				return // a wait_event's condition reads what its own load sets
			}
			m |= ta.itemLoads(ta.src[s.regs[t][r]])
		})
	})
	return m
}

// guessedIfs is the entries (bit j) of the ifs that ran on a guess and
// hold pc in their sets (path: decide whether it runs; arms: their arms).
func (s *opSystem) guessedIfs(ta *threadAhead, t, pc int, sets [][]*pcSet) uint16 {
	var m uint16
	for j := 0; j < int(ta.nLog); j++ {
		if e := ta.log[j]; s.code[t][e.pc].kind == iBranch && sets[t][e.pc].has(pc) {
			m |= 1 << j
		}
	}
	return m
}

// entriesLoads is the pending loads (bit k) the entries m depend on.
func (ta *threadAhead) entriesLoads(m uint16) uint8 {
	var out uint8
	for j := 0; j < int(ta.nLog); j++ {
		if m&(1<<j) != 0 {
			out |= ta.itemLoads(entryItem(j))
		}
	}
	return out
}

// pathEntries is the entries of the ifs that ran on a guess and decide
// whether pc runs.
func (s *opSystem) pathEntries(ta *threadAhead, t, pc int) uint16 {
	return s.guessedIfs(ta, t, pc, s.path)
}

// armsMask is the pending loads (bit k) that the conditions of the ifs
// that ran on a guess and hold pc in their arms depend on: those a store
// at pc is ordered after by a control dependency.
func (s *opSystem) armsMask(ta *threadAhead, t, pc int) uint8 {
	return ta.entriesLoads(s.guessedIfs(ta, t, pc, s.arms))
}

// pathMask is the pending loads (bit k) that the conditions of the ifs
// that ran on a guess and decide whether pc runs depend on.
func (s *opSystem) pathMask(ta *threadAhead, t, pc int) uint8 {
	return ta.entriesLoads(s.guessedIfs(ta, t, pc, s.path))
}

// locMask is t's pending accesses (bit k) of loc.
func (s *opSystem) locMask(ta *threadAhead, t, loc int) uint8 {
	var m uint8
	for k := 0; k < int(ta.nLoad); k++ {
		if s.code[t][ta.loads[k]].loc == loc {
			m |= 1 << k
		}
	}
	return m
}

// rmwMask is t's pending RMWs (bit k), whose stores smp_wmb orders.
func (s *opSystem) rmwMask(ta *threadAhead, t int) uint8 {
	var m uint8
	for k := 0; k < int(ta.nLoad); k++ {
		if s.code[t][ta.loads[k]].access.Op.IsRMW() {
			m |= 1 << k
		}
	}
	return m
}

// eligible reports whether pending access k may be satisfied: no older
// pending access has its location (coherence keeps them in order).
func (s *opSystem) eligible(ta *threadAhead, t, k int) bool {
	if k == int(ta.relK)-1 {
		return k == 0 // a release after the loads it orders
	}
	in := s.code[t][ta.loads[k]]
	for i := 0; i < k; i++ {
		if s.code[t][ta.loads[i]].loc == in.loc {
			return false
		}
	}
	return true
}

// pcSet is a set of a thread's instructions (at most 256).
type pcSet [4]uint64

func (b *pcSet) has(pc int) bool {
	return b != nil && pc >= 0 && pc < 256 && b[pc>>6]&(1<<(pc&63)) != 0
}
func (b *pcSet) add(pc int) { b[pc>>6] |= 1 << (pc & 63) }

// and is the instructions in both b and c.
func (b *pcSet) and(c *pcSet) pcSet {
	var out pcSet
	for w := range b {
		out[w] = b[w] & c[w]
	}
	return out
}

// min is the first instruction in b, or -1 if it is empty.
func (b pcSet) min() int {
	for w, x := range b {
		if x != 0 {
			return w*64 + bits.TrailingZeros64(x)
		}
	}
	return -1
}

// computeScopes finds, per if (branch) of each thread, the instructions
// it controls: those some path from it reaches before its immediate
// post-dominator, the first instruction every path from it meets (the
// thread's end included). In an if with two arms that fall through, those
// are the arms; after an arm that returns or leaves by a goto or break,
// the code up to where the paths meet again, which runs only when the
// condition went the other way. And per instruction whether a store may
// follow it.
func (s *opSystem) computeScopes() {
	s.path = make([][]*pcSet, len(s.code))
	s.arms = make([][]*pcSet, len(s.code))
	s.aheadKind = make([][]uint8, len(s.code))
	s.relUseful = make([][]bool, len(s.code))
	s.markReaders = make([][]memory.LocSet, len(s.code))
	s.exposed = make([][]pcSet, len(s.code))
	s.reach = make([][]pcSet, len(s.code))
	s.writesFrom = make([][]memory.LocSet, len(s.code))
	s.barrierLanes = make([][]memory.LocSet, len(s.code))
	for t, code := range s.code {
		n := len(code)
		succ := func(p int) []int { return nextPCs(code, p) }
		// Post-dominators, as sets over 0..n (n: the end).
		pdom := make([]pcSet, n+1)
		var all pcSet
		for i := 0; i <= n; i++ {
			all.add(i)
		}
		for i := 0; i < n; i++ {
			pdom[i] = all
		}
		pdom[n].add(n)
		for changed := true; changed; {
			changed = false
			for p := n - 1; p >= 0; p-- {
				x := all
				for _, q := range succ(p) {
					for w := range x {
						x[w] &= pdom[q][w]
					}
				}
				x.add(p)
				if x != pdom[p] {
					pdom[p], changed = x, true
				}
			}
		}
		s.path[t] = make([]*pcSet, n)
		for p, in := range code {
			if in.kind != iBranch {
				continue
			}
			sc := &pcSet{}
			stack := succ(p)
			for len(stack) > 0 {
				q := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if q == n || q != p && pdom[p].has(q) || sc.has(q) {
					continue
				}
				sc.add(q)
				stack = append(stack, succ(q)...)
			}
			s.path[t][p] = sc
		}
		// The arms of each if statement: LKMM's control dependency
		// reaches their instructions only (linux-kernel.cat's ctrl, as
		// the reference's events have it), not what follows an arm that
		// returns; a loop's test has none here.
		s.arms[t] = make([]*pcSet, n)
		for p, in := range code {
			if in.kind != iBranch || in.end <= p || in.end > n {
				continue
			}
			a := &pcSet{}
			for q := p + 1; q < in.end; q++ {
				a.add(q)
			}
			s.arms[t][p] = a
		}
		// Per instruction: the locations (bit l) whose marks (what the
		// thread loaded there since its last barrier: memory's unord,
		// covered, cond) a store may read from it on before a full
		// barrier forgets them: a store that is neither a release nor
		// fully ordered reads those of every location but its own
		// (whether it is ordered after those loads, by a dependency it is
		// told of or a cover, and so where it goes in co); spin_unlock,
		// spin_lock and a completion read all.
		s.markReaders[t] = make([]memory.LocSet, n+1)
		allLocs := memory.LocSet(1)<<len(s.test.Locs) - 1
		for changed := true; changed; {
			changed = false
			for p := n - 1; p >= 0; p-- {
				in := code[p]
				var v memory.LocSet
				kill := false
				switch {
				case fullBarrier(in):
					kill = true
				case in.kind == iCompletion:
					v = allLocs
				case in.kind == iAccess:
					op := in.access.Op
					info := op.Info()
					switch {
					case op == litmus.OpSpinUnlock || op == litmus.OpSpinLock:
						v = allLocs
					case !info.Writes || op == litmus.OpStoreRelease || info.Order == litmus.Release:
					default:
						v = allLocs &^ (1 << in.loc)
					}
				}
				if !kill {
					for _, q := range succ(p) {
						if q < n {
							v |= s.markReaders[t][q]
						}
					}
				}
				if v != s.markReaders[t][p] {
					s.markReaders[t][p], changed = v, true
				}
			}
		}
		s.barrierLanes[t] = barrierLanes(code, allLocs)
		// Per instruction: the locations a store at it or after it
		// writes (a read-modify-write, spin_lock and spin_unlock, a
		// completion included), and what a path from it reaches before a
		// full barrier.
		s.writesFrom[t] = make([]memory.LocSet, n+1)
		for changed := true; changed; {
			changed = false
			for p := n - 1; p >= 0; p-- {
				in := code[p]
				var v memory.LocSet
				if in.access != nil && (in.kind == iAccess || in.kind == iCompletion) && in.access.Op.Info().Writes {
					v = 1 << in.loc
				}
				for _, q := range succ(p) {
					v |= s.writesFrom[t][q]
				}
				if v != s.writesFrom[t][p] {
					s.writesFrom[t][p], changed = v, true
				}
			}
		}
		// What a path from an instruction reaches before what orders
		// every later event after every earlier one: a full barrier, or a
		// spin_unlock (the instruction itself included) and then a
		// spin_lock of any lock (po-unlock-lock-po, in ppo).
		s.reach[t] = make([]pcSet, n)
		isOp := func(in instr, op litmus.Op) bool {
			return in.kind == iAccess && in.access != nil && in.access.Op == op
		}
		for p := range code {
			if fullBarrier(code[p]) {
				continue // what follows is ordered after what precedes
			}
			r := &s.reach[t][p]
			type node struct {
				pc       int
				unlocked bool
			}
			seen := map[node]bool{}
			var stack []node
			for _, q := range succ(p) {
				stack = append(stack, node{q, isOp(code[p], litmus.OpSpinUnlock)})
			}
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if x.pc >= n || seen[x] || fullBarrier(code[x.pc]) {
					continue
				}
				seen[x] = true
				r.add(x.pc) // a lock's own store is not ordered after the unlock's earlier events
				if x.unlocked && isOp(code[x.pc], litmus.OpSpinLock) {
					continue
				}
				for _, q := range succ(x.pc) {
					stack = append(stack, node{q, x.unlocked || isOp(code[x.pc], litmus.OpSpinUnlock)})
				}
			}
		}
		// Per release: whether a store can follow it before what would
		// satisfy a pending release (a barrier, another release, a lock,
		// an access of its location, a device call or check): only then
		// is leaving it pending useful (deferRelease).
		s.relUseful[t] = make([]bool, n)
		for p, in := range code {
			if !deferrableRelease(in) {
				continue
			}
			s.relUseful[t][p] = walkFrom(code, p, func(j instr) walkStep {
				switch j.kind {
				case iAssign, iBranch, iJump, iNop:
				case iAwait:
					if j.loc == in.loc {
						return walkCut
					}
				case iAccess:
					info := j.access.Op.Info()
					if j.loc == in.loc && forwardable(in, j) {
						return walkOn // it may read the release's store with it (forward)
					}
					if info.Fence || j.loc == in.loc || j.access.Op == litmus.OpSpinLock || j.access.Op == litmus.OpSpinUnlock ||
						j.access.Op == litmus.OpStoreRelease || j.access.Op.IsRMW() && (info.Order == litmus.Mb || info.Order == litmus.Release) {
						return walkCut
					}
					if info.Writes {
						return walkFound
					}
				default:
					return walkCut // a device call, completion or check
				}
				return walkOn
			})
		}
		// How a load runs (aheadKind): left pending where a store that
		// does not depend on it (deps.go's data and control dependencies)
		// can follow it before an instruction that would satisfy it
		// anyway (a stop); elsewhere at its place, covered when no such
		// store follows it on any path before smp_mb, a fully ordered RMW
		// or its thread's end (past stops too: a stop orders the load
		// before itself, not before the stores after it), so that no
		// store can be seen before the load is satisfied.
		stop := func(in instr, loc int) bool {
			switch in.kind {
			case iAccess:
				op := in.access.Op
				info := op.Info()
				switch {
				case info.Fence:
					return in.fence == litmus.OpRmb
				case op == litmus.OpStoreRelease || op == litmus.OpSpinUnlock:
					return true
				case op.IsRMW() && (info.Order == litmus.Mb || info.Order == litmus.Release):
					return true
				case info.Writes && in.loc == loc:
					return true // coherence orders it after the load
				}
				return false
			case iAssign, iBranch, iJump, iAwait, iNop:
				return false
			}
			return true // a device call, completion or check
		}
		regsOf := func(in instr) uint64 { return s.readRegs(t, in) }
		_, defs := regUseDef(code, s.regs[t])
		s.aheadKind[t] = make([]uint8, n)
		s.exposed[t] = make([]pcSet, n)
		type node struct {
			pc     int
			taint  uint64 // registers that hold a value computed from the load
			active pcSet  // the ifs on such registers that control pc
			past   bool   // a stop lies between the load and pc
			rel    bool   // a release lies between them (one may be left pending: deferRelease)
		}
		for p, in := range code {
			if !deferrableOp(in) && !releaseRMW(in) {
				continue
			}
			var start uint64
			if in.access.Reg != "" {
				start = 1 << s.regs[t][in.access.Reg]
			}
			seen := map[node]bool{}
			// sawStop: a path passes a stop; needCover: a store that
			// depends on the load is not told so (deps.go's per
			// location rule misses it, another load of the location
			// being one it does not depend on).
			useful, exposed, sawStop, needCover := false, false, false, false
			var stack []node
			for _, q := range succ(p) {
				stack = append(stack, node{pc: q, taint: start})
			}
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if x.pc >= n {
					continue
				}
				var act pcSet // the ifs that still control x.pc
				for b := 0; b < n; b++ {
					if x.active.has(b) && s.arms[t][b].has(x.pc) {
						act.add(b)
					}
				}
				x.active = act
				if seen[x] {
					continue
				}
				seen[x] = true
				j := code[x.pc]
				if fullBarrier(j) {
					continue
				}
				if !x.rel && !x.past && in.access.Op == litmus.OpReadOnce && j.loc == in.loc && orderedAcquire(j) {
					// An acquire of its location orders what follows
					// after the load, or reads what the load reads
					// (stepAhead's plainLoads): nothing past it is seen
					// first. Not past a stop: a store of the thread to
					// the location between, which the acquire may read
					// (rfi), would order nothing.
					continue
				}
				taint := x.taint
				past, rel := x.past, x.rel
				switch {
				case !rel && j.kind == iAccess && s.relUseful[t][x.pc] && deferrableRelease(j):
					// A release the load may stay pending past: left
					// pending with it (deferRelease).
					rel = true
					taint &^= defs[x.pc]
				case !past && !rel && releaseRMW(in) && forwardable(in, j):
					// It may read the release's store, left pending with
					// it (forward): what it returns holds the load's
					// value.
					if r := j.access.Reg; r != "" {
						taint |= 1 << s.regs[t][r]
					}
				case stop(j, in.loc):
					// Ordered after the load itself (a release, an
					// access of its location), or no store: what it
					// sets holds no value of the load.
					past = true
					sawStop = true
					taint &^= defs[x.pc]
				case j.kind == iAssign:
					r := uint64(1) << s.regs[t][j.assign.Reg]
					if regsOf(j)&x.taint != 0 || act != (pcSet{}) {
						taint |= r
					} else {
						taint &^= r
					}
				case j.kind == iBranch && regsOf(j)&x.taint != 0:
					act.add(x.pc)
				case j.kind == iAccess && j.access.Op.Info().Writes:
					if regsOf(j)&x.taint == 0 && act == (pcSet{}) {
						// a store that does not depend on the load
						exposed = true
						s.exposed[t][p].add(x.pc)
						useful = useful || !past
					} else if j.deps&(1<<in.loc) == 0 {
						needCover = true
					}
					if r := j.access.Reg; r != "" {
						taint &^= 1 << s.regs[t][r]
					}
				case (j.kind == iAccess || j.kind == iAwait) && j.access.Reg != "":
					taint &^= 1 << s.regs[t][j.access.Reg]
				}
				for _, q := range succ(x.pc) {
					stack = append(stack, node{pc: q, taint: taint, active: act, past: past, rel: rel})
				}
			}
			switch {
			case useful:
				s.aheadKind[t][p] = aheadLeave
			case !exposed && (!sawStop || needCover):
				// Covered at its place: nothing can be seen before
				// it. Past a stop only where memory needs telling
				// (a cover splits states that are otherwise one).
				s.aheadKind[t][p] = aheadOrdered
			}
		}
	}
}

// What walkFrom does at an instruction.
type walkStep uint8

const (
	walkOn    walkStep = iota // go on past it
	walkCut                   // go no further on this path
	walkFound                 // stop: found
)

// walkFrom visits each instruction a path from p reaches (p excluded,
// unless a loop comes back to it) once, and reports whether visit found
// one (walkFound).
func walkFrom(code []instr, p int, visit func(instr) walkStep) bool {
	seen := make([]bool, len(code))
	stack := nextPCs(code, p)
	for len(stack) > 0 {
		q := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if q >= len(code) || seen[q] {
			continue
		}
		seen[q] = true
		switch visit(code[q]) {
		case walkFound:
			return true
		case walkOn:
			stack = append(stack, nextPCs(code, q)...)
		}
	}
	return false
}

// nextPCs is successors as a list, a target outside the code (an
// unpatched return) taken as the thread's end.
func nextPCs(code []instr, p int) []int {
	var out []int
	successors(code, p, func(q int) {
		if q < 0 || q > len(code) {
			q = len(code)
		}
		out = append(out, q)
	})
	return out
}

// stepAhead yields thread t's successors for in when it has pending loads
// (ta): in runs ahead of them if nothing orders it after them, else one
// of those it is ordered after is satisfied first (forced): the oldest,
// or an older one of its location.
func (s *opSystem) stepAhead(st opState, t int, in instr, ta threadAhead, yield func(explore.Label, opState)) {
	pc := int(st.pc[t])
	all := uint8(1)<<ta.nLoad - 1
	force := func(m uint8, mode int, br int) {
		k := 0
		for m&(1<<k) == 0 {
			k++
		}
		need := k
		for !s.eligible(&ta, t, k) {
			if k == int(ta.relK)-1 {
				k = 0 // the loads before a pending release first
				continue
			}
			in := s.code[t][ta.loads[k]]
			for i := 0; i < k; i++ {
				if s.code[t][ta.loads[i]].loc == in.loc {
					k = i
					break
				}
			}
		}
		s.satisfyForced(st, t, k, need, mode, br, yield)
	}
	// forceAll: an instruction ordered after every pending access (a
	// release, smp_mb, smp_rmb, a device call) satisfies them first, one
	// by one, each covered until the instruction has run: the stores in
	// between are those of the pending RMWs, and each of those has a
	// run where it ran ahead instead of being left pending (deferLoad's
	// sibling). Past the instruction the loads are not covered: a store
	// after a release may still be seen before them.
	forceAll := func() { force(all, coverStep, 0) }
	switch in.kind {
	case iJump:
		s.step0(st, t, in, yield)
		return
	case iAssign:
		// In what an if that ran on a guess controls, an assignment's
		// value holds only if the guess does: it waits for it too.
		ctl := s.pathEntries(&ta, t, pc)
		dep := s.taintMask(&ta, t, in) | s.pathMask(&ta, t, pc)
		if dep == 0 {
			s.step0(st, t, in, func(lb explore.Label, n opState) {
				x := ta
				x.src[s.regs[t][in.assign.Reg]] = 0
				s.putAhead(&n, t, x)
				yield(lb, n)
			})
			return
		}
		if in.arith || ta.nLog == maxLog {
			if data := s.taintMask(&ta, t, in); data != 0 {
				force(data, coverStep, 0)
			} else {
				force(dep, coverNone, 0) // it only runs on the guess: no ordering
			}
			return
		}
		n := st
		n.pc[t]++
		x := ta
		j := int(x.nLog)
		x.log[j] = aheadEntry{pc: uint8(pc), ctrl: ctl}
		x.log[j].regs, x.log[j].src = masked(st.regs[t], ta.src, s.readRegs(t, in))
		x.nLog++
		r := s.regs[t][in.assign.Reg]
		x.src[r] = entryItem(j)
		n.regs[t][r] = 0
		s.putAhead(&n, t, x)
		yield(explore.Label{Kind: kindGuess}, n)
		return
	case iBranch:
		dep := s.taintMask(&ta, t, in)
		if dep == 0 {
			s.step0(st, t, in, func(lb explore.Label, n opState) {
				s.putAhead(&n, t, ta)
				yield(lb, n)
			})
			return
		}
		if in.arith || ta.nLog == maxLog {
			if s.arms[t][pc] != nil {
				force(dep, coverScope, pc)
			} else {
				force(dep, coverNone, 0)
			}
			return
		}
		for _, dir := range []uint8{1, 0} {
			n := st
			x := ta
			j := int(x.nLog)
			x.log[j] = aheadEntry{pc: uint8(pc), dir: dir}
			x.log[j].regs, x.log[j].src = masked(st.regs[t], ta.src, s.readRegs(t, in))
			x.nLog++
			if dir == 0 {
				n.pc[t] = uint8(in.target)
			} else {
				n.pc[t]++
			}
			s.putAhead(&n, t, x)
			yield(explore.Label{Kind: kindGuess, Arg: uint16(dir)}, n)
		}
		return
	case iAccess:
	case iAwait:
		if deferrableOp(in) {
			break // a wait_event's plain load: as READ_ONCE below
		}
		forceAll()
		return
	default:
		forceAll() // a durability instruction: device calls, waits, checks
		return
	}
	op := in.access.Op
	info := op.Info()
	room := ta.nLoad < maxPend
	if dep := s.taintMask(&ta, t, in); dep != 0 {
		force(dep, coverStep, 0)
		return
	}
	// A release left pending runs after every access pending before it
	// (on its fork, in program order), so it may be left pending where it
	// is ordered after them by a control dependency or coherence too:
	// their guesses are borne out, and their location's accesses made,
	// before it runs.
	relOK := deferrableRelease(in) && s.relUseful[t][pc] && s.releaseSlot(st, t, in, ta) >= 0
	if pe := s.pathEntries(&ta, t, pc); pe != 0 {
		// A memory access where an if that ran on a guess decides
		// whether it runs. A store in the if's arms is ordered after the
		// load by the control dependency: the guess is borne out first
		// (the load stays covered while the thread is in them), or, a
		// release, it is left pending after the load. Elsewhere
		// (after an arm that returned) nothing orders the two: it runs on
		// the guess, as it would after the if, and what it writes rests
		// on the guess (spec) until the guess is borne out.
		if am := s.armsMask(&ta, t, pc); am != 0 && info.Writes && !relOK {
			force(am, coverScope, -1)
			return
		}
		if info.Writes {
			inner := yield
			yield = func(lb explore.Label, n opState) {
				if lb.Kind != kindDefer && lb.Kind != kindLate && n.fault.kind == 0 {
					x := s.ahead.thread(n.ahead, t)
					x.spec |= pe
					s.putAhead(&n, t, x)
				}
				inner(lb, n)
			}
		}
	}
	if at := s.locMask(&ta, t, in.loc); at != 0 {
		// Coherence orders it after the pending access of its location:
		// it waits its turn as one more pending, or forces.
		if deferrableOp(in) && room {
			s.deferLoad(st, t, ta, yield)
			return
		}
		if relOK {
			s.deferRelease(st, t, s.releaseSlot(st, t, in, ta), ta, yield)
			return
		}
		if s.canForward(st, t, in, ta) {
			// It reads the pending release's store (forward), or a
			// later one once the release has run: then the release and
			// what it orders are satisfied first, covered, since the run
			// that forwards has what follows run before them.
			s.forward(st, t, ta, yield)
			force(at, coverKeep, 0)
			return
		}
		if orderedAcquire(in) && s.plainLoads(&ta, t, at) {
			// An acquire after plain loads of its location: a load that
			// reads the store the acquire reads orders nothing the
			// acquire does not, and one that reads an older store is
			// ordered before it ((fre ; rfe) & int is prop & int, in
			// hb; with a store of the thread's own between, that store
			// forced it), so before what the acquire orders. Either way
			// satisfying them first loses no run: covered.
			force(at, coverKeep, 0)
			return
		}
		force(at, coverStep, 0)
		return
	}
	switch {
	case op == litmus.OpReadOnce:
		if !room {
			force(all, coverNone, 0)
			return
		}
		s.deferLoad(st, t, ta, yield)
		s.runLoad(st, t, in, ta, true, yield)
	case op == litmus.OpLoadAcquire:
		s.runLoad(st, t, in, ta, false, yield)
	case info.Fence:
		switch {
		case in.fence == litmus.OpMb || in.fence == litmus.OpRmb:
			forceAll()
			return
		case in.fence == litmus.OpWmb && ta.relK != 0:
			forceAll() // it orders the pending release before later stores
			return
		case in.fence == litmus.OpWmb && s.rmwMask(&ta, t) != 0:
			force(s.rmwMask(&ta, t), coverStep, 0)
			return
		}
		s.step0(st, t, in, func(lb explore.Label, n opState) {
			s.putAhead(&n, t, ta)
			yield(lb, n)
		})
	case op == litmus.OpSpinLock && ta.relK != 0:
		forceAll() // a lock after an unlock orders what came before (po-unlock-lock-po)
	case op == litmus.OpSpinLock:
		s.step0(st, t, in, func(lb explore.Label, n opState) {
			s.putAhead(&n, t, ta)
			yield(lb, n)
		})
	case op == litmus.OpWriteOnce, op.IsRMW() && info.Order == litmus.Acquire:
		s.runStore(st, t, in, ta, false, yield)
	case deferrableOp(in): // an unordered RMW
		if !room {
			force(all, coverNone, 0)
			return
		}
		s.deferLoad(st, t, ta, yield)
		s.runStore(st, t, in, ta, true, yield)
	default:
		// release stores, spin_unlock, fully ordered RMWs: ordered
		// after the pending accesses. A release is left pending with
		// them where it can be (deferRelease): what follows it may run
		// before them.
		if s.relUseful[t][pc] {
			if v := s.releaseSlot(st, t, in, ta); v >= 0 {
				s.deferRelease(st, t, v, ta, yield)
				return
			}
		}
		forceAll()
	}
}

// releaseSlot is the memory thread a fork of t may take to run the
// release in and the loads before it later (deferRelease), or -1: in is
// a release store, spin_unlock or a release RMW other than cmpxchg, no
// release of t is pending, there is room for one more pending access and
// a thread slot memory does not use.
func (s *opSystem) releaseSlot(st opState, t int, in instr, ta threadAhead) int {
	if s.ahead == nil || ta.relK != 0 || ta.nLoad >= maxPend || !deferrableRelease(in) {
		return -1
	}
	for v := len(s.code); v < memory.MaxThreads; v++ {
		if st.mem.Forked(v) < 0 {
			return v
		}
	}
	return -1
}

// deferRelease leaves t's release at its pc pending, after the accesses
// pending before it, on a fork of t in memory thread v
// (memory.Memory.Fork): what follows it runs ahead on t, not ordered
// after it, and the release runs on the fork once the loads before it
// are satisfied there, carrying what t did before it and nothing after
// (its fork then joins t). The loads before it may be satisfied at once
// (the run where the release runs at its place).
func (s *opSystem) deferRelease(st opState, t, v int, ta threadAhead, yield func(explore.Label, opState)) {
	// t's barrier after a fully ordered RMW, if pending, completes
	// before the fork (in every order, as the release would complete
	// it).
	for _, c := range st.mem.Settle(t) {
		n := st
		n.mem = c.Mem
		s.deferReleaseSettled(n, t, v, ta, uint16(c.Alt), yield)
	}
}

// deferReleaseSettled is deferRelease once t's barrier has completed
// (alt: in which order).
func (s *opSystem) deferReleaseSettled(st opState, t, v int, ta threadAhead, alt uint16, yield func(explore.Label, opState)) {
	pc := int(st.pc[t])
	in := s.code[t][pc]
	n := st
	n.pc[t]++
	n.mem = st.mem.Fork(t, v, in.access.Op == litmus.OpSpinUnlock)
	x := ta
	k := int(x.nLoad)
	x.loads[k] = uint8(pc)
	x.lregs[k], _ = masked(st.regs[t], [MaxRegs]uint8{}, s.readRegs(t, in))
	x.stored = 1<<k - 1
	x.nLoad++
	x.relK, x.slot = uint8(k+1), uint8(v)
	if r := in.access.Reg; r != "" && in.access.Op.Info().Reads {
		ri := s.regs[t][r]
		x.src[ri] = loadItem(k)
		n.regs[t][ri] = 0
	}
	s.putAhead(&n, t, x)
	yield(explore.Label{Kind: kindDefer, Alt: alt}, n)
}

// forwardable reports whether access j, which follows release rel in
// program order at rel's location, may read rel's store while rel is
// left pending (forward): an acquire load or acquire RMW after a release
// store or release RMW. The read is rfi, which LKMM orders after nothing
// (the release's read before it is not; linux-kernel.cat: rfi is in no
// ppo term without a dependency), and reading its thread's own store it
// takes in no message view, so with the release left pending what
// follows j runs before them both. Reading a store co-after rel's from
// another thread instead would order rel before j ((coe ; rfe) & int is
// prop & int, in hb), and the in-order run has that.
func forwardable(rel, j instr) bool {
	if j.kind != iAccess || j.access == nil || rel.access == nil || j.loc != rel.loc {
		return false
	}
	if op := rel.access.Op; op != litmus.OpStoreRelease && !releaseRMW(rel) {
		return false
	}
	return acquireOp(j.access.Op)
}

// acquireOp reports whether op's read is an acquire: smp_load_acquire
// or an _acquire RMW.
func acquireOp(op litmus.Op) bool {
	return op == litmus.OpLoadAcquire || op.IsRMW() && op.Info().Order == litmus.Acquire
}

// orderedAcquire reports whether in is an acquire whose read orders
// what follows in every run: smp_load_acquire, an acquire RMW other than
// a cmpxchg (one that fails reads plainly), or a retry loop's acquire
// cmpxchg (markRetries: its failures can be left out).
func orderedAcquire(in instr) bool {
	if in.kind != iAccess || in.access == nil {
		return false
	}
	op := in.access.Op
	return acquireOp(op) && (!op.IsCmpxchg() || in.retry)
}

// plainLoads reports whether t's pending accesses m (bit k) are plain
// loads (READ_ONCE, a wait_event's load) on t itself, not on a release's
// fork: no store of theirs an acquire could read.
func (s *opSystem) plainLoads(ta *threadAhead, t int, m uint8) bool {
	for k := 0; k < int(ta.nLoad); k++ {
		if m&(1<<k) == 0 {
			continue
		}
		if k < int(ta.relK) || s.code[t][ta.loads[k]].access.Op != litmus.OpReadOnce {
			return false
		}
	}
	return true
}

// canForward reports whether t's access in, an access of the location of
// a pending access, may read t's pending release's store (forward): in
// is an acquire of the release's location (forwardable), the release is
// the newest pending access and no acquire is forwarded yet, nothing ran
// on t since its fork (so in runs on the fork as it would on t), and no
// guessed if decides whether it runs.
func (s *opSystem) canForward(st opState, t int, in instr, ta threadAhead) bool {
	rel := int(ta.relK) - 1
	if rel < 0 || ta.fwd != 0 || int(ta.nLoad) != rel+1 || ta.nLoad >= maxPend {
		return false
	}
	if !forwardable(s.code[t][ta.loads[rel]], in) || s.pathEntries(&ta, t, int(st.pc[t])) != 0 {
		return false
	}
	return st.mem.ForkCurrent(t, int(ta.slot))
}

// forward leaves t's acquire at its pc pending after its pending release
// of the same location, to read the release's store when it runs
// (satisfy): what follows runs ahead of both.
func (s *opSystem) forward(st opState, t int, ta threadAhead, yield func(explore.Label, opState)) {
	s.deferLoad(st, t, ta, func(_ explore.Label, n opState) {
		x := s.ahead.thread(n.ahead, t)
		x.fwd = x.nLoad // the access deferLoad added, plus one
		s.putAhead(&n, t, x)
		yield(explore.Label{Kind: kindForward}, n)
	})
}

// fullBarrier reports whether in orders every earlier access of its
// thread before every later one: smp_mb, a fully ordered RMW that cannot
// fail.
func fullBarrier(in instr) bool {
	if in.kind != iAccess {
		return false
	}
	op := in.access.Op
	info := op.Info()
	return info.Fence && in.fence == litmus.OpMb ||
		op.IsRMW() && info.Order == litmus.Mb && !(op.IsCmpxchg() && !in.retry)
}

// barrierLanes returns, per instruction of code (and its end), the
// locations (bit l) whose views nothing reads before a full barrier
// takes them in: on every path from the instruction, the thread reaches
// a full barrier that comes before any read (smp_mb, an unconditional
// fully ordered RMW), or its end (where it is dropped, DropReader), before
// it accesses l. What reads every view conservatively stops the walk for
// all locations: an acquire or release, a spin lock, smp_rmb and
// smp_wmb, a completion (memory.RaiseToBarrier, which is what uses it,
// acts only on memories without them anyway). A path that loops for
// ever without either reads nothing either: the greatest fixpoint,
// from every location at every instruction.
func barrierLanes(code []instr, all memory.LocSet) []memory.LocSet {
	n := len(code)
	out := make([]memory.LocSet, n+1)
	for p := range out {
		out[p] = all
	}
	for changed := true; changed; {
		changed = false
		for p := n - 1; p >= 0; p-- {
			in := code[p]
			if barrierFirst(in) {
				continue // stays all
			}
			v := all
			for _, q := range nextPCs(code, p) {
				v &= out[min(q, n)]
			}
			v &^= viewsRead(in, all)
			if v != out[p] {
				out[p], changed = v, true
			}
		}
	}
	return out
}

// barrierFirst reports whether in is a full barrier (fullBarrier) that
// takes the thread's views in before it reads anything: smp_mb, unless a
// mutation weakens it (memory.MbTakesIn), or a fully ordered
// read-modify-write that always stores (a cmpxchg, even one retried until
// it succeeds, may first fail, and a failure is a plain read with no
// barrier).
func barrierFirst(in instr) bool {
	if in.kind != iAccess || in.access == nil || !fullBarrier(in) || in.access.Op.IsCmpxchg() {
		return false
	}
	return !in.access.Op.Info().Fence || memory.MbTakesIn()
}

// viewsRead is the locations (bit l) whose views of its thread in may
// read (barrierLanes): its own location for a plain or unordered access
// or a cmpxchg's failed read, every location for what orders more.
func viewsRead(in instr, all memory.LocSet) memory.LocSet {
	switch in.kind {
	case iAccess, iAwait:
	case iCompletion:
		return all
	default:
		return 0 // registers, branches, device commands, checks, wake_up
	}
	if in.access == nil {
		return all
	}
	op := in.access.Op
	info := op.Info()
	switch {
	case info.Fence:
		// As the step runs it: smp_rmb and smp_wmb take views in or
		// pass them on; smp_mb is a barrier; the others (atomic fences
		// away from an RMW, refused or no-ops) touch no view.
		if in.fence == litmus.OpRmb || in.fence == litmus.OpWmb {
			return all
		}
		return 0
	case op == litmus.OpSpinLock || op == litmus.OpSpinUnlock,
		info.Order == litmus.Acquire || info.Order == litmus.Release:
		return all
	case in.loc < 0:
		return all
	}
	return 1 << in.loc
}

// deferrableOp reports whether in may be left pending: a plain load or
// an unordered RMW. Not a release RMW: what ran ahead of it would be
// ordered before its store, which it is not in program order (a store
// that follows it may propagate first; found by the differential test).
func deferrableOp(in instr) bool {
	if in.kind == iAwait {
		return in.access.Op == litmus.OpReadOnce // a wait_event's load: satisfied when the condition holds
	}
	if in.kind != iAccess || in.access == nil {
		return false
	}
	op := in.access.Op
	return op == litmus.OpReadOnce || op.IsRMW() && op.Info().Order == litmus.Once
}

// releaseRMW reports whether in is a release RMW that may be left
// pending with its read (deferRelease): not a cmpxchg, whose failure
// orders nothing.
func releaseRMW(in instr) bool {
	if in.kind != iAccess || in.access == nil {
		return false
	}
	op := in.access.Op
	return op.IsRMW() && op.Info().Order == litmus.Release && !op.IsCmpxchg()
}

// deferrableRelease reports whether in is a release that may be left
// pending (deferRelease): a release store, spin_unlock or releaseRMW.
func deferrableRelease(in instr) bool {
	if in.kind != iAccess || in.access == nil {
		return false
	}
	op := in.access.Op
	return op == litmus.OpStoreRelease || op == litmus.OpSpinUnlock || releaseRMW(in)
}

// step0 is opSystem.step without running ahead.
func (s *opSystem) step0(st opState, t int, in instr, yield func(explore.Label, opState)) {
	s.stepIn(st, t, in, false, yield)
}

// runStore runs a store or RMW ahead of t's pending loads; covered: an
// RMW that could have been left pending.
func (s *opSystem) runStore(st opState, t int, in instr, ta threadAhead, covered bool, yield func(explore.Label, opState)) {
	s.stepIn(st, t, in, covered, func(lb explore.Label, n opState) {
		x := ta
		x.stored = 1<<x.nLoad - 1
		if r := in.access.Reg; r != "" && in.access.Op.Info().Reads {
			x.src[s.regs[t][r]] = 0
		}
		s.putAhead(&n, t, x)
		yield(lb, n)
	})
}

// runLoad runs a load at its place while t has pending loads; covered
// when it could have been left pending.
func (s *opSystem) runLoad(st opState, t int, in instr, ta threadAhead, covered bool, yield func(explore.Label, opState)) {
	s.stepIn(st, t, in, covered, func(lb explore.Label, n opState) {
		x := ta
		if r := in.access.Reg; r != "" {
			x.src[s.regs[t][r]] = 0
		}
		s.putAhead(&n, t, x)
		yield(lb, n)
	})
}

// deferLoad leaves t's load or RMW at its pc pending.
func (s *opSystem) deferLoad(st opState, t int, ta threadAhead, yield func(explore.Label, opState)) {
	pc := int(st.pc[t])
	in := s.code[t][pc]
	n := st
	n.pc[t]++
	x := ta
	k := int(x.nLoad)
	x.loads[k] = uint8(pc)
	x.lregs[k] = [MaxRegs]int16{}
	if in.access.Op.IsRMW() || in.kind == iAwait {
		x.lregs[k], _ = masked(st.regs[t], [MaxRegs]uint8{}, s.readRegs(t, in)) // its operands, what its condition reads
	}
	x.stored &^= 1 << k
	x.nLoad++
	if r := in.access.Reg; r != "" {
		ri := s.regs[t][r]
		x.src[ri] = loadItem(k)
		n.regs[t][ri] = 0
	}
	s.putAhead(&n, t, x)
	yield(explore.Label{Kind: kindDefer}, n)
}

// How a load runs when its thread has none pending (computeScopes).
const (
	aheadPlace   = iota // at its place, not covered
	aheadOrdered        // at its place, covered: every store that may follow it before smp_mb depends on it
	aheadLeave          // left pending, or at its place covered
)

// aheadSteps yields t's satisfactions of its pending accesses where
// nothing forces them: each one no older access of its location waits
// for, after a store ran ahead of it (before that, the run that ran it at
// its place has the same outcomes), or at the thread's end.
func (s *opSystem) aheadSteps(st opState, t int, yield func(explore.Label, opState)) {
	if st.ahead == 0 {
		return
	}
	ta := s.ahead.thread(st.ahead, t)
	end := int(st.pc[t]) >= len(s.code[t])
	for k := 0; k < int(ta.nLoad); k++ {
		if (end || ta.stored&(1<<k) != 0 || k == int(ta.relK)-1) && s.eligible(&ta, t, k) {
			s.satisfy(st, t, k, true, nil, yield)
		}
	}
}

// satisfyForced satisfies t's pending access k because the instruction
// at its pc needs pending access need (k itself, or a later one of k's
// location, which coherence keeps after it): covered as mode says, for
// that instruction (coverStep) or for what the if br controls
// (coverScope; br < 0: the ifs that ran on a guess, depend on need and
// control pc). An older access of need's location may be covered with
// it: what is ordered after need cannot be what k reads from (k reads a
// store no newer than need's, and need is satisfied before it).
func (s *opSystem) satisfyForced(st opState, t, k, need, mode, br int, yield func(explore.Label, opState)) {
	ta := s.ahead.thread(st.ahead, t)
	pc := int(st.pc[t])
	loc := memory.LocSet(1) << s.code[t][ta.loads[k]].loc
	var brs []int
	if mode == coverScope && br >= 0 {
		brs = append(brs, br)
	}
	if mode == coverScope && br < 0 {
		for j := 0; j < int(ta.nLog); j++ {
			e := ta.log[j]
			if s.code[t][e.pc].kind == iBranch && s.arms[t][e.pc].has(pc) && ta.itemLoads(entryItem(j))&(1<<need) != 0 {
				brs = append(brs, int(e.pc))
			}
		}
	}
	if k != need && need == int(ta.fwd)-1 {
		// need reads the pending release's store (forward), rfi, which
		// orders nothing: what is ordered after it is not after the
		// release and the loads before it (found by the differential
		// test): not covered.
		mode = coverNone
	}
	if k != need && s.code[t][ta.loads[k]].access.Op.IsRMW() {
		// An RMW before need's load of its location: that load may read
		// the RMW's own store, which orders nothing after the RMW's read
		// (rfi is in no ordering; found by the differential test): not
		// covered.
		mode = coverNone
	}
	// An if ran on a guess of k's value, and the instruction forcing k
	// may run only where the guess holds (in what the if decides, its
	// arms included), or only with the pending accesses or guesses the
	// guessed way left (no room). If k then reads a value that fails the
	// guess, the run ends; the runs with the other guess have k pending
	// past the stores that follow, but read k's value as the other way.
	// So the runs where k reads, this way, a store made after such a
	// store of its thread, which LKMM allows where nothing orders that
	// store after k, are in no run: there, where such a store follows and
	// k's location may still be stored to, the run is refused (late), not
	// ended. (Where the instruction runs either way with room, the run
	// with the other guess is forced there too and goes on: a store that
	// follows is refused there anyway.)
	var late func(lb explore.Label)
	if ta.entriesLoads(1<<ta.nLog-1)&(1<<k) != 0 {
		if at := s.lateStore(st, t, k, pc); at >= 0 {
			why := lateRoom
			if ta.entriesLoads(s.pathEntries(&ta, t, pc))&(1<<k) != 0 {
				why = lateGuess
			}
			late = func(lb explore.Label) {
				n := st
				n.fault = fault{kind: faultUnordered, thread: uint8(t), pc: uint8(at), locs: loc, at: uint8(pc), late: why}
				yield(lb, n)
			}
		}
	}
	s.satisfy(st, t, k, mode != coverNone, late, func(lb explore.Label, n opState) {
		if (mode == coverStep || mode == coverScope) && n.fault.kind == 0 {
			x := s.ahead.thread(n.ahead, t)
			if mode == coverStep || !x.addCover(brs, loc) {
				x.coverNext |= loc // no room: covered for the next step only
			}
			s.putAhead(&n, t, x)
		}
		yield(lb, n)
	})
}

// lateStore is a store of t, not ordered after t's pending access k,
// that may follow pc before a full barrier, where k's location may still
// be stored to (by a thread's instruction not yet run, or an access left
// pending); else -1. k reading, after that store, a store made later
// is a run of LKMM (satisfyForced).
func (s *opSystem) lateStore(st opState, t, k, pc int) int {
	ta := s.ahead.thread(st.ahead, t)
	lpc := int(ta.loads[k])
	first := s.exposed[t][lpc].and(&s.reach[t][pc]).min()
	if first < 0 {
		return -1
	}
	loc := memory.LocSet(1) << s.code[t][lpc].loc
	for u := range s.code {
		var w memory.LocSet
		ua := s.ahead.thread(st.ahead, u)
		for i := 0; i < int(ua.nLoad); i++ {
			if in := s.code[u][ua.loads[i]]; (u != t || i != k) && in.access != nil && in.access.Op.Info().Writes {
				w |= 1 << in.loc // an access left pending
			}
		}
		if u != t { // what t stores after k, coherence orders after it
			w |= s.writesFrom[u][min(int(st.pc[u]), len(s.code[u]))]
		}
		if w&loc != 0 {
			return first
		}
	}
	return -1
}

// addCover keeps loc covered while the thread stays in what the ifs brs
// control; false if there is no room.
func (ta *threadAhead) addCover(brs []int, loc memory.LocSet) bool {
	x := *ta
	for _, br := range brs {
		i := 0
		for i < maxCover && x.coverBr[i] != 0 && int(x.coverBr[i]) != br+1 {
			i++
		}
		if i == maxCover {
			return false
		}
		x.coverBr[i] = uint8(br + 1)
		x.coverMask[i] |= loc
	}
	*ta = x
	return len(brs) > 0
}

// satisfy satisfies t's pending load or RMW k: covered when nothing
// forced it (a later store that is not ordered after it has a run where
// it ran ahead). It runs as at its place (an RMW with the operands it
// had there); a run whose guesses the value read contradicts ends.
// A release with an acquire forwarded from it (forward) runs with it:
// right after it on its fork, the acquire reads only the release's store
// (memory.Memory.Pin), and the fork then joins t and ends; both values
// are resolved as when each is satisfied alone.
func (s *opSystem) satisfy(st opState, t, k int, covered bool, late func(explore.Label), yield func(explore.Label, opState)) {
	ta := s.ahead.thread(st.ahead, t)
	pc := int(ta.loads[k])
	in := s.code[t][pc]
	at := st
	at.pc[t], at.regs[t] = uint8(pc), ta.lregs[k]
	mt, rel := t, int(ta.relK)-1
	if k <= rel {
		mt = int(ta.slot) // a load before the pending release, or the release: on its fork
	}
	regOf := func(in instr, r opState) int64 {
		if reg := in.access.Reg; reg != "" {
			return int64(r.regs[t][s.regs[t][reg]])
		}
		return 0
	}
	failed := func(lb explore.Label, r opState, pc int) {
		n := st
		n.mem, n.fault = r.mem, r.fault
		n.fault.thread, n.fault.pc = uint8(t), uint8(pc)
		yield(lb, n)
	}
	s.stepInAs(at, t, mt, in, covered, func(lb explore.Label, r opState) {
		lb.Kind, lb.ID = kindLate, uint16(pc)
		if r.fault.kind != 0 {
			failed(lb, r, pc)
			return
		}
		v := regOf(in, r)
		// finish ends the step with memory mem and, fwd, the forwarded
		// acquire's value fv.
		finish := func(mem memory.Memory, fwd bool, fv int64) {
			n := st
			n.mem = mem
			if mt != t {
				// t takes in what the fork did; the release ends it.
				unlock := s.code[t][ta.loads[rel]].access.Op == litmus.OpSpinUnlock
				n.mem = n.mem.Join(t, mt, unlock, k == rel)
				if k == rel {
					n.mem = n.mem.Free(mt)
				}
			}
			x, regs, fk := s.resolve(ta, t, k, v, st.regs[t])
			if fwd && fk == faultOK {
				// The release's entry is gone: the acquire is now
				// pending access fwd-2.
				x, regs, fk = s.resolve(x, t, int(ta.fwd)-2, fv, regs)
			}
			if fk == faultNone {
				if late != nil {
					late(lb)
				}
				return
			}
			if in.access.Op.Info().Writes {
				// An RMW left pending on the path of an if that ran on a
				// guess: its store rests on what is not borne out yet.
				x.spec |= s.guessedIfs(&x, t, pc, s.path)
			}
			n.regs[t] = regs
			s.putAhead(&n, t, x)
			if fk != faultOK {
				n.fault = fault{kind: fk, thread: uint8(t), pc: uint8(pc)}
			}
			yield(lb, n)
		}
		if k != rel || ta.fwd == 0 {
			finish(r.mem, false, 0)
			return
		}
		f := int(ta.fwd) - 1
		fpc := int(ta.loads[f])
		fin := s.code[t][fpc]
		fat := st
		fat.pc[t], fat.regs[t] = uint8(fpc), ta.lregs[f]
		fat.mem = r.mem.Pin(mt, fin.loc)
		// Its read is its own store's, which it may read whenever it
		// runs: covered.
		s.stepInAs(fat, t, mt, fin, true, func(_ explore.Label, fr opState) {
			switch {
			case fr.fault.kind != 0:
				failed(lb, fr, fpc)
			case fin.retry && s.failedCmpxchg(t, fin, ta.lregs[f], regOf(fin, fr)):
				// A retry loop's failed pass (markRetries), which
				// every execution can do without: the runs where the
				// loop's next cmpxchg is the first after the release
				// (forwarded, or at its place after it) have its
				// outcomes.
			default:
				finish(fr.mem, true, regOf(fin, fr))
			}
		})
	})
}

// failedCmpxchg reports whether thread t's cmpxchg in, run with
// registers regs, failed having read old.
func (s *opSystem) failedCmpxchg(t int, in instr, regs [MaxRegs]int16, old int64) bool {
	e, err := in.access.Expect.Eval(func(_ int, name string) int64 { return int64(regs[s.regs[t][name]]) }, nil)
	if err != nil {
		panic(err) // compile checked every expression
	}
	return old != e
}

// Label kinds of running ahead (a thread's steps).
const (
	kindDefer   uint8 = iota + 16 // a load left pending
	kindGuess                     // an assignment or if that ran on a guess: Arg is the if's way
	kindLate                      // a pending load or RMW satisfied: ID is its instruction, Arg and Alt as at its place
	kindForward                   // an acquire left pending to read its thread's pending release's store
)

// resolve's outcomes besides a fault kind.
const (
	faultNone uint8 = 0xff // a guess was wrong: no run
	faultOK   uint8 = 0    // resolved
)

// resolve gives t's ahead state and registers after its pending access
// k read v: the entries that depend only on what is known are evaluated,
// an if's against its guess.
func (s *opSystem) resolve(ta threadAhead, t, k int, v int64, regs [MaxRegs]int16) (threadAhead, [MaxRegs]int16, uint8) {
	var val [maxPend + maxLog + 1]int64
	var known [maxPend + maxLog + 1]bool
	val[loadItem(k)], known[loadItem(k)] = v, true
	for j := 0; j < int(ta.nLog); j++ {
		e := ta.log[j]
		in := s.code[t][e.pc]
		ok := true
		get := func(_ int, name string) int64 {
			r := s.regs[t][name]
			if it := e.src[r]; it != 0 {
				if !known[it] {
					ok = false
					return 0
				}
				return val[it]
			}
			return int64(e.regs[r])
		}
		var x int64
		var err error
		if in.kind == iAssign {
			x, err = in.assign.Val.Eval(get, nil)
		} else {
			x, err = in.cond.Eval(get, nil)
		}
		for c := 0; c < maxLog; c++ {
			if e.ctrl&(1<<c) != 0 && !known[entryItem(c)] {
				ok = false // its if's guess is not borne out yet
			}
		}
		if !ok {
			continue
		}
		if err != nil {
			panic(err) // compile checked every expression; arith ones are not guessed
		}
		if in.kind == iAssign {
			if !fits16(x) {
				return ta, regs, faultRegister
			}
		} else if (x != 0) != (e.dir == 1) {
			return ta, regs, faultNone
		}
		it := entryItem(j)
		val[it], known[it] = x, true
	}
	// Renumber what is left.
	var renum [maxPend + maxLog + 1]uint8
	out := threadAhead{coverNext: ta.coverNext, coverBr: ta.coverBr, coverMask: ta.coverMask}
	for i := 0; i < int(ta.nLoad); i++ {
		if i == k {
			continue
		}
		if i == int(ta.relK)-1 {
			out.relK, out.slot = out.nLoad+1, ta.slot
		}
		if i == int(ta.fwd)-1 {
			out.fwd = out.nLoad + 1
		}
		renum[loadItem(i)] = loadItem(int(out.nLoad))
		out.loads[out.nLoad], out.lregs[out.nLoad] = ta.loads[i], ta.lregs[i]
		if ta.stored&(1<<i) != 0 {
			out.stored |= 1 << out.nLoad
		}
		out.nLoad++
	}
	for j := 0; j < int(ta.nLog); j++ {
		if !known[entryItem(j)] {
			renum[entryItem(j)] = entryItem(int(out.nLog))
			if ta.spec&(1<<j) != 0 {
				out.spec |= 1 << out.nLog
			}
			out.log[out.nLog] = ta.log[j]
			out.nLog++
		}
	}
	fix := func(src *[MaxRegs]uint8, rs *[MaxRegs]int16) {
		for r, it := range src {
			if it == 0 {
				continue
			}
			if known[it] {
				rs[r], src[r] = int16(val[it]), 0
			} else {
				src[r] = renum[it]
			}
		}
	}
	for j := 0; j < int(out.nLog); j++ {
		fix(&out.log[j].src, &out.log[j].regs)
		var ctl uint16
		for c := 0; c < maxLog; c++ {
			if out.log[j].ctrl&(1<<c) != 0 && !known[entryItem(c)] {
				ctl |= 1 << (renum[entryItem(c)] - entryItem(0))
			}
		}
		out.log[j].ctrl = ctl
	}
	out.src = ta.src
	fix(&out.src, &regs)
	if out.nLoad == 0 {
		if out.nLog != 0 {
			panic("durable: guesses left with no pending load")
		}
		out = threadAhead{coverNext: ta.coverNext, coverBr: ta.coverBr, coverMask: ta.coverMask}
	}
	return out, regs, faultOK
}

// putAhead sets t's ahead state in n.
func (s *opSystem) putAhead(n *opState, t int, ta threadAhead) {
	if s.ahead == nil {
		return
	}
	if n.ahead == 0 && ta == (threadAhead{}) {
		return
	}
	n.ahead = s.ahead.put(n.ahead, t, ta)
}

// describeAhead renders the steps of running ahead (kindDefer, kindGuess,
// kindLate) of instruction in; ok is false for other labels.
func (s *opSystem) describeAhead(t int, lb explore.Label) (string, bool) {
	switch lb.Kind {
	case kindDefer:
		in := s.code[t][lb.ID]
		return litmus.AccessText(in.access) + ": left pending (what follows may run before it)", true
	case kindGuess:
		in := s.code[t][lb.ID]
		if in.kind == iAssign {
			return fmt.Sprintf("%s = %s (from a pending load)", in.assign.Reg, litmus.CExpr(in.assign.Val)), true
		}
		if lb.Arg == 1 {
			return fmt.Sprintf("if (%s): taken (a guess, checked when its load is satisfied)", litmus.CExpr(in.cond)), true
		}
		return fmt.Sprintf("if (%s): not taken (a guess, checked when its load is satisfied)", litmus.CExpr(in.cond)), true
	case kindForward:
		in := s.code[t][lb.ID]
		return litmus.AccessText(in.access) + ": left pending, to read the store of its pending release (forwarded; what follows may run before both)", true
	case kindLate:
		at := lb
		at.Kind = kindValue
		if deferrableRelease(s.code[t][lb.ID]) {
			return s.Describe(at) + " (the pending release runs, after the loads it orders)", true
		}
		return s.Describe(at) + " (the pending access is satisfied)", true
	}
	return "", false
}

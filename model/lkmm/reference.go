package lkmm

import (
	"errors"
	"fmt"
	"sort"

	"github.com/flushproof/flushproof/model/litmus"
)

// ErrUnsupported says the reference refuses a test: a primitive it does
// not model, or a use of locks lock.cat flags. It wraps
// [litmus.ErrUnsupported], so a caller treats it as any model's refusal.
var ErrUnsupported = fmt.Errorf("lkmm: %w", litmus.ErrUnsupported)

// ErrTooLarge says a test is beyond the bounds the reference enumerates.
var ErrTooLarge = errors.New("lkmm: test too large to enumerate")

// The bounds of a test the reference enumerates.
const (
	MaxThreads = 4
	MaxLocs    = 4
	// MaxCandidates bounds the candidate executions (runs of the threads
	// combined, times rf and co choices) one test may have.
	MaxCandidates = 5_000_000
)

// Reference is the axiomatic Linux kernel memory model: the outcomes of a
// test are those of its candidate executions that satisfy the axioms of
// tools/memory-model/linux-kernel.cat. It implements [litmus.Model].
type Reference struct {
	// Candidates, if not 0, bounds the candidate executions of one test
	// instead of MaxCandidates (property tests keep each program cheap).
	Candidates int
	// InOrder keeps only the executions in which po | rf is acyclic: those
	// a machine running each thread in program order, each load reading a
	// store already made, can produce. The outcomes it drops need load
	// buffering (a load reading a store that depends on nothing the load
	// precedes, made later in program order).
	InOrder bool
}

// Name returns "LKMM-ref", the reference's one spelling in every
// command and doc (LKMM alone is memory.LKMM, the explorer's model;
// LKMM-op is Promise).
func (Reference) Name() string { return "LKMM-ref" }

// Outcomes returns every final state of t that some execution allowed by
// LKMM reaches, each once: every thread's registers (those its code
// assigns, 0 if never set on the path taken) and every location's final
// value (its co-last write; a spin lock is 0 free, 1 held). A test
// beyond the bounds, or using a construct the reference refuses (see the
// package doc and locks.go), is an error wrapping [ErrTooLarge] or
// [ErrUnsupported]. A test whose every execution deadlocks (a lock never
// released that another thread waits for, a lock taken twice) has no
// outcome: the result is empty, not an error.
func (r Reference) Outcomes(t *litmus.Test) ([]litmus.Outcome, error) {
	if err := litmus.MemoryOnly(t); err != nil {
		return nil, err
	}
	if err := t.Refuse(r.Name(), 0); err != nil {
		return nil, err
	}
	if len(t.Threads) > MaxThreads {
		return nil, fmt.Errorf("%s: %w: %d threads (at most %d)", t.Name, ErrTooLarge, len(t.Threads), MaxThreads)
	}
	locs := testLocs(t)
	if len(locs) > MaxLocs {
		return nil, fmt.Errorf("%s: %w: %d locations (at most %d)", t.Name, ErrTooLarge, len(locs), MaxLocs)
	}
	locks, err := lockLocs(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	runs, err := threadTraces(t, locs)
	if err != nil {
		return nil, fmt.Errorf("%s: running the threads: %w", t.Name, err)
	}
	e := &enumerator{test: t, locs: locs, locks: locks, runs: runs, found: map[string]litmus.Outcome{}, maxCandidates: MaxCandidates, inOrder: r.InOrder}
	if r.Candidates > 0 {
		e.maxCandidates = r.Candidates
	}
	if err := e.combos(0, make([]int, len(runs))); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	out := make([]litmus.Outcome, 0, len(e.found))
	for _, o := range e.found {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// testLocs lists the test's locations: t.Locs, then any other the initial
// state or the code names.
func testLocs(t *litmus.Test) []string {
	seen := map[string]bool{}
	var out []string
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range t.Locs {
		add(l)
	}
	var walk func([]litmus.Stmt)
	walk = func(body []litmus.Stmt) {
		for _, s := range body {
			if s.Access != nil {
				add(s.Access.Loc)
			}
			if s.If != nil {
				walk(s.If.Then)
				walk(s.If.Else)
			}
		}
	}
	for _, th := range t.Threads {
		walk(th.Body)
	}
	init := make([]string, 0, len(t.Init))
	for l := range t.Init {
		init = append(init, l)
	}
	sort.Strings(init)
	for _, l := range init {
		add(l)
	}
	return out
}

// enumerator walks the candidate executions of one test.
type enumerator struct {
	test       *litmus.Test
	locs       []string
	locks      map[string]bool // the locations used as spin locks
	runs       [][]trace
	candidates int
	// combinations counts the combinations of runs looked at (combos).
	combinations int
	// maxCandidates is Reference.Candidates or MaxCandidates.
	maxCandidates int
	found         map[string]litmus.Outcome
	inOrder       bool // Reference.InOrder
}

// combosPerCandidate bounds the combinations of runs combos looks at, as
// a multiple of the candidate bound: most fail readable at once, but a
// test whose reads have many values can have too many to look at.
const combosPerCandidate = 64

// combos picks one run per thread, then checks the candidate executions
// of that combination.
func (e *enumerator) combos(th int, pick []int) error {
	if th == len(e.runs) {
		e.combinations++
		if e.combinations > combosPerCandidate*e.maxCandidates {
			return fmt.Errorf("%w: more than %d combinations of the threads' runs", ErrTooLarge, combosPerCandidate*e.maxCandidates)
		}
		if !e.readable(pick) {
			return nil // some read has no write of its value: no candidate
		}
		return e.combination(pick)
	}
	for i := range e.runs[th] {
		pick[th] = i
		if err := e.combos(th+1, pick); err != nil {
			return err
		}
	}
	return nil
}

// readable reports whether every read of the picked runs (lock reads
// aside: locks.go gives them their writes) returns the initial value of
// its location or a value some picked run writes there. Most combinations
// of runs fail this, and combination would build all their relations
// before finding out; this check allocates nothing.
func (e *enumerator) readable(pick []int) bool {
	for th, i := range pick {
		for _, r := range e.runs[th][i].events {
			if r.kind != read || r.lock != 0 || r.val == e.test.Init[r.loc] {
				continue
			}
			if !e.written(pick, r.loc, r.val) {
				return false
			}
		}
	}
	return true
}

// written reports whether a picked run writes val to loc.
func (e *enumerator) written(pick []int, loc string, val int64) bool {
	for th, i := range pick {
		for _, w := range e.runs[th][i].events {
			if w.kind == write && w.lock == 0 && w.loc == loc && w.val == val {
				return true
			}
		}
	}
	return false
}

// combination builds the events of one run per thread and tries every rf
// (a write of the same location and value for each read) and every co
// (each location's writes in some order after its initial write).
func (e *enumerator) combination(pick []int) error {
	x := &execution{}
	locIdx := map[string]int{}
	for i, l := range e.locs {
		locIdx[l] = i
		x.events = append(x.events, event{thread: -1, kind: write, loc: l, val: e.test.Init[l], rmwRead: -1})
	}
	starts := make([]int, len(pick))
	regs := make([]map[string]int64, len(pick))
	for th, i := range pick {
		tr := e.runs[th][i]
		starts[th] = len(x.events)
		x.events = append(x.events, tr.events...)
		regs[th] = tr.regs
	}
	x.n = len(x.events)
	if x.n > maxEvents {
		return fmt.Errorf("%w: %d events (at most %d)", ErrTooLarge, x.n, maxEvents)
	}
	x.po, x.rmw, x.data, x.ctrl = newRel(x.n), newRel(x.n), newRel(x.n), newRel(x.n)
	for th := range pick {
		base := starts[th]
		evs := e.runs[th][pick[th]].events
		for i, ev := range evs {
			for j := i + 1; j < len(evs); j++ {
				x.po.add(base+i, base+j)
			}
			if ev.kind == write && ev.rmwRead >= 0 {
				x.rmw.add(base+ev.rmwRead, base+i)
			}
			for k := range evs {
				if ev.data&(1<<uint(k)) != 0 {
					x.data.add(base+k, base+i)
				}
				if ev.ctrl&(1<<uint(k)) != 0 {
					x.ctrl.add(base+k, base+i)
				}
			}
		}
	}

	// rf candidates: a write of the same location and value that is not
	// po-after the read (that would be a coherence cycle anyway). The
	// lock events' rf and co follow from the order the critical sections
	// take each lock (locks.go).
	var reads []int
	var rfChoices [][]int
	writesOf := make([][]int, len(e.locs))
	for i, ev := range x.events {
		switch {
		case ev.lock != 0:
		case ev.kind == write:
			if ev.thread >= 0 {
				writesOf[locIdx[ev.loc]] = append(writesOf[locIdx[ev.loc]], i)
			}
		case ev.kind == read:
			var ws []int
			for j, w := range x.events {
				if w.kind == write && w.loc == ev.loc && w.val == ev.val && !x.po.has(i, j) {
					ws = append(ws, j)
				}
			}
			if len(ws) == 0 {
				return nil // a value no write gives: no execution
			}
			reads = append(reads, i)
			rfChoices = append(rfChoices, ws)
		}
	}
	cos := make([][][]int, len(e.locs))
	sections := make([]lockSections, len(e.locs))
	for l, ws := range writesOf {
		if e.locks[e.locs[l]] {
			sections[l] = x.sections(e.locs[l])
			cos[l] = sections[l].orders(x.po)
			continue
		}
		cos[l] = orders(ws, x.po)
	}
	n := 1
	for _, c := range rfChoices {
		n *= len(c)
	}
	for _, c := range cos {
		n *= len(c)
	}
	e.candidates += n
	if e.candidates > e.maxCandidates {
		return fmt.Errorf("%w: more than %d candidate executions (%d threads, %d events)",
			ErrTooLarge, e.maxCandidates, len(pick), x.n)
	}

	coPick := make([]int, len(e.locs))
	var pickCo func(l int) error
	pickCo = func(l int) error {
		if l < len(e.locs) {
			for i := range cos[l] {
				coPick[l] = i
				if err := pickCo(l + 1); err != nil {
					return err
				}
			}
			return nil
		}
		mem := map[string]int64{}
		x.co = newRel(x.n)
		x.rfLock = newRel(x.n)
		for li, loc := range e.locs {
			if e.locks[loc] {
				mem[loc] = sections[li].place(x, li, cos[li][coPick[li]])
				continue
			}
			order := append([]int{li}, cos[li][coPick[li]]...) // initial write first
			for a := range order {
				for b := a + 1; b < len(order); b++ {
					x.co.add(order[a], order[b])
				}
			}
			mem[loc] = x.events[order[len(order)-1]].val
		}
		out := litmus.Outcome{Regs: regs, Mem: mem}
		key := out.Key()
		if _, ok := e.found[key]; ok {
			return nil // this outcome is already allowed
		}
		if e.someRF(x, reads, rfChoices, 0) {
			e.found[key] = out
		}
		return nil
	}
	return pickCo(0)
}

// someRF reports whether some choice of rf for reads[k:] makes x
// consistent.
func (e *enumerator) someRF(x *execution, reads []int, choices [][]int, k int) bool {
	if k == 0 {
		x.rf = x.rfLock.clone()
	}
	if k == len(reads) {
		if e.inOrder && !x.po.union(x.rf).acyclic() {
			return false
		}
		return x.consistent()
	}
	r := reads[k]
	for _, w := range choices[k] {
		x.rf[w] |= 1 << uint(r)
		ok := e.someRF(x, reads, choices, k+1)
		x.rf[w] &^= 1 << uint(r)
		if ok {
			return true
		}
	}
	return false
}

// orders returns every order of the writes ws that keeps each thread's
// writes in program order (coherence demands it: po-loc ; co^-1 would be a
// cycle).
func orders(ws []int, po rel) [][]int {
	if len(ws) == 0 {
		return [][]int{nil}
	}
	var out [][]int
	used := make([]bool, len(ws))
	cur := make([]int, 0, len(ws))
	var rec func()
	rec = func() {
		if len(cur) == len(ws) {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i, w := range ws {
			if used[i] {
				continue
			}
			blocked := false
			for j, v := range ws {
				if !used[j] && j != i && po.has(v, w) {
					blocked = true // an earlier write of w's thread is not placed yet
					break
				}
			}
			if blocked {
				continue
			}
			used[i] = true
			cur = append(cur, w)
			rec()
			cur = cur[:len(cur)-1]
			used[i] = false
		}
	}
	rec()
	return out
}

// Reference is a litmus.Model.
var _ litmus.Model = Reference{}

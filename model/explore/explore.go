package explore

import (
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flushproof/flushproof/internal/mutate"
)

// Label names one transition: which actor takes it and what it does. A
// system packs its own meaning into Kind, ID and Arg and renders it with
// Describe; keeping labels small keeps the search fast.
type Label struct {
	Actor uint8
	Kind  uint8
	ID    uint16
	Arg   uint16
	// Alt tells apart the results of one memory operation that has more
	// than one (memory.Alt: where a store went in modification order,
	// which pending barriers completed before a barrier).
	Alt uint16
}

// System is an explicit-state transition system the explorer can search.
// States must be comparable: the explorer hashes them and compares them
// with ==.
//
// Explore may call Next, Check, Unfinished (and Canonical) from several
// goroutines at once (Options.Workers), so they must not modify shared
// data. A system that does (one that interns values while it computes
// successors, say) implements Sequential, and Explore then searches it
// with one worker.
type System[S comparable] interface {
	// Actors names the columns of a counterexample timeline (tasks, device...).
	Actors() []string
	// Init returns the initial states.
	Init() []S
	// Next calls yield for every transition enabled in s.
	Next(s S, yield func(Label, S))
	// Describe renders a label for a timeline.
	Describe(Label) string
	// Check returns a non-nil error if s violates the invariant.
	Check(s S) error
	// Unfinished returns the actors that have not returned in s (bit a =
	// actor a): the tasks whose work (a call, or the calls they still have
	// to make) is not over. It says nothing about why: whether such an
	// actor is blocked is derived from Next (Blocked), so that no waiting
	// step can be left out of a hand-kept list. Actors that never return
	// (a device, the memory, a flusher thread) are never unfinished.
	//
	// A reachable state without transitions in which an actor is
	// unfinished is a Deadlock; with Options.Liveness, so is a state from
	// which no path leads to a state where that actor has returned
	// (BlockedForever). A state after a machine crash has no transitions
	// and nothing in it is to return any more (the crash ended every
	// call), so a system whose crash is a step returns 0 there.
	Unfinished(s S) uint64
}

// InnerReducer is a System whose Next leaves out successors that another
// successor subsumes (a memory model that drops the results whose
// behaviours another result has, say). Explore marks its Result Reduced
// when Reduces reports true, and with Options.NoReduce searches
// WithoutReductions instead, a system that yields every successor.
type InnerReducer[S comparable] interface {
	Reduces() bool
	WithoutReductions() System[S]
}

// Blocked returns the actors of s that have not returned (Unfinished) and
// have no transition enabled in s (no label of theirs among Next's): the
// tasks that wait in s, whatever they wait for.
func Blocked[S comparable](sys System[S], s S) uint64 {
	b := sys.Unfinished(s)
	if b == 0 {
		return 0
	}
	sys.Next(s, func(l Label, _ S) { b &^= 1 << l.Actor })
	return b
}

// WaitDescriber is implemented by systems that can say where an actor
// that has not returned waits in a state (the statement it is stuck at,
// and what the user may do about it): a deadlock's message names it.
type WaitDescriber[S comparable] interface {
	Waiting(s S, actor int) string
}

// Speculator is implemented by systems whose runs may speculate (a thread
// that ran ahead of a load it has yet to satisfy): a speculative state
// with no step is no execution (the run's guess is never borne out), so
// it is no deadlock, and the liveness check reports no speculative state
// (a real blocked state is reported where nothing speculates).
type Speculator[S comparable] interface {
	Speculative(s S) bool
}

// speculative reports whether s is a speculative state of sys (or of the
// system unreduced wraps).
func speculative[S comparable](sys System[S], s S) bool {
	sp, ok := obligationsOf(sys).(Speculator[S])
	return ok && sp.Speculative(s)
}

// StepDescriber is implemented by systems whose step text needs the state
// the step is taken from (a step that also runs a task's local code, say):
// counterexample paths describe their steps with DescribeFrom, the state
// being the real one the path passes through.
type StepDescriber[S comparable] interface {
	DescribeFrom(from S, l Label) string
}

// FactDescriber is implemented by systems that give, besides a step's
// text, what it says as data (Step.Facts): the values it read, say.
// FactsFrom is asked with the state the step is taken from, as
// DescribeFrom is, and returns nil or a pointer to a struct that
// encoding/json renders.
type FactDescriber[S comparable] interface {
	FactsFrom(from S, l Label) any
}

// Canonicalizer is implemented by systems with symmetry (identical tasks):
// Canonical maps a state to a fixed representative of the states that
// differ from it only by renaming, and the invariant and whether some
// actor is unfinished must not depend on names. The explorer then stores
// representatives only, and turns counterexamples back into real paths.
type Canonicalizer[S comparable] interface {
	Canonical(S) S
}

// Options bound and instrument a search.
type Options struct {
	// MaxStates stops the search once this many states were found (0 = no limit).
	MaxStates int
	// MaxMemory stops the search before the memory the Go runtime holds
	// (its heap, garbage included until it is collected, stacks and
	// metadata: what debug.SetMemoryLimit bounds) plus what the search's
	// tables may allocate before it looks again would exceed this many
	// bytes (0 = no limit). The search measures every pollStates states,
	// counting the next doubling of its visited set and of its slices as
	// already taken, and collects garbage once before it gives up
	// (memGauge).
	MaxMemory int64
	// Stop, if set, is asked every pollStates states (and before the
	// search starts) whether to stop: it returns "" to go on, or the
	// reason, which becomes Result.Stopped ("interrupted", say). It is
	// called from the goroutine that called Explore.
	Stop func() string
	// Liveness also reports actors blocked forever (not only deadlocks):
	// unfinished in a state from which no path lets them return. It keeps
	// every edge in memory.
	Liveness bool
	// Progress, if set, is called about once a second during the search,
	// always from the goroutine that called Explore.
	Progress func(Stats)
	// Workers is the number of goroutines that expand states: 0 means
	// runtime.GOMAXPROCS(0), 1 the sequential search. Every value gives the
	// same result (the same state numbering, statistics and counterexample):
	// the parallel search expands a BFS level at a time and numbers the new
	// states in the order the sequential search finds them. Levels of fewer
	// than ParallelMinLevel states are expanded sequentially anyway.
	Workers int
	// NoReduce explores every state as Next yields it: a system's
	// Canonical (its symmetry reduction and normalisation) is not called.
	// Every reduction must give the same verdicts and counterexample
	// lengths as the search without it; this is how that is checked.
	NoReduce bool
	// Obligations counts, after the search, the states that judge each
	// obligation of a system that implements Obligations
	// (Result.Judged): one more pass over every state found.
	Obligations bool
	// Store says how the states are kept: StoreAuto (collapsed if their
	// type allows it and is not small, unless the environment variable
	// FLUSHPROOF_STORE says "whole" or "compact"), StoreWhole (each a
	// value of S, as it is) or StoreCompact (collapsed whenever the type
	// allows it). A collapsed state is a vector of ids of its pieces, each
	// distinct piece kept once: exact, as equal vectors are equal states.
	// Every mode gives the same result (Result.Diff); only the memory a
	// state takes, and so where Options.MaxMemory stops a search, differ.
	Store StoreMode
	// ParallelMinLevel is the smallest BFS level that several workers
	// expand (0 means 4096): below it, handing the level out costs more
	// than it saves. Tests set it low to run the parallel search on small
	// systems.
	ParallelMinLevel int
}

// Why a search stopped before it had visited every reachable state without
// finding a violation (Result.Stopped, Verdict.Unknown); Options.Stop gives
// its own reasons.
const (
	StopStates = "state budget" // Options.MaxStates
	StopMemory = "memory"       // Options.MaxMemory
)

// pollStates is how often, in states found, a search asks Options.Stop and
// measures its memory: often enough to stop within a few milliseconds,
// rarely enough to cost nothing measurable.
const pollStates = 4096

// Sequential is implemented by systems whose methods must not be called
// from several goroutines at once; Explore then ignores Options.Workers
// and searches with one worker (with the same result).
type Sequential interface{ SequentialOnly() }

// Stats describe a search.
type Stats struct {
	States      int
	Transitions int
	MaxDepth    int
	Elapsed     time.Duration
}

// PerSecond is the search speed in states per second.
func (s Stats) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.States) / s.Elapsed.Seconds()
}

func (s Stats) String() string {
	return fmt.Sprintf("%d states, %d transitions, depth %d, %v (%.0f states/s)",
		s.States, s.Transitions, s.MaxDepth, s.Elapsed.Round(time.Millisecond), s.PerSecond())
}

// ViolationKind says what went wrong.
type ViolationKind string

// The kinds of violation.
const (
	Safety         ViolationKind = "safety"
	Deadlock       ViolationKind = "deadlock"
	BlockedForever ViolationKind = "blocked forever"
)

// Step is one step of a counterexample path.
type Step struct {
	Actor int
	Text  string
	Label Label // the transition, for replaying the path
	// Facts are what Text says, as data, for the counterexample's JSON
	// form (a pointer to a struct of the system's, which FactDescriber
	// gives); nil if the system gives none.
	Facts any
}

// Violation is a counterexample: the shortest path from an initial state to
// a state that breaks the invariant (BFS order makes it shortest).
type Violation struct {
	Kind  ViolationKind
	Err   error
	Path  []Step
	Actor []string // the timeline's columns
}

func (v *Violation) Error() string { return fmt.Sprintf("%s: %v", v.Kind, v.Err) }

// Timeline renders the path, one column per actor, and the violation,
// whose message goes on onto lines indented by three spaces past
// TimelineWidth.
func (v *Violation) Timeline() string {
	var b strings.Builder
	b.WriteString(Timeline(v.Actor, v.Path))
	for i, l := range strings.Split(fmt.Sprintf("%s violation: %v", v.Kind, v.Err), "\n") {
		lead := "   "
		if i == 0 {
			lead = "=> "
		}
		for _, p := range wrap(lead+l, TimelineWidth, "   ") {
			b.WriteString(p + "\n")
		}
	}
	return b.String()
}

// Result is the outcome of a search. Exhausted is true when every reachable
// state was visited (no violation stopped it and no budget was hit).
type Result[S comparable] struct {
	Stats
	Exhausted bool
	Violation *Violation
	// Stopped says why the search stopped early without a violation:
	// StopStates, StopMemory or the reason Options.Stop returned; "" if it
	// did not. Such a search proves nothing.
	Stopped string

	// Unreduced is set when the symmetry reduction's counterexample could
	// not be rebuilt as a real path (Canonical is not a symmetry of the
	// system): the result is then that of a search without the reduction,
	// whose counterexample is a real path.
	Unreduced bool
	// Reduced is set when the search stored canonical representatives (the
	// system implements Canonicalizer and Options.NoReduce was off), or its
	// system may have left out subsumed successors (InnerReducer): only
	// then can a search without reductions differ from it.
	Reduced bool

	// Compact is set when the states were kept collapsed (Options.Store).
	Compact bool

	// Judged is, with Options.Obligations and a system that implements
	// Obligations, how many of the states found judged each obligation:
	// every reachable state's for an exhausted search, those found before
	// the search stopped otherwise (the count's time is not in Elapsed).
	// JudgeErr says why they could not be counted.
	Judged   []Judgment
	JudgeErr error

	sys        System[S]
	pathFailed bool // a violation's path could not be rebuilt
	states     store[S]
	parent     stateStore[int32] // the state that found it first (-1: an initial state)
	label      labels            // the transition from parent
}

// Len returns the number of states found.
func (r *Result[S]) Len() int { return r.states.len() }

// State returns state number id (0 <= id < Len), in BFS order.
func (r *Result[S]) State(id int) S {
	var s S
	r.states.get(int32(id), &s)
	return s
}

// PathTo returns the shortest path found to state id. With symmetry
// reduction the stored states are representatives; the path is then
// rebuilt from the real initial state, step by step, choosing a real
// transition whose representative is the next stored state, so that it
// replays (Replay) as it is printed. It panics if that is impossible
// (Canonical is then not a symmetry of the system); Explore itself never
// does: it searches again without the reduction.
func (r *Result[S]) PathTo(id int) []Step {
	path, err := r.pathTo(id)
	if err != nil {
		panic(err.Error())
	}
	return path
}

// errNotSymmetry: a stored step has no real counterpart.
var errNotSymmetry = errors.New("explore: no real transition matches a stored one (Canonical is not a symmetry)")

func (r *Result[S]) pathTo(id int) ([]Step, error) {
	var ids []int32
	for i := int32(id); i >= 0; i = *r.parent.at(i) {
		ids = append(ids, i)
	}
	path := make([]Step, 0, len(ids))
	canon, sym := r.sys.(Canonicalizer[S])
	var cur S
	if sym {
		cur = r.State(int(ids[len(ids)-1])) // an initial state, stored as it is
	}
	fd, hasFrom := r.sys.(StepDescriber[S])
	for k := len(ids) - 2; k >= 0; k-- {
		l := r.label.at(ids[k])
		from := r.State(int(ids[k+1]))
		if sym {
			from = cur
		}
		if sym {
			want, found := r.State(int(ids[k])), false
			r.sys.Next(cur, func(cl Label, t S) {
				if !found && canon.Canonical(t) == want {
					found, l, cur = true, cl, t
				}
			})
			if !found {
				return nil, errNotSymmetry
			}
		}
		text := r.sys.Describe(l)
		if hasFrom {
			text = fd.DescribeFrom(from, l)
		}
		var facts any
		if ff, ok := r.sys.(FactDescriber[S]); ok {
			facts = ff.FactsFrom(from, l)
		}
		path = append(path, Step{Actor: int(l.Actor), Text: text, Label: l, Facts: facts})
	}
	return path, nil
}

// Replay follows a path of labels from the initial states of sys and returns
// the state it reaches, or an error naming the first step that is not
// enabled. A counterexample replays when following its labels gives a state
// that breaks the invariant again.
func Replay[S comparable](sys System[S], path []Step) (S, error) {
	cur := sys.Init()
	for i, st := range path {
		var next []S
		for _, s := range cur {
			sys.Next(s, func(l Label, t S) {
				if l == st.Label {
					next = append(next, t)
				}
			})
		}
		if len(next) == 0 {
			var zero S
			return zero, fmt.Errorf("step %d (%s) is not enabled", i+1, st.Text)
		}
		cur = next[:1]
	}
	if len(cur) == 0 {
		var zero S
		return zero, fmt.Errorf("no initial state")
	}
	return cur[0], nil
}

// ViolationAt builds a violation of the given kind at state id; describe
// says what is wrong in a state (nil: nothing of this kind). With symmetry
// reduction the stored state may carry other names than the real path's
// end, so describe is asked about the state the rebuilt path replays to,
// in the path's own names; if that state has no violation, Canonical is
// not a symmetry, and Explore searches again without it.
func (r *Result[S]) ViolationAt(kind ViolationKind, id int, describe func(S) error) *Violation {
	err := describe(r.State(id))
	path, perr := r.pathTo(id)
	if perr != nil {
		// Explore searches again without the reduction (unreduced).
		r.pathFailed = true
		return &Violation{Kind: kind, Err: err, Actor: r.sys.Actors()}
	}
	if _, sym := r.sys.(Canonicalizer[S]); sym {
		s, rerr := Replay(r.sys, path)
		var real error
		if rerr == nil {
			real = describe(s)
		}
		if real != nil {
			err = real
		} else {
			r.pathFailed = true
		}
	}
	return &Violation{Kind: kind, Err: err, Path: path, Actor: r.sys.Actors()}
}

// deadlockIn describes a deadlock: a state with no transitions in which
// some actor has not returned.
func deadlockIn[S comparable](sys System[S]) func(S) error {
	return func(s S) error {
		steps := 0
		sys.Next(s, func(Label, S) { steps++ })
		if u := sys.Unfinished(s); steps == 0 && u != 0 && !speculative(sys, s) {
			msg := fmt.Sprintf("%s not returned and no step is enabled", haveList(sys.Actors(), u))
			if w, ok := sys.(WaitDescriber[S]); ok {
				var where []string
				for a := 0; a < 64; a++ {
					if u&(1<<a) != 0 {
						if text := w.Waiting(s, a); text != "" {
							where = append(where, text)
						}
					}
				}
				if len(where) > 0 {
					msg += ": " + strings.Join(where, "; ")
				}
			}
			return errors.New(msg)
		}
		return nil
	}
}

// defaultParallelMinLevel is Options.ParallelMinLevel's default.
const defaultParallelMinLevel = 4096

// Explore searches every state of sys reachable from its initial states,
// breadth first, and stops at the first violation.
//
// The search goes one BFS level at a time. A level of at least
// Options.ParallelMinLevel states is expanded by Options.Workers goroutines: each
// takes parents from the level, computes their successors (Next, Canonical,
// Check), looks them up in the visited set (read-only while the level is
// expanded) and puts the new ones in a sharded set of the level's new
// states, which keeps for each the first transition that reaches it (the
// smallest parent id, then transition index). At the end of the level the
// new states are numbered in that order, the order in which the sequential
// search numbers them; their parents are then visited in id order to count
// transitions and to pick the first violation, deadlock or budget stop
// exactly where the sequential search would. So the numbering, the paths,
// the statistics and the counterexample do not depend on Options.Workers.
//
// Each state is kept once, in the Result (in chunks, so the store grows
// without copying), whole or collapsed (Options.Store); the visited set
// holds 8-byte hash and id slots only. The states new in a level are
// copied once more (whole, or as vectors and their new pieces), until the
// level ends.
func Explore[S comparable](sys System[S], opt Options) *Result[S] {
	r := search(sys, opt)
	if opt.Obligations {
		r.Judged, r.JudgeErr = judge(obligationsOf(r.sys), r, judgeWorkers(opt.Workers))
	}
	return r
}

// search is Explore without the count of judged obligations.
func search[S comparable](sys System[S], opt Options) *Result[S] {
	if in, ok := sys.(InnerReducer[S]); ok && opt.NoReduce && in.Reduces() {
		return search(in.WithoutReductions(), opt)
	}
	if _, sym := sys.(Canonicalizer[S]); sym && opt.NoReduce {
		return search(unreduced(sys), opt)
	}
	e := &explorer[S]{sys: sys, opt: opt, r: &Result[S]{sys: sys}, start: time.Now()}
	e.lastProgress = e.start
	e.canon, e.sym = sys.(Canonicalizer[S])
	e.vis.seed = maphash.MakeSeed()
	e.r.states = newStore[S](storeMode(opt))
	e.r.Compact = e.r.states.col != nil
	if c := e.r.states.col; c != nil {
		e.cod = newCoder(c)
	}
	e.vis.states = &e.r.states
	e.mem.init()
	e.workers = opt.Workers
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	e.parallelMin = opt.ParallelMinLevel
	if e.parallelMin <= 0 {
		e.parallelMin = defaultParallelMinLevel
	}
	if _, ok := sys.(Sequential); ok {
		e.workers = 1
	}
	r := e.run()
	r.Reduced = e.sym
	if in, ok := sys.(InnerReducer[S]); ok && in.Reduces() {
		r.Reduced = true
	}
	if r.pathFailed && e.sym {
		// The counterexample must replay: search again with every state
		// kept as it is.
		r = search(unreduced(sys), opt)
		r.Unreduced = true
	}
	return r
}

// unreduced is sys without its Canonical method, sequential if sys is.
func unreduced[S comparable](sys System[S]) System[S] {
	if _, ok := sys.(Sequential); ok {
		return withoutSymmetrySequential[S]{withoutSymmetry[S]{sys}}
	}
	return withoutSymmetry[S]{sys}
}

// withoutSymmetry is a system with its Canonical method hidden: only the
// methods of System are promoted.
type withoutSymmetry[S comparable] struct{ System[S] }

// withoutSymmetrySequential keeps a Sequential system sequential.
type withoutSymmetrySequential[S comparable] struct{ withoutSymmetry[S] }

func (withoutSymmetrySequential[S]) SequentialOnly() {}

// obligationsOf is the system whose Obligations judge the states of a
// search of sys: sys itself, or the system unreduced hid Canonical of
// (its states are real states of it).
func obligationsOf[S comparable](sys System[S]) System[S] {
	switch u := sys.(type) {
	case withoutSymmetry[S]:
		return u.System
	case withoutSymmetrySequential[S]:
		return u.System
	}
	return sys
}

// explorer is one search.
type explorer[S comparable] struct {
	sys     System[S]
	opt     Options
	canon   Canonicalizer[S]
	sym     bool
	workers int
	// parallelMin is Options.ParallelMinLevel with its default applied.
	parallelMin int
	r           *Result[S]
	vis         visited[S]
	cod         *coder // collapsed states: the sequential search's encoder
	// With Liveness, every transition: succ holds the targets of state
	// 0's transitions in their order, then state 1's..., nsucc how many
	// each state has (a state's transitions are in succ from the sum of
	// the counts before it).
	succ  stateStore[int32]
	nsucc stateStore[int32]

	start, lastProgress time.Time
	nextPoll            int // poll when this many states were found
	mem                 memGauge

	// The parallel search's per-level data, reused from level to level.
	pend   *[nShards]pendShard[S] // the level's new states
	ws     []*worker[S]
	nTrans []int32  // per parent (offset in the level): its transitions; -1: a deadlock
	seg    []int32  // per parent: where its new states end in order
	order  []uint64 // the level's new states (shard<<32 | index), in numbering order
	lvl    []int32  // with Liveness: the level's transitions' targets, in order

	levelNew atomic.Int64 // new states found in the level so far (roughly: workers add theirs per chunk)
	abort    atomic.Bool  // a poll during the level said stop, for abortWhy
	abortWhy string
}

func (e *explorer[S]) finish() *Result[S] {
	e.r.States = e.r.states.len()
	e.r.Elapsed = time.Since(e.start)
	return e.r
}

func (e *explorer[S]) progress() {
	e.lastProgress = time.Now()
	e.r.States, e.r.Elapsed = e.r.states.len(), time.Since(e.start)
	e.opt.Progress(e.r.Stats)
}

// poll asks Options.Stop and the memory gauge whether the search must stop,
// growth being what its tables may allocate before the next poll. It
// returns the reason, or "".
func (e *explorer[S]) poll(growth int64) string {
	e.nextPoll = e.r.states.len() + pollStates
	if e.opt.Stop != nil {
		if why := e.opt.Stop(); why != "" {
			return why
		}
	}
	if e.opt.MaxMemory > 0 && !e.mem.fits(e.opt.MaxMemory, growth) {
		return StopMemory
	}
	return ""
}

// stop ends the search early, without a violation, for the reason why.
func (e *explorer[S]) stop(why string) *Result[S] {
	e.r.Stopped = why
	return e.finish()
}

func (e *explorer[S]) run() *Result[S] {
	r := e.r
	if why := e.poll(0); why != "" {
		return e.stop(why)
	}
	for _, s := range e.sys.Init() { // stored as they are, not canonical
		if id, fresh := e.add(&s, -1, Label{}); fresh {
			if err := e.sys.Check(s); err != nil {
				r.Violation = r.ViolationAt(Safety, int(id), e.sys.Check)
				return e.finish()
			}
		}
	}
	lo, hi := 0, r.states.len()
	for depth := 0; lo < hi; depth++ {
		r.MaxDepth = depth
		var stopped bool
		if e.workers > 1 && hi-lo >= e.parallelMin {
			stopped = e.parallelLevel(int32(lo), int32(hi))
		} else {
			stopped = e.sequentialLevel(lo, hi)
		}
		if stopped {
			return e.finish()
		}
		lo, hi = hi, r.states.len()
	}
	if e.opt.Liveness {
		// The backward search needs its own tables (livenessBytes), and
		// not the visited set nor the parallel levels' tables.
		e.vis.shards = [nShards]idTable{}
		e.pend, e.ws = nil, nil
		if why := e.poll(livenessBytes(r.states.len(), e.succ.n, len(e.sys.Actors()))); why != "" {
			return e.stop(why)
		}
		v, why := e.blockedForever()
		if why != "" {
			return e.stop(why)
		}
		if v != nil {
			r.Violation = v
			return e.finish()
		}
	}
	r.Exhausted = true
	return e.finish()
}

// add numbers s (already canonical) if it is new.
func (e *explorer[S]) add(s *S, parent int32, l Label) (int32, bool) {
	var id int32
	if c := e.r.states.col; c != nil {
		h, _ := e.cod.encode(unsafe.Pointer(s), true)
		if id, ok := e.vis.findVec(e.cod.vec, h); ok {
			return id, false
		}
		id = c.vecs.push(e.cod.vec)
		e.vis.shard(h).insert(h, id)
	} else {
		h := e.vis.hash(s)
		if id, ok := e.vis.find(s, h); ok {
			return id, false
		}
		id = e.r.states.whole.push(s)
		e.vis.shard(h).insert(h, id)
	}
	e.r.parent.push(&parent)
	e.r.label.push(l)
	return id, true
}

// deadlock is the violation of state id, which has no transitions and in
// which some actor has not returned.
func (e *explorer[S]) deadlock(id int32) *Violation {
	return e.r.ViolationAt(Deadlock, int(id), deadlockIn(e.sys))
}

// haveList is "A has" or "A, B have": the actors of m and the verb.
func haveList(names []string, m uint64) string {
	if m&(m-1) == 0 {
		return ActorList(names, m) + " has"
	}
	return ActorList(names, m) + " have"
}

func (e *explorer[S]) budgetHit() bool {
	return e.budget() > 0 && e.r.states.len() >= e.budget()
}

// budget is Options.MaxStates (0 under the mutation BudgetIgnored).
func (e *explorer[S]) budget() int {
	if mutate.On(mutate.BudgetIgnored) {
		return 0
	}
	return e.opt.MaxStates
}

// sequentialLevel expands the states lo..hi-1 one after the other, numbering
// new states as it finds them. It reports whether the search stops.
func (e *explorer[S]) sequentialLevel(lo, hi int) bool {
	r, sys := e.r, e.sys
	var (
		head int32
		n    int
		bad  = int32(-1)
	)
	yield := func(l Label, t S) {
		n++
		if bad >= 0 {
			return
		}
		r.Transitions++
		c := t
		if e.sym {
			c = e.canon.Canonical(t)
		}
		id, fresh := e.add(&c, head, l)
		if e.opt.Liveness {
			e.succ.push(&id)
		}
		if fresh {
			if sys.Check(t) != nil {
				bad = id
			}
		}
	}
	var s S
	for h := lo; h < hi; h++ {
		head, n = int32(h), 0
		r.states.get(head, &s)
		if e.cod != nil {
			e.cod.setParent(head, unsafe.Pointer(&s))
		}
		sys.Next(s, yield)
		if e.opt.Liveness && bad < 0 {
			edges := int32(n)
			e.nsucc.push(&edges)
		}
		if bad >= 0 {
			r.Violation = r.ViolationAt(Safety, int(bad), sys.Check)
			return true
		}
		if n == 0 && sys.Unfinished(s) != 0 && !speculative(sys, s) {
			r.Violation = e.deadlock(head)
			return true
		}
		if e.budgetHit() {
			r.Stopped = StopStates
			return true
		}
		if r.states.len() >= e.nextPoll {
			if why := e.poll(e.growth(pollStates)); why != "" {
				r.Stopped = why
				return true
			}
		}
		if e.opt.Progress != nil && h&4095 == 0 && time.Since(e.lastProgress) > time.Second {
			e.progress()
		}
	}
	return false
}

// parChunk is how many parents a worker takes at a time; the main worker
// polls every pollChunks of its chunks.
const (
	parChunk   = 64
	pollChunks = pollStates / parChunk
)

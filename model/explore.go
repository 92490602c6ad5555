package model

import (
	"fmt"
	"time"
)

// Label names one transition: which actor takes it and what it does. A
// system packs its own meaning into Kind, ID and Arg and renders it with
// Describe; keeping labels small keeps the search fast.
type Label struct {
	Actor uint8
	Kind  uint8
	ID    uint16
	Arg   uint16
}

// System is an explicit-state transition system the explorer can search.
// States must be comparable: the explorer uses them as map keys.
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
	// Waiting returns the actors blocked in s (bit a = actor a): a task
	// waiting for a completion. A state without transitions in which an
	// actor waits is a deadlock; with Options.Liveness, so is a state from
	// which no schedule ever lets a waiting actor go on.
	Waiting(s S) uint64
}

// Canonicalizer is implemented by systems with symmetry (identical tasks):
// Canonical maps a state to a fixed representative of the states that
// differ from it only by renaming, and the invariant and Waiting must not
// depend on names. The explorer then stores representatives only, and turns
// counterexamples back into real paths.
type Canonicalizer[S comparable] interface {
	Canonical(S) S
}

// Options bound and instrument a search.
type Options struct {
	// MaxStates stops the search once this many states were found (0 = no limit).
	MaxStates int
	// Liveness also reports actors blocked forever (not only deadlocks);
	// it keeps every edge in memory.
	Liveness bool
	// Progress, if set, is called about once a second during the search.
	Progress func(Stats)
}

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

// Timeline renders the path, one column per actor, and the violation.
func (v *Violation) Timeline() string {
	return Timeline(v.Actor, v.Path) + fmt.Sprintf("=> %s violation: %v\n", v.Kind, v.Err)
}

// Result is the outcome of a search. Exhausted is true when every reachable
// state was visited (no violation stopped it and the budget was not hit).
type Result[S comparable] struct {
	Stats
	Exhausted bool
	Violation *Violation

	sys    System[S]
	states []S
	parent []int32
	label  []Label
}

// Len returns the number of states found.
func (r *Result[S]) Len() int { return len(r.states) }

// State returns state number id (0 <= id < Len), in BFS order.
func (r *Result[S]) State(id int) S { return r.states[id] }

// PathTo returns the shortest path found to state id. With symmetry
// reduction the stored states are representatives; the path is then
// rebuilt from the real initial state, step by step, choosing a real
// transition whose representative is the next stored state, so that it
// replays (Replay) as it is printed.
func (r *Result[S]) PathTo(id int) []Step {
	var ids []int32
	for i := int32(id); i >= 0; i = r.parent[i] {
		ids = append(ids, i)
	}
	path := make([]Step, 0, len(ids))
	canon, sym := r.sys.(Canonicalizer[S])
	var cur S
	if sym {
		cur = r.states[ids[len(ids)-1]] // an initial state, stored as it is
	}
	for k := len(ids) - 2; k >= 0; k-- {
		l := r.label[ids[k]]
		if sym {
			want, found := r.states[ids[k]], false
			r.sys.Next(cur, func(cl Label, t S) {
				if !found && canon.Canonical(t) == want {
					found, l, cur = true, cl, t
				}
			})
			if !found {
				panic("explore: no real transition matches a stored one (Canonical is not a symmetry)")
			}
		}
		path = append(path, Step{Actor: int(l.Actor), Text: r.sys.Describe(l), Label: l})
	}
	return path
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

// ViolationAt builds a violation of the given kind at state id.
func (r *Result[S]) ViolationAt(kind ViolationKind, id int, err error) *Violation {
	path := r.PathTo(id)
	if _, sym := r.sys.(Canonicalizer[S]); sym && kind == Safety {
		// The stored state may carry other names than the real path's end:
		// say what is wrong in the path's own names.
		if s, rerr := Replay(r.sys, path); rerr == nil {
			if e := r.sys.Check(s); e != nil {
				err = e
			}
		}
	}
	return &Violation{Kind: kind, Err: err, Path: path, Actor: r.sys.Actors()}
}

// Explore searches every state of sys reachable from its initial states,
// breadth first, and stops at the first violation.
func Explore[S comparable](sys System[S], opt Options) *Result[S] {
	start := time.Now()
	r := &Result[S]{sys: sys}
	ids := make(map[S]int32)
	var depth []int32
	var edges [][2]int32
	canon, sym := sys.(Canonicalizer[S])
	add := func(s S, parent int32, l Label, d int32) (int32, bool) {
		if sym && parent >= 0 {
			s = canon.Canonical(s)
		}
		if id, ok := ids[s]; ok {
			return id, false
		}
		id := int32(len(r.states))
		ids[s] = id
		r.states = append(r.states, s)
		r.parent = append(r.parent, parent)
		r.label = append(r.label, l)
		depth = append(depth, d)
		return id, true
	}
	finish := func() *Result[S] {
		r.States = len(r.states)
		r.Elapsed = time.Since(start)
		return r
	}
	lastProgress := start
	for _, s := range sys.Init() {
		if id, fresh := add(s, -1, Label{}, 0); fresh {
			if err := sys.Check(s); err != nil {
				r.Violation = r.ViolationAt(Safety, int(id), err)
				return finish()
			}
		}
	}
	for head := 0; head < len(r.states); head++ {
		s := r.states[head]
		d := depth[head]
		if int(d) > r.MaxDepth {
			r.MaxDepth = int(d)
		}
		var violation *Violation
		n := 0
		sys.Next(s, func(l Label, t S) {
			n++
			if violation != nil {
				return
			}
			r.Transitions++
			id, fresh := add(t, int32(head), l, d+1)
			if opt.Liveness {
				edges = append(edges, [2]int32{int32(head), id})
			}
			if fresh {
				if err := sys.Check(t); err != nil {
					violation = r.ViolationAt(Safety, int(id), err)
				}
			}
		})
		if violation != nil {
			r.Violation = violation
			return finish()
		}
		if n == 0 {
			if w := sys.Waiting(s); w != 0 {
				r.Violation = r.ViolationAt(Deadlock, head, fmt.Errorf("%s waits and nothing can ever happen", actorList(sys.Actors(), w)))
				return finish()
			}
		}
		if opt.MaxStates > 0 && len(r.states) >= opt.MaxStates {
			return finish()
		}
		if opt.Progress != nil && head&4095 == 0 && time.Since(lastProgress) > time.Second {
			lastProgress = time.Now()
			r.States, r.Elapsed = len(r.states), time.Since(start)
			opt.Progress(r.Stats)
		}
	}
	if opt.Liveness {
		if v := r.blockedForever(edges); v != nil {
			r.Violation = v
			return finish()
		}
	}
	r.Exhausted = true
	return finish()
}

// blockedForever finds, for each actor, a state in which it waits and from
// which no path leads to a state where it does not: backward reachability
// from the states where it is not waiting.
func (r *Result[S]) blockedForever(edges [][2]int32) *Violation {
	n := len(r.states)
	preds := make([][]int32, n)
	for _, e := range edges {
		preds[e[1]] = append(preds[e[1]], e[0])
	}
	waiting := make([]uint64, n)
	var all uint64
	for i, s := range r.states {
		waiting[i] = r.sys.Waiting(s)
		all |= waiting[i]
	}
	for a := 0; all>>a != 0; a++ {
		bit := uint64(1) << a
		if all&bit == 0 {
			continue
		}
		free := make([]bool, n)
		var queue []int32
		for i := range waiting {
			if waiting[i]&bit == 0 {
				free[i] = true
				queue = append(queue, int32(i))
			}
		}
		for len(queue) > 0 {
			i := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, p := range preds[i] {
				if !free[p] {
					free[p] = true
					queue = append(queue, p)
				}
			}
		}
		for i := range free { // BFS order: the first one has the shortest path
			if !free[i] {
				return r.ViolationAt(BlockedForever, i, fmt.Errorf("%s waits and no schedule ever lets it go on", r.sys.Actors()[a]))
			}
		}
	}
	return nil
}

func actorList(names []string, m uint64) string {
	s := ""
	for a := range names {
		if m&(1<<a) != 0 {
			if s != "" {
				s += ", "
			}
			s += names[a]
		}
	}
	return s
}

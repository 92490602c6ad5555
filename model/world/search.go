package world

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flushproof/flushproof/model/explore"
)

// The exhaustive search of a program's runs. A task is Go code running as
// a coroutine, which cannot be copied; so a state of the search is named
// by the choices that lead to it from the start, and the search reaches it
// again by running the program anew and making those choices (a replay).
// What makes the search finite is the state key: two runs that reach the
// same key have the same futures, so only the first is followed.
//
// The key is made of:
//   - the memory (memory.Wide.AppendKey);
//   - the device: every block's versions, which may still be left by a
//     crash, which are in flight, and each block's clocks replaced by their
//     rank among that block's clocks (the device only compares a block's
//     clocks, and a new one is later than all), with the writes and
//     flushes in flight;
//   - each task's results: the sequence of values its calls returned so
//     far (or since its last Task.Checkpoint). A task is deterministic Go
//     code, so its local state (variables, where it is in its code, what
//     it will ask next) is a function of what its calls returned. A
//     finished task's are left out: it asks nothing more, and what other
//     tasks may learn of them is in the wake log or the shared state's
//     encoding (World.forgets);
//   - the order in which tasks ran their WaitQueue changes (or the
//     program's encoding of that state, World.Shared): the state tasks
//     share outside the modelled memory is changed only there, each change
//     a function of the task's results, so that state is a function of
//     this order and of the results;
//   - the violation, if the run has one.
//
// With World.Symmetric, a state is keyed by the least such key among the
// renamings of its tasks (symmetry.go). Keys are kept in a table without
// pointers (table.go), beside a node per state.
//
// So a program must be deterministic (no randomness, no map iteration
// whose order changes what it does, no time) and its tasks may share state
// only through their handles: modelled words, the device, and state
// changed under WaitQueue.Wake (and read in Wait conditions and in Select
// branches' When). A replay that does not find the choices it recorded
// (a program that is not deterministic) panics, which a row reports as an
// error.
//
// Crashes: a crash may happen before any step, and what it may leave
// depends only on the device's state. An obligation (Task.MustSurvive) is
// checked when it is stated; once it holds it holds for good
// (blockVersions.leftBefore), so that check is a crash at every later
// point of every run. SearchOptions.Exact checks every obligation again
// after every step.

// Program is code to check in the model world. It is called once per run
// with the run's new world: it makes the state its tasks share (wait
// queues, Go state changed under WaitQueue.Wake) and returns the body every
// task runs (Task.ID tells them apart). It must make everything anew each
// time: runs must not share state.
type Program func(w *World) func(t *Task)

// SearchOptions bound a search.
type SearchOptions struct {
	// MaxDepth is the longest run followed, in steps (0 means 1000): a
	// state that deep is not expanded, and a search that reaches one ends
	// UNKNOWN ("depth bound"), never SAFE.
	MaxDepth int
	// NoCache names each state by its whole path, so that no two runs
	// share a state: the search is a tree of every run, without the state
	// key. For testing the key, which must give the same verdicts.
	NoCache bool
	// BoundPreemptions bounds the preemptions of a run by Preemptions, as
	// loom does for larger programs: a preemption is a step of a task
	// while the task that took the last task step could still take one
	// (device and memory-system steps are not counted, and do not change
	// which task ran last). A search so bounded proves nothing beyond the
	// bound: its SAFE is "SAFE within k preemptions" (Search.Bounded).
	BoundPreemptions bool
	Preemptions      int
	// Exact ignores what the program declares about its state
	// (Task.Checkpoint, World.Shared, World.Symmetric): the key has every
	// task's results since the start and the order of its WaitQueue
	// changes, and no renaming of the tasks. The
	// declarations are reductions, and this search without them must give
	// the same verdicts.
	Exact bool
	// NoSymmetry ignores World.Symmetric alone (Exact ignores every
	// declaration): for measuring what the symmetry reduction buys.
	NoSymmetry bool
}

// StopDepth is the reason a search reached SearchOptions.MaxDepth.
const StopDepth = "depth bound"

// State names a state of the search: an index into its table.
type State uint32

// Search is the exhaustive search of a program's runs as an
// explore.System: explore.Explore searches it breadth first, so a
// counterexample is a shortest run to a violation.
type Search struct {
	cfg  Config
	prog Program
	opt  SearchOptions

	mu     sync.Mutex
	keys   *keyTable
	nodes  []node           // without pointers, as keys: the collector does not scan them
	errs   map[State]error  // the violations found, by state
	actors map[State][]int8 // SearchOptions.BoundPreemptions: who takes each action enabled in a state
	seqAt  []uint32         // per state: each task's interned results, then the order of WaitQueue changes (replay)

	tmu      sync.Mutex // the interning tables below
	seqs     map[seqKey]uint32
	wakes    map[wakeKey]uint32
	wakeList []wakeKey        // wakeList[id-1] is the key of wakes' id
	shareds  map[string]int64 // the encodings of shared state tasks saw (World.Shared)

	symOnce      sync.Once
	rens         []*renaming // World.Symmetric: the renamings of the tasks
	allRenamings bool        // key by every renaming, not only those the signatures allow (tests)

	lmu     sync.Mutex // the live worlds
	live    map[State]*World
	maxLive int // maxLive, but in tests

	amu        sync.Mutex // the successors kept ahead (lookAhead)
	ahead      map[State]*successor
	aheadBytes int64

	omu   sync.Mutex // the obligations' call sites (judgeSite)
	sites map[uintptr]uint64
	names []string

	cmu  sync.Mutex // the idle coroutines
	idle []*coro

	cut    atomic.Bool  // a state at MaxDepth was not expanded
	pcut   atomic.Bool  // the preemption bound left out a step
	reused atomic.Int64 // steps taken on a live world instead of a replay
	runs   atomic.Int64 // replays
	steps  atomic.Int64 // steps taken in replays
}

// node is a state of the search.
type node struct {
	parent     State  // the state it was first reached from (none for the initial state)
	choice     int32  // the index of the action taken there
	act        packed // that action
	depth      int32
	acts       int32  // actions enabled in it
	unfinished uint64 // tasks not done
	failed     bool   // a violation was found in it (Search.errs)
	judged     uint64 // the obligations the steps that reached it judged (Search.Judged)

	// With SearchOptions.BoundPreemptions: the task that took the last
	// task step (-1: none), the preemptions so far, and whether the bound
	// leaves none of the actions enabled (Search.actors has who takes
	// each: a task, or -1 for the device or the memory system).
	last   int8
	pre    uint8
	allCut bool
}

type seqKey struct {
	prev uint32
	val  int64
	ok   bool
	err  uint8
}

type wakeKey struct {
	prev uint32
	task int
	seq  uint32
}

// MaxSearchTasks is the most tasks a search takes (NewSearch refuses
// more): a node keeps its unfinished tasks as bits of a uint64.
const MaxSearchTasks = 62

// NewSearch returns the search of prog's runs in worlds of cfg (whose
// Crash must be 0: the search crashes at every point).
func NewSearch(cfg Config, prog Program, opt SearchOptions) (*Search, error) {
	if cfg.Crash != 0 {
		return nil, errors.New("model world search: Config.Crash must be 0 (every state is checked as if the machine crashed there)")
	}
	if cfg.Tasks > MaxSearchTasks {
		return nil, fmt.Errorf("model world search: %d tasks, at most %d", cfg.Tasks, MaxSearchTasks)
	}
	if _, err := New(cfg); err != nil {
		return nil, err
	}
	if opt.BoundPreemptions && (opt.Preemptions < 0 || opt.Preemptions > 255) {
		return nil, fmt.Errorf("model world search: preemption bound %d, want 0 to 255", opt.Preemptions)
	}
	if opt.MaxDepth == 0 {
		opt.MaxDepth = 1000
	}
	return &Search{cfg: cfg, prog: prog, opt: opt, keys: newKeyTable(), errs: map[State]error{}, actors: map[State][]int8{}, live: map[State]*World{}, maxLive: maxLive, ahead: map[State]*successor{},
		seqs: map[seqKey]uint32{}, wakes: map[wakeKey]uint32{}, shareds: map[string]int64{}}, nil
}

var _ explore.System[State] = (*Search)(nil)

// Actors implements explore.System: one column per task, then the device
// and the memory system (a TSO drain, an LKMM pending barrier).
func (s *Search) Actors() []string {
	var out []string
	for t := 0; t < s.cfg.Tasks; t++ {
		out = append(out, fmt.Sprintf("task %d", t))
	}
	return append(out, "device", "memory")
}

func (s *Search) actor(k ActionKind, task int) uint8 {
	switch k {
	case ActDrain, ActBarrier:
		return uint8(s.cfg.Tasks + 1)
	}
	if k.Machine() {
		return uint8(s.cfg.Tasks)
	}
	return uint8(task)
}

// packed is an action as a node keeps it: what a replay needs to take it
// again without listing the actions enabled.
type packed struct {
	kind  ActionKind
	task  uint8
	arg   int16
	block uint16
}

func pack(a Action) packed {
	return packed{kind: a.Kind, task: uint8(a.Task), arg: int16(a.Arg), block: uint16(a.Block)}
}

func (p packed) action() Action {
	return Action{Kind: p.kind, Task: int(p.task), Arg: int(p.arg), Block: int(p.block)}
}

// Init implements explore.System.
func (s *Search) Init() []State {
	w, _ := s.replay(nil, noState, -1)
	id, fresh := s.intern(w, 0, -1, packed{}, 0, -1, 0)
	if !fresh || !s.keepLive(id, w) {
		w.close()
	}
	return []State{id}
}

// Next implements explore.System: each action enabled in st, by a replay
// of st's path and that action.
func (s *Search) Next(st State, yield func(explore.Label, State)) {
	n := s.node(st)
	live := s.takeLive(st)
	if n.failed || n.acts == 0 || int(n.depth) >= s.opt.MaxDepth {
		if live != nil {
			live.close()
		}
		if !n.failed && n.acts > 0 {
			s.cut.Store(true)
		}
		return
	}
	actors := s.actorsOf(st)
	var allowed []int32
	for i := range n.acts {
		if _, _, ok := s.preempt(&n, actors, int(i)); ok {
			allowed = append(allowed, i)
		} else {
			s.pcut.Store(true)
		}
	}
	if len(allowed) == 0 && live != nil {
		live.close()
	}
	ahead := s.takeAhead(st)
	path := s.packedPath(st)
	for k, i := range allowed {
		last, pre, _ := s.preempt(&n, actors, int(i))
		if k == len(allowed)-1 && ahead != nil && ahead.n.choice == i {
			// The world that reached st took this step before it
			// closed: its successor is known.
			id, _ := s.add(ahead)
			s.reused.Add(1)
			yield(ahead.label, id)
			continue
		}
		var w *World
		var a Action
		if k == len(allowed)-1 && live != nil {
			// The world that reached st is still live: the last step
			// needs no replay.
			w, a = live, live.takeAction(int(i))
			s.reused.Add(1)
		} else {
			w, a = s.replay(path, st, int(i))
		}
		id, fresh := s.intern(w, st, i, pack(a), n.depth+1, last, pre)
		if fresh && !s.keepLive(id, w) {
			s.lookAhead(id, w)
		}
		if !fresh {
			w.close()
		}
		yield(s.label(a, i), id)
	}
}

// actorsOf returns who takes each action enabled in st, with
// SearchOptions.BoundPreemptions (nil without).
func (s *Search) actorsOf(st State) []int8 {
	if !s.opt.BoundPreemptions {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actors[st]
}

func (s *Search) label(a Action, i int32) explore.Label {
	return explore.Label{Actor: s.actor(a.Kind, a.Task), Kind: uint8(a.Kind), ID: uint16(i)}
}

// takeAction takes the i-th enabled action, as the last step of a replay
// does.
func (w *World) takeAction(i int) Action {
	a := w.actions(nil)[i]
	w.takeStep(a)
	return a
}

// takeStep takes a (enabled) as the last step of a replay: the step, then
// the obligations it judges (node.judged).
func (w *World) takeStep(a Action) {
	w.judged = 0
	w.step++
	w.perform(a)
	if w.fail == nil {
		w.checkObligations()
	}
}

// preempt returns, for action i of n, whose actions are taken by actors,
// the task that ran last and the preemptions after it, and whether the
// bound allows it.
func (s *Search) preempt(n *node, actors []int8, i int) (last int8, pre uint8, ok bool) {
	if !s.opt.BoundPreemptions {
		return -1, 0, true
	}
	j := actors[i]
	if j < 0 {
		return n.last, n.pre, true
	}
	pre = n.pre
	if n.last >= 0 && j != n.last && slices.Contains(actors, n.last) {
		pre++
	}
	return j, pre, int(pre) <= s.opt.Preemptions
}

// Bounded reports whether the preemption bound left out a step: a SAFE of
// such a search is "SAFE within k preemptions", not SAFE.
func (s *Search) Bounded() bool { return s.pcut.Load() }

// Describe implements explore.System; a counterexample's steps are
// described from its replay instead (Explore).
func (s *Search) Describe(l explore.Label) string {
	return fmt.Sprintf("%v (choice %d)", ActionKind(l.Kind), l.ID)
}

// Check implements explore.System: the violation found in st (a task's
// Fail or Assert, an obligation a crash there would break).
func (s *Search) Check(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.nodes[st].failed {
		return nil
	}
	return s.errs[st]
}

// Unfinished implements explore.System. A state at the depth bound is
// reported as having nothing unfinished: it is not expanded, and must not
// be taken for a deadlock (the search is UNKNOWN instead).
func (s *Search) Unfinished(st State) uint64 {
	n := s.node(st)
	if int(n.depth) >= s.opt.MaxDepth && n.acts > 0 || n.allCut {
		return 0 // not expanded, or every step left out by the preemption bound
	}
	return n.unfinished
}

func (s *Search) node(st State) node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[st]
}

// Path returns the choices that lead from the start to st: the index, in
// each state, of the action taken among those enabled (World.Run's
// Chooser sees the same lists, so Script replays it).
func (s *Search) Path(st State) []int {
	var out []int
	for _, n := range s.pathNodes(st) {
		out = append(out, int(n.choice))
	}
	return out
}

// packedPath returns the actions that lead from the start to st.
func (s *Search) packedPath(st State) []packed {
	var out []packed
	for _, n := range s.pathNodes(st) {
		out = append(out, n.act)
	}
	return out
}

// pathNodes returns the states from the start (left out) to st, in order.
// Nodes are not changed once added.
func (s *Search) pathNodes(st State) []*node {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*node
	for n := &s.nodes[st]; n.choice >= 0; n = &s.nodes[n.parent] {
		out = append(out, n)
	}
	slices.Reverse(out)
	return out
}

// replay runs the program anew, takes the actions of path (each checked to
// be enabled, without listing the others) and then, if last >= 0, the
// last-th action enabled; it returns the world, its tasks still live
// (close it), and the last action taken. The last step may fail the run;
// an earlier one may not (the state there was expanded, so it had no
// violation).
//
// If path leads to the state at (not noState), its steps do not intern
// the tasks' results: at's are restored at the end of the path.
func (s *Search) replay(path []packed, at State, last int) (*World, Action) {
	s.runs.Add(1)
	s.steps.Add(int64(len(path) + 1))
	w, err := New(s.cfg)
	if err != nil {
		panic(err) // NewSearch checked cfg
	}
	w.srch, w.quiet = s, true
	w.noSeq = at != noState && len(path) > 0
	w.start(s.prog(w))
	var a Action
	for k, p := range path {
		a = p.action()
		if w.fail != nil || !w.enabled(a) {
			w.close()
			panic(fmt.Sprintf("model world search: the program is not deterministic: its replay cannot take step %d of %d (%v by task %d) as the recorded run did (failure: %v)",
				k+1, len(path), a.Kind, a.Task, w.fail))
		}
		w.step++
		w.perform(a)
	}
	if w.noSeq {
		w.noSeq = false
		s.restoreSeqs(w, at)
	}
	if last >= 0 {
		return w, w.takeAction(last)
	}
	if w.fail == nil {
		w.checkObligations()
	}
	return w, a
}

// noState is no state: a replay whose path is not a state's.
const noState = ^State(0)

// restoreSeqs sets the tasks' interned results and the order of WaitQueue
// changes as they were when state at was reached.
func (s *Search) restoreSeqs(w *World, at State) {
	n := len(w.tasks) + 1
	s.mu.Lock()
	seqs := s.seqAt[int(at)*n : int(at+1)*n]
	for i, t := range w.tasks {
		t.seq = seqs[i]
	}
	w.wakeLog = seqs[n-1]
	s.mu.Unlock()
}

// enabled reports whether a is among the actions enabled now (for
// replays, which take recorded actions without listing them).
func (w *World) enabled(a Action) bool {
	switch a.Kind {
	case ActWriteDone, ActWritePreflushed:
		for _, p := range w.writes {
			if p.task == a.Task && p.block == a.Block && p.unsent == (a.Kind == ActWritePreflushed) {
				return true
			}
		}
		return false
	case ActFlushDone, ActFlushFail:
		return w.FlushInFlightBy(a.Task)
	case ActDrain, ActBarrier:
		return true // Drain and Complete panic if not
	}
	if a.Task < 0 || a.Task >= len(w.tasks) || w.tasks[a.Task].done {
		return false
	}
	switch k := w.tasks[a.Task].req.kind; a.Kind {
	case ActWake:
		return k == ActChoice || k == ActFlush
	default:
		return k == a.Kind
	}
}

// intern returns the state of w, reached from parent by choice (-1: w is
// at the start), adding it if it is new.
func (s *Search) intern(w *World, parent State, choice int32, act packed, depth int32, last int8, pre uint8) (State, bool) {
	key, h := s.key(w, parent, choice, last, pre)
	s.mu.Lock()
	if id, ok := s.keys.find(key, h); ok {
		s.nodes[id].judged |= w.judged // as add does: every step into it counts
		s.mu.Unlock()
		return State(id), false
	}
	s.mu.Unlock()
	return s.add(s.describe(w, key, h, parent, choice, act, depth, last, pre))
}

// key returns the state key of w and its hash.
func (s *Search) key(w *World, parent State, choice int32, last int8, pre uint8) ([]byte, uint64) {
	var key []byte
	if s.opt.NoCache {
		if choice >= 0 {
			key = fmt.Append(nil, parent, "/", choice)
		}
	} else {
		key = s.symmetricKey(nil, w, last, pre)
	}
	return key, s.keys.hash(key)
}

// describe returns the state of w, of the given key and hash, reached from
// parent by choice (-1: w is at the start), as a successor to add.
func (s *Search) describe(w *World, key []byte, h uint64, parent State, choice int32, act packed, depth int32, last int8, pre uint8) *successor {
	n := node{parent: parent, choice: choice, act: act, depth: depth, failed: w.fail != nil, last: last, pre: pre, judged: w.judged}
	var actors []int8
	if !n.failed {
		acts := w.actions(nil)
		n.acts = int32(len(acts))
		if s.opt.BoundPreemptions {
			for _, a := range acts {
				j := int8(a.Task)
				if a.Kind.Machine() {
					j = -1
				}
				actors = append(actors, j)
			}
			n.allCut = len(acts) > 0
			for i := range acts {
				if _, _, ok := s.preempt(&n, actors, i); ok {
					n.allCut = false
				}
			}
		}
	}
	seqs := make([]uint32, 0, len(w.tasks)+1)
	for _, t := range w.tasks {
		if !t.done {
			n.unfinished |= 1 << t.id
		}
		seqs = append(seqs, t.seq)
	}
	seqs = append(seqs, w.wakeLog)
	return &successor{key: key, h: h, n: n, err: w.fail, actors: actors, seqs: seqs}
}

// searchHooks is what the exhaustive search keeps in a world it runs; in
// a run that a Chooser drives, srch is nil and the rest zero.
type searchHooks struct {
	srch    *Search
	quiet   bool          // no trace: a replay of the search
	noSeq   bool          // a replay's path to a known state: the tasks' results are restored at its end
	wakeLog uint32        // the order in which tasks ran their WaitQueue changes (interned)
	obl     []obligation  // MustSurvive's obligations (SearchOptions.Exact)
	judged  uint64        // the obligations judged since the step began (Search.Judged)
	shared  func() []byte // Shared
	sym     *Symmetry     // Symmetric

	devRead    bool            // the step read the device from a task's code (MustSurvive): takeFootprint
	keyWrites  []*pendingWrite // appendDeviceKey's scratch: the writes in flight in key order
	keyFlushes []*pendingFlush // and the flushes
}

// add adds the state succ unless its key is known; it returns the state
// and whether it is new.
func (s *Search) add(succ *successor) (State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.keys.find(succ.key, succ.h); ok {
		// Every step into a state counts for what judged it, not the
		// one that happened to reach it first: which is first depends
		// on how the workers interleave.
		s.nodes[id].judged |= succ.n.judged
		return State(id), false
	}
	id := State(s.keys.add(succ.key, succ.h))
	s.nodes = append(s.nodes, succ.n)
	s.seqAt = append(s.seqAt, succ.seqs...)
	if succ.n.failed {
		s.errs[id] = succ.err
	}
	if succ.actors != nil {
		s.actors[id] = succ.actors
	}
	return id, true
}

// extend interns the results of a task's calls followed by r.
func (s *Search) extend(prev uint32, r *response) uint32 {
	k := seqKey{prev: prev, val: r.val, ok: r.ok}
	switch {
	case r.Err == nil:
	case errors.Is(r.Err, ErrFlushFailed):
		k.err = 1
	default:
		k.err = 2
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	return s.internSeq(k)
}

// extendShared interns the results of a task's calls followed by the
// shared state sh it saw at a WaitQueue change (World.Shared).
func (s *Search) extendShared(prev uint32, sh []byte) uint32 {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	id, ok := s.shareds[string(sh)]
	if !ok {
		id = int64(len(s.shareds))
		s.shareds[string(sh)] = id
	}
	return s.internSeq(seqKey{prev: prev, err: 5, val: id})
}

// internSeq returns the id of k; s.tmu is held.
func (s *Search) internSeq(k seqKey) uint32 {
	id, ok := s.seqs[k]
	if !ok {
		id = uint32(len(s.seqs) + 1)
		s.seqs[k] = id
	}
	return id
}

// logWake interns the order of WaitQueue changes followed by one of task,
// whose results so far are seq.
func (s *Search) logWake(prev uint32, task int, seq uint32) uint32 {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	return s.internWake(wakeKey{prev: prev, task: task, seq: seq})
}

// internWake returns the id of k; s.tmu is held.
func (s *Search) internWake(k wakeKey) uint32 {
	id, ok := s.wakes[k]
	if !ok {
		s.wakeList = append(s.wakeList, k)
		id = uint32(len(s.wakeList))
		s.wakes[k] = id
	}
	return id
}

// Runs returns how many runs the search made (each a replay from the
// start) and how many steps they took in all.
func (s *Search) Runs() (runs, steps int64) { return s.runs.Load(), s.steps.Load() }

// Reused returns how many steps the search took on a live world, the one
// that had reached the state it expanded, instead of a replay.
func (s *Search) Reused() int64 { return s.reused.Load() }

// Explore searches with explore.Explore and opt. A search that left a
// state at the depth bound unexpanded and found no violation is UNKNOWN
// (Stopped is StopDepth). A counterexample's steps are described from a
// replay of its run: the values loaded, the versions written, the
// milestones the tasks reached.
func (s *Search) Explore(opt explore.Options) *explore.Result[State] {
	defer s.closeCoros()
	defer s.closeLive() // first: closing a world gives its coroutines back
	r := explore.Explore(s, opt)
	if r.Violation == nil && r.Exhausted && s.cut.Load() {
		r.Exhausted, r.Stopped = false, StopDepth
	}
	if v := r.Violation; v != nil {
		w, err := s.Replay(Choices(v))
		if err == nil {
			err = errors.New("the run ends without a violation")
		}
		if w == nil || err.Error() != v.Err.Error() && v.Kind == explore.Safety {
			panic(fmt.Sprintf("model world search: the counterexample does not replay: %v (the search found: %v)", err, v.Err))
		}
		for i := range v.Path {
			var texts []string
			for _, ev := range w.trace {
				if ev.Step == i+1 {
					texts = append(texts, w.eventText(ev, int(v.Path[i].Actor)))
				}
			}
			v.Path[i].Text = strings.Join(texts, "; ")
		}
	}
	return r
}

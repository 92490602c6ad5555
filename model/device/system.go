package device

import (
	"fmt"

	"github.com/flushproof/flushproof/internal/mutate"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/spec"
)

// WriteOp is one write of a writer task.
type WriteOp struct {
	Blocks uint8 // bit i = block i
	FUA    bool
	// Preflush: the write carries REQ_PREFLUSH (spec.Contract, rule 7).
	Preflush bool
}

// Workload drives a Device for the explorer: writer tasks that each
// submit their writes one after the other (each waits for the previous to
// complete or fail), a flusher task that submits Flushes flushes one after the
// other, device events in any order, and at any point, once, a crash.
type Workload struct {
	Config   spec.Config
	Bug      Bug
	Writers  [][]WriteOp
	Flushes  int
	Failures bool // writes and flushes may fail with EIO
}

const maxTasks = 8

// State is a state of a System: the device, the contract monitor
// fed with the same events, and each task's progress. It is comparable.
type State struct {
	dev     Device
	con     spec.Contract
	pc      [maxTasks]uint8 // next op of each task
	wait    [maxTasks]uint8 // command the task waits for (0 = none)
	illegal spec.Event      // an event the contract calls impossible (Kind 0 = none)
}

// System is the explorer's view of a Workload. After a crash the
// invariant asks, block by block, that everything the device may leave is
// allowed by spec.Contract.
type System struct {
	w      Workload
	actors []string
	blocks int
}

// NewSystem checks the workload and returns its transition system.
func NewSystem(w Workload) (*System, error) {
	tasks := len(w.Writers)
	if w.Flushes > 0 {
		tasks++
	}
	if tasks == 0 || tasks > maxTasks {
		return nil, fmt.Errorf("device workload: %d tasks, want 1 to %d", tasks, maxTasks)
	}
	if w.Flushes > spec.MaxFlushes {
		return nil, fmt.Errorf("device workload: %d flushes, at most %d", w.Flushes, spec.MaxFlushes)
	}
	s := &System{w: w}
	writes := 0
	var used uint8
	for i, ops := range w.Writers {
		s.actors = append(s.actors, string(rune('A'+i)))
		for _, op := range ops {
			if op.Blocks == 0 {
				return nil, fmt.Errorf("device workload: writer %s has a write without blocks", s.actors[i])
			}
			used |= op.Blocks
			writes++
		}
	}
	if writes > spec.MaxWrites {
		return nil, fmt.Errorf("device workload: %d writes, at most %d", writes, spec.MaxWrites)
	}
	for used != 0 {
		s.blocks++
		used >>= 1
	}
	if w.Flushes > 0 {
		s.actors = append(s.actors, "flusher")
	}
	s.actors = append(s.actors, "device")
	return s, nil
}

func (s *System) deviceActor() uint8 { return uint8(len(s.actors) - 1) }

// Actors implements System.
func (s *System) Actors() []string { return s.actors }

// Init implements System.
func (s *System) Init() []State {
	return []State{{dev: New(s.w.Config, s.w.Bug), con: spec.NewContract(s.w.Config)}}
}

// Describe implements System.
func (s *System) Describe(l explore.Label) string {
	e := spec.Event{Kind: spec.Kind(l.Kind), ID: int(l.ID), Blocks: uint8(l.Arg), FUA: l.Arg&0x100 != 0, Preflush: l.Arg&0x200 != 0}
	return e.String()
}

func (s *System) step(st State, actor uint8, e spec.Event, yield func(explore.Label, State)) {
	next, err := st.dev.Apply(e)
	if err != nil {
		return
	}
	st.dev = next
	if st.illegal.Kind == 0 {
		if err := st.con.Apply(e); err != nil {
			st.illegal = e
		}
	}
	arg := uint16(e.Blocks)
	if e.FUA {
		arg |= 0x100
	}
	if e.Preflush {
		arg |= 0x200
	}
	yield(explore.Label{Actor: actor, Kind: uint8(e.Kind), ID: uint16(e.ID), Arg: arg}, st)
}

// Next implements System.
func (s *System) Next(st State, yield func(explore.Label, State)) {
	if st.dev.Crashed() || st.illegal.Kind != 0 {
		return
	}
	for t := range s.actors[:len(s.actors)-1] {
		if st.wait[t] != 0 && (!s.ended(&st, t) || mutate.On(mutate.WaiterNeverWakes)) {
			// Waiting for its command (mutation WaiterNeverWakes: the
			// command's end does not wake it).
			continue
		}
		ns := st
		if t < len(s.w.Writers) {
			ops := s.w.Writers[t]
			if int(st.pc[t]) >= len(ops) {
				continue
			}
			op := ops[st.pc[t]]
			id := int(st.dev.nw) + 1
			ns.pc[t]++
			ns.wait[t] = uint8(id)
			s.step(ns, uint8(t), spec.Event{Kind: spec.WriteSubmit, ID: id, Blocks: op.Blocks, FUA: op.FUA, Preflush: op.Preflush}, yield)
		} else {
			if int(st.pc[t]) >= s.w.Flushes {
				continue
			}
			id := int(st.dev.nf) + 1
			ns.pc[t]++
			ns.wait[t] = uint8(id)
			s.step(ns, uint8(t), spec.Event{Kind: spec.FlushSubmit, ID: id}, yield)
		}
	}
	st.dev.Steps(s.w.Failures, func(e spec.Event) { s.step(st, s.deviceActor(), e, yield) })
	s.step(st, s.deviceActor(), spec.Event{Kind: spec.Crash}, yield)
}

func (s *System) ended(st *State, t int) bool {
	if t < len(s.w.Writers) {
		e, _ := st.dev.WriteDone(int(st.wait[t]))
		return e
	}
	e, _ := st.dev.FlushDone(int(st.wait[t]))
	return e
}

// Unfinished implements System: the tasks with commands still to submit or
// one still to end (the device never returns). After the crash nothing
// returns any more: the crash ended every command, so nothing is
// unfinished then (and nothing is enabled). As the crash is enabled in
// every state before it, a search with the crash never finds a task
// blocked forever; the tasks' own liveness is checked without it
// (TestWaiterNeverWakesOnCommand).
func (s *System) Unfinished(st State) uint64 {
	if st.dev.Crashed() {
		return 0
	}
	var u uint64
	for t := range s.actors[:len(s.actors)-1] {
		todo := s.w.Flushes
		if t < len(s.w.Writers) {
			todo = len(s.w.Writers[t])
		}
		if int(st.pc[t]) < todo || st.wait[t] != 0 && !s.ended(&st, t) {
			u |= 1 << t
		}
	}
	return u
}

// Check implements System: after a crash, the device may leave only what the
// contract allows.
func (s *System) Check(st State) error {
	if st.illegal.Kind != 0 {
		return fmt.Errorf("the device did %v, which the contract says cannot happen", st.illegal)
	}
	if !st.dev.Crashed() {
		return nil
	}
	for b := 0; b < s.blocks; b++ {
		extra := st.dev.CrashSet(b).Minus(st.con.Allowed(b))
		if !extra.Empty() {
			return fmt.Errorf("%s", st.con.Broken(b, extra.Contents()[0]))
		}
	}
	return nil
}

// CheckSound explores every state of the workload and checks, after
// every crash, that the device leaves only what the contract allows.
func CheckSound(w Workload, opt explore.Options) (*explore.Result[State], error) {
	s, err := NewSystem(w)
	if err != nil {
		return nil, err
	}
	return explore.Explore[State](s, opt), nil
}

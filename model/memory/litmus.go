package memory

import (
	"fmt"
	"sort"

	"github.com/flushproof/flushproof/model/explore"
)

// Litmus is a litmus test (tools/memory-model/litmus-tests): two threads
// of loads, stores, smp_mb and read-modify-writes on a few locations, run
// under one memory model. Outcomes lists every final register assignment;
// a test pins a model by asserting that a weak outcome is or is not in it.
type Litmus struct {
	Model   Model
	Threads [2][]LitmusOp
}

// LitmusOp is one instruction of a litmus thread.
type LitmusOp struct {
	Kind LitmusKind
	Loc  int   // location 0..MaxLocations-1
	Val  int64 // Store: the value; Cmpxchg: the new value (it expects Val-1)
	Reg  int   // Load, IncReturn, Cmpxchg: the register (0..3) that gets the result
}

// LitmusKind is what a LitmusOp does.
type LitmusKind uint8

// The litmus instructions.
const (
	LitStore     LitmusKind = iota + 1 // WRITE_ONCE
	LitLoad                            // READ_ONCE
	LitFence                           // smp_mb()
	LitIncReturn                       // atomic64_inc_return
	LitCmpxchg                         // atomic64_try_cmpxchg(Val-1 -> Val); the register gets 1 on success
)

type litmusState struct {
	mem  Memory
	pc   [2]uint8
	regs [4]int8
}

type litmusSystem struct{ Litmus }

func (l litmusSystem) Actors() []string { return []string{"T0", "T1", "memory"} }
func (l litmusSystem) Init() []litmusState {
	var readers [MaxLocations]uint8
	for t, ops := range l.Threads {
		for _, op := range ops {
			readers[op.Loc] |= 1 << t
		}
	}
	return []litmusState{{mem: New(l.Model, readers)}}
}
func (l litmusSystem) Describe(lb explore.Label) string { return fmt.Sprintf("op %d", lb.ID) }
func (l litmusSystem) Check(litmusState) error          { return nil }
func (l litmusSystem) Unfinished(s litmusState) uint64 {
	var u uint64
	for t, ops := range l.Threads {
		if int(s.pc[t]) < len(ops) {
			u |= 1 << t
		}
	}
	return u
}
func (l litmusSystem) Next(s litmusState, yield func(explore.Label, litmusState)) {
	s.mem.Steps(func(t int, m Memory) {
		n := s
		n.mem = m
		yield(explore.Label{Actor: 2, ID: uint16(t)}, n)
	})
	for t, ops := range l.Threads {
		if int(s.pc[t]) >= len(ops) {
			continue
		}
		op := ops[s.pc[t]]
		n := s
		n.pc[t]++
		lb := explore.Label{Actor: uint8(t), ID: uint16(s.pc[t])}
		switch op.Kind {
		case LitStore:
			m, err := s.mem.Store(t, op.Loc, op.Val)
			if err != nil {
				panic(err)
			}
			n.mem = m
			yield(lb, n)
		case LitLoad:
			for _, r := range s.mem.Load(t, op.Loc) {
				n.mem, n.regs[op.Reg] = r.Mem, int8(r.Val)
				lb.Arg = uint16(r.Val)
				yield(lb, n)
			}
		case LitFence:
			n.mem = s.mem.Fence(t)
			yield(lb, n)
		case LitIncReturn:
			v, m, err := s.mem.IncReturn(t, op.Loc)
			if err != nil {
				panic(err)
			}
			n.mem, n.regs[op.Reg] = m, int8(v)
			yield(lb, n)
		case LitCmpxchg:
			ok, _, m, err := s.mem.CompareAndSwap(t, op.Loc, op.Val-1, op.Val)
			if err != nil {
				panic(err)
			}
			n.mem = m
			if ok {
				n.regs[op.Reg] = 1
			}
			yield(lb, n)
		}
	}
}

// Outcomes explores every execution and returns the final values of the
// first regs registers, as sorted strings "r0=1 r1=0".
func (l Litmus) Outcomes(regs int) ([]string, error) {
	if regs < 1 || regs > 4 {
		return nil, fmt.Errorf("litmus: %d registers, want 1 to 4", regs)
	}
	for _, ops := range l.Threads {
		for _, op := range ops {
			if op.Loc < 0 || op.Loc >= MaxLocations || op.Reg < 0 || op.Reg > 3 || op.Kind < LitStore || op.Kind > LitCmpxchg {
				return nil, fmt.Errorf("litmus: bad instruction %+v", op)
			}
		}
	}
	r := explore.Explore[litmusState](litmusSystem{l}, explore.Options{Workers: 1})
	if !r.Exhausted {
		return nil, fmt.Errorf("litmus: search did not finish")
	}
	seen := map[string]bool{}
	for i := 0; i < r.Len(); i++ {
		s := r.State(i)
		if int(s.pc[0]) != len(l.Threads[0]) || int(s.pc[1]) != len(l.Threads[1]) {
			continue
		}
		key := ""
		for k := 0; k < regs; k++ {
			if k > 0 {
				key += " "
			}
			key += fmt.Sprintf("r%d=%d", k, s.regs[k])
		}
		seen[key] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

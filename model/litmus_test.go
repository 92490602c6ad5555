package model

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A litmus test: a few threads of loads, stores, fences and RMWs on
// locations x=0, y=1, z=2; the outcome is the final registers.
type litOp struct {
	kind byte // 's' store, 'l' load, 'f' smp_mb, 'i' inc_return, 'c' cmpxchg(val-1 -> val)
	loc  int
	val  int64
	reg  int // load, inc_return, cmpxchg: the register that gets the value read
}

type litmus struct {
	model   MemoryModel
	threads [][]litOp
}

type litState struct {
	mem  Memory
	pc   [2]uint8
	regs [4]int8
}

func (l litmus) Actors() []string { return []string{"T0", "T1", "memory"} }
func (l litmus) Init() []litState {
	var readers [MaxLocations]uint8
	for t, ops := range l.threads {
		for _, op := range ops {
			readers[op.loc] |= 1 << t
		}
	}
	return []litState{{mem: NewMemory(l.model, readers)}}
}
func (l litmus) Describe(lb Label) string { return fmt.Sprintf("op %d", lb.ID) }
func (l litmus) Check(litState) error     { return nil }
func (l litmus) Waiting(litState) uint64  { return 0 }
func (l litmus) Next(s litState, yield func(Label, litState)) {
	s.mem.Steps(func(t int, m Memory) {
		n := s
		n.mem = m
		yield(Label{Actor: 2, ID: uint16(t)}, n)
	})
	for t, ops := range l.threads {
		if int(s.pc[t]) >= len(ops) {
			continue
		}
		op := ops[s.pc[t]]
		n := s
		n.pc[t]++
		lb := Label{Actor: uint8(t), ID: uint16(s.pc[t])}
		switch op.kind {
		case 's':
			m, err := s.mem.Store(t, op.loc, op.val)
			if err != nil {
				panic(err)
			}
			n.mem = m
			yield(lb, n)
		case 'l':
			for _, r := range s.mem.Load(t, op.loc) {
				n.mem, n.regs[op.reg] = r.Mem, int8(r.Val)
				yield(lb, n)
			}
		case 'f':
			n.mem = s.mem.Fence(t)
			yield(lb, n)
		case 'i':
			v, m, err := s.mem.IncReturn(t, op.loc)
			if err != nil {
				panic(err)
			}
			n.mem, n.regs[op.reg] = m, int8(v)
			yield(lb, n)
		case 'c':
			ok, _, m, err := s.mem.CompareAndSwap(t, op.loc, op.val-1, op.val)
			if err != nil {
				panic(err)
			}
			n.mem = m
			if ok {
				n.regs[op.reg] = 1
			}
			yield(lb, n)
		}
	}
}

// outcomes returns the final register values, as "r0=.. r1=..", over every
// execution.
func (l litmus) outcomes(t *testing.T, regs int) []string {
	t.Helper()
	r := Explore[litState](l, Options{})
	require.True(t, r.Exhausted)
	seen := map[string]bool{}
	for i := 0; i < r.Len(); i++ {
		s := r.State(i)
		done := true
		for th, ops := range l.threads {
			done = done && int(s.pc[th]) == len(ops)
		}
		if !done {
			continue
		}
		key := ""
		for k := 0; k < regs; k++ {
			key += fmt.Sprintf("r%d=%d ", k, s.regs[k])
		}
		seen[key[:len(key)-1]] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const x, y, z = 0, 1, 2

// TestLitmus pins the three memory models on the classic shapes
// (Documentation/memory-barriers.txt; tools/memory-model/litmus-tests).
func TestLitmus(t *testing.T) {
	cases := []struct {
		name    string
		threads [][]litOp
		regs    int
		weak    string // the outcome that separates the models
		allowed map[MemoryModel]bool
	}{
		{
			// Message passing without barriers: the reader sees the flag
			// but stale data. Only Relaxed allows it (TSO keeps load-load
			// and store-store order).
			name: "MP",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 's', loc: y, val: 1}},
				{{kind: 'l', loc: y, reg: 0}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: true},
		},
		{
			// MP with a fully ordered RMW on the writer side and smp_mb on
			// the reader side: the shape of the xfs flush sequence.
			name: "MP+rmw+mb",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'i', loc: y, reg: 2}},
				{{kind: 'l', loc: y, reg: 0}, {kind: 'f'}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: false},
		},
		{
			// MP with the RMW but no reader-side barrier: still stale under
			// Relaxed (the barrier is needed on both sides).
			name: "MP+rmw",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'i', loc: y, reg: 2}},
				{{kind: 'l', loc: y, reg: 0}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: true},
		},
		{
			// Store buffering: both threads read the other's old value. TSO
			// and Relaxed allow it.
			name: "SB",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'l', loc: y, reg: 0}},
				{{kind: 's', loc: y, val: 1}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=0 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: true, Relaxed: true},
		},
		{
			name: "SB+mbs",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'f'}, {kind: 'l', loc: y, reg: 0}},
				{{kind: 's', loc: y, val: 1}, {kind: 'f'}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=0 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: false},
		},
		{
			// Coherence: two reads of one location never go back in time.
			name: "CoRR",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 's', loc: x, val: 2}},
				{{kind: 'l', loc: x, reg: 0}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=2 r1=1",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: false},
		},
		{
			// A failed cmpxchg orders nothing (atomic_t.txt): the reader
			// still sees stale data after it under Relaxed.
			name: "MP+rmw+failed-cmpxchg",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'i', loc: y, reg: 2}},
				{{kind: 'l', loc: y, reg: 0}, {kind: 'c', loc: z, val: 5, reg: 3}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: true},
		},
		{
			// A successful cmpxchg is fully ordered: no stale read after it.
			name: "MP+rmw+cmpxchg",
			threads: [][]litOp{
				{{kind: 's', loc: x, val: 1}, {kind: 'i', loc: y, reg: 2}},
				{{kind: 'l', loc: y, reg: 0}, {kind: 'c', loc: z, val: 1, reg: 3}, {kind: 'l', loc: x, reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[MemoryModel]bool{SC: false, TSO: false, Relaxed: false},
		},
	}
	for _, tc := range cases {
		for _, m := range MemoryModels() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				got := litmus{model: m, threads: tc.threads}.outcomes(t, tc.regs)
				require.NotEmpty(t, got)
				if tc.allowed[m] {
					assert.Contains(t, got, tc.weak, "%s must allow %s", m, tc.weak)
				} else {
					assert.NotContains(t, got, tc.weak, "%s must forbid %s", m, tc.weak)
				}
			})
		}
	}
}

// TestLitmusSCOutcomes: under SC, MP has exactly the three interleaving
// outcomes; a sanity check that the litmus harness explores everything.
func TestLitmusSCOutcomes(t *testing.T) {
	got := litmus{model: SC, threads: [][]litOp{
		{{kind: 's', loc: x, val: 1}, {kind: 's', loc: y, val: 1}},
		{{kind: 'l', loc: y, reg: 0}, {kind: 'l', loc: x, reg: 1}},
	}}.outcomes(t, 2)
	assert.Equal(t, []string{"r0=0 r1=0", "r0=0 r1=1", "r0=1 r1=1"}, got)
}

func TestMemoryCompactsDeadStores(t *testing.T) {
	readers := [MaxLocations]uint8{x: 0b01}
	m := NewMemory(Relaxed, readers)
	var err error
	for v := int64(1); v <= 20; v++ { // far more than maxStores: old ones die
		m, err = m.Store(1, x, v)
		require.NoError(t, err)
		if v%3 == 0 {
			_, m = m.LoadNewest(0, x)
		}
	}
	loads := m.Load(0, x)
	assert.LessOrEqual(t, len(loads), 3, "only stores since the reader's last look are live")
	assert.Equal(t, int64(20), loads[len(loads)-1].Val)
}

package props

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/memory"
)

const x, y, z = 0, 1, 2

// TestLitmus pins the three memory models on the classic shapes
// (Documentation/memory-barriers.txt; tools/memory-model/litmus-tests).
func TestLitmus(t *testing.T) {
	cases := []struct {
		name    string
		threads [2][]memory.LitmusOp
		regs    int
		weak    string // the outcome that separates the models
		allowed map[memory.Model]bool
	}{
		{
			// Message passing without barriers: the reader sees the flag
			// but stale data. Only Relaxed allows it (TSO keeps load-load
			// and store-store order).
			name: "MP",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitStore, Loc: y, Val: 1}},
				{{Kind: memory.LitLoad, Loc: y, Reg: 0}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: true},
		},
		{
			// MP with a fully ordered RMW on the writer side and smp_mb on
			// the reader side: the shape of the xfs flush sequence.
			name: "MP+rmw+mb",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitIncReturn, Loc: y, Reg: 2}},
				{{Kind: memory.LitLoad, Loc: y, Reg: 0}, {Kind: memory.LitFence}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: false},
		},
		{
			// MP with the RMW but no reader-side barrier: still stale under
			// Relaxed (the barrier is needed on both sides).
			name: "MP+rmw",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitIncReturn, Loc: y, Reg: 2}},
				{{Kind: memory.LitLoad, Loc: y, Reg: 0}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: true},
		},
		{
			// Store buffering: both threads read the other's old value. TSO
			// and Relaxed allow it.
			name: "SB",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitLoad, Loc: y, Reg: 0}},
				{{Kind: memory.LitStore, Loc: y, Val: 1}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=0 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: true, memory.Relaxed: true},
		},
		{
			name: "SB+mbs",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitFence}, {Kind: memory.LitLoad, Loc: y, Reg: 0}},
				{{Kind: memory.LitStore, Loc: y, Val: 1}, {Kind: memory.LitFence}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=0 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: false},
		},
		{
			// Coherence: two reads of one location never go back in time.
			name: "CoRR",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitStore, Loc: x, Val: 2}},
				{{Kind: memory.LitLoad, Loc: x, Reg: 0}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=2 r1=1",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: false},
		},
		{
			// A failed cmpxchg orders nothing (atomic_t.txt): the reader
			// still sees stale data after it under Relaxed.
			name: "MP+rmw+failed-cmpxchg",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitIncReturn, Loc: y, Reg: 2}},
				{{Kind: memory.LitLoad, Loc: y, Reg: 0}, {Kind: memory.LitCmpxchg, Loc: z, Val: 5, Reg: 3}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: true},
		},
		{
			// A successful cmpxchg is fully ordered: no stale read after it.
			name: "MP+rmw+cmpxchg",
			threads: [2][]memory.LitmusOp{
				{{Kind: memory.LitStore, Loc: x, Val: 1}, {Kind: memory.LitIncReturn, Loc: y, Reg: 2}},
				{{Kind: memory.LitLoad, Loc: y, Reg: 0}, {Kind: memory.LitCmpxchg, Loc: z, Val: 1, Reg: 3}, {Kind: memory.LitLoad, Loc: x, Reg: 1}},
			},
			regs: 2, weak: "r0=1 r1=0",
			allowed: map[memory.Model]bool{memory.SC: false, memory.TSO: false, memory.Relaxed: false},
		},
	}
	for _, tc := range cases {
		for _, m := range memory.Models() {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				got, err := memory.Litmus{Model: m, Threads: tc.threads}.Outcomes(tc.regs)
				require.NoError(t, err)
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

package durable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/litmus/litmustest"
	"github.com/flushproof/flushproof/model/memory"
)

// TestOperationalShapes: the classic shapes, with the answer each model
// must give (SC forbids every weak outcome; TSO allows only store
// buffering; Relaxed, the view-based model, allows SB and unfenced MP).
// "-" marks a test the model refuses.
func TestOperationalShapes(t *testing.T) {
	for _, tc := range []struct {
		name, src        string
		sc, tso, relaxed string
	}{
		{"SB", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; WRITE_ONCE(*x, 1); r0 = READ_ONCE(*y);",
			"int r0; WRITE_ONCE(*y, 1); r0 = READ_ONCE(*x);"), "Never", "Sometimes", "Sometimes"},
		{"SB+mbs", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; WRITE_ONCE(*x, 1); smp_mb(); r0 = READ_ONCE(*y);",
			"int r0; WRITE_ONCE(*y, 1); smp_mb(); r0 = READ_ONCE(*x);"), "Never", "Never", "Never"},
		{"SB+xchgs", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; int r1; r1 = xchg(x, 1); r0 = READ_ONCE(*y);",
			"int r0; int r1; r1 = xchg(y, 1); r0 = READ_ONCE(*x);"), "Never", "Never", "Never"},
		{"MP", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1);",
			"int r0; int r1; r0 = READ_ONCE(*y); r1 = READ_ONCE(*x);"), "Never", "Never", "Sometimes"},
		{"MP+rel+acq", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); smp_store_release(y, 1);",
			"int r0; int r1; r0 = smp_load_acquire(y); r1 = READ_ONCE(*x);"), "Never", "Never", "-"},
		{"MP+wmb+rmb", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); smp_wmb(); WRITE_ONCE(*y, 1);",
			"int r0; int r1; r0 = READ_ONCE(*y); smp_rmb(); r1 = READ_ONCE(*x);"), "Never", "Never", "-"},
		{"MP+locks", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"WRITE_ONCE(*x, 1); spin_lock(l); WRITE_ONCE(*y, 1); spin_unlock(l);",
			"int r0; int r1; spin_lock(l); r0 = READ_ONCE(*y); spin_unlock(l); r1 = READ_ONCE(*x);"), "Never", "Never", "-"},
		// The shape of the xfs flush sequence: a fully ordered RMW on the
		// writer side and smp_mb on the reader side forbid the stale read;
		// without the reader's barrier, Relaxed allows it.
		{"MP+rmw+mb", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"int r2; WRITE_ONCE(*x, 1); r2 = atomic_inc_return(v);",
			"int r0; int r1; r0 = atomic_read(v); smp_mb(); r1 = READ_ONCE(*x);"), "Never", "Never", "Never"},
		{"MP+rmw", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"int r2; WRITE_ONCE(*x, 1); r2 = atomic_inc_return(v);",
			"int r0; int r1; r0 = atomic_read(v); r1 = READ_ONCE(*x);"), "Never", "Never", "Sometimes"},
		// A failed cmpxchg orders nothing (Documentation/atomic_t.txt); a
		// successful one is fully ordered.
		{"MP+rmw+failed-cmpxchg", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"int r2; WRITE_ONCE(*x, 1); r2 = atomic_inc_return(v);",
			"int r0; int r1; int r3; r0 = atomic_read(v); r3 = cmpxchg(y, 4, 5); r1 = READ_ONCE(*x);"), "Never", "Never", "Sometimes"},
		{"MP+rmw+cmpxchg", litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
			"int r2; WRITE_ONCE(*x, 1); r2 = atomic_inc_return(v);",
			"int r0; int r1; int r3; r0 = atomic_read(v); r3 = cmpxchg(y, 0, 1); r1 = READ_ONCE(*x);"), "Never", "Never", "Never"},
		// Coherence: two reads of one location never go back in time.
		{"CoRR", litmustest.Two("exists (1:r0=2 /\\ 1:r1=1)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 2);",
			"int r0; int r1; r0 = READ_ONCE(*x); r1 = READ_ONCE(*x);"), "Never", "Never", "Never"},
		// Read-modify-writes on one location are atomic under every model:
		// two increments return 1 and 2; an increment racing a cmpxchg(0, 1)
		// comes first (the cmpxchg then fails) or sees its 1.
		{"inc_return twice", litmustest.Two("forall ((0:r0=1 /\\ 1:r0=2) \\/ (0:r0=2 /\\ 1:r0=1))",
			"int r0; r0 = atomic_inc_return(v);", "int r0; r0 = atomic_inc_return(v);"), "Always", "Always", "Always"},
		{"inc_return against cmpxchg", litmustest.Two("forall ((0:r0=1 /\\ 1:r0=1) \\/ (0:r0=2 /\\ 1:r0=0))",
			"int r0; r0 = atomic_inc_return(v);", "int r0; r0 = atomic_cmpxchg(v, 0, 1);"), "Always", "Always", "Always"},
		{"LB", litmustest.Two("exists (0:r0=1 /\\ 1:r0=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*y, 1);",
			"int r0; r0 = READ_ONCE(*y); WRITE_ONCE(*x, 1);"), "Never", "Never", "Never"},
		{"CoWW final", litmustest.Two("exists (x=1)",
			"WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 2);", ""), "Never", "Never", "Never"},
		{"atomic counter", litmustest.Two("forall (v=2 /\\ (0:r0=1 \\/ 0:r0=2))",
			"int r0; r0 = atomic_inc_return(v);", "atomic_inc(v);"), "Always", "Always", "-"},
		{"fetch_add and add_return", litmustest.Two("forall (v=5 /\\ (0:r0=0 \\/ 0:r0=3) /\\ (1:r0=3 \\/ 1:r0=5))",
			"int r0; r0 = atomic_fetch_add(2, v);", "int r0; r0 = atomic_add_return(3, v);"), "Always", "Always", "Always"},
		{"cmpxchg one winner", litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
			"int r0; r0 = cmpxchg(x, 0, 1);", "int r0; r0 = cmpxchg(x, 0, 2);"), "Never", "Never", "Never"},
		{"cmpxchg old value", litmustest.Two("forall ((0:r0=0 /\\ x=1) \\/ (0:r0=2 /\\ x=2))",
			"int r0; r0 = cmpxchg(x, 0, 1);", "WRITE_ONCE(*x, 2);"), "Sometimes", "Sometimes", "Sometimes"},
		{"control dependency", litmustest.Two("exists (y=1)",
			"int r0; r0 = READ_ONCE(*x); if (r0 == 1) { WRITE_ONCE(*y, 1); } else WRITE_ONCE(*y, 2);", "WRITE_ONCE(*x, 1);"), "Sometimes", "Sometimes", "Sometimes"},
		{"mutual exclusion", litmustest.Two("exists (x=1)",
			"int r0; spin_lock(l); r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1); spin_unlock(l);",
			"int r0; spin_lock(l); r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1); spin_unlock(l);"), "Never", "Never", "-"},
		{"lost update without lock", litmustest.Two("exists (x=1)",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1);",
			"int r0; r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1);"), "Sometimes", "Sometimes", "Sometimes"},
	} {
		tt := litmustest.MustParse(t, tc.src)
		for _, want := range []struct {
			m      memory.Model
			result string
		}{{memory.SC, tc.sc}, {memory.TSO, tc.tso}, {memory.Relaxed, tc.relaxed}} {
			a, err := litmus.Judge(Operational{Model: want.m}, tt)
			if want.result == "-" {
				assert.Error(t, err, "%s under %s", tc.name, want.m)
				continue
			}
			require.NoError(t, err, "%s under %s", tc.name, want.m)
			assert.Equal(t, want.result, a.Result, "%s under %s", tc.name, want.m)
		}
	}
}

// TestOperationalExploresEveryExecution: under SC, MP without barriers has
// exactly the three outcomes of its interleavings.
func TestOperationalExploresEveryExecution(t *testing.T) {
	tt := litmustest.MustParse(t, litmustest.Two("exists (1:r0=1 /\\ 1:r1=0)",
		"WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1);",
		"int r0; int r1; r0 = READ_ONCE(*y); r1 = READ_ONCE(*x);"))
	outs, err := Operational{Model: memory.SC}.Outcomes(tt)
	require.NoError(t, err)
	var keys []string
	for _, o := range outs {
		keys = append(keys, o.Key())
	}
	assert.ElementsMatch(t, []string{
		"1:r0=0; 1:r1=0; l=0; v=0; x=1; y=1;",
		"1:r0=0; 1:r1=1; l=0; v=0; x=1; y=1;",
		"1:r0=1; 1:r1=1; l=0; v=0; x=1; y=1;",
	}, keys)
}

func TestOperationalInitAndOutcomes(t *testing.T) {
	tt := litmustest.MustParse(t, "C I\n{ x=100; y=-5; }\nP0(int *x, int *y)\n{\nint r0; int r1;\nr0 = READ_ONCE(*x);\nr1 = atomic_fetch_add(1, y);\nWRITE_ONCE(*x, r0 + 20);\n}\nexists (x=120)\n")
	outs, err := Operational{Model: memory.SC}.Outcomes(tt)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, "0:r0=100; 0:r1=-5; x=120; y=-4;", outs[0].Key())

	// The value memory keeps is the difference from the initial value: 100
	// more than that is out of range, an error naming the line.
	tt = litmustest.MustParse(t, "C I\n{ x=100; }\nP0(int *x)\n{\nWRITE_ONCE(*x, 300);\n}\nexists (x=300)\n")
	_, err = Operational{Model: memory.SC}.Outcomes(tt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 5")
}

// TestOperationalRefuses: what a model cannot run is an error naming the
// primitive and line, or the bound.
func TestOperationalRefuses(t *testing.T) {
	for _, stmt := range []string{
		"r0 = smp_load_acquire(x);", "smp_store_release(x, 1);", "smp_rmb();", "smp_wmb();",
		"smp_mb__before_atomic();", "smp_mb__after_atomic();", "smp_mb__after_spinlock();", "barrier();",
		"atomic_inc(v);", "r0 = atomic_inc_return_relaxed(v);", "r0 = xchg_acquire(x, 1);",
		"r0 = cmpxchg_release(x, 0, 1);", "spin_lock(l);", "spin_unlock(l);", "r0 = atomic_fetch_add_relaxed(1, v);",
	} {
		tt := litmustest.MustParse(t, litmustest.Two("exists (x=1)", "int r0;\n"+stmt, ""))
		name := tt.Threads[0].Body[0].Access.Op.String()
		_, err := Operational{Model: memory.Relaxed}.Outcomes(tt)
		require.Error(t, err, stmt)
		assert.ErrorIs(t, err, litmus.ErrUnsupported, stmt)
		assert.Contains(t, err.Error(), "Relaxed does not support "+name, stmt)
		assert.Contains(t, err.Error(), "line 6", stmt)
		for _, m := range []memory.Model{memory.SC, memory.TSO} {
			_, err := Operational{Model: m}.Outcomes(tt)
			assert.NoError(t, err, "%s under %s", stmt, m)
		}
	}

	var b strings.Builder
	b.WriteString("C many\n{}\n")
	for i := 0; i < memory.MaxThreads+1; i++ {
		fmt.Fprintf(&b, "P%d(int *x) { WRITE_ONCE(*x, 1); }\n", i)
	}
	b.WriteString("exists (x=1)\n")
	_, err := Operational{Model: memory.SC}.Outcomes(litmustest.MustParse(t, b.String()))
	assert.ErrorContains(t, err, "t.litmus:11:1: unsupported: P8 is thread 9 of 9, and the checker's memory holds at most 8 threads")
	assert.ErrorIs(t, err, litmus.ErrUnsupported)

	var params []string
	for i := 0; i <= memory.MaxLocations; i++ {
		params = append(params, fmt.Sprintf("int *l%d", i))
	}
	head := "P0(" + strings.Join(params, ", ")
	_, err = Operational{Model: memory.SC}.Outcomes(litmustest.MustParse(t,
		"C locs\n{}\n"+head+") { }\nexists (l0=0)\n"))
	assert.ErrorContains(t, err, fmt.Sprintf("t.litmus:3:%d: unsupported: l%d is shared location %d of %d, and the checker's memory holds at most %d",
		len(head)-len(fmt.Sprint("l", memory.MaxLocations))+1, memory.MaxLocations, memory.MaxLocations+1, memory.MaxLocations+1, memory.MaxLocations))
	assert.ErrorIs(t, err, litmus.ErrUnsupported)

	_, err = Operational{Model: memory.SC}.Outcomes(litmustest.MustParse(t,
		"C regs\n{}\nP0(int *x) { int a; int b; int c; int d; int e; int f; int g; int h; int i;\na=1; b=1; c=1; d=1; e=1; f=1; g=1; h=1; i=1; }\nexists (x=0)\n"))
	assert.ErrorContains(t, err, "line 4: unsupported: i is a 9th register of P0, and a thread holds at most 8")

	// TSO's store buffer holds 4 stores.
	_, err = Operational{Model: memory.TSO}.Outcomes(litmustest.MustParse(t,
		litmustest.Two("exists (x=1)", "WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 2); WRITE_ONCE(*x, 3); WRITE_ONCE(*x, 4); WRITE_ONCE(*x, 5);", "")))
	assert.ErrorContains(t, err, "store buffer")
	assert.ErrorIs(t, err, litmus.ErrUnsupported)

	// A state budget cut short is an error, never a partial answer.
	_, err = Operational{Model: memory.SC, MaxStates: 3}.Outcomes(litmustest.MustParse(t,
		litmustest.Two("exists (x=1)", "WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1);", "WRITE_ONCE(*y, 2); WRITE_ONCE(*x, 2);")))
	assert.ErrorIs(t, err, litmus.ErrCutShort)
}

// TestWitnessReplays: a witness is a real path whose end satisfies the
// condition, printed with one column per thread.
func TestWitnessReplays(t *testing.T) {
	tt := litmustest.MustParse(t, litmustest.Two("exists (0:r0=0 /\\ 1:r0=0)",
		"int r0; WRITE_ONCE(*x, 1); r0 = READ_ONCE(*y);",
		"int r0; WRITE_ONCE(*y, 1); r0 = READ_ONCE(*x);"))
	for _, m := range []memory.Model{memory.TSO, memory.Relaxed} {
		o := Operational{Model: m}
		path, actors, err := o.Witness(tt, tt.Cond)
		require.NoError(t, err)
		require.NotEmpty(t, path, m)
		assert.Equal(t, []string{"P0", "P1", "memory"}, actors)
		sys, err := compile(m, tt)
		require.NoError(t, err)
		end, err := explore.Replay[opState](sys, path)
		require.NoError(t, err, m)
		require.True(t, sys.final(end), m)
		ok, err := sys.outcome(end).Satisfies(tt.Cond)
		require.NoError(t, err)
		assert.True(t, ok, m)
		text := explore.Timeline(actors, path)
		assert.Contains(t, text, "r0 = READ_ONCE(y) = 0", m)
	}
	path, _, err := Operational{Model: memory.SC}.Witness(tt, tt.Cond)
	require.NoError(t, err)
	assert.Nil(t, path, "SC forbids SB's outcome: no witness")
}

// TestLabelsDetermine: the explorer's rule, that a label leads to one
// state, holds for tests with Relaxed loads of equal values from different
// stores, RMWs, branches and locks.
func TestLabelsDetermine(t *testing.T) {
	srcs := []string{
		litmustest.Two("exists (x=1)", "int r0; int r1; WRITE_ONCE(*x, 1); WRITE_ONCE(*x, 0); r1 = xchg(y, 1);", "int r0; r0 = READ_ONCE(*x); r0 = READ_ONCE(*x); if (r0) WRITE_ONCE(*y, 2);"),
		litmustest.Two("exists (x=1)", "int r0; spin_lock(l); r0 = cmpxchg(x, 0, 1); spin_unlock(l);", "spin_lock(l); WRITE_ONCE(*x, 3); spin_unlock(l); WRITE_ONCE(*y, 1);"),
	}
	for _, src := range srcs {
		tt := litmustest.MustParse(t, src)
		for _, m := range memory.Models() {
			sys, err := compile(m, tt)
			if err != nil {
				continue // Relaxed refuses the locks
			}
			assert.NoError(t, explore.LabelsDetermine[opState](sys), "%s under %s", src, m)
		}
	}
}

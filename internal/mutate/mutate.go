// Package mutate holds the semantic mutations that mutation tests switch on,
// one at a time, to see that the checks catch them: a barrier that orders
// nothing, a device that keeps what it may lose, a waiter that never wakes.
// Each mutation is a deliberate bug in the model, the device contract or the
// tools, guarded in the code by On; the code without a mutation switched on
// is the code that runs.
//
// The mutations are built in only on request: with the build tag mutants
// (go test -tags mutants ...), as etcd builds in its failpoints. Without
// it On is a constant false that the compiler folds away, nothing of
// package testing is linked into a binary, and Set skips the test that
// asks for a mutation. With it, only tests switch a mutation on (Set
// panics outside a test binary), and only one at a time.
package mutate

import "fmt"

// Mutation names one deliberate bug.
type Mutation uint32

// The mutations. Docs/mutants.md lists what catches each.
const (
	None Mutation = iota

	// FenceWeak: smp_mb() orders nothing: under Relaxed it raises no view,
	// under TSO it drains no store buffer, under LKMM it takes in and
	// publishes nothing. Fully ordered read-modify-writes
	// keep their own ordering.
	FenceWeak
	// RMWStale: a fully ordered read-modify-write (atomic64_inc_return,
	// cmpxchg) reads the store its thread's view allows, not the newest
	// (Relaxed), so two increments can return the same value.
	RMWStale
	// JoinViewLost: a lock hands no view from its last holder to the next
	// (Relaxed: release and acquire order nothing).
	JoinViewLost
	// FlushCoversAtCompletion: a flush makes durable the writes completed
	// when it completes, instead of those completed when it was submitted.
	FlushCoversAtCompletion
	// FUAWeak: a FUA write is not durable when it completes (the device
	// treats it as a plain write into its cache).
	FUAWeak
	// CrashKeepsInFlight: a crash always keeps the newest write submitted to
	// a block, in flight or not, so in-flight data is never lost.
	CrashKeepsInFlight
	// CompletedAtSubmit: the device counts a write as completed (for the
	// flushes submitted after it) as soon as it is submitted.
	CompletedAtSubmit
	// JoinNoFallback: in the xfs flush sequence, a task whose joined flush
	// failed returns without the flush of its own that must replace it.
	JoinNoFallback
	// WaiterNeverWakes: in each protocol, one waiter is never woken (the
	// wake-up it waits for is lost).
	WaiterNeverWakes
	// BudgetIgnored: the explorer ignores Options.MaxStates.
	BudgetIgnored
	// GeneratorNeverTears: the crash lab's crash-state generator never
	// tears a write: a write it keeps lands on every sector no other kept
	// write takes, so none is left with some sectors of the content from
	// before it (a shuffled state may still let an older kept write take
	// one of its sectors).
	GeneratorNeverTears
	// AckOffByOne: the crash lab's acknowledgement check is off by one at
	// the cut: a record acknowledged exactly at the cut position is not
	// checked, as if acknowledged after the crash.
	AckOffByOne
	// CondAssignLocal: the durability litmus checker takes an assignment
	// under an if (or in a loop) as a local step even when it sets a
	// register the final condition names, so the assignment rides along
	// with the step before it and no crash is judged between the two.
	CondAssignLocal
	// ODSyncShortSkipsSync: in the O_DSYNC model, a write() whose direct
	// part was short and whose buffered fallback's write-back failed
	// returns the direct blocks without generic_write_sync, so the
	// fallback's error (the mapping's errseq) is not reported by it.
	ODSyncShortSkipsSync
	// DSyncIgnoresWriteError: impl.DSyncWriter in mode write+flush
	// ignores the write's error and returns the flush's.
	DSyncIgnoresWriteError
	// LivenessAnyReturn: the explorer's blocked-forever check takes a
	// state from which some actor, any actor, can return for one from
	// which the actor it checks can.
	LivenessAnyReturn
	// WorldKeyNoFlushEnd: the model world's state key (and the symmetry
	// reduction's task signature) leaves out whether a task's
	// asynchronous flush has ended and whether it failed, so a state whose
	// flush failed meets the same state whose flush succeeded.
	WorldKeyNoFlushEnd

	numMutations
)

var names = [numMutations]string{
	None:                    "none",
	FenceWeak:               "fence-weak",
	RMWStale:                "rmw-stale",
	JoinViewLost:            "join-view-lost",
	FlushCoversAtCompletion: "flush-covers-at-completion",
	FUAWeak:                 "fua-weak",
	CrashKeepsInFlight:      "crash-keeps-in-flight",
	CompletedAtSubmit:       "completed-at-submit",
	JoinNoFallback:          "join-no-fallback",
	WaiterNeverWakes:        "waiter-never-wakes",
	BudgetIgnored:           "budget-ignored",
	GeneratorNeverTears:     "generator-never-tears",
	AckOffByOne:             "ack-off-by-one",
	CondAssignLocal:         "cond-assign-local",
	ODSyncShortSkipsSync:    "odsync-short-skips-sync",
	DSyncIgnoresWriteError:  "dsync-ignores-write-error",
	LivenessAnyReturn:       "liveness-any-return",
	WorldKeyNoFlushEnd:      "world-key-no-flush-end",
}

func (m Mutation) String() string {
	if m < numMutations {
		return names[m]
	}
	return fmt.Sprintf("Mutation(%d)", uint32(m))
}

// All lists every mutation but None.
func All() []Mutation {
	out := make([]Mutation, 0, numMutations-1)
	for m := None + 1; m < numMutations; m++ {
		out = append(out, m)
	}
	return out
}

// Parse returns the mutation named s.
func Parse(s string) (Mutation, error) {
	for m, n := range names {
		if n == s {
			return Mutation(m), nil
		}
	}
	return None, fmt.Errorf("mutate: no mutation named %q", s)
}

// TB is what Set needs of a test: testing.TB has it.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
}

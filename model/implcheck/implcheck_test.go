package implcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/model/diocount"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/odsync"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
)

// checkable is a configuration of any of the package's types.
type checkable interface {
	program
	Row() verdict.Row
}

// defaults lists every default row's configuration.
func defaults() []checkable {
	var out []checkable
	for _, c := range Checks() {
		out = append(out, c)
	}
	for _, c := range DSyncChecks() {
		out = append(out, c)
	}
	for _, c := range DIOChecks() {
		out = append(out, c)
	}
	for _, c := range SubmitChecks() {
		out = append(out, c)
	}
	for _, c := range FlushSeqChecks() {
		out = append(out, c)
	}
	return out
}

// TestRowsAsExpected: every default row's verdict is the expected one (SAFE
// for the real code, UNSAFE for the negative controls), and every
// counterexample replays to the same violation.
func TestRowsAsExpected(t *testing.T) {
	for _, c := range defaults() {
		r, s, err := search(c, explore.Options{})
		require.NoError(t, err)
		name := c.Row().Name()
		require.Empty(t, r.Stopped, name)
		if !c.Row().Negative {
			assert.True(t, r.Exhausted && r.Violation == nil, "%s: %v", name, r.Violation)
			continue
		}
		require.NotNil(t, r.Violation, "%s: negative control not caught", name)
		path := world.Choices(r.Violation)
		_, err = s.Replay(path)
		require.Error(t, err, name)
		assert.Equal(t, r.Violation.Err.Error(), err.Error(), name)
		// The same choices drive an ordinary run (World.Run, the chooser
		// mechanism rapid and the seeds use) to the same violation.
		w, err := world.New(c.Config())
		require.NoError(t, err)
		_, err = w.Run(&world.Script{Choices: path}, c.Program()(w))
		require.Error(t, err, name)
		assert.Equal(t, r.Violation.Err.Error(), err.Error(), "%s: World.Run with the script", name)
	}
}

// TestDeclarationsKeepVerdicts: the search without the program's
// declarations (Task.Checkpoint, World.Shared, World.Symmetric:
// SearchOptions.Exact), without the symmetry alone (NoSymmetry), and
// without any state key (a tree of every run) give each row's verdict and
// counterexample length. The tree search is run where it stays small: the
// baseline and the >= mutant.
func TestDeclarationsKeepVerdicts(t *testing.T) {
	for _, c := range Checks() {
		name := c.Row().Name()
		r, _, err := search(c, explore.Options{})
		require.NoError(t, err)
		modes := []world.SearchOptions{{Exact: true}, {NoSymmetry: true}}
		if c.Policy == impl.Always || c.Fault == implfault.GreaterEqual {
			modes = append(modes, world.SearchOptions{NoCache: true})
		}
		for _, o := range modes {
			u := sameVerdict(t, c, name, r, o)
			assert.GreaterOrEqual(t, u.States, r.States, "%s %+v", name, o)
		}
	}
}

// TestSubmitterCheckpointKeepsVerdicts: the Submitter's rows at 2 tasks x
// 2 writes and 3 x 1 (Task.Checkpoint at each write, World.Shared) give the verdict
// and counterexample length of the search without declarations, with at
// most its states. At 3 tasks x 2 writes (the -proof rows) the search
// without them is out of this test's time now that every Wake is a
// scheduling point; the parallel sub-block negative control is left out.
func TestSubmitterCheckpointKeepsVerdicts(t *testing.T) {
	for _, c := range append(submits(2, 2), submits(3, 1)...) {
		if !c.Serialised && c.SubBlock {
			continue
		}
		name := c.Row().Name()
		r, _, err := search(c, explore.Options{})
		require.NoError(t, err)
		require.True(t, r.Exhausted, name)
		u := sameVerdict(t, c, name, r, world.SearchOptions{Exact: true})
		assert.GreaterOrEqual(t, u.States, r.States, name)
	}
}

// sameVerdict searches p with o and requires r's verdict and
// counterexample length, and a search that was not cut short.
func sameVerdict(t *testing.T, p program, name string, r *explore.Result[world.State], o world.SearchOptions) *explore.Result[world.State] {
	t.Helper()
	s, err := world.NewSearch(p.Config(), p.Program(), o)
	require.NoError(t, err)
	u := s.Explore(explore.Options{})
	require.Equal(t, r.Violation == nil, u.Violation == nil, "%s %+v", name, o)
	assert.True(t, u.Exhausted || u.Violation != nil, "%s %+v", name, o)
	if r.Violation != nil {
		assert.Len(t, u.Violation.Path, len(r.Violation.Path), "%s %+v", name, o)
	}
	return u
}

// TestSymmetryKeepsVerdicts: the flush-sequence and O_DSYNC programs,
// which declare their tasks symmetric (World.Symmetric), give each row's
// verdict and counterexample length without the symmetry alone
// (SearchOptions.NoSymmetry) and without any declaration (Exact), with
// more states when the row is SAFE.
func TestSymmetryKeepsVerdicts(t *testing.T) {
	type checked interface {
		program
		Row() verdict.Row
	}
	var cs []checked
	for _, c := range FlushSeqChecks() {
		cs = append(cs, c)
	}
	for _, c := range DSyncChecks() {
		cs = append(cs, c)
	}
	for _, c := range cs {
		name := c.Row().Name()
		r, _, err := search(c, explore.Options{})
		require.NoError(t, err)
		for _, o := range []world.SearchOptions{{NoSymmetry: true}, {Exact: true}} {
			if u := sameVerdict(t, c, name, r, o); r.Violation == nil {
				assert.Greater(t, u.States, r.States, "%s %+v", name, o)
			}
		}
	}
}

// TestAgreesWithStateMachine: each policy's verdict equals that of the
// flush sequence's state machine variant it implements, at the same
// bound and memory model: always is the baseline, skip-if-flushed-since
// the patched code, join the improved variant, group-commit group commit;
// sampling before the write is the read-before-writeback mutant and >=
// the >= mutant.
func TestAgreesWithStateMachine(t *testing.T) {
	variant := func(c Syncer) (flushseq.Variant, bool) {
		switch {
		case c.SampleEarly:
			return flushseq.MutantReadBeforeWriteback, true
		case c.Fault == implfault.GreaterEqual:
			return flushseq.MutantGreaterEqual, true
		case c.Fault != implfault.None:
			return 0, false // no state-machine variant of its own
		}
		return map[impl.Policy]flushseq.Variant{impl.Always: flushseq.Baseline, impl.SkipIfFlushedSince: flushseq.Patched,
			impl.Join: flushseq.Improved, impl.GroupCommit: flushseq.GroupCommit}[c.Policy], true
	}
	for _, c := range Checks() {
		v, ok := variant(c)
		if !ok {
			continue
		}
		r, _, err := search(c, explore.Options{})
		require.NoError(t, err)
		sys, err := flushseq.NewSystem(flushseq.Config{Variant: v, Memory: c.Memory, Tasks: c.Tasks, Fsyncs: c.Syncs, FlushFailures: true})
		require.NoError(t, err)
		sm := explore.Explore[flushseq.State](sys, explore.Options{})
		require.True(t, sm.Exhausted || sm.Violation != nil)
		assert.Equal(t, sm.Violation == nil, r.Violation == nil, "%s against the state machine's %v", c.Row().Name(), v)
		t.Logf("%-70s %-6s world %6d states, state machine %6d", c.Name(), c.Memory, r.States, sm.States)
	}
}

// stateMachineRow returns the default row of p named model with config.
func stateMachineRow(t *testing.T, p verdict.Protocol, model, config string) verdict.Row {
	for _, r := range p.Rows() {
		if !r.Proof && r.Model == model && r.Config == config {
			return r
		}
	}
	t.Fatalf("no row %s %s", model, config)
	return verdict.Row{}
}

// TestDSyncAndDIOAgreeWithStateMachines (and the flush sequence's own
// rows): FlushSeq used correctly is the flush sequence's patched variant,
// each misuse the mutant it names. The O_DSYNC writer's FUA mode is
// the patched O_DSYNC path (FUA alone), its dropped FUA that path's
// mutant-drop-fua, on a cache with native FUA and without a cache; the
// counted DIO is the DIO count's baseline with asynchronous direct I/O, the
// uncounted one its mutant-skip-async, under each memory model. Their
// verdicts must be equal.
func TestDSyncAndDIOAgreeWithStateMachines(t *testing.T) {
	for _, c := range DSyncChecks() {
		if c.Mode != impl.FUA {
			continue // write+flush has no variant of its own there
		}
		model, config := "odsync patched", "cache+fua"
		if c.Fault == implfault.DropFUA {
			model = "odsync mutant-drop-fua"
		}
		if c.NoCache {
			config = "no-cache"
		}
		agree(t, c, stateMachineRow(t, odsync.Protocol(), model, config))
	}
	for _, c := range FlushSeqChecks() {
		v, err := c.Row().Check(explore.Options{})
		require.NoError(t, err)
		sys, err := flushseq.NewSystem(flushseq.Config{Variant: c.Misuse.variant(), Memory: c.Memory, Tasks: c.Tasks, Fsyncs: c.Fsyncs, FlushFailures: true})
		require.NoError(t, err)
		sm := explore.Explore[flushseq.State](sys, explore.Options{})
		require.True(t, sm.Exhausted || sm.Violation != nil)
		assert.Equal(t, sm.Violation == nil, v.Outcome == verdict.Safe, "%s against the state machine's %v", c.Row().Name(), c.Misuse.variant())
		t.Logf("%-75s %-6s %6d states; state machine %v: %d states", c.Row().Name(), v.Word(), v.Stats.States, c.Misuse.variant(), sm.States)
	}
	for _, c := range DIOChecks() {
		model := "diocount baseline"
		if c.Uncounted {
			model = "diocount mutant-skip-async"
		}
		agree(t, c, stateMachineRow(t, diocount.Protocol(), model, "aio-dio/"+c.Memory.String()))
	}
}

func agree(t *testing.T, c checkable, sm verdict.Row) {
	t.Helper()
	v, err := c.Row().Check(explore.Options{})
	require.NoError(t, err)
	w, err := sm.Check(explore.Options{})
	require.NoError(t, err)
	require.False(t, v.Outcome == verdict.Unknown || w.Outcome == verdict.Unknown)
	assert.Equal(t, w.Outcome, v.Outcome, "%s against %s", c.Row().Name(), sm.Name())
	t.Logf("%-75s %-6s %6d states; %s: %s, %d states", c.Row().Name(), v.Word(), v.Stats.States, sm.Name(), w.Word(), w.Stats.States)
}

// TestRowReportsRuns: a model-world row's verdict carries the program's
// runs (replays), at least one and at most one per transition.
func TestRowReportsRuns(t *testing.T) {
	c := Syncer{Policy: impl.SkipIfFlushedSince, Tasks: 2, Syncs: 1, Memory: memory.SC}
	v, err := c.Row().Check(explore.Options{})
	require.NoError(t, err)
	require.Equal(t, verdict.Safe, v.Outcome)
	assert.Positive(t, v.Runs)
	assert.LessOrEqual(t, v.Runs, int64(v.Stats.Transitions))
	assert.Equal(t, v.Runs, verdict.NewRecord(c.Row().Name(), v, nil).Runs)
}

package impl_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/implcheck"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// The impl.Syncer of this package, unchanged, inside the model world: its
// device, counters, fence and wait queue are the world's handles, so every
// call it makes is a scheduling point chosen by rapid, under SC, TSO or
// Relaxed memory, with flush failures and crashes. Each task writes its own
// block, waits for the write, and syncs; when Sync returns nil the block
// must survive a crash from then on (Task.MustSurvive, checked at once,
// which covers every later crash). The program is model/implcheck's, the
// one the exhaustive rows search. At small bounds the trace of every run
// must also be a run of the explorer's state machine of the protocol
// (flushseq.ValidateTrace), so the code that is benchmarked and the
// model that is proven cannot drift apart.

// mutation is a test-only wrong use or version of the impl.Syncer.
type mutation uint8

const (
	correct      mutation = iota
	sampleEarly           // the sequence is sampled before the data write returned
	greaterEqual          // skip when completed >= S
)

type worldRun struct {
	policy     impl.Policy
	mut        mutation
	tasks      int
	syncs      int
	memory     memory.Model
	failures   bool
	crash      int
	syncerUsed *impl.Syncer
}

// stats is the run's Syncer statistics; none if the machine crashed
// before any task started (and made the Syncer).
func (r *worldRun) stats() impl.SyncStats {
	if r.syncerUsed == nil {
		return impl.SyncStats{}
	}
	return r.syncerUsed.Stats()
}

// syncer is the run as model/implcheck's adapter of impl.Syncer to the
// model world (the one the exhaustive impl.Syncer rows of flushproof check
// search), with the mutation as its negative control.
func (r *worldRun) syncer() implcheck.Syncer {
	c := implcheck.Syncer{Policy: r.policy, Tasks: r.tasks, Syncs: r.syncs, Memory: r.memory, NoFlushEIO: !r.failures}
	switch r.mut {
	case sampleEarly:
		c.SampleEarly = true
	case greaterEqual:
		c.Fault = implfault.GreaterEqual
	}
	return c
}

// run runs the tasks in a new world, the choices made by ch, and returns
// it with the run's error: a lost write (a Sync that returned nil although
// a crash may lose its write: Task.MustSurvive) is an error mentioning
// "not durable".
func (r *worldRun) run(ch world.Chooser) (*world.World, error) {
	c := r.syncer()
	cfg := c.Config()
	cfg.Crash = r.crash
	w, err := world.New(cfg)
	if err != nil {
		return nil, err
	}
	_, err = w.Run(ch, c.ProgramUsing(func(s *impl.Syncer) { r.syncerUsed = s })(w))
	return w, err
}

func (r *worldRun) draw(t *rapid.T, policies []impl.Policy, mems []memory.Model, maxTasks, syncs int) {
	r.policy = rapid.SampledFrom(policies).Draw(t, "policy")
	r.memory = rapid.SampledFrom(mems).Draw(t, "memory")
	r.tasks = rapid.IntRange(1, maxTasks).Draw(t, "tasks")
	r.syncs = syncs
	r.failures = rapid.Bool().Draw(t, "flush failures")
	if rapid.Bool().Draw(t, "crash") {
		r.crash = rapid.IntRange(1, r.tasks*syncs*12).Draw(t, "crash before step")
	}
}

func variantOf(p impl.Policy, m mutation) flushseq.Variant {
	switch {
	case m == greaterEqual:
		return flushseq.MutantGreaterEqual
	case p == impl.Join:
		return flushseq.Improved
	case p == impl.GroupCommit:
		return flushseq.GroupCommit
	}
	return flushseq.Patched
}

// TestSyncerInModelWorldValidated: small runs of every sharing policy,
// each trace validated against the explorer's state machine (whose
// variants patched and improved are proven SAFE in `flushproof check`).
func TestSyncerInModelWorldValidated(t *testing.T) {
	runs, skips, joins := 0, 0, 0
	rapidctl.Check(t, 1000, func(t *rapid.T) {
		r := &worldRun{}
		r.draw(t, []impl.Policy{impl.SkipIfFlushedSince, impl.Join, impl.GroupCommit}, flushseq.Models(), 3, 2)
		w, err := r.run(rapidctl.Chooser(t))
		if err != nil {
			t.Fatalf("%v %v %d tasks: %v\n%s", r.policy, r.memory, r.tasks, err, w.Format(60))
		}
		cfg := flushseq.Config{Variant: variantOf(r.policy, r.mut), Memory: r.memory, Tasks: r.tasks, Fsyncs: r.syncs, FlushFailures: r.failures}
		res, err := flushseq.ValidateTrace(cfg, w.Trace())
		if err != nil {
			t.Fatalf("%v: the impl.Syncer took a step the state machine cannot: %v\n%s", r.policy, err, w.Format(0))
		}
		if res.Lost {
			t.Fatalf("the state machine lost a write the run did not report\n%s", w.Format(0))
		}
		runs++
		st := r.stats()
		skips += int(st.Skipped)
		joins += int(st.Joined)
	})
	t.Logf("%d validated runs, %d syncs skipped their flush, %d by joining one in flight", runs, skips, joins)
	assert.Positive(t, skips, "no Sync skipped: sharing was not exercised")
	assert.Positive(t, joins, "no Sync joined a flush in flight")
}

// TestSyncerInModelWorldLarge: 16 tasks x 50 syncs under every policy and
// memory model, with flush failures and crashes.
func TestSyncerInModelWorldLarge(t *testing.T) {
	for _, p := range impl.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			var syncs, skipped int64
			rapidctl.Check(t, 300, func(t *rapid.T) {
				r := &worldRun{}
				r.draw(t, []impl.Policy{p}, flushseq.Models(), 16, 50)
				r.tasks = 16
				w, err := r.run(rapidctl.Chooser(t))
				if err != nil {
					t.Fatalf("%v %v: %v\n%s", p, r.memory, err, w.Format(60))
				}
				st := r.stats()
				syncs += st.Syncs
				skipped += st.Skipped
			})
			t.Logf("%v: %d syncs, %d skipped their flush", p, syncs, skipped)
			assert.Positive(t, syncs)
			if p != impl.Always {
				assert.Positive(t, skipped)
			} else {
				assert.Zero(t, skipped)
			}
		})
	}
}

// TestSyncerMutantsInModelWorld are the negative controls at the impl
// level: sampling the sequence before the data write returned, and
// skipping on completed >= S, must lose an acknowledged write in the model
// world, found by rapid and replayed from its seed. The >= mutant's trace
// must also be a run of the explorer's >= mutant that reaches its
// violation: the same bug in both.
func TestSyncerMutantsInModelWorld(t *testing.T) {
	for _, m := range []mutation{sampleEarly, greaterEqual} {
		t.Run(fmt.Sprint(map[mutation]string{sampleEarly: "sample-before-write", greaterEqual: ">="}[m]), func(t *testing.T) {
			f := rapidctl.Expect(t, 2000, func(t *rapid.T) {
				r := &worldRun{mut: m}
				r.draw(t, []impl.Policy{impl.SkipIfFlushedSince, impl.Join, impl.GroupCommit}, flushseq.Models(), 3, 2)
				w, err := r.run(rapidctl.Chooser(t))
				if err == nil {
					return
				}
				if m == greaterEqual && r.policy == impl.SkipIfFlushedSince {
					cfg := flushseq.Config{Variant: flushseq.MutantGreaterEqual, Memory: r.memory, Tasks: r.tasks, Fsyncs: r.syncs, FlushFailures: r.failures}
					res, verr := flushseq.ValidateTrace(cfg, w.Trace())
					if verr != nil || (!res.Lost && r.crash == 0) {
						t.Fatalf("trace of the >= mutant is not the model's >= mutant (lost=%v): %v", res.Lost, verr)
					}
				}
				t.Fatalf("%v: %v\n%s", r.policy, err, w.Format(40))
			})
			assert.Contains(t, f.Output, "not durable")
		})
	}
}

// TestSyncerTraceMilestonesTyped: the validator follows the impl.Syncer's trace
// by its typed milestones. The same trace with a return's milestone
// changed is rejected; with every note rewritten it is accepted.
func TestSyncerTraceMilestonesTyped(t *testing.T) {
	r := &worldRun{policy: impl.GroupCommit, tasks: 3, syncs: 2, memory: memory.SC}
	w, err := r.run(world.NewRandomChooser(3))
	require.NoError(t, err)
	cfg := flushseq.Config{Variant: flushseq.GroupCommit, Memory: memory.SC, Tasks: 3, Fsyncs: 2}
	tr := w.Trace()
	_, err = flushseq.ValidateTrace(cfg, tr)
	require.NoError(t, err)
	returns, wakes := 0, 0
	for _, ev := range tr {
		switch ev.Milestone.(type) {
		case flushseq.Milestone:
			returns++
		case world.QueueWoken:
			wakes++
		}
	}
	require.Equal(t, 6, returns, "every Sync's return is marked")

	for i, ev := range tr {
		if ev.Milestone != (flushseq.Milestone{Step: flushseq.Returned}) {
			continue
		}
		bad := append([]world.Event(nil), tr...)
		bad[i].Milestone = flushseq.Milestone{Step: flushseq.Failed} // no flush failed in this run
		_, err := flushseq.ValidateTrace(cfg, bad)
		assert.ErrorContains(t, err, "not a step of the state machine", "event %d", i)
	}
	noted := append([]world.Event(nil), tr...)
	for i := range noted {
		noted[i].Note = ""
	}
	_, err = flushseq.ValidateTrace(cfg, noted)
	assert.NoError(t, err, "notes are free text")
	t.Logf("%d returns, %d wait-queue wake-ups", returns, wakes)
}

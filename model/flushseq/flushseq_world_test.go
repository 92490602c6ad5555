package flushseq_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/flushseq"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// worldStats counts what the runs exercised, so that a run that never
// skipped a flush, failed one or crashed cannot pass for a check of them.
type worldStats struct {
	steps, runs, returned, skipped, failedFsyncs, crashes, staleLoads int
	memory                                                            map[memory.Model]int
}

func (s *worldStats) String() string {
	return fmt.Sprintf("%d runs (%d steps): %d fsyncs returned 0 (%d skipped their flush), %d returned EIO, %d runs crashed, %d stale loads; memory models %v",
		s.runs, s.steps, s.returned, s.skipped, s.failedFsyncs, s.crashes, s.staleLoads, s.memory)
}

// fsyncWorldProp runs the flush-sequence program with tasks tasks and
// fsyncs fsyncs each under a rapid-chosen memory model, schedule, flush
// failures, log-force behaviour and crash point. It fails if any fsync
// returns 0 with its write not durable, or a crash may leave an
// acknowledged block older than acknowledged.
func fsyncWorldProp(v flushseq.Variant, tasks, fsyncs int, mems []memory.Model, st *worldStats) func(*rapid.T) {
	return func(t *rapid.T) {
		m := rapid.SampledFrom(mems).Draw(t, "memory")
		p := &flushseq.Program{Variant: v, Fsyncs: fsyncs, LogForce: rapid.Bool().Draw(t, "log force")}
		cfg := p.WorldConfig(tasks, m)
		cfg.FlushFailures = rapid.Bool().Draw(t, "flush failures")
		// Half the runs crash, at a step drawn over the length of a run
		// (about 12 steps per fsync); a crash drawn past the end of a run
		// does not happen.
		if rapid.Bool().Draw(t, "crash") {
			cfg.Crash = rapid.IntRange(1, tasks*fsyncs*12).Draw(t, "crash before step")
		}
		w, err := world.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(w, rapidctl.Chooser(t))
		if err != nil {
			t.Fatalf("%v %v, %d tasks x %d fsyncs: %v\nlast steps:\n%s", v, m, tasks, fsyncs, err, w.Format(40))
		}
		if st != nil {
			st.runs++
			st.steps += out.Steps
			st.returned += p.Returned
			st.skipped += p.Skipped
			st.failedFsyncs += p.Failed
			st.memory[m]++
			if out.Crashed {
				st.crashes++
			}
			for _, ev := range w.Trace() {
				if ev.Stale {
					st.staleLoads++
				}
			}
		}
	}
}

// TestFlushSeqWorldLarge is the flush-sequence protocol far beyond the
// explorer's bounds: 16 tasks x 50 fsyncs each, random schedules, LKMM,
// relaxed, TSO and SC memory, flush failures, log forces and crashes, for the real
// variants and the benign one (false-positive controls). 500 checks per
// variant by default, to keep go test ./... short; CI runs 2,000
// (-rapid.checks=2000), -rapid.checks=N for more.
func TestFlushSeqWorldLarge(t *testing.T) {
	for _, v := range []flushseq.Variant{flushseq.Patched, flushseq.Improved, flushseq.BenignPlainStore, flushseq.Baseline} {
		t.Run(v.String(), func(t *testing.T) {
			st := &worldStats{memory: map[memory.Model]int{}}
			rapidctl.Check(t, 500, fsyncWorldProp(v, 16, 50, flushseq.Models(), st))
			t.Log(st)
			require.NotZero(t, st.runs)
			assert.Len(t, st.memory, len(flushseq.Models()), "every memory model must be drawn")
			assert.NotZero(t, st.crashes, "no run crashed")
			assert.NotZero(t, st.failedFsyncs, "no flush failed")
			if v != flushseq.Baseline {
				// The baseline reads S after smp_mb and nothing else.
				assert.NotZero(t, st.staleLoads, "no load read a stale value")
				assert.NotZero(t, st.skipped, "no fsync skipped its flush: the optimisation was not exercised")
			}
		})
	}
}

// TestFlushSeqWorldMutants are the negative controls in the model world:
// rapid must find each mutant's bug and the failure must replay from its
// seed. The bound is small (4 tasks x 3 fsyncs) so that rapid's shrinker
// finishes quickly; the missing smp_mb is caught under Relaxed and LKMM
// only (under SC and TSO it must pass).
func TestFlushSeqWorldMutants(t *testing.T) {
	for _, v := range flushseq.Variants() {
		if !v.Mutant() || !v.InWorld() {
			continue
		}
		t.Run(v.String(), func(t *testing.T) {
			mems := flushseq.Models()
			if v == flushseq.MutantNoMB {
				mems = []memory.Model{memory.Relaxed, memory.LKMM}
			}
			f := rapidctl.Expect(t, 2000, fsyncWorldProp(v, 4, 3, mems, nil))
			assert.Contains(t, f.Output, "not durable")
			t.Logf("caught; replays with -rapid.seed=%s", f.Seed)
		})
	}
	t.Run("mutant-no-smp_mb/LKMM", func(t *testing.T) {
		f := rapidctl.Expect(t, 2000, fsyncWorldProp(flushseq.MutantNoMB, 4, 3, []memory.Model{memory.LKMM}, nil))
		assert.Contains(t, f.Output, "not durable")
	})
	t.Run("mutant-no-smp_mb/SC+TSO", func(t *testing.T) {
		rapidctl.Check(t, 500, fsyncWorldProp(flushseq.MutantNoMB, 4, 3, []memory.Model{memory.SC, memory.TSO}, nil))
	})
}

// TestFlushSeqWorldTraceValidation holds the two forms of the protocol
// together: every run of the straight-line program in the model world
// (random schedules, memory models, flush failures, log forces) must be a
// run of the state machine that the explorer proves things about, and the
// program must report a lost write exactly when the state machine reaches
// its violation. Every variant, mutants included, within the state
// machine's bounds (3 tasks x 2 fsyncs).
func TestFlushSeqWorldTraceValidation(t *testing.T) {
	var lost, runs, maxStates int
	rapidctl.Check(t, 1000, func(t *rapid.T) {
		var vs []flushseq.Variant
		for _, v := range flushseq.Variants() {
			if v.InWorld() {
				vs = append(vs, v)
			}
		}
		v := rapid.SampledFrom(vs).Draw(t, "variant")
		cfg := flushseq.Config{
			Variant:       v,
			Memory:        rapid.SampledFrom(flushseq.Models()).Draw(t, "memory"),
			Tasks:         rapid.IntRange(1, 3).Draw(t, "tasks"),
			Fsyncs:        2,
			FlushFailures: rapid.Bool().Draw(t, "flush failures"),
			LogForce:      rapid.Bool().Draw(t, "log force"),
			WaiterSleeps:  rapid.Bool().Draw(t, "waiter sleeps"),
		}
		p := &flushseq.Program{Variant: v, Fsyncs: cfg.Fsyncs, LogForce: cfg.LogForce}
		wc := p.WorldConfig(cfg.Tasks, cfg.Memory)
		wc.FlushFailures, wc.WaiterSleeps = cfg.FlushFailures, cfg.WaiterSleeps
		w, err := world.New(wc)
		if err != nil {
			t.Fatal(err)
		}
		_, runErr := p.Run(w, rapidctl.Chooser(t))
		if runErr != nil && !strings.Contains(runErr.Error(), "not durable") {
			t.Fatalf("run failed: %v", runErr)
		}
		res, err := flushseq.ValidateTrace(cfg, w.Trace())
		if err != nil {
			t.Fatalf("%v %v: %v\ntrace:\n%s", v, cfg.Describe(), err, w.Format(0))
		}
		if res.Lost != (runErr != nil) {
			t.Fatalf("%v: the program reported %v, the state machine lost=%v\ntrace:\n%s", v, runErr, res.Lost, w.Format(0))
		}
		runs++
		maxStates = max(maxStates, res.States)
		if res.Lost {
			lost++
		}
	})
	t.Logf("%d runs validated, %d of them losing a write; at most %d states at once", runs, lost, maxStates)
	assert.Positive(t, lost, "no validated run reached a violation")
}

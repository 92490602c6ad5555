package flushseq

import (
	"testing"

	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runProgram(t *testing.T, p *Program, tasks int, m memory.Model, failures bool, crash int, seed uint64) (world.Outcome, error) {
	t.Helper()
	cfg := p.WorldConfig(tasks, m)
	cfg.FlushFailures, cfg.Crash = failures, crash
	w, err := world.New(cfg)
	require.NoError(t, err)
	return p.Run(w, world.NewRandomChooser(seed))
}

func TestFsyncProgramRandomRuns(t *testing.T) {
	for _, v := range Variants() {
		if !v.InWorld() {
			continue
		}
		for _, m := range Models() {
			t.Run(v.String()+"/"+m.String(), func(t *testing.T) {
				caught := -1
				for seed := uint64(0); seed < 300 && caught < 0; seed++ {
					p := &Program{Variant: v, Fsyncs: 4, LogForce: seed%2 == 1}
					_, err := runProgram(t, p, 3, m, seed%3 == 0, 0, seed)
					if err != nil {
						require.Contains(t, err.Error(), "not durable", "seed %d", seed)
						caught = int(seed)
					}
				}
				want := v.Mutant() && !(v == MutantNoMB && m != memory.Relaxed && m != memory.LKMM)
				assert.Equal(t, want, caught >= 0, "caught at seed %d", caught)
			})
		}
	}
}

// TestFsyncProgramValidated: runs of the straight-line program, every
// variant the world has (group commit included), are runs of System's
// same variant, and the program reports a lost write exactly when the state
// machine reaches its violation. Group commit must have let flushes drain
// and joined one in flight at least once, or its own steps went unchecked.
func TestFsyncProgramValidated(t *testing.T) {
	for _, v := range Variants() {
		if !v.InWorld() {
			continue
		}
		t.Run(v.String(), func(t *testing.T) {
			steps := map[Step]int{}
			for seed := uint64(0); seed < 40; seed++ {
				cfg := Config{Variant: v, Memory: Models()[seed%4], Tasks: 1 + int(seed%3), Fsyncs: 2,
					FlushFailures: seed%4 == 1, LogForce: seed%5 >= 3}
				p := &Program{Variant: v, Fsyncs: cfg.Fsyncs, LogForce: cfg.LogForce}
				wc := p.WorldConfig(cfg.Tasks, cfg.Memory)
				wc.FlushFailures = cfg.FlushFailures
				w, err := world.New(wc)
				require.NoError(t, err)
				_, runErr := p.Run(w, world.NewRandomChooser(seed))
				if runErr != nil {
					require.ErrorContains(t, runErr, "not durable", "seed %d", seed)
				}
				res, err := ValidateTrace(cfg, w.Trace())
				require.NoError(t, err, "seed %d\n%s", seed, w.Format(0))
				assert.Equal(t, runErr != nil, res.Lost, "seed %d: the program said %v", seed, runErr)
				for _, ev := range w.Trace() {
					if m, ok := ev.Milestone.(Milestone); ok {
						steps[m.Step]++
					}
				}
			}
			assert.Positive(t, steps[Returned])
			if v == GroupCommit {
				assert.Positive(t, steps[DrainWoken], "group commit never waited for the flushes in flight")
				assert.Positive(t, steps[JoinWoken], "group commit never joined a flush")
			}
		})
	}
}

// TestValidateFsyncTraceRejects: the validator is not a rubber stamp. A
// trace with a load value changed, with the write-before-flush order of
// one task swapped, or with a wrong milestone is not a run of the state
// machine; the validator reads milestones by type and value, never the
// text of a note.
func TestValidateFsyncTraceRejects(t *testing.T) {
	cfg := Config{Variant: Patched, Memory: memory.SC, Tasks: 2, Fsyncs: 2}
	p := &Program{Variant: Patched, Fsyncs: 2}
	w, err := world.New(p.WorldConfig(2, memory.SC))
	require.NoError(t, err)
	_, err = p.Run(w, world.NewRandomChooser(7))
	require.NoError(t, err)
	tr := w.Trace()
	_, err = ValidateTrace(cfg, tr)
	require.NoError(t, err)
	returned := indexOf(tr, func(ev world.Event) bool { return ev.Milestone == Milestone{Step: Returned} })
	require.GreaterOrEqual(t, returned, 0)
	firstWrite := indexOf(tr, func(ev world.Event) bool { return ev.Kind == world.ActWrite && ev.Task == 0 })
	require.GreaterOrEqual(t, firstWrite, 0)

	edit := func(f func([]world.Event) []world.Event) []world.Event {
		return f(append([]world.Event(nil), tr...))
	}
	rejected := []struct {
		name string
		tr   []world.Event
		want string
	}{
		{"a load reads another value", edit(func(evs []world.Event) []world.Event {
			evs[indexOf(evs, func(ev world.Event) bool { return ev.Kind == world.ActLoad })].Val += 5
			return evs
		}), "not a step of the state machine"},
		{"a write that never happened completes", edit(func(evs []world.Event) []world.Event {
			return append(evs[:firstWrite], evs[firstWrite+1:]...)
		}), "not a step of the state machine"},
		{"fsync returns 0 right after its write was submitted", edit(func(evs []world.Event) []world.Event {
			return append(evs[:firstWrite+1], world.Event{Kind: world.ActMilestone, Task: 0, Milestone: Milestone{Step: Returned}})
		}), "not a step of the state machine"},
		{"fsync returns -EIO where no flush failed", edit(func(evs []world.Event) []world.Event {
			evs[returned].Milestone = Milestone{Step: Failed}
			return evs
		}), "not a step of the state machine"},
		{"a wake-up where fsync returned", edit(func(evs []world.Event) []world.Event {
			evs[returned].Milestone = Milestone{Step: JoinWoken, Seq: 1}
			return evs
		}), "not a step of the state machine"},
		{"a milestone of another protocol", edit(func(evs []world.Event) []world.Event {
			evs[returned].Milestone = otherMilestone(1)
			return evs
		}), "not one of the flush-sequence protocol"},
	}
	for _, c := range rejected {
		t.Run(c.name, func(t *testing.T) {
			_, err := ValidateTrace(cfg, c.tr)
			assert.ErrorContains(t, err, c.want)
		})
	}

	// Note text means nothing: the same trace with every note rewritten
	// still validates, and a note that reads like a return is not one.
	t.Run("notes are free text", func(t *testing.T) {
		same := edit(func(evs []world.Event) []world.Event {
			for i := range evs {
				evs[i].Note = "fsync returns -EIO"
			}
			return evs
		})
		_, err := ValidateTrace(cfg, same)
		assert.NoError(t, err)
		noted := edit(func(evs []world.Event) []world.Event {
			return append(evs[:firstWrite+1], world.Event{Kind: world.ActNote, Task: 0, Note: "fsync returns 0"})
		})
		res, err := ValidateTrace(cfg, noted)
		assert.NoError(t, err)
		assert.False(t, res.Lost)
	})
}

// otherMilestone stands for a milestone of some other protocol.
type otherMilestone int

func (o otherMilestone) String() string { return "fsync returns 0" }

func indexOf(evs []world.Event, f func(world.Event) bool) int {
	for i, ev := range evs {
		if f(ev) {
			return i
		}
	}
	return -1
}

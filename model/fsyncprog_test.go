package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runProgram(t *testing.T, p *FsyncProgram, tasks int, m MemoryModel, failures bool, crash int, seed uint64) (Outcome, error) {
	t.Helper()
	cfg := p.WorldConfig(tasks, m)
	cfg.FlushFailures, cfg.Crash = failures, crash
	w, err := NewWorld(cfg)
	require.NoError(t, err)
	return p.Run(w, NewRandomChooser(seed))
}

func TestFsyncProgramRandomRuns(t *testing.T) {
	for _, v := range FsyncVariants() {
		if v == DAXSkips || v == GroupCommit { // not in the kernel's program; GroupCommit is impl.Syncer's
			continue
		}
		for _, m := range MemoryModels() {
			t.Run(v.String()+"/"+m.String(), func(t *testing.T) {
				caught := -1
				for seed := uint64(0); seed < 300 && caught < 0; seed++ {
					p := &FsyncProgram{Variant: v, Fsyncs: 4, LogForce: seed%2 == 1}
					_, err := runProgram(t, p, 3, m, seed%3 == 0, 0, seed)
					if err != nil {
						require.Contains(t, err.Error(), "not durable", "seed %d", seed)
						caught = int(seed)
					}
				}
				want := v.Mutant() && !(v == NoMB && m != Relaxed)
				assert.Equal(t, want, caught >= 0, "caught at seed %d", caught)
			})
		}
	}
}

// TestValidateFsyncTraceRejects: the validator is not a rubber stamp. A
// trace with a load value changed, or with the write-before-flush order of
// one task swapped, is not a run of the state machine.
func TestValidateFsyncTraceRejects(t *testing.T) {
	cfg := FsyncConfig{Variant: Patched, Memory: SC, Tasks: 2, Fsyncs: 2}
	p := &FsyncProgram{Variant: Patched, Fsyncs: 2}
	w, err := NewWorld(p.WorldConfig(2, SC))
	require.NoError(t, err)
	_, err = p.Run(w, NewRandomChooser(7))
	require.NoError(t, err)
	tr := w.Trace()
	_, err = ValidateFsyncTrace(cfg, tr)
	require.NoError(t, err)

	bad := append([]WorldEvent(nil), tr...)
	i := indexOf(bad, func(ev WorldEvent) bool { return ev.Kind == ActLoad })
	require.GreaterOrEqual(t, i, 0)
	bad[i].Val += 5
	_, err = ValidateFsyncTrace(cfg, bad)
	assert.ErrorContains(t, err, "not a step of the state machine")

	bad = append([]WorldEvent(nil), tr...)
	i = indexOf(bad, func(ev WorldEvent) bool { return ev.Kind == ActWrite })
	bad = append(bad[:i], bad[i+1:]...) // a write that never happened completes
	_, err = ValidateFsyncTrace(cfg, bad)
	assert.ErrorContains(t, err, "not a step of the state machine")

	// A skip the protocol does not allow: the first fsync returns 0 with
	// its write not durable, and the program did not say so.
	bad = append([]WorldEvent(nil), tr...)
	i = indexOf(bad, func(ev WorldEvent) bool { return ev.Kind == ActWrite && ev.Task == 0 })
	bad = append(bad[:i+1], WorldEvent{Kind: ActNote, Task: 0, Note: "fsync returns 0"})
	_, err = ValidateFsyncTrace(cfg, bad)
	assert.Error(t, err)
}

func indexOf(evs []WorldEvent, f func(WorldEvent) bool) int {
	for i, ev := range evs {
		if f(ev) {
			return i
		}
	}
	return -1
}

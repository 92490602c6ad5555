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
		if v == DAXSkips {
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

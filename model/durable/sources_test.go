package durable

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/patchapply"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

var (
	sourcesFiles   = flag.String("durable.sources", "", "TestLKMMStateSources on these durability litmus files or kernel C harnesses (comma-separated)")
	sourcesPatches = flag.String("durable.patches", "", "with -durable.sources: patches applied to each kernel C harness, in order (comma-separated)")
)

// recorder keeps every state the search checks.
type recorder struct {
	*durSystem
	seen map[State]struct{}
}

func (r *recorder) Check(s State) error {
	r.seen[s] = struct{}{}
	return r.durSystem.Check(s)
}

// TestLKMMStateSources says where a file's states come from under each
// model (-durable.sources=FILE,...): how many distinct states are left
// when parts of each state are forgotten, adding the parts back one at a
// time. The ratio between two lines is how much that part multiplies
// the states: the threads and device alone, then the run-ahead of
// pending loads, the memory's values and live stores, LKMM's views,
// LoadCovered's marks, the views of UseOrderings, and the rest (every
// state). One worker, so that every state found is recorded.
func TestLKMMStateSources(t *testing.T) {
	if *sourcesFiles == "" {
		t.Skip("-durable.sources=FILE,... names the files")
	}
	for _, file := range strings.Split(*sourcesFiles, ",") {
		var lt *litmus.Test
		var err error
		if kernelc.IsHarness(file) {
			var ps []*patchapply.Patch
			if *sourcesPatches != "" {
				ps, err = kernelc.ReadPatches(strings.Split(*sourcesPatches, ","), []string{file}, func(s string) { t.Log(s) })
				require.NoError(t, err)
			}
			lt, err = kernelc.ReadFile(file, ps, func(s string) { t.Log(s) })
		} else {
			lt, err = litmus.ParseFile(file)
		}
		require.NoError(t, err)
		d, err := Read(file, lt)
		require.NoError(t, err)
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			for _, dev := range d.Devices {
				sys, err := d.system(Config{Model: m, Device: dev, Crash: d.Crash, Failures: d.Failures})
				require.NoError(t, err)
				r := &recorder{sys, map[State]struct{}{}}
				res := explore.Explore[State](r, explore.Options{Workers: 1})
				count := func(f func(s *State)) int {
					set := make(map[State]struct{}, len(r.seen))
					for s := range r.seen {
						f(&s)
						set[s] = struct{}{}
					}
					return len(set)
				}
				verdict := "SAFE"
				if res.Violation != nil {
					verdict = "UNSAFE"
				}
				t.Logf("%s %v %v: %s, %d states", file, m, dev, verdict, res.Stats.States)
				require.Equal(t, res.Stats.States, len(r.seen), "every state found is recorded")
				prev := 0
				for _, step := range []struct {
					name  string
					ahead bool
					mem   bool
					drop  memory.Part
				}{
					{"threads and device", false, false, 0},
					{"+ loads left pending", true, false, 0},
					{"+ values and live stores", true, true, memory.PartsLKMM},
					{"+ views", true, true, memory.PartsLKMM &^ memory.PartViews},
					{"+ covered loads", true, true, memory.PartOrderings | memory.PartOther},
					{"+ orderings' views", true, true, memory.PartOther},
					{"+ the rest (every state)", true, true, 0},
				} {
					n := count(func(s *State) {
						if !step.ahead {
							s.op.ahead = 0
						}
						if !step.mem {
							s.op.mem = memory.Memory{}
						} else if step.drop != 0 {
							s.op.mem = s.op.mem.Without(step.drop)
						}
					})
					t.Logf("  %-26s %9d", step.name, n)
					// Each line forgets less than the one before: never
					// fewer states; the last forgets nothing.
					require.GreaterOrEqual(t, n, prev, step.name)
					prev = n
				}
				require.Equal(t, len(r.seen), prev, "with nothing forgotten every state is distinct")
			}
		}
	}
}

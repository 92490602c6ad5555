package implcheck

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

var (
	sizeOnly   = flag.String("implcheck.only", "", "with -implcheck.size: only the searches whose \"MODEL POLICY\" matches this regexp")
	sizeNoEIO  = flag.Bool("implcheck.noeio", false, "with -implcheck.size: flushes never fail")
	sizeNoSym  = flag.Bool("implcheck.nosym", false, "with -implcheck.size: without the symmetry reduction (world.SearchOptions.NoSymmetry)")
	sizeExact  = flag.Bool("implcheck.exact", false, "with -implcheck.size: without any of the program's declarations (world.SearchOptions.Exact)")
	sizeStates = flag.Int("implcheck.states", 20_000_000, "with -implcheck.size: the state budget of each search")
)

var sizeRun = flag.String("implcheck.size", "", "measure the search of impl.Syncer at TASKSxSYNCS[,TASKSxSYNCS...] under each memory model (growth table of docs/world.md)")

// TestSize measures (behind -implcheck.size=2x1,3x1): states, transitions,
// runs and time for two policies under each memory model, at each bound.
func TestSize(t *testing.T) {
	if *sizeRun == "" {
		t.Skip("-implcheck.size not set")
	}
	for _, b := range strings.Split(*sizeRun, ",") {
		var tasks, syncs int
		if _, err := fmt.Sscanf(b, "%dx%d", &tasks, &syncs); err != nil {
			t.Fatal(err)
		}
		size(t, tasks, syncs)
	}
}

func size(t *testing.T, tasks, syncs int) {
	for _, m := range Models() {
		for _, p := range []impl.Policy{impl.SkipIfFlushedSince, impl.GroupCommit} {
			c := Syncer{Policy: p, Tasks: tasks, Syncs: syncs, Memory: m, NoFlushEIO: *sizeNoEIO}
			if ok, _ := regexp.MatchString(*sizeOnly, fmt.Sprint(memory.Model(m), " ", p)); !ok {
				continue
			}
			t0 := time.Now()
			s, err := world.NewSearch(c.Config(), c.Program(), world.SearchOptions{NoSymmetry: *sizeNoSym, Exact: *sizeExact})
			if err != nil {
				t.Fatal(err)
			}
			r := s.Explore(explore.Options{MaxStates: *sizeStates, MaxMemory: 12 << 30, Progress: func(st explore.Stats) { progress(t, st) }})
			runs, steps := s.Runs()
			t.Logf("%dx%d %-4v %-22v exhausted=%v unsafe=%v %d states %d transitions depth %d, %d runs, %d steps, %d reused, %v",
				tasks, syncs, memory.Model(m), p, r.Exhausted, r.Violation != nil, r.States, r.Transitions, r.MaxDepth, runs, steps, s.Reused(), time.Since(t0).Round(time.Millisecond))
		}
	}
}

var lastProgress time.Time

func progress(t *testing.T, st explore.Stats) {
	if time.Since(lastProgress) > 30*time.Second {
		lastProgress = time.Now()
		t.Logf("  ... %v", st)
	}
}

package wal_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/examples/wal"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/model/world/worldtest"
)

// program: each task appends one record and commits it; when Commit
// returns nil, the record must survive a crash from then on.
func program(handedOut bool) world.Program {
	return func(w *world.World) func(t *world.Task) {
		var log *wal.Log // made by the first task to start, before its first call
		w.Shared(func() []byte {
			if log == nil {
				return nil
			}
			return log.AppendState(nil)
		})
		return func(t *world.Task) {
			dev, next, flushed, q := t.Device(), t.Word(0), t.Word(1), t.WaitQueue()
			if log == nil {
				log = wal.New(dev, next, flushed, q)
				log.HandedOut = handedOut
			}
			l := log.With(dev, next, flushed, q)
			rec := make([]byte, dev.BlockSize())
			rec[0] = byte(t.ID() + 1)
			lsn, err := l.Append(rec)
			if err != nil {
				return
			}
			if err := l.Commit(lsn); err != nil {
				t.Note("commit of LSN %d: %v", lsn, err)
				return
			}
			t.Note("commit of LSN %d returned nil", lsn)
			t.MustSurvive(int(lsn-1), rec)
		}
	}
}

func config(m memory.Model, tasks int) world.Config {
	return world.Config{Memory: m, Tasks: tasks, Words: 2, Blocks: tasks, FlushFailures: true,
		WordNames: []string{"next", "flushed"}}
}

// TestGroupCommit: the log as written is safe: every run of three
// committers under SC, two under TSO and LKMM, with flush failures and a
// crash at every step. Since a Wake is a scheduling point of its own, three
// committers are 582,284 states under SC and as many under TSO (about 20 s
// each on 2 cores); -wal.long adds TSO at three.
func TestGroupCommit(t *testing.T) {
	worldtest.Check(t, config(memory.SC, 3), program(false), worldtest.Options{})
	tso := 2
	if *long {
		tso = 3
	}
	worldtest.Check(t, config(memory.TSO, tso), program(false), worldtest.Options{})
	worldtest.Check(t, config(memory.LKMM, 2), program(false), worldtest.Options{})
}

var long = flag.Bool("wal.long", false, "TestGroupCommit: also TSO at three committers (20 s more)")

// TestGroupCommitHandedOut is the negative control: a leader that claims
// every LSN handed out, not only those whose writes completed, lets a
// committer return while its record is still in flight.
func TestGroupCommitHandedOut(t *testing.T) {
	r, err := worldtest.Search(config(memory.SC, 2), program(true), worldtest.Options{})
	require.NoError(t, err)
	require.Error(t, r.Err, "the search must find the bug")
	assert.True(t, strings.Contains(r.Err.Error(), "not durable"), r.Err.Error())
	t.Logf("found in %d steps:\n%s", len(r.Path), r.Timeline)
}

// TestGroupCommitPreemptions: a search with a preemption bound. The bug
// needs no preemption at all (a task that waits for its write lets the
// other run), so it is found at bound 0; the fixed log is "SAFE within 1
// preemptions" at that bound, never plain SAFE.
func TestGroupCommitPreemptions(t *testing.T) {
	r, err := worldtest.Search(config(memory.SC, 2), program(true), worldtest.Options{BoundPreemptions: true, Preemptions: 0})
	require.NoError(t, err)
	require.Error(t, r.Err, "the bug at preemption bound 0")
	b, err := worldtest.Search(config(memory.SC, 3), program(false), worldtest.Options{BoundPreemptions: true, Preemptions: 1})
	require.NoError(t, err)
	assert.Equal(t, "SAFE within 1 preemptions", b.Verdict())
	t.Logf("the bug at bound 0 in %d steps; the fix, 3 tasks: %s, %d states", len(r.Path), b.Verdict(), b.States)
}

var growth = flag.Bool("wal.growth", false, "measure how the search of the fixed log grows with the committers (docs/world.md; minutes)")

// TestGroupCommitGrowth (behind -wal.growth): the fixed log's search at 2
// and 3 committers under each memory model.
func TestGroupCommitGrowth(t *testing.T) {
	if !*growth {
		t.Skip("-wal.growth not set")
	}
	type run struct {
		tasks int
		m     memory.Model
		opt   worldtest.Options
	}
	var runs []run
	for _, n := range []int{2, 3} {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			runs = append(runs, run{n, m, worldtest.Options{}})
		}
	}
	for _, r := range runs {
		t0 := time.Now()
		res, err := worldtest.Search(config(r.m, r.tasks), program(false), r.opt)
		require.NoError(t, err)
		t.Logf("%d committers, %v: %s, %d states, %d runs, %v", r.tasks, r.m, res.Verdict(), res.States, res.Runs, time.Since(t0).Round(time.Millisecond))
	}
}

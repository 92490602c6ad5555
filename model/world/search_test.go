package world_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
	"github.com/flushproof/flushproof/spec"
)

// writeFlush: each task writes its block, then (unless skip) flushes, and
// requires its write to survive when the flush returned 0.
func writeFlush(skip bool) world.Program {
	return func(w *world.World) func(t *world.Task) {
		return func(t *world.Task) {
			dev := t.Device()
			data := make([]byte, dev.BlockSize())
			data[0] = byte(t.ID() + 1)
			off := int64(t.ID() * dev.BlockSize())
			if err := dev.WriteAt(data, off, 0); err != nil {
				return
			}
			if !skip {
				if err := dev.Flush(); err != nil {
					return
				}
			}
			t.MustSurvive(t.ID(), data)
		}
	}
}

func TestSearchWriteFlush(t *testing.T) {
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Blocks: 2, FlushFailures: true}
	for _, noCache := range []bool{false, true} {
		s, err := world.NewSearch(cfg, writeFlush(false), world.SearchOptions{NoCache: noCache})
		require.NoError(t, err)
		r := s.Explore(explore.Options{})
		require.Nil(t, r.Violation)
		assert.True(t, r.Exhausted)
		runs, steps := s.Runs()
		t.Logf("no cache %v: %v, %d runs, %d steps", noCache, r.Stats, runs, steps)

		s, err = world.NewSearch(cfg, writeFlush(true), world.SearchOptions{NoCache: noCache})
		require.NoError(t, err)
		r = s.Explore(explore.Options{})
		require.NotNil(t, r.Violation)
		t.Log(r.Violation.Timeline())
		assert.Len(t, r.Violation.Path, 3) // the task starts, its write is submitted and completes: not durable
		_ = spec.FUA
	}
}

// TestSearchCatchesNondeterminism: a program whose tasks act on state kept
// across runs (here a counter outside the Program) does not replay its
// recorded choices, and the search panics saying so instead of searching
// a space that is not the program's.
func TestSearchCatchesNondeterminism(t *testing.T) {
	runs := 0
	prog := func(w *world.World) func(t *world.Task) {
		runs++
		odd := runs%2 == 1
		return func(t *world.Task) {
			dev := t.Device()
			buf := make([]byte, dev.BlockSize())
			if odd || t.ID() == 0 {
				_ = dev.WriteAt(buf, int64(t.ID()*dev.BlockSize()), 0)
			}
			_ = dev.Flush()
		}
	}
	s, err := world.NewSearch(world.Config{Memory: memory.SC, Tasks: 2, Blocks: 2}, prog, world.SearchOptions{})
	require.NoError(t, err)
	defer func() {
		r := recover()
		require.NotNil(t, r, "the search must not accept a program that is not deterministic")
		assert.Contains(t, fmt.Sprint(r), "not deterministic")
	}()
	s.Explore(explore.Options{Workers: 1})
}

// TestMustSurviveConcurrentWrite: the obligation is the device contract's,
// not "no older version may be left": a write to the same block that was
// still in flight when the durable write was sent is not ordered before it
// and may land after it. Here task 0's REQ_PREFLUSH write sends its data
// only once its preflush ends, which may be after task 1's FUA write
// completed; a crash may then leave task 0's data, and task 1's obligation
// still holds. The search without the claim that a checked obligation
// stays met (Exact: every obligation checked again after every step) must
// agree. Without FUA, task 1's write is not durable: UNSAFE.
func TestMustSurviveConcurrentWrite(t *testing.T) {
	prog := func(fua spec.WriteFlags) world.Program {
		return func(w *world.World) func(t *world.Task) {
			return func(t *world.Task) {
				dev := t.Device()
				data := make([]byte, dev.BlockSize())
				data[0] = byte(t.ID() + 1)
				if t.ID() == 0 {
					_ = dev.WriteAt(data, 0, spec.Preflush)
					return
				}
				if err := dev.WriteAt(data, 0, fua); err == nil {
					t.MustSurvive(0, data)
				}
			}
		}
	}
	cfg := world.Config{Memory: memory.SC, Tasks: 2, Blocks: 1}
	for _, exact := range []bool{false, true} {
		s, err := world.NewSearch(cfg, prog(spec.FUA), world.SearchOptions{Exact: exact})
		require.NoError(t, err)
		r := s.Explore(explore.Options{})
		assert.True(t, r.Exhausted && r.Violation == nil, "exact %v: %v", exact, r.Violation)
		s, err = world.NewSearch(cfg, prog(0), world.SearchOptions{Exact: exact})
		require.NoError(t, err)
		assert.NotNil(t, s.Explore(explore.Options{}).Violation, "exact %v: a write without FUA", exact)
	}
}

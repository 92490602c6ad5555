package flushseq

import (
	"encoding/binary"
	"fmt"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/world"
)

// syncerCode is impl.Syncer, the code hwbench's S2 measures, unchanged, in
// the model world: each task writes its own block, waits for the write to
// complete and calls Sync, as an S2 writer's tight loop does, fsyncs times.
// Every call the Syncer makes goes through the world's handles (device,
// counters, smp_mb, wait queue), so a timed run of it (SimulateCode)
// counts the skips of the very code that is benchmarked. It implements
// Code: fresh for each run.
type syncerCode struct {
	policy impl.Policy
	fsyncs int
	// sampleBeforeWrite is a negative control for tests: the writer
	// samples the flush sequence before its write (Sample, write,
	// SyncSince), the misuse Syncer.Sample warns of.
	sampleBeforeWrite bool

	acked    [][]byte
	returned int
	failed   int
	unsafe   int
	stats    impl.SyncStats
}

var _ Code = (*syncerCode)(nil)

// world.Config implements Code: the two words of the flush
// sequence and a block per task.
func (c *syncerCode) WorldConfig(tasks int, m memory.Model) world.Config {
	return world.Config{Memory: m, Tasks: tasks, Words: 2, Blocks: tasks, WordNames: WordNames}
}

// Run implements Code. A Sync that returns nil with its write
// not durable is counted in Counts().Unsafe; the run goes on.
func (c *syncerCode) Run(w *world.World, ch world.Chooser) (world.Outcome, error) {
	c.acked = make([][]byte, w.Config().Tasks)
	var base *impl.Syncer
	out, err := w.Run(ch, func(t *world.Task) {
		dev := t.Device()
		h := impl.Handles{Dev: dev, Queue: t.WaitQueue(),
			Seq: impl.FlushSeq{Submitted: t.Word(WordSubmitted), Completed: t.Word(WordCompleted), MB: t.Fence()}}
		if base == nil { // the first task to start makes it, before its first call
			var err error
			if base, err = impl.NewSyncer(h, c.policy); err != nil {
				w.Fail(fmt.Errorf("syncer in the model world: %w", err))
				return
			}
		}
		s := base.Bind(h)
		bs := dev.BlockSize()
		off := int64(t.ID() * bs)
		for round := 1; round <= c.fsyncs; round++ {
			data := make([]byte, bs)
			binary.LittleEndian.PutUint32(data, uint32(t.ID()))
			binary.LittleEndian.PutUint32(data[4:], uint32(round))
			var sample int64
			if c.sampleBeforeWrite {
				sample = s.Sample()
			}
			if err := dev.WriteAt(data, off, 0); err != nil {
				w.Fail(fmt.Errorf("task %d, round %d: write: %w", t.ID(), round, err))
				return
			}
			sync := s.Sync
			if c.sampleBeforeWrite {
				sync = func() error { return s.SyncSince(sample) }
			}
			if err := sync(); err != nil {
				c.failed++
				t.Reached(Milestone{Step: Failed})
				continue
			}
			c.acked[t.ID()] = data
			c.returned++
			if !w.Survives(t.ID(), data) {
				c.unsafe++
			}
			t.Reached(Milestone{Step: Returned})
		}
	})
	if base != nil {
		c.stats = base.Stats()
	}
	return out, err
}

// Acked implements Code.
func (c *syncerCode) Acked(task int) []byte { return c.acked[task] }

// Counts implements Code; the skips are the Syncer's own count.
func (c *syncerCode) Counts() Counts {
	return Counts{Returned: c.returned, Skipped: int(c.stats.Skipped), Failed: c.failed, Unsafe: c.unsafe}
}

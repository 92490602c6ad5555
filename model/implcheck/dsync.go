package implcheck

import (
	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
	"github.com/flushproof/flushproof/model/world"
)

// DSync is impl.DSyncWriter, unchanged, in the model world: each task
// writes its own block Writes times through the writer; when a write
// returns nil, a crash from then on must keep it. The writer touches no
// shared memory, so the rows run under SC only (every memory model gives
// the same runs).
type DSync struct {
	Mode    impl.DSyncMode
	Fault   implfault.Fault // FaultDropFUA: a negative control on a device with a cache
	NoCache bool            // the device has no volatile cache
	Tasks   int
	Writes  int
}

// Config is the world: one block per task, flushes that may fail.
func (c DSync) Config() world.Config {
	return world.Config{Memory: memory.SC, Tasks: c.Tasks, Blocks: c.Tasks, NoCache: c.NoCache, FlushFailures: true}
}

// Program is the code the search runs.
func (c DSync) Program() world.Program {
	return func(w *world.World) func(t *world.Task) {
		symmetric(w)
		return func(t *world.Task) {
			dev := t.Device()
			dw := implfault.DSyncWriter(impl.DSyncWriter{Dev: dev, Mode: c.Mode}, c.Fault).(impl.DSyncWriter)
			for i := 1; i <= c.Writes; i++ {
				t.Checkpoint(int64(i))
				data := payload(dev, t.ID(), i)
				if err := dw.WriteAt(data, int64(t.ID()*dev.BlockSize())); err != nil {
					t.Note("write %d: %v", i, err)
					continue
				}
				t.Note("O_DSYNC write %d returned", i)
				t.MustSurvive(t.ID(), data)
			}
		}
	}
}

// negative reports whether the configuration must be found UNSAFE: the
// dropped FUA with a cache (without a cache a completed write is durable,
// so the same fault is a false-positive control there).
func (c DSync) negative() bool { return c.Fault == implfault.DropFUA && !c.NoCache }

// Row is the configuration's row.
func (c DSync) Row() verdict.Row {
	name := "impl.DSyncWriter " + c.Mode.String()
	if c.Fault != implfault.None {
		name += " mutant-" + c.Fault.String()
	}
	dev := "cache"
	if c.NoCache {
		dev = "no-cache"
	}
	return row(c, name, dev, bound(c.Tasks, c.Writes, "write", true), c.negative())
}

// DSyncChecks are the default rows: each mode and the dropped FUA, on a
// device with a cache and without, at 2 tasks x 2 writes; DSyncProofChecks
// at 3 tasks x 2 writes.
func DSyncChecks() []DSync      { return dsyncs(2, 2) }
func DSyncProofChecks() []DSync { return dsyncs(3, 2) }

func dsyncs(tasks, writes int) []DSync {
	var out []DSync
	for _, noCache := range []bool{false, true} {
		for _, c := range []DSync{{Mode: impl.FUA}, {Mode: impl.WriteFlush}, {Mode: impl.FUA, Fault: implfault.DropFUA}} {
			c.NoCache, c.Tasks, c.Writes = noCache, tasks, writes
			out = append(out, c)
		}
	}
	return out
}

// DSyncProtocol is the catalog entry of impl.DSyncWriter.
func DSyncProtocol() verdict.Protocol {
	return entry("impl.DSyncWriter", "impl.DSyncWriter (O_DSYNC writes: FUA or write+flush)",
		func() []verdict.Row { return verdict.Rows(DSyncChecks(), DSyncProofChecks()) },
		worldBound("task", "write", "", func(tasks, writes int) []verdict.Row { return verdict.BoundRows(nil, dsyncs(tasks, writes)) }))
}

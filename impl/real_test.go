//go:build linux

package impl

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/linearize"
	"github.com/flushproof/flushproof/spec"
)

// realBlocks is how many blocks the real runs share: porcupine's file model
// has a register per sector, at most 8.
const realBlocks = 8

// runRealSyncers has 16 goroutines write, Sync and read 8 shared blocks of
// dev for real, recording every write and read with a call and a return
// time from one atomic clock (an operation's interval contains the whole
// call). Each write stores a unique value in its block; each read decodes
// the value it found. It returns the history and the Syncer.
func runRealSyncers(t *testing.T, dev spec.Device, p Policy, opsPerWriter int) (linearize.FileHistory, *Syncer) {
	t.Helper()
	count := NewCounting(dev)
	s, err := NewSyncer(Handles{Dev: count, Queue: &WaitQueue{},
		Seq: FlushSeq{Submitted: &Word{}, Completed: &Word{}, MB: Fence{}}}, p)
	require.NoError(t, err)
	bs := dev.BlockSize()
	zero := AlignedBuffer(bs, 4096)
	for b := 0; b < realBlocks; b++ { // every block starts as the model's initial content, 0
		require.NoError(t, dev.WriteAt(zero, int64(b*bs), 0))
	}
	var clock atomic.Int64
	var mu sync.Mutex
	var h linearize.FileHistory
	var wg sync.WaitGroup
	var value atomic.Int64
	var failures atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			buf := AlignedBuffer(bs, 4096)
			for i := 0; i < opsPerWriter; i++ {
				b := rng.IntN(realBlocks)
				op := linearize.FileOp{Client: g, Sectors: 1 << b}
				if rng.IntN(3) == 0 {
					op.Kind = linearize.FileRead
					op.Call = clock.Add(1)
					if err := dev.ReadAt(buf, int64(b*bs)); err != nil {
						failures.Add(1)
						return
					}
					op.Return = clock.Add(1)
					op.Value = int(binary.LittleEndian.Uint64(buf))
				} else {
					op.Kind = linearize.FileWrite
					op.Value = int(value.Add(1))
					clear(buf)
					binary.LittleEndian.PutUint64(buf, uint64(op.Value))
					op.Call = clock.Add(1)
					if err := count.WriteAt(buf, int64(b*bs), 0); err != nil {
						failures.Add(1)
						return
					}
					if err := s.Sync(); err != nil {
						failures.Add(1)
						return
					}
					op.Return = clock.Add(1)
				}
				mu.Lock()
				h.Ops = append(h.Ops, op)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failures.Load(), "an I/O failed")
	st := s.Stats()
	c := count.Counts()
	assert.Equal(t, st.Flushes, c.Flushes, "every flush the Syncer counted reached the device")
	t.Logf("%v on %s: %d ops, %+v, device saw %+v", p, describeDev(dev), len(h.Ops), st, c)
	return h, s
}

func describeDev(dev spec.Device) string {
	if s, ok := dev.(slowFlush); ok {
		return describeDev(s.Device) + " with 1 ms flushes"
	}
	if f, ok := dev.(*File); ok {
		return fmt.Sprintf("%s (block size %d, direct %v)", f.Path(), f.BlockSize(), f.Direct())
	}
	return fmt.Sprintf("%T", dev)
}

// TestSyncerRealRunsLinearizable: the Syncer's users on a real temporary
// file (and on a loop device, as root) see each block as a linearizable
// register, checked by porcupine, under every policy. With a crash out of
// reach on a real device, durability is checked in the model world
// (world_test.go) and by crashlab; here it is the real I/O path (aligned
// copies, concurrent writes, flushes among them) that must not mix up data.
func TestSyncerRealRunsLinearizable(t *testing.T) {
	dir := devTestDirectDir(t)
	devs := map[string]func(t *testing.T) spec.Device{
		"file": func(t *testing.T) spec.Device {
			return devTestOpen(t, filepath.Join(dir, "real"), OpenOptions{Create: true, Size: 1 << 20})
		},
		"loop": func(t *testing.T) spec.Device {
			backing := filepath.Join(dir, "loop-backing")
			f, err := os.Create(backing)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(16<<20))
			require.NoError(t, f.Close())
			return devTestOpen(t, devTestLoop(t, backing), OpenOptions{})
		},
	}
	for _, name := range []string{"file", "loop"} {
		t.Run(name, func(t *testing.T) {
			dev := devs[name](t)
			for _, p := range Policies() {
				// A flush that takes a millisecond, as a disk's would, so
				// that flushes overlap other goroutines' writes and reads.
				// (The sharing policies rarely skip here: a writer that
				// syncs at once finds no flush numbered after its write;
				// docs/impl.md.)
				h, _ := runRealSyncers(t, slowFlush{dev}, p, 25)
				require.NoError(t, linearize.CheckFile(fmt.Sprintf("impl-real-%s-%v", name, p), h, 0))
			}
		})
	}
}

// slowFlush delays every flush by a millisecond.
type slowFlush struct{ spec.Device }

func (d slowFlush) Flush() error {
	time.Sleep(time.Millisecond)
	return d.Device.Flush()
}

// TestRealHistoryCheckCatchesMixUps is the negative control of the check
// above: the same run with one read's value replaced by a value never
// written to that block is not linearizable.
func TestRealHistoryCheckCatchesMixUps(t *testing.T) {
	dev := devTestOpen(t, filepath.Join(devTestDirectDir(t), "mixup"), OpenOptions{Create: true, Size: 1 << 20})
	h, _ := runRealSyncers(t, dev, SkipIfFlushedSince, 10)
	for i := range h.Ops {
		if h.Ops[i].Kind == linearize.FileRead {
			h.Ops[i].Value = 1 << 30 // no write wrote it
			break
		}
	}
	err := linearize.CheckFile("impl-real-mixup", h, 0)
	var nl *linearize.FileNotLinearizable
	assert.ErrorAs(t, err, &nl)
}

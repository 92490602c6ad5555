package impl

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/internal/implfault"
	"github.com/flushproof/flushproof/internal/mutate"
	"github.com/flushproof/flushproof/spec"
)

// memDevice is a spec.Device in memory with the contract's durability,
// safe for concurrent use: a flush makes durable the versions that had
// completed when it was submitted; a FUA write is durable when it
// completes. Every failEvery-th flush fails (0: none).
type memDevice struct {
	mu        sync.Mutex
	bs        int
	data      [][]byte
	version   []int // newest completed version per block
	durable   []int // newest durable version per block
	failEvery int64
	flushes   atomic.Int64
	inFlight  atomic.Int64 // flushes in flight, for overlap checks
	overlap   atomic.Bool
}

func newMemDevice(blocks, bs int) *memDevice {
	d := &memDevice{bs: bs, data: make([][]byte, blocks), version: make([]int, blocks), durable: make([]int, blocks)}
	for b := range d.data {
		d.data[b] = make([]byte, bs)
	}
	return d
}

func (d *memDevice) BlockSize() int { return d.bs }

func (d *memDevice) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	b := int(off) / d.bs
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.data[b], p)
	d.version[b]++
	if fl&spec.FUA != 0 {
		d.durable[b] = d.version[b]
	}
	return nil
}

func (d *memDevice) ReadAt(p []byte, off int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(p, d.data[int(off)/d.bs])
	return nil
}

var errFlush = errors.New("memdevice: flush failed (EIO)")

func (d *memDevice) Flush() error {
	n := d.flushes.Add(1)
	if d.inFlight.Add(1) > 1 {
		d.overlap.Store(true)
	}
	defer d.inFlight.Add(-1)
	d.mu.Lock()
	cover := append([]int(nil), d.version...)
	d.mu.Unlock()
	if d.failEvery > 0 && n%d.failEvery == 0 {
		return errFlush
	}
	d.mu.Lock()
	for b, v := range cover {
		d.durable[b] = max(d.durable[b], v)
	}
	d.mu.Unlock()
	return nil
}

// durableVersion returns block b's newest durable and newest completed
// versions.
func (d *memDevice) versions(b int) (durable, completed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.durable[b], d.version[b]
}

// TestSyncerConcurrent: 16 goroutines write their own blocks and Sync, for
// real, under every policy, with every 7th flush failing; whenever Sync
// returns nil the block's version written before it must be durable. Run
// under -race too.
func TestSyncerConcurrent(t *testing.T) {
	for _, p := range Policies() {
		t.Run(p.String(), func(t *testing.T) {
			dev := newMemDevice(16, 8)
			dev.failEvery = 7
			s, err := NewSyncer(Handles{Dev: dev, Queue: &WaitQueue{},
				Seq: FlushSeq{Submitted: &Word{}, Completed: &Word{}, MB: Fence{}}}, p)
			require.NoError(t, err)
			var wg sync.WaitGroup
			var lost, failed atomic.Int64
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 8)
					for i := 0; i < 200; i++ {
						buf[0], buf[1] = byte(g), byte(i)
						if err := dev.WriteAt(buf, int64(g*8), 0); err != nil {
							panic(err)
						}
						_, v := dev.versions(g)
						if err := s.Sync(); err != nil {
							failed.Add(1)
							continue
						}
						if d, _ := dev.versions(g); d < v {
							lost.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			st := s.Stats()
			t.Logf("%v: %+v", p, st)
			assert.Zero(t, lost.Load(), "a Sync returned nil with its write not durable")
			assert.Equal(t, int64(16*200), st.Syncs)
			assert.Equal(t, failed.Load(), st.Failed, "each failed Sync is the failure of the one flush it issued")
			assert.Equal(t, st.Flushes, dev.flushes.Load(), "every flush the Syncer counts reached the device")
			assert.Positive(t, st.Failed)
			if p == Always {
				assert.Zero(t, st.Skipped)
				assert.Equal(t, st.Syncs, st.Flushes)
			} else {
				assert.LessOrEqual(t, st.Flushes, st.Syncs-st.Skipped, "a skipped Sync issued no flush")
			}
		})
	}
}

// TestSyncerMutantConcurrent: the >= mutant loses writes for real too
// (the first Sync of all sees completed = S = 0 and skips).
func TestSyncerMutantConcurrent(t *testing.T) {
	dev := newMemDevice(1, 8)
	s, err := NewSyncer(Handles{Dev: dev, Queue: &WaitQueue{}, Seq: FlushSeq{Submitted: &Word{}, Completed: &Word{}, MB: Fence{}}}, SkipIfFlushedSince)
	require.NoError(t, err)
	s = s.withFault(implfault.GreaterEqual)
	require.NoError(t, dev.WriteAt(make([]byte, 8), 0, 0))
	require.NoError(t, s.Sync())
	d, v := dev.versions(0)
	assert.Less(t, d, v, "the mutant skipped a flush it needed")
}

func TestDSyncWriter(t *testing.T) {
	for _, m := range []DSyncMode{FUA, WriteFlush} {
		dev := newMemDevice(2, 8)
		w := DSyncWriter{Dev: dev, Mode: m}
		require.NoError(t, w.WriteAt([]byte("abcdefgh"), 8))
		d, v := dev.versions(1)
		assert.Equal(t, v, d, "%v: durable when WriteAt returns", m)
		want := int64(0)
		if m == WriteFlush {
			want = 1
		}
		assert.Equal(t, want, dev.flushes.Load(), "%v", m)
	}
	assert.Error(t, DSyncWriter{Dev: newMemDevice(1, 8)}.WriteAt(make([]byte, 8), 0))
}

// failingWrites is a memDevice whose writes all fail with EIO and change
// nothing; its flushes succeed.
type failingWrites struct{ *memDevice }

var errWrite = errors.New("failingWrites: write failed (EIO)")

func (failingWrites) WriteAt([]byte, int64, spec.WriteFlags) error { return errWrite }

// TestDSyncWriterWriteError: when the write fails, WriteAt returns its
// error in both modes, even though the flush after it (write+flush)
// would succeed: the flush covers only writes that completed, so nil
// would claim durability for data the device never took. The model
// world's device never fails a write, so the implcheck rows cannot see
// a writer that ignores the error (mutate.DSyncIgnoresWriteError); this
// test does.
func TestDSyncWriterWriteError(t *testing.T) {
	check := func() (caught int) {
		for _, m := range []DSyncMode{FUA, WriteFlush} {
			dev := failingWrites{newMemDevice(1, 8)}
			err := DSyncWriter{Dev: dev, Mode: m}.WriteAt([]byte("abcdefgh"), 0)
			if errors.Is(err, errWrite) {
				caught++
			}
			d, v := dev.versions(0)
			assert.Zero(t, d+v, "%v: the failed write changed the block", m)
		}
		return caught
	}
	assert.Equal(t, 2, check(), "a write's error is returned in both modes")
	defer mutate.Set(t, mutate.DSyncIgnoresWriteError)()
	assert.Equal(t, 1, check(), "under %v, write+flush returns the flush's nil", mutate.DSyncIgnoresWriteError)
}

// TestSubmitter: serialised submissions never overlap; in both modes every
// submission runs once and its error comes back.
func TestSubmitter(t *testing.T) {
	for _, serial := range []bool{true, false} {
		s := &Submitter{Serialised: serial}
		var running, most, ran atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < 200; i++ {
					_ = s.Submit(func() error {
						ran.Add(1)
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						for j := 0; j < 100; j++ {
							_ = j * j
						}
						running.Add(-1)
						return nil
					})
				}
			}()
		}
		close(start)
		wg.Wait()
		assert.Equal(t, int64(8*200), ran.Load(), "serialised=%v: every submission ran once", serial)
		if serial {
			assert.Equal(t, int64(1), most.Load(), "serialised submissions overlapped")
		}
		errIO := errors.New("io failed")
		assert.Same(t, errIO, s.Submit(func() error { return errIO }), "serialised=%v", serial)
	}
}

func TestDIOCounter(t *testing.T) {
	c, err := NewDIOCounter(&Word{}, &WaitQueue{})
	require.NoError(t, err)
	c.Wait() // nothing in flight
	var ended atomic.Int64
	for i := 0; i < 8; i++ {
		c.Begin()
	}
	for i := 0; i < 8; i++ {
		go func() {
			ended.Add(1)
			c.End()
		}()
	}
	c.Wait()
	assert.Equal(t, int64(8), ended.Load(), "Wait returned before every I/O ended")
	assert.Zero(t, c.InFlight())
	assert.Panics(t, c.End)
	_, err = NewDIOCounter(nil, &WaitQueue{})
	assert.Error(t, err)
}

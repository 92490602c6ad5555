//go:build linux

package impl_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/flushproof/flushproof/impl"
)

// openTemp opens a fresh temporary file as a device (O_DIRECT where the
// file system allows it) and returns it with a cleanup.
func openTemp() (*impl.File, func(), error) {
	dir, err := os.MkdirTemp("", "flushproof-example-")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "device")
	f, err := impl.Open(path, impl.OpenOptions{Create: true, Size: 1 << 20})
	if errors.Is(err, impl.ErrNoDirectIO) {
		f, err = impl.Open(path, impl.OpenOptions{Create: true, Size: 1 << 20, Buffered: true})
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return f, func() { f.Close(); os.RemoveAll(dir) }, nil
}

// Writers that share one device write their own blocks and call Sync; with
// a sharing policy a Sync returns without a flush of its own when a flush
// that covers its write has completed.
func ExampleSyncer() {
	f, done, err := openTemp()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	syncer, err := impl.NewSyncer(impl.Handles{
		Dev:   f,
		Queue: &impl.WaitQueue{},
		Seq:   impl.FlushSeq{Submitted: &impl.Word{}, Completed: &impl.Word{}, MB: impl.Fence{}},
	}, impl.Join)
	if err != nil {
		fmt.Println(err)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			block := impl.AlignedBuffer(f.BlockSize(), f.MemoryAlignment())
			for i := 0; i < 10; i++ {
				copy(block, fmt.Sprintf("writer %d record %d", w, i))
				if err := f.WriteAt(block, int64(w*f.BlockSize()), 0); err != nil {
					fmt.Println(err)
					return
				}
				if err := syncer.Sync(); err != nil { // the record is durable when Sync returns nil
					fmt.Println(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := syncer.Stats()
	fmt.Println("syncs:", st.Syncs, "flushes + skipped = syncs:", st.Flushes+st.Skipped == st.Syncs)
	// Output:
	// syncs: 40 flushes + skipped = syncs: true
}

// FlushSeq is the protocol underneath the Syncer, for code that keeps its
// own flush logic: sample after the write completed, skip if a later flush
// completed, otherwise number, flush and record.
func ExampleFlushSeq() {
	seq := impl.FlushSeq{Submitted: &impl.Word{}, Completed: &impl.Word{}, MB: impl.Fence{}}
	s := seq.Sample() // after our write completed
	fmt.Println("covered before any flush:", seq.FlushedSince(s))
	n := seq.Start() // numbered before it is submitted
	// ... issue the flush; on success:
	seq.Done(n)
	fmt.Println("covered after flush", n, "completed:", seq.FlushedSince(s))
	// Output:
	// covered before any flush: false
	// covered after flush 1 completed: true
}

// A DSyncWriter makes each write durable before it returns, with one FUA
// write or with a write and a flush (two commands).
func ExampleDSyncWriter() {
	f, done, err := openTemp()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	for _, mode := range []impl.DSyncMode{impl.FUA, impl.WriteFlush} {
		dev := impl.NewCounting(f)
		w := impl.DSyncWriter{Dev: dev, Mode: mode}
		block := impl.AlignedBuffer(f.BlockSize(), f.MemoryAlignment())
		if err := w.WriteAt(block, 0); err != nil {
			fmt.Println(err)
			return
		}
		c := dev.Counts()
		fmt.Printf("%v: %d FUA writes, %d plain writes, %d flushes\n", mode, c.FUAWrites, c.Writes-c.FUAWrites, c.Flushes)
	}
	// Output:
	// fua: 1 FUA writes, 0 plain writes, 0 flushes
	// write+flush: 0 FUA writes, 1 plain writes, 1 flushes
}

// A DIOCounter lets a truncate wait for the direct I/O in flight.
func ExampleDIOCounter() {
	c, err := impl.NewDIOCounter(&impl.Word{}, &impl.WaitQueue{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Begin()
	go c.End() // the I/O completes later
	c.Wait()   // truncate: nothing in flight after this
	fmt.Println("in flight:", c.InFlight())
	// Output:
	// in flight: 0
}

// A Submitter serialises I/O to one file, as io-wq does for hashed work,
// or lets it run in parallel.
func ExampleSubmitter() {
	s := &impl.Submitter{Serialised: true}
	err := s.Submit(func() error { return nil })
	fmt.Println(err)
	// Output:
	// <nil>
}

package impl

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/spec"
)

// countTestDevice records the last call made to it and fails with err.
type countTestDevice struct {
	err      error
	lastOff  int64
	lastFlag spec.WriteFlags
	lastLen  int
}

func (d *countTestDevice) WriteAt(p []byte, off int64, fl spec.WriteFlags) error {
	d.lastLen, d.lastOff, d.lastFlag = len(p), off, fl
	return d.err
}
func (d *countTestDevice) Flush() error { return d.err }
func (d *countTestDevice) ReadAt(p []byte, off int64) error {
	d.lastLen, d.lastOff = len(p), off
	return d.err
}
func (d *countTestDevice) BlockSize() int { return 4096 }

func TestCountingPassesThrough(t *testing.T) {
	inner := &countTestDevice{}
	c := NewCounting(inner)
	assert.Equal(t, 4096, c.BlockSize())

	require.NoError(t, c.WriteAt(make([]byte, 8192), 4096, spec.FUA))
	assert.Equal(t, countTestDevice{lastOff: 4096, lastFlag: spec.FUA, lastLen: 8192}, *inner)
	require.NoError(t, c.ReadAt(make([]byte, 512), 1024))
	assert.Equal(t, 512, inner.lastLen)
	assert.EqualValues(t, 1024, inner.lastOff)
	assert.Equal(t, Counts{Writes: 1, FUAWrites: 1, Reads: 1}, c.Counts())

	// Failed calls are counted too, and their errors come back unchanged.
	boom := errors.New("boom")
	inner.err = boom
	assert.ErrorIs(t, c.WriteAt(nil, 0, 0), boom)
	assert.ErrorIs(t, c.Flush(), boom)
	assert.ErrorIs(t, c.ReadAt(nil, 0), boom)
	assert.Equal(t, Counts{Writes: 2, FUAWrites: 1, Flushes: 1, Reads: 2}, c.Counts())
}

func TestCountsSub(t *testing.T) {
	before := Counts{Writes: 3, FUAWrites: 1, Flushes: 2, Reads: 7}
	after := Counts{Writes: 10, FUAWrites: 4, Flushes: 2, Reads: 9}
	assert.Equal(t, Counts{Writes: 7, FUAWrites: 3, Flushes: 0, Reads: 2}, after.Sub(before))
}

func TestCountingConcurrent(t *testing.T) {
	const goroutines, calls = 8, 1000
	c := NewCounting(countTestNop{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				fl := spec.WriteFlags(0)
				if (g+i)%4 == 0 {
					fl = spec.FUA
				}
				_ = c.WriteAt(nil, 0, fl)
				if i%2 == 0 {
					_ = c.Flush()
				}
				_ = c.ReadAt(nil, 0)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, Counts{
		Writes:    goroutines * calls,
		FUAWrites: goroutines * calls / 4,
		Flushes:   goroutines * calls / 2,
		Reads:     goroutines * calls,
	}, c.Counts())
}

// countTestNop is a stateless device, safe for concurrent use.
type countTestNop struct{}

func (countTestNop) WriteAt([]byte, int64, spec.WriteFlags) error { return nil }
func (countTestNop) Flush() error                                 { return nil }
func (countTestNop) ReadAt([]byte, int64) error                   { return nil }
func (countTestNop) BlockSize() int                               { return 512 }

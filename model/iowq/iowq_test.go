package iowq

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIOWQConfigRejects: configurations the model cannot represent are
// refused with a reason, not explored wrongly.
func TestIOWQConfigRejects(t *testing.T) {
	ok := StandardConfig(Unhashed, XFS, false)
	_, err := NewSystem(ok)
	require.NoError(t, err)
	tooMany := make([][]Write, 9)
	for i := range tooMany {
		tooMany[i] = []Write{{Block: 0, Aligned: true}}
	}
	for name, mutate := range map[string]func(*Config){
		"no submission":          func(c *Config) { c.Submit = 0 },
		"unknown fs":             func(c *Config) { c.FS = 99 },
		"empty layout":           func(c *Config) { c.Layout = "" },
		"bad layout letter":      func(c *Config) { c.Layout = "UX" },
		"written block past EOF": func(c *Config) { c.Layout = "UW" },
		"size not whole blocks":  func(c *Config) { c.Size = 3 },
		"size past the layout":   func(c *Config) { c.Size = 6 },
		"no workers":             func(c *Config) { c.Workers = nil },
		"nine workers":           func(c *Config) { c.Workers = tooMany },
		"write outside the file": func(c *Config) { c.Workers = [][]Write{{{Block: 2, Aligned: true}}} },
		"sector 2 of a block":    func(c *Config) { c.Workers = [][]Write{{{Block: 0, Sector: 2}}} },
		"read outside the file":  func(c *Config) { c.Reads = []int{4} },
	} {
		c := ok
		mutate(&c)
		_, err := NewSystem(c)
		assert.Error(t, err, name)
	}
	c := ok
	c.Workers = nil
	for i := 0; i < 9; i++ {
		c.Workers = append(c.Workers, []Write{{Block: 0, Aligned: true}, {Block: 1, Aligned: true}})
	}
	c.Workers = c.Workers[:8] // 16 writes: the most the state holds
	_, err = NewSystem(c)
	require.NoError(t, err)
	c.Workers[7] = append(c.Workers[7], Write{Block: 0, Aligned: true})
	_, err = NewSystem(c)
	assert.Error(t, err, "17 writes")
}

// TestIOWQPaths pins each file system's locking path to the kernel code it
// models (see iowq_fs.go), on a file whose b0 is unwritten, b1 written,
// b2 a hole past i_size = 4 sectors.
func TestIOWQPaths(t *testing.T) {
	st := State{alloc: 0b011, written: 0b010, size: 4}
	s := func(b, sec int) Write { return Write{Block: b, Sector: sec} }
	a := func(b int) Write { return Write{Block: b, Aligned: true} }
	const (
		X, D, W, O, M = pathExcl, pathDrain, pathWait, pathOverwriteOnly, pathDemote
	)
	for _, tc := range []struct {
		fs    FS
		wr    Write
		retry bool
		want  lockPath
		why   string
	}{
		{XFS, a(1), false, 0, "aligned overwrite: shared"},
		{XFS, a(0), false, 0, "aligned into unwritten: shared (converted at end_io)"},
		{XFS, a(2), false, 0, "aligned append at i_size: shared (pos > isize is false)"},
		{XFS, s(0, 0), false, O, "unaligned inside i_size: shared, IOMAP_DIO_OVERWRITE_ONLY"},
		{XFS, s(0, 0), true, X | D | W, "after -EAGAIN: exclusive, inode_dio_wait, FORCE_WAIT"},
		{XFS, s(1, 1), false, X | D | W, "unaligned ending at i_size: exclusive"},
		{XFS, s(2, 0), false, X | D | W, "unaligned at i_size: exclusive"},
		{MutantXFSNoDIOWait, s(1, 1), false, X | W, "mutant: no inode_dio_wait"},
		{Ext4, a(1), false, 0, "aligned overwrite: shared"},
		{Ext4, a(0), false, 0, "aligned into unwritten: shared"},
		{Ext4, s(1, 0), false, 0, "unaligned pure overwrite: shared"},
		{Ext4, s(0, 0), false, X | D | W, "unaligned into unwritten: exclusive, drain, wait"},
		{Ext4, a(2), false, X | W, "extending aligned: exclusive, FORCE_WAIT, no drain"},
		{Ext4, s(2, 1), false, X | D | W, "extending unaligned into a hole: exclusive, drain, wait"},
		{MutantExt4Unwritten2011, s(0, 0), false, 0, "mutant: unaligned into unwritten under the shared lock"},
		{MutantExt4Unwritten2011, a(2), false, X | W, "mutant: extending is still exclusive"},
		{NoFlag, a(1), false, X, "no flag: exclusive even for an aligned overwrite"},
		{NoFlag, s(1, 0), false, X | W, "no flag: unaligned overwrite of a written block"},
		{NoFlag, s(0, 0), false, X | D | W, "no flag: unaligned into unwritten"},
	} {
		c := Config{FS: tc.fs}
		assert.Equal(t, tc.want, c.path(tc.wr, st, tc.retry), "%v %v: %s", tc.fs, tc.wr, tc.why)
		c.SyncDIO = true
		assert.Equal(t, tc.want|W, c.path(tc.wr, st, tc.retry), "%v %v with SyncDIO waits", tc.fs, tc.wr)
	}
	assert.Equal(t, X|D|M, Config{FS: XFS}.path(a(2), State{size: 2}, false), "xfs aligned past i_size: exclusive for the checks, then demoted")
	for _, fs := range FileSystems() {
		assert.Equal(t, fs != NoFlag, fs.ParallelDIO(), "%v sets FMODE_DIO_PARALLEL_WRITE", fs)
	}
}

// TestIOWQSubSectorZeroingWipes: the mechanism in isolation. An unaligned
// write into an unwritten block zeroes the rest of the block; landing after
// another write's data, the zeroing wipes it, and the check says so.
func TestIOWQSubSectorZeroingWipes(t *testing.T) {
	sys, err := NewSystem(Race2011Config(Unhashed, MutantExt4Unwritten2011, false))
	require.NoError(t, err)
	st := sys.Init()[0]
	require.NoError(t, sys.Check(st))
	assert.Equal(t, 0, sys.Content(st, 0), "an unwritten block reads zeros")
	assert.Equal(t, Stale, int(st.disk[0]), "though the disk holds stale data")
	take := func(want string) {
		t.Helper()
		var found bool
		sys.Next(st, func(l explore.Label, n State) {
			if !found && sys.Describe(l) == want {
				found, st = true, n
			}
		})
		require.True(t, found, "step %q not enabled", want)
	}
	take("W1 s0: takes it")
	take("i_rwsem shared")
	take("iomap: b0 unwritten, zero s1, submit W1")
	take("W2 s1: takes it")
	take("i_rwsem shared")
	take("iomap: b0 unwritten, zero s0, submit W2")
	take("W1 lands on s0")
	take("s1 zeroed (W1's sub-block zeroing)")
	take("W1 end_io: b0 written, i_size 2, dio 1; completes")
	require.NoError(t, sys.Check(st))
	assert.Equal(t, 1, sys.Content(st, 0))
	take("s0 zeroed (W2's sub-block zeroing)")
	assert.Equal(t, 0, sys.Content(st, 0))
	assert.EqualError(t, sys.Check(st), "lost write: W1 (A: s0) completed, but s0 reads zeros/initial content")
}

// TestIOWQEvents: the client-visible events of a path, and the check that
// an older write landing after a newer one completed is a lost write too.
func TestIOWQEvents(t *testing.T) {
	sys, err := NewSystem(Config{Submit: Unhashed, FS: XFS, Layout: "W", Size: 2,
		Workers: [][]Write{{{Block: 0, Aligned: true}}, {{Block: 0, Sector: 0}}}, Reads: []int{0}})
	require.NoError(t, err)
	st := sys.Init()[0]
	var path []explore.Label
	take := func(want string) {
		t.Helper()
		var found bool
		sys.Next(st, func(l explore.Label, n State) {
			if !found && sys.Describe(l) == want {
				found, st = true, n
				path = append(path, l)
			}
		})
		require.True(t, found, "step %q not enabled", want)
	}
	take("W1 b0: takes it")
	take("i_rwsem shared")
	take("iomap: b0 written, submit W1")
	take("unlock")
	take("read s0: i_rwsem shared")
	take("read s0 = 0, unlock")
	take("W1 lands on s1")
	take("W1 lands on s0")
	take("W1 end_io: b0 written, i_size 2, dio 0; completes")
	take("W2 s0: takes it")
	take("i_rwsem shared") // inside i_size, not at its end: IOMAP_DIO_OVERWRITE_ONLY
	take("iomap: b0 written, submit W2")
	take("unlock")
	take("W2 lands on s0")
	take("W2 end_io: b0 written, i_size 2, dio 0; completes")
	require.NoError(t, sys.Check(st))
	assert.Equal(t, []Event{
		{Step: 1, Client: 0, Kind: WriteCall, ID: 1, Sectors: 0b11, Value: 1},
		{Step: 5, Client: 2, Kind: ReadCall, ID: 1, Sectors: 0b01},
		{Step: 6, Client: 2, Kind: ReadReturn, ID: 1, Sectors: 0b01, Value: 0},
		{Step: 9, Client: 0, Kind: WriteReturn, ID: 1, Sectors: 0b11, Value: 1},
		{Step: 10, Client: 1, Kind: WriteCall, ID: 2, Sectors: 0b01, Value: 2},
		{Step: 15, Client: 1, Kind: WriteReturn, ID: 2, Sectors: 0b01, Value: 2},
	}, sys.Events(path))
	assert.Equal(t, []int{2, 1}, []int{sys.Content(st, 0), sys.Content(st, 1)})

	// W2 started after W1 completed: W1's data reappearing on s0 is a lost
	// write of W2.
	bad := st
	bad.disk[0] = 1
	assert.EqualError(t, sys.Check(bad), "lost write: W2 (B: s0) completed after W1 (A: b0) had completed, but s0 holds W1's data")
	bad.disk[0] = Stale
	assert.ErrorContains(t, sys.Check(bad), "s0 reads stale data")
}

// TestIOWQSimulationDeterministic: the timed runs replay from their seed,
// and every write of every run completes.
func TestIOWQSimulationDeterministic(t *testing.T) {
	c := MixedWorkload(Unhashed, XFS)
	a, err := Simulate(c, DefaultLatency(), 20, 7)
	require.NoError(t, err)
	b, err := Simulate(c, DefaultLatency(), 20, 7)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, 20*16, a.Writes)
	assert.Positive(t, a.Retries, "xfs's optimistic shared unaligned writes never hit -EAGAIN")
	_, err = Simulate(c, Latency{Jitter: 2}, 1, 1)
	assert.Error(t, err)

	var buf bytes.Buffer
	require.NoError(t, WriteContention(&buf, DefaultLatency(), 2, 1))
	assert.Equal(t, len(ContentionCases())+2, strings.Count(buf.String(), "\n"), buf.String())
}

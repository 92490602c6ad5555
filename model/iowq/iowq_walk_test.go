package iowq_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/linearize"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/explore/exploretest"
	"github.com/flushproof/flushproof/model/iowq"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestIOWQVerdicts is the verdict table of io-wq hashing of O_DIRECT writes
// ("io_uring: avoid hashing O_DIRECT writes if the filesystem doesn't need
// it"): every file system hashed and unhashed, explored exhaustively. The
// correct file systems must be SAFE however io-wq submits; the mutants must
// be UNSAFE with a lost write whose counterexample replays, except where
// serialisation really hides their bug (the false-positive controls: hashed
// with synchronous completion for both, unhashed with synchronous completion
// for the missing inode_dio_wait). With -v it prints the table.
func TestIOWQVerdicts(t *testing.T) {
	var table []verdict.Verdict
	rows := iowq.Rows()
	require.Len(t, rows, len(iowq.Checks()))
	unsafe := 0
	for i, c := range iowq.Checks() {
		require.Equal(t, c.Row().Name(), rows[i].Name())
		t.Run(rows[i].Name(), func(t *testing.T) {
			v, err := rows[i].Check(explore.Options{Liveness: true})
			require.NoError(t, err)
			require.NotEqual(t, verdict.Unknown, v.Outcome)
			table = append(table, v)
			assert.Equal(t, c.ExpectUnsafe(), v.Negative)
			if !c.ExpectUnsafe() {
				assert.Equal(t, verdict.Safe, v.Outcome, "expected SAFE, got:\n%s", exploretest.Timeline(v))
				return
			}
			unsafe++
			require.NotNil(t, v.Violation, "the negative control was not caught")
			assert.Equal(t, explore.Safety, v.Violation.Kind)
			assert.Contains(t, v.Violation.Err.Error(), "lost write")
			sys, err := iowq.NewSystem(c)
			require.NoError(t, err)
			s, err := explore.Replay[iowq.State](sys, v.Violation.Path)
			require.NoError(t, err, "the counterexample path must replay")
			assert.EqualError(t, sys.Check(s), v.Violation.Err.Error())
		})
	}
	var b strings.Builder
	require.NoError(t, verdict.WriteTable(&b, table))
	t.Logf("io-wq verdict table:\n%s", b.String())
	assert.Equal(t, 8, unsafe, "negative controls")
}

// TestIOWQCounterexamplesShowTheRace pins what the counterexamples say, so
// that a mutant cannot be "caught" for some other reason: in the 2011 race
// both writes map the unwritten block and zero the other's sector, and the
// zeroing lands after the data of a write that completed; hashed, the
// second write is issued after the first's work item ended with its bios
// still in flight; without inode_dio_wait, an unaligned write zeroes a
// sector of an aligned write still in flight.
func TestIOWQCounterexamplesShowTheRace(t *testing.T) {
	for _, tc := range []struct {
		c     iowq.Config
		steps []string
		err   string
	}{
		{iowq.Race2011Config(iowq.Unhashed, iowq.MutantExt4Unwritten2011, false),
			[]string{"iomap: b0 unwritten, zero s1, submit W1", "iomap: b0 unwritten, zero s0, submit W2", "W1 lands on s0", "W1 end_io", "s0 zeroed (W2's sub-block zeroing)"},
			"lost write: W1 (A: s0) completed, but s0 reads zeros/initial content"},
		{iowq.Race2011Config(iowq.Hashed, iowq.MutantExt4Unwritten2011, false),
			[]string{"zero s1, submit W1", "unlock, release hash", "W2 s1: takes it (holds the inode's hash)", "zero s0, submit W2", "s0 zeroed (W2's sub-block zeroing)"},
			"lost write: W1 (A: s0) completed"},
		{iowq.StandardConfig(iowq.Unhashed, iowq.MutantXFSNoDIOWait, false),
			[]string{"iomap: b0 unwritten, submit W3", "i_rwsem exclusive (no inode_dio_wait)", "zero s0, submit W4", "W3 lands on s0", "s0 zeroed (W4's sub-block zeroing)"},
			"lost write: W3 (B: b0) completed, but s0 reads zeros/initial content"},
	} {
		v, err := iowq.Check(tc.c, explore.Options{})
		require.NoError(t, err)
		require.NotNil(t, v.Violation, tc.c.Row().Name())
		tl := v.Violation.Timeline()
		at := 0
		for _, step := range tc.steps {
			i := strings.Index(tl[at:], step)
			require.GreaterOrEqual(t, i, 0, "%s: %q missing or out of order in\n%s", tc.c.Row().Name(), step, tl)
			at += i
		}
		assert.Contains(t, v.Violation.Err.Error(), tc.err)
	}
}

// iowqWalkStats counts what random walks exercised, so that a walk that
// never zeroed, drained or retried cannot pass for a check of them.
type iowqWalkStats struct {
	walks, finished, zeroings, retries, drains, reads int
}

func (s *iowqWalkStats) add(sys *iowq.System, path []explore.Label, end iowq.State) {
	s.walks++
	more := false
	sys.Next(end, func(explore.Label, iowq.State) { more = true })
	if !more && sys.Unfinished(end) == 0 {
		s.finished++
	}
	for _, l := range path {
		d := sys.Describe(l)
		switch {
		case strings.Contains(d, "sub-block zeroing"):
			s.zeroings++
		case strings.Contains(d, "-EAGAIN"):
			s.retries++
		case strings.Contains(d, "inode_dio_wait returns"):
			s.drains++
		case strings.HasPrefix(d, "read s") && strings.Contains(d, "= W"):
			s.reads++
		}
	}
}

// iowqLarge are bounds far beyond the exhaustive table, for rapid walks:
// 8 workers x 2 writes and a reader, and 4 workers x 4 writes with
// extending writes, each 16 writes (the most the state holds).
func iowqLarge(submit iowq.Submit, fs iowq.FS) map[string]iowq.Config {
	mixed := iowq.MixedWorkload(submit, fs)
	mixed.Reads = []int{0, 3, 4, 7, 1, 6}
	deep := iowq.Config{Submit: submit, FS: fs, Layout: "UWHH", Size: 4, Reads: []int{0, 5, 2, 7}}
	for w := 0; w < 4; w++ {
		b := w % 2
		deep.Workers = append(deep.Workers, []iowq.Write{
			{Block: b, Sector: w / 2}, {Block: 2 + b, Aligned: true}, {Block: 2 + (w+1)%2, Sector: w % 2}, {Block: (w + 1) % 2, Aligned: true},
		})
	}
	return map[string]iowq.Config{"8x2 mixed+reader": mixed, "4x4 extending+reader": deep}
}

// TestIOWQWalkLarge: random schedules drawn by rapid on the large bounds,
// for the correct file systems hashed and unhashed; the register check in
// every state (walk). 300 walks per case by default (-rapid.checks=N).
func TestIOWQWalkLarge(t *testing.T) {
	for _, fs := range iowq.FileSystems() {
		if fs.Mutant() {
			continue
		}
		for _, sub := range []iowq.Submit{iowq.Hashed, iowq.Unhashed} {
			for name, c := range iowqLarge(sub, fs) {
				t.Run(fmt.Sprintf("%v/%v/%s", sub, fs, name), func(t *testing.T) {
					sys, err := iowq.NewSystem(c)
					require.NoError(t, err)
					st := &iowqWalkStats{}
					rapidctl.Check(t, 300, func(t *rapid.T) {
						path, end := exploretest.Walk(t, explore.System[iowq.State](sys), 5000)
						st.add(sys, path, end)
					})
					t.Logf("%+v", *st)
					require.NotZero(t, st.walks)
					assert.Equal(t, st.walks, st.finished, "every walk must run to the end")
					assert.NotZero(t, st.zeroings, "no sub-block zeroing")
					assert.NotZero(t, st.reads, "no read returned data")
					if fs == iowq.XFS {
						assert.NotZero(t, st.retries, "xfs never retried exclusive after -EAGAIN")
					}
					if sub == iowq.Unhashed {
						assert.NotZero(t, st.drains, "inode_dio_wait never had to wait")
					}
				})
			}
		}
	}
}

// TestIOWQWalkMutants are the negative controls on the large bound: rapid
// must find a lost write in each mutant, unhashed and (with io-wq's
// asynchronous completion) hashed, and the failure must replay from its
// seed.
func TestIOWQWalkMutants(t *testing.T) {
	for _, fs := range []iowq.FS{iowq.MutantExt4Unwritten2011, iowq.MutantXFSNoDIOWait} {
		for _, sub := range []iowq.Submit{iowq.Hashed, iowq.Unhashed} {
			t.Run(fmt.Sprintf("%v/%v", sub, fs), func(t *testing.T) {
				sys, err := iowq.NewSystem(iowq.MixedWorkload(sub, fs))
				require.NoError(t, err)
				f := rapidctl.Expect(t, 200, func(t *rapid.T) {
					exploretest.Walk(t, explore.System[iowq.State](sys), 5000)
				})
				assert.Contains(t, f.Output, "lost write")
				assert.Contains(t, f.Output, "sub-block zeroing")
			})
		}
	}
}

// iowqDrawStep lets rapid choose every step of a recorded run.
func iowqDrawStep(t *rapid.T) func([]explore.Label) int {
	return func(ls []explore.Label) int {
		if len(ls) == 1 {
			return 0
		}
		return rapid.IntRange(0, len(ls)-1).Draw(t, "step")
	}
}

// iowqHistoryProp records a run of c under a rapid-drawn schedule and
// checks its history with porcupine. A run porcupine rejects must also
// break the model's own check (porcupine sees only what reads returned).
func iowqHistoryProp(c iowq.Config, name string, saw *int) func(*rapid.T) {
	sys, err := iowq.NewSystem(c)
	if err != nil {
		panic(err)
	}
	return func(t *rapid.T) {
		run, err := linearize.RecordIOWQ(sys, iowqDrawStep(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range run.History.Ops {
			if op.Kind == linearize.FileRead && op.Value != 0 && saw != nil {
				*saw++
			}
		}
		err = linearize.CheckFile(name, run.History, 0)
		var nl *linearize.FileNotLinearizable
		switch {
		case err == nil:
		case !errors.As(err, &nl):
			t.Fatalf("malformed history: %v", err)
		case run.Violation == nil:
			t.Fatalf("porcupine rejects a run the model accepts: %v", err)
		default:
			t.Fatalf("%v\nthe model's check: %v", err, run.Violation)
		}
	}
}

// TestIOWQHistoriesLinearizable: histories recorded from rapid-drawn runs of
// every row that must be safe (the correct file systems and the
// false-positive controls) at the standard bound, and of the correct file
// systems on the large bounds, are linearizable per sector (porcupine).
func TestIOWQHistoriesLinearizable(t *testing.T) {
	cases := map[string]iowq.Config{}
	for _, c := range iowq.Checks() {
		if !c.ExpectUnsafe() {
			cases[c.Row().Name()] = c
		}
	}
	for _, fs := range []iowq.FS{iowq.XFS, iowq.Ext4} {
		for name, c := range iowqLarge(iowq.Unhashed, fs) {
			cases[fmt.Sprintf("%v %v %s", iowq.Unhashed, fs, name)] = c
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			saw := 0
			rapidctl.Check(t, 200, iowqHistoryProp(c, "iowq-"+name, &saw))
			assert.NotZero(t, saw, "no read returned a write's data")
		})
	}
}

// TestIOWQHistoriesMutantNotLinearizable is the porcupine negative control:
// rapid must find runs of the mutants whose histories porcupine rejects (a
// completed write's data gone from a later read), the failure must replay
// from its seed, and porcupine's visualisation must be written. The ext4-2011
// mutant runs on the 2011 race alone, hashed and unhashed (short runs keep
// rapid's shrinking, which checks every candidate with porcupine, quick);
// linearize's tests check the standard bound's counterexamples too.
func TestIOWQHistoriesMutantNotLinearizable(t *testing.T) {
	for _, c := range []iowq.Config{
		iowq.Race2011Config(iowq.Unhashed, iowq.MutantExt4Unwritten2011, false),
		iowq.Race2011Config(iowq.Hashed, iowq.MutantExt4Unwritten2011, false),
		iowq.StandardConfig(iowq.Unhashed, iowq.MutantXFSNoDIOWait, false),
	} {
		t.Run(fmt.Sprintf("%v/%v", c.Submit, c.FS), func(t *testing.T) {
			name := fmt.Sprintf("iowq-negative-%v-%v", c.Submit, c.FS)
			vis := linearize.VisualizationPath(name)
			_ = os.Remove(vis)
			f := rapidctl.Expect(t, 200, iowqHistoryProp(c, name, nil))
			assert.Contains(t, f.Output, "is not linearizable")
			assert.Contains(t, f.Output, "the model's check: after step")
			assert.NotContains(t, f.Output, "the model accepts")
			assert.Contains(t, f.Output, "porcupine visualisation: "+vis)
			_, err := os.Stat(vis)
			assert.NoError(t, err, "the visualisation must be written")
		})
	}
}

// TestIOWQLockWaits: the efficiency side of the patch, from timed runs
// (iowq.Simulate). Hashed, io-wq workers of one file never contend on
// i_rwsem (one work item of the file at a time) but wait for the hash;
// unhashed on xfs or ext4, the patch's aligned overwrites all take i_rwsem
// shared and nobody waits; unhashed on a file system without the flag every
// write takes it exclusive and workers queue on it. With -v it prints the
// report.
func TestIOWQLockWaits(t *testing.T) {
	lat := iowq.DefaultLatency()
	rs, err := iowq.ContentionReport(lat, 50, 1)
	require.NoError(t, err)
	get := func(workload string, sub iowq.Submit, fs iowq.FS) iowq.Contention {
		t.Helper()
		for i, c := range iowq.ContentionCases() {
			if strings.HasPrefix(c.Workload, workload) && c.Config.Submit == sub && c.Config.FS == fs {
				return rs[i]
			}
		}
		t.Fatalf("no case %s %v %v", workload, sub, fs)
		return iowq.Contention{}
	}
	for _, r := range rs {
		require.Equal(t, 50*16, r.Writes, "every write of every run completes")
		if r.Config.Submit == iowq.Hashed {
			assert.Zero(t, r.LockWaits, "hashed %v: io-wq workers of one file contend on i_rwsem", r.Config.FS)
			assert.Positive(t, r.HashWaits, "hashed %v: nobody waited for the hash", r.Config.FS)
		} else {
			assert.Zero(t, r.HashWaits)
		}
	}
	for _, fs := range []iowq.FS{iowq.XFS, iowq.Ext4} {
		u := get("patch", iowq.Unhashed, fs)
		assert.Zero(t, u.LockWaits+u.DrainWaits, "unhashed %v: aligned overwrites must not wait", fs)
		assert.Greater(t, u.PerSecond(), get("patch", iowq.Hashed, fs).PerSecond(), "unhashed %v is not faster than hashed", fs)
	}
	noflag := get("patch", iowq.Unhashed, iowq.NoFlag)
	assert.Greater(t, noflag.LockWaits, noflag.Writes/2, "unhashed without the flag: workers must queue on i_rwsem")
	assert.Positive(t, get("mixed", iowq.Unhashed, iowq.XFS).Retries, "xfs's optimistic unaligned path never retried")

	var buf bytes.Buffer
	require.NoError(t, iowq.WriteContention(&buf, lat, 50, 1))
	t.Logf("io-wq lock waits:\n%s", buf.String())
}

package props

import (
	"testing"

	"github.com/flushproof/flushproof/model/iowq"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestHarnessIOWQ: io_prep_async_work() of io_uring/io_uring.c as the
// patch "io_uring: avoid hashing O_DIRECT writes if the filesystem
// doesn't need it" finds it (examples/iowq/iowq.c: two io-wq workers,
// each one unaligned O_DIRECT write into one unwritten block, the file
// system's direct write path and the bios as stubs), the patch itself
// applied to it, and the file system's flavours and model/iowq's 2011
// ext4 mutant as patches on the harness, against model/iowq's rows at
// its 2011-race bound (iowq.Race2011Config).
//
// Without the patch every write is hashed; with it an O_DIRECT write to
// a file system that sets FMODE_DIO_PARALLEL_WRITE (ext4, xfs) is not,
// and one to a file system without the flag still is: so the harness
// with the patch and noflag.patch is held to the hashed row.
//
// model/iowq has no memory model: each of the harness's SC and TSO rows
// is held to the same built-in row, and so is its LKMM row where the
// checker judges it. The harness's other rows are the checker's limits,
// asserted as such (ERROR rows, never verdicts):
//   - Relaxed has no spinlock, acquire, release or unordered RMW.
//
// LKMM answers the rw-semaphore's upgrade, up_read()'s release RMW and
// then down_write()'s acquire cmpxchg of the same count: the cmpxchg
// reads up_read()'s store while both are left pending (ahead.go's
// forward), and a failed pass of its retry loop is left out
// (markRetries). With the patch a reader also meets a writer; it is
// handed the lock by an acquire of the writer's release.
//
// The LKMM rows of the mutant with io-wq's asynchronous writes, and of
// the mutant unhashed with synchronous kiocbs, are neither: searches of
// millions of states (hashed async: 1.2 million, about 25 seconds here;
// the unhashed ones more than 2 million), left out.
//
// The xfs and noflag rows are off model/iowq's verdict table (it has them
// at its standard bound only): they are held to the row it builds for
// this bound, as TestExamplesIOWQ holds the xfs litmus files.
func TestHarnessIOWQ(t *testing.T) {
	const bound = " 2 workers, 2 writes (A: s0; B: s1), layout U, i_size 2"
	rows := func(submit, fs, completion string, models ...string) map[string]string {
		out := map[string]string{}
		for _, m := range append([]string{"SC", "TSO"}, models...) {
			out[m+" no-cache"] = "iowq " + submit + " " + fs + ", " + completion + bound
		}
		return out
	}
	relaxed := map[string]string{"Relaxed no-cache": "Relaxed does not support"}
	const (
		h      = "iowq/iowq.c"
		seed   = "0002-io_uring-avoid-hashing-O_DIRECT-writes.patch"
		mutant = "mutant-ext4-2011-shared-unwritten.patch"
		m2011  = "mutant-ext4-2011-shared-unwritten"
	)
	checkHarnesses(t, []harnessCase{
		{harness: h, rows: rows("hashed", "ext4", "async DIO", "LKMM"), limits: relaxed},
		{harness: h, patches: []string{seed}, rows: rows("unhashed", "ext4", "async DIO", "LKMM"), limits: relaxed},
		{harness: h, patches: []string{mutant}, rows: rows("hashed", m2011, "async DIO"), limits: relaxed},
		{harness: h, patches: []string{seed, mutant}, rows: rows("unhashed", m2011, "async DIO"), limits: relaxed},
		// The false-positive control: with synchronous kiocbs hashing
		// hides the race; unhashed, it does not.
		{harness: h, patches: []string{mutant, "hashed-" + m2011 + "-sync.patch"}, rows: rows("hashed", m2011, "sync DIO", "LKMM"), limits: relaxed},
		{harness: h, patches: []string{seed, mutant, "unhashed-" + m2011 + "-sync.patch"}, rows: rows("unhashed", m2011, "sync DIO"), limits: relaxed},
	})

	offTable := func(submit iowq.Submit, fs iowq.FS, models ...string) map[string]verdict.Row {
		r := iowq.Race2011Config(submit, fs, false).Row()
		out := map[string]verdict.Row{}
		for _, m := range append([]string{"SC", "TSO"}, models...) {
			out[m+" no-cache"] = r
		}
		return out
	}
	checkHarnessesOffTable(t, []offTableHarnessCase{
		{harness: h, patches: []string{"xfs.patch"}, rows: offTable(iowq.Hashed, iowq.XFS, "LKMM"), limits: relaxed},
		{harness: h, patches: []string{seed, "xfs.patch"}, rows: offTable(iowq.Unhashed, iowq.XFS, "LKMM"), limits: relaxed},
		{harness: h, patches: []string{"noflag.patch"}, rows: offTable(iowq.Hashed, iowq.NoFlag, "LKMM"), limits: relaxed},
		{harness: h, patches: []string{seed, "noflag.patch"}, rows: offTable(iowq.Hashed, iowq.NoFlag, "LKMM"), limits: relaxed},
	})
}

// offTableHarnessCase is a harnessCase whose rows are held to built-in
// rows that are not in the verdict table (model.Rows) but that the model
// builds for a configuration of its own.
type offTableHarnessCase struct {
	harness string
	patches []string
	rows    map[string]verdict.Row
	limits  map[string]string
}

// checkHarnessesOffTable is checkHarnesses for offTableHarnessCase.
func checkHarnessesOffTable(t *testing.T, cases []offTableHarnessCase) {
	for _, c := range cases {
		checkHarness(t, c.harness, c.patches, c.rows, c.limits)
	}
}

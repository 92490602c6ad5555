package props

import (
	"testing"

	"github.com/flushproof/flushproof/model/iowq"
	"github.com/flushproof/flushproof/model/verdict"
)

// TestExamplesIOWQ: the io-wq files (examples/litmus/iowq: hashed work on
// ext4 and on xfs, each a base file, the other variants patches of one of
// them) against model/iowq's rows at its smallest bound, the 2011 race:
// one unwritten block of two sectors, worker A writes s0, worker B s1
// (iowq.Race2011Config). model/iowq has no memory model: a file's SC and
// TSO rows both map to the same built-in row. Under Relaxed the language
// lacks the primitives (spinlock, acquire, release, unordered RMW); under
// LKMM the checker refuses the rw-semaphore's unordered loads before
// later stores, or, for the mutant, searches millions of states: the
// files' headers say more.
//
// The xfs variants have no row in the verdict table (which has xfs at its
// standard bound only): they are held to the row model/iowq builds for
// the same bound, iowq.Race2011Config(..., iowq.XFS, false).Row().
func TestExamplesIOWQ(t *testing.T) {
	const bound = " 2 workers, 2 writes (A: s0; B: s1), layout U, i_size 2"
	rows := func(submit, fs, completion string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO"} {
			out[m+" no-cache"] = "iowq " + submit + " " + fs + ", " + completion + bound
		}
		return out
	}
	const mutant = "mutant-ext4-2011-shared-unwritten"
	const ext4, xfs = "iowq/iowq-hashed-ext4.litmus", "iowq/iowq-hashed-xfs.litmus"
	patch := func(p string) []string { return []string{p + ".patch"} }
	checkExamples(t, []exampleCase{
		{file: ext4, rows: rows("hashed", "ext4", "async DIO"), quick: true},
		{file: ext4, patches: patch("unhashed-ext4"), rows: rows("unhashed", "ext4", "async DIO"), quick: true},
		{file: ext4, patches: patch("hashed-" + mutant), rows: rows("hashed", mutant, "async DIO")},
		{file: ext4, patches: patch("unhashed-" + mutant), rows: rows("unhashed", mutant, "async DIO")},
		// The false-positive control: with synchronous completion hashing
		// hides the race.
		{file: ext4, patches: patch("hashed-" + mutant + "-sync"), rows: rows("hashed", mutant, "sync DIO"), quick: true},
		{file: ext4, patches: patch("unhashed-" + mutant + "-sync"), rows: rows("unhashed", mutant, "sync DIO")},
	})
	offTable := func(submit iowq.Submit) map[string]verdict.Row {
		r := iowq.Race2011Config(submit, iowq.XFS, false).Row()
		return map[string]verdict.Row{"SC no-cache": r, "TSO no-cache": r}
	}
	checkExamplesOffTable(t, xfs, nil, offTable(iowq.Hashed), true)
	checkExamplesOffTable(t, xfs, patch("unhashed-xfs"), offTable(iowq.Unhashed), true)
}

// checkExamplesOffTable is checkExamples for built-in rows that are not
// in the verdict table (model.Rows) but that the model builds for a
// configuration of its own.
func checkExamplesOffTable(t *testing.T, file string, patches []string, rows map[string]verdict.Row, quick bool) {
	if quick || *examplesAll {
		checkFile(t, file, patches, rows)
	}
}

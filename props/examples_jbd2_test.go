package props

import "testing"

// TestExamplesJBD2: the jbd2 commit's files (examples/litmus/jbd2: the
// barrier commit and the async_commit one, each variant a patch of one of
// them) against model/jbd2's rows (2 transactions x 2 journal blocks; EIO
// on writes and flushes, or none for async-commit-no-eio). The built-in
// rows have no memory model: the file's SC, TSO and LKMM rows all map to
// the same one. Each file is kjournald2's thread alone, its log writes
// asynchronous bios (submit_bio, bio_wait): a few hundred states.
func TestExamplesJBD2(t *testing.T) {
	const bound = " 2 transactions x 2 journal blocks"
	rows := func(variant, eio string, devices ...string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "LKMM"} {
			for _, d := range devices {
				out[m+" "+d] = "jbd2 " + variant + " " + d + bound + eio
			}
		}
		return out
	}
	all := []string{"cache+fua", "cache+emulated-fua", "no-cache"}
	cached := []string{"cache+fua", "cache+emulated-fua"}
	noCache := []string{"no-cache"}
	const barrier, async = "jbd2/jbd2-barrier.litmus", "jbd2/jbd2-async-commit-cache.litmus"
	patch := func(p string) []string { return []string{p + ".patch"} }
	checkExamples(t, []exampleCase{
		{file: barrier, rows: rows("barrier", ", EIO", all...), quick: true},
		{file: barrier, patches: patch("nobarrier-cache"), rows: rows("nobarrier", ", EIO", cached...), quick: true},
		{file: barrier, patches: patch("nobarrier-no-cache"), rows: rows("nobarrier", ", EIO", noCache...), quick: true},
		{file: async, rows: rows("async-commit", ", EIO", cached...), quick: true},
		{file: async, patches: patch("async-commit-no-cache"), rows: rows("async-commit", ", EIO", noCache...), quick: true},
		{file: async, patches: patch("async-commit-no-eio"), rows: rows("async-commit", "", cached...), quick: true},
		{file: async, patches: patch("mutant-async-commit-no-checksum"), rows: rows("mutant-async-commit-no-checksum", ", EIO", all...), quick: true},
		{file: barrier, patches: patch("mutant-drop-preflush-cache"), rows: rows("mutant-drop-preflush", ", EIO", cached...), quick: true},
		{file: barrier, patches: patch("mutant-drop-preflush-no-cache"), rows: rows("mutant-drop-preflush", ", EIO", noCache...), quick: true},
	})
}

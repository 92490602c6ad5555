package props

import "testing"

// TestExamplesODSync: the O_DSYNC seed protocol's files
// (examples/litmus/blkdev-odsync: the patched code, the baseline and the
// mutants as patches of it) against the state machine's
// rows at its first bound (2 tasks x 1 write x 2 blocks, EIO; the files'
// headers say what the language makes them leave out). The state machine
// has no memory model: a file's SC, TSO and LKMM rows all map to the same
// built-in row.
func TestExamplesODSync(t *testing.T) {
	const eio = "2 tasks x 1 write x 2 blocks, EIO"
	all := []string{"cache+fua", "cache+emulated-fua", "no-cache"}
	rows := func(variant, bound string, devices ...string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "LKMM"} {
			for _, d := range devices {
				out[m+" "+d] = "odsync " + variant + " " + d + " " + bound
			}
		}
		return out
	}
	const base = "blkdev-odsync/blkdev-odsync-patched.litmus"
	patch := func(p string) []string { return []string{p + ".patch"} }
	checkExamples(t, []exampleCase{
		{file: base, patches: patch("baseline"), rows: rows("baseline", eio, all...)},
		{file: base, rows: rows("patched", eio, all...)},
		{file: base, patches: patch("mutant-skip-sync-on-fallback"), rows: rows("mutant-skip-sync-on-fallback", eio, all...), quick: true},
		// The false-positive control: without a cache and without EIO the
		// mutant loses nothing (its no-cache row with EIO is UNSAFE).
		{file: base, patches: patch("mutant-skip-sync-on-fallback-nocache-noeio"),
			rows: rows("mutant-skip-sync-on-fallback", "2 tasks x 1 write x 2 blocks", "no-cache"), quick: true},
		{file: base, patches: patch("mutant-drop-fua"), rows: rows("mutant-drop-fua", eio, "cache+fua", "cache+emulated-fua"), quick: true},
		// The false-positive control: without a cache a completed write is
		// durable, FUA or not.
		{file: base, patches: patch("mutant-drop-fua-nocache"), rows: rows("mutant-drop-fua", eio, "no-cache")},
		{file: base, patches: patch("mutant-fallback-dirty"), rows: rows("mutant-fallback-dirty", eio, all...), quick: true},
	})
}

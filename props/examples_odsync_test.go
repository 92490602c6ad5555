package props

import "testing"

// TestExamplesODSync: the O_DSYNC seed protocol's files
// (examples/litmus/blkdev-odsync-*.litmus) against the state machine's
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
	checkExamples(t, []exampleCase{
		{file: "blkdev-odsync-baseline.litmus", rows: rows("baseline", eio, all...)},
		{file: "blkdev-odsync-patched.litmus", rows: rows("patched", eio, all...)},
		{file: "blkdev-odsync-mutant-skip-sync-on-fallback.litmus", rows: rows("mutant-skip-sync-on-fallback", eio, all...), quick: true},
		// The false-positive control: without a cache and without EIO the
		// mutant loses nothing (its no-cache row with EIO is UNSAFE).
		{file: "blkdev-odsync-mutant-skip-sync-on-fallback-nocache-noeio.litmus",
			rows: rows("mutant-skip-sync-on-fallback", "2 tasks x 1 write x 2 blocks", "no-cache"), quick: true},
		{file: "blkdev-odsync-mutant-drop-fua.litmus", rows: rows("mutant-drop-fua", eio, "cache+fua", "cache+emulated-fua"), quick: true},
		// The false-positive control: without a cache a completed write is
		// durable, FUA or not.
		{file: "blkdev-odsync-mutant-drop-fua-nocache.litmus", rows: rows("mutant-drop-fua", eio, "no-cache")},
		{file: "blkdev-odsync-mutant-fallback-dirty.litmus", rows: rows("mutant-fallback-dirty", eio, all...), quick: true},
	})
}

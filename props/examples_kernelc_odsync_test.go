package props

import "testing"

// TestHarnessODSync: blkdev_write_iter() of block/fops.c as the patch
// "block: skip redundant flush for O_DSYNC direct writes" finds it, the
// patch itself applied to it, and each mutant as a patch after it,
// against the state machine's rows at its first bound (2 tasks x 1 write
// x 2 blocks, EIO; the -nocache-noeio control without EIO), under SC, TSO
// and LKMM, on every device configuration the built-in row has. The
// state machine has no memory model: a harness's SC, TSO and LKMM rows
// all map to the same built-in row.
func TestHarnessODSync(t *testing.T) {
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
	const seed = "0001-block-skip-redundant-flush.patch"
	h := "blkdev-odsync/blkdev-odsync.c"
	checkHarnesses(t, []harnessCase{
		{harness: h, rows: rows("baseline", eio, all...)},
		{harness: h, patches: []string{seed}, rows: rows("patched", eio, all...)},
		{harness: h, patches: []string{seed, "mutant-skip-sync-on-fallback.patch"},
			rows: rows("mutant-skip-sync-on-fallback", eio, all...)},
		// The false-positive control: without a cache and without EIO the
		// mutant loses nothing (its no-cache row with EIO is UNSAFE).
		{harness: h, patches: []string{seed, "mutant-skip-sync-on-fallback-nocache-noeio.patch"},
			rows: rows("mutant-skip-sync-on-fallback", "2 tasks x 1 write x 2 blocks", "no-cache")},
		{harness: h, patches: []string{seed, "mutant-drop-fua.patch"},
			rows: rows("mutant-drop-fua", eio, "cache+fua", "cache+emulated-fua")},
		// The false-positive control: without a cache a completed write is
		// durable, FUA or not.
		{harness: h, patches: []string{seed, "mutant-drop-fua-nocache.patch"},
			rows: rows("mutant-drop-fua", eio, "no-cache")},
		{harness: h, patches: []string{seed, "mutant-fallback-dirty.patch"},
			rows: rows("mutant-fallback-dirty", eio, all...)},
	})
}

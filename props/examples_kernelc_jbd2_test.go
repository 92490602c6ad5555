package props

import "testing"

// TestHarnessJBD2: the jbd2 journal commit (Linux v6.18.5,
// fs/jbd2/commit.c) and its recovery as a kernel C harness
// (examples/jbd2-commit/jbd2-commit.c): kjournald2 commits two
// transactions of a descriptor, a metadata copy and a commit block,
// daemons send the journal blocks' bios, and recovery() replays the log
// and asserts that no transaction is replayed in part and every one
// whose commit returned is replayed. The default mount (barrier) and
// each of docs/jbd2.md's variants as a patch, against model/jbd2's rows
// at their bound (2 transactions x 2 journal blocks, EIO on writes and
// flushes, or none for async-commit-no-eio), on each device
// configuration of the variant.
//
// The built-in rows have no memory model: the harness's SC, TSO and LKMM
// rows all map to the same one. Under Relaxed the harness's rows are the
// checker's limit, asserted as such (ERROR rows, never verdicts):
// Relaxed has no barrier, and set_buffer_uptodate()
// (include/linux/buffer_head.h) has an smp_mb__before_atomic().
func TestHarnessJBD2(t *testing.T) {
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
	limits := func(devices ...string) map[string]string {
		out := map[string]string{}
		for _, d := range devices {
			out["Relaxed "+d] = "Relaxed does not support smp_mb__before_atomic"
		}
		return out
	}
	all := []string{"cache+fua", "cache+emulated-fua", "no-cache"}
	cached := []string{"cache+fua", "cache+emulated-fua"}
	h := "jbd2-commit/jbd2-commit.c"
	checkHarnesses(t, []harnessCase{
		{harness: h, rows: rows("barrier", ", EIO", all...), limits: limits(all...)},
		{harness: h, patches: []string{"nobarrier.patch"}, rows: rows("nobarrier", ", EIO", all...), limits: limits(all...)},
		{harness: h, patches: []string{"mutant-drop-preflush.patch"}, rows: rows("mutant-drop-preflush", ", EIO", all...), limits: limits(all...)},
		{harness: h, patches: []string{"async-commit.patch"}, rows: rows("async-commit", ", EIO", all...), limits: limits(all...)},
		{harness: h, patches: []string{"async-commit.patch", "async-commit-no-eio.patch"}, rows: rows("async-commit", "", cached...), limits: limits(cached...)},
		{harness: h, patches: []string{"mutant-async-commit-no-checksum.patch"}, rows: rows("mutant-async-commit-no-checksum", ", EIO", all...), limits: limits(all...)},
	})
}

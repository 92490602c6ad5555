package props

import "testing"

// TestHarnessDIOCount: the direct writes and truncate of ext4 (v4.6) as
// the patch "ext4: Add DIO_SKIP_DIO_COUNT flag to dax_do_io()" finds
// them (examples/ext4-diocount/ext4-diocount.c), the patch itself
// applied to them, and model/diocount's benign variant and mutants as
// patches after it, against the state machine's rows with a DAX writer
// and an AIO writer ("dax+aio-dio", 2 writers x 1 I/O, truncate,
// overwrite).
//
// Under SC, TSO and LKMM each verdict is the built-in row's. Under LKMM
// ext4_ext_direct_IO() reads i_size, returns early inside an if, and
// then raises i_dio_count, an unordered RMW after the if, not in an arm,
// and the inode's i_mutex is released with loads pending, so threads run
// ahead of loads past both (model/durable's ahead.go): the baseline
// takes 597,956 states against SC's 1,993. Relaxed has no lock, and
// i_mutex is one: an ERROR row.
func TestHarnessDIOCount(t *testing.T) {
	const bound = " 2 writers x 1 I/O, truncate, overwrite"
	rows := func(variant string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "LKMM"} {
			out[m+" no-cache"] = "diocount " + variant + " dax+aio-dio/" + m + bound
		}
		return out
	}
	limits := map[string]string{
		"Relaxed no-cache": "Relaxed does not support spin_lock",
	}
	const seed = "0001-ext4-add-DIO_SKIP_DIO_COUNT-flag-to-dax_do_io.patch"
	h := "ext4-diocount/ext4-diocount.c"
	checkHarnesses(t, []harnessCase{
		{harness: h, rows: rows("baseline"), limits: limits},
		{harness: h, patches: []string{seed}, rows: rows("patched"), limits: limits},
		{harness: h, patches: []string{seed, "benign-skip-sync.patch"}, rows: rows("benign-skip-sync"), limits: limits},
		{harness: h, patches: []string{seed, "mutant-skip-async.patch"}, rows: rows("mutant-skip-async"), limits: limits},
		{harness: h, patches: []string{seed, "mutant-begin-after-unlock.patch"}, rows: rows("mutant-begin-after-unlock"), limits: limits},
	})
}

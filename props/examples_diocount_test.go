package props

import "testing"

// TestExamplesDIOCount: the DIO-count files (examples/litmus/diocount: a
// base file per I/O kind, each other variant a patch of its kind's)
// against model/diocount's rows at "2 writers x 1 I/O, truncate,
// overwrite". A file's row "SC no-cache" is
// held to the built-in row of the same variant, I/O kinds and memory
// model ("diocount patched dax/SC ..."). The files are checked on a
// device without a volatile cache only (their Device line): the crash at
// their end only reads the disk, and the built-in rows have no device.
//
// What is left out, and why (each file's header says more):
//   - Relaxed rows: the language has no spinlock, acquire, release or
//     unordered read-modify-write under Relaxed.
//
// A variant whose code for an I/O kind is another's has no file or patch
// of its own: the patch changes the DAX path only, so patched's synchronous and
// asynchronous block DIO are baseline's code; benign-skip-sync and
// mutant-skip-async skip the DAX count as the patch does. Those built-in
// rows are held to the file whose code they run.
func TestExamplesDIOCount(t *testing.T) {
	const bound = " 2 writers x 1 I/O, truncate, overwrite"
	rows := func(variant, kinds string, models ...string) map[string]string {
		out := map[string]string{}
		for _, m := range models {
			out[m+" no-cache"] = "diocount " + variant + " " + kinds + "/" + m + bound
		}
		return out
	}
	all := []string{"SC", "TSO", "LKMM"}
	// A base file per I/O kind: the kinds' code differs beyond a few
	// lines; each variant is a patch of its kind's.
	const (
		dax    = "diocount/diocount-patched-dax.litmus"
		sync   = "diocount/diocount-baseline-sync-dio.litmus"
		aio    = "diocount/diocount-baseline-aio-dio.litmus"
		daxAIO = "diocount/diocount-patched-dax+aio-dio.litmus"
	)
	patch := func(p string) []string { return []string{p + ".patch"} }
	checkExamples(t, []exampleCase{
		// DAX writers
		{file: dax, patches: patch("baseline-dax"), rows: rows("baseline", "dax", all...), quick: true},
		{file: dax, rows: rows("patched", "dax", all...), quick: true},
		{file: dax, rows: rows("benign-skip-sync", "dax", all...)},
		{file: dax, rows: rows("mutant-skip-async", "dax", all...)},
		{file: dax, patches: patch("mutant-begin-after-unlock-dax"), rows: rows("mutant-begin-after-unlock", "dax", all...)},
		// synchronous block DIO
		{file: sync, rows: rows("baseline", "sync-dio", all...), quick: true},
		{file: sync, rows: rows("patched", "sync-dio", all...)},
		{file: sync, rows: rows("mutant-skip-async", "sync-dio", all...)},
		{file: sync, patches: patch("benign-skip-sync-sync-dio"), rows: rows("benign-skip-sync", "sync-dio", all...), quick: true},
		{file: sync, patches: patch("mutant-begin-after-unlock-sync-dio"), rows: rows("mutant-begin-after-unlock", "sync-dio", all...)},
		// asynchronous block DIO
		{file: aio, rows: rows("baseline", "aio-dio", all...)},
		{file: aio, rows: rows("patched", "aio-dio", all...)},
		{file: aio, rows: rows("benign-skip-sync", "aio-dio", all...)},
		{file: aio, patches: patch("mutant-skip-async-aio-dio"), rows: rows("mutant-skip-async", "aio-dio", all...), quick: true},
		{file: aio, patches: patch("mutant-begin-after-unlock-aio-dio"), rows: rows("mutant-begin-after-unlock", "aio-dio", all...)},
		// a DAX writer next to an AIO writer
		{file: daxAIO, patches: patch("baseline-dax+aio-dio"), rows: rows("baseline", "dax+aio-dio", all...)},
		{file: daxAIO, rows: rows("patched", "dax+aio-dio", all...)},
		{file: daxAIO, rows: rows("benign-skip-sync", "dax+aio-dio", all...)},
		{file: daxAIO, patches: patch("mutant-skip-async-dax+aio-dio"), rows: rows("mutant-skip-async", "dax+aio-dio", all...)},
		{file: daxAIO, patches: patch("mutant-begin-after-unlock-dax+aio-dio"), rows: rows("mutant-begin-after-unlock", "dax+aio-dio", all...)},
	})
}

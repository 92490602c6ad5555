package props

import "testing"

// TestExamplesFlushSeq: the flush sequence's files
// (examples/litmus/xfs-flushseq: the patched code, its variants as
// patches of it, and the baseline and the mutant inc_return_relaxed as
// files of their own) against the state machine's rows (2 tasks x 2
// fsyncs, flush EIO), under every memory model.
func TestExamplesFlushSeq(t *testing.T) {
	rows := func(variant string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "Relaxed", "LKMM"} {
			out[m+" cache+fua"] = "xfs-flushseq " + variant + " " + m + " 2 tasks x 2 fsyncs, flush EIO"
		}
		return out
	}
	const base = "xfs-flushseq/xfs-flushseq-patched.litmus"
	patch := func(p string) []string { return []string{p + ".patch"} }
	checkExamples(t, []exampleCase{
		{file: "xfs-flushseq/xfs-flushseq-baseline.litmus", rows: rows("baseline"), quick: true},
		{file: base, rows: rows("patched")},
		{file: base, patches: patch("patched-3x2"), rows: map[string]string{
			"SC cache+fua":   "xfs-flushseq patched SC 3 tasks x 2 fsyncs",
			"TSO cache+fua":  "xfs-flushseq patched TSO 3 tasks x 2 fsyncs",
			"LKMM cache+fua": "xfs-flushseq patched LKMM 3 tasks x 2 fsyncs",
		}},
		{file: base, patches: patch("benign-plain-store-completed"), rows: rows("benign-plain-store-completed")},
		{file: base, patches: patch("mutant-read-before-writeback"), rows: rows("mutant-read-before-writeback"), quick: true},
		{file: base, patches: patch("mutant-no-smp_mb"), rows: rows("mutant-no-smp_mb")},
		{file: base, patches: patch("mutant-ge"), rows: rows("mutant->="), quick: true},
		{file: base, patches: patch("mutant-advance-on-failed-flush"), rows: rows("mutant-advance-on-failed-flush"), quick: true},
		// Relaxed has no unordered RMW: the file's row there is refused.
		// (A file of its own: its flush path moves into an else arm.)
		{file: "xfs-flushseq/xfs-flushseq-mutant-inc_return_relaxed.litmus", rows: without(rows("mutant-inc_return_relaxed"), "Relaxed cache+fua")},
	})
}

// without returns rows less the keys named.
func without(rows map[string]string, keys ...string) map[string]string {
	for _, k := range keys {
		delete(rows, k)
	}
	return rows
}

package props

import "testing"

// TestExamplesFlushSeq: the flush sequence's files against the state
// machine's rows (2 tasks x 2 fsyncs, flush EIO), under every memory
// model.
func TestExamplesFlushSeq(t *testing.T) {
	rows := func(variant string) map[string]string {
		out := map[string]string{}
		for _, m := range []string{"SC", "TSO", "Relaxed", "LKMM"} {
			out[m+" cache+fua"] = "xfs-flushseq " + variant + " " + m + " 2 tasks x 2 fsyncs, flush EIO"
		}
		return out
	}
	checkExamples(t, []exampleCase{
		{file: "xfs-flushseq-baseline.litmus", rows: rows("baseline"), quick: true},
		{file: "xfs-flushseq-patched.litmus", rows: rows("patched")},
		{file: "xfs-flushseq-patched-3x2.litmus", rows: map[string]string{
			"SC cache+fua":   "xfs-flushseq patched SC 3 tasks x 2 fsyncs",
			"TSO cache+fua":  "xfs-flushseq patched TSO 3 tasks x 2 fsyncs",
			"LKMM cache+fua": "xfs-flushseq patched LKMM 3 tasks x 2 fsyncs",
		}},
		{file: "xfs-flushseq-benign-plain-store-completed.litmus", rows: rows("benign-plain-store-completed")},
		{file: "xfs-flushseq-mutant-read-before-writeback.litmus", rows: rows("mutant-read-before-writeback"), quick: true},
		{file: "xfs-flushseq-mutant-no-smp_mb.litmus", rows: rows("mutant-no-smp_mb")},
		{file: "xfs-flushseq-mutant-ge.litmus", rows: rows("mutant->="), quick: true},
		{file: "xfs-flushseq-mutant-advance-on-failed-flush.litmus", rows: rows("mutant-advance-on-failed-flush"), quick: true},
		// Relaxed has no unordered RMW: the file's row there is refused.
		{file: "xfs-flushseq-mutant-inc_return_relaxed.litmus", rows: without(rows("mutant-inc_return_relaxed"), "Relaxed cache+fua")},
	})
}

// without returns rows less the keys named.
func without(rows map[string]string, keys ...string) map[string]string {
	for _, k := range keys {
		delete(rows, k)
	}
	return rows
}

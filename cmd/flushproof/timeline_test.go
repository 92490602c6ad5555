package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckTimelineFits: the counterexample of the xfs harness with the
// flush-skipping patch and its mutant without smp_mb, under LKMM (a long
// one, of kernel C lowered with long register names), reads in a
// terminal of 160 columns: every line of its timeline and of its message
// fits, only the threads and the device that take steps have columns,
// and the steps show their registers' values and what the flush covers.
func TestCheckTimelineFits(t *testing.T) {
	const dir = "../../examples/xfs-flushseq/"
	var out, errb bytes.Buffer
	code := run([]string{"check", "-q", "-model", "lkmm", "-patch", dir + "0002-xfs-skip-the-fsync-flush.patch",
		"-patch", dir + "mutant-no-smp_mb.patch", dir + "xfs-flushseq.c"}, &out, &errb)
	require.Equal(t, exitOK, code, "stderr: %s", errb.String())
	_, after, ok := strings.Cut(out.String(), "shortest counterexample")
	require.True(t, ok, out.String())
	tl, _, _ := strings.Cut(after[strings.Index(after, "\n")+1:], "\n\n")
	lines := strings.Split(tl, "\n")
	require.Greater(t, len(lines), 20)
	assert.Regexp(t, `^  step \| P0 +\| P1 +\| device$`, lines[0], "no memory column: the memory takes no step")
	for i, l := range lines {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 160, "line %d: %q", i+1, l)
	}
	for _, w := range []string{
		"submit_bio_wait(bio.bi_iter.bi_sector=0,",
		"bio.bi_flushproof_value=1, 0): W1 submitted",
		"blkdev_issue_flush(): F1 submitted, covers W1",
		"F1 complete: W1 durable",
		"assert_durable(b=1, round=1): FAILS",
	} {
		assert.Contains(t, tl, w)
	}
}

package durable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// judgedRows parses src and searches every row of it with the obligations
// counted, with and without reductions.
func judgedRows(t *testing.T, src string) (reduced, full []explore.Judgment, safe bool) {
	t.Helper()
	tt, err := litmus.Parse("judged.litmus", []byte(src))
	require.NoError(t, err)
	d, err := Read("judged.litmus", tt)
	require.NoError(t, err)
	cfg := Config{Model: memory.SC, Device: d.Devices[0], Failures: d.Failures, Crash: d.Crash}
	r, err := d.Search(cfg, explore.Options{Obligations: true, Liveness: true})
	require.NoError(t, err)
	require.NoError(t, r.JudgeErr)
	u, err := d.Search(cfg, explore.Options{Obligations: true, Liveness: true, NoReduce: true})
	require.NoError(t, err)
	require.NoError(t, u.JudgeErr)
	require.Equal(t, r.Violation == nil, u.Violation == nil)
	return r.Judged, u.Judged, r.Exhausted
}

// TestJudgedUnreachableAssert: an assertion under a condition no run makes
// true is never judged, and the file is SAFE only vacuously for it; the
// other obligations are judged. The search without reductions (every
// local step a state of its own) finds the same.
func TestJudgedUnreachableAssert(t *testing.T) {
	src := `C unreachable
(*
 * Crash: end
 * Device: no-cache
 *)
{}
P0(int *x)
{
	int r;
	int e;
	r = READ_ONCE(*x);
	if (r == 2)
		assert(r == 3);
	e = submit_bio_wait(0, 1, 0);
	if (e == 0)
		assert_durable(0, 1);
}
P1(int *x)
{
	WRITE_ONCE(*x, 1);
}
forall (blk0=1)
`
	reduced, full, safe := judgedRows(t, src)
	require.True(t, safe)
	require.Len(t, reduced, 3)
	assert.Equal(t, "assert(r == 3) (P0 line 13)", reduced[0].Name)
	assert.Equal(t, []string{reduced[0].Name}, explore.Vacuous(reduced), "only the assertion under r == 2 is never judged: %v", reduced)
	assert.Equal(t, explore.Vacuous(reduced), explore.Vacuous(full), "without reductions: %v", full)
	assert.Equal(t, "the final condition (line 22)", reduced[2].Name)
}

// TestJudgedInAChain: an assertion that only a local chain runs (after a
// load that read 1, in a branch whose register is then overwritten, so
// that the runs that skip it reach the same states) is judged: the count
// comes from the steps out of each state, not from the path that first
// reached it.
func TestJudgedInAChain(t *testing.T) {
	src := `C chain
(*
 * Crash: none
 * Device: no-cache
 *)
{}
P0(int *x, int *y)
{
	int r;
	r = READ_ONCE(*x);
	if (r == 1)
		assert(r == 1);
	r = 0;
	WRITE_ONCE(*y, 1);
}
P1(int *x)
{
	WRITE_ONCE(*x, 1);
}
forall (y=1)
`
	reduced, full, safe := judgedRows(t, src)
	require.True(t, safe)
	require.Len(t, reduced, 2)
	assert.NotZero(t, reduced[0].States, "%v", reduced)
	assert.NotZero(t, full[0].States, "%v", full)
	assert.Empty(t, explore.Vacuous(reduced))
}

// TestJudgedSymmetricThreads: the checks of interchangeable threads at one
// instruction are one obligation, named after every member's line.
func TestJudgedSymmetricThreads(t *testing.T) {
	sys := durSys(t, "testdata/durable/async-bios-sym.litmus", memory.SC)
	require.Len(t, sys.sym, 1)
	for _, name := range sys.Obligations() {
		if name[:6] == "assert" {
			assert.Contains(t, name, "P0 line")
			assert.Contains(t, name, "P1 line")
		}
	}
}

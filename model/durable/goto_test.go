package durable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// withGotos parses src and, since the parser reads neither, turns every
// assignment "goto_L = 0;" into the statement goto L and "label_L = 0;"
// into the label L, at the assignment's line and column, as the C front
// end builds them.
func withGotos(t *testing.T, file, src string) *litmus.Test {
	t.Helper()
	tt, err := litmus.Parse(file, []byte(src))
	require.NoError(t, err)
	var fix func(body []litmus.Stmt)
	fix = func(body []litmus.Stmt) {
		for i := range body {
			s := &body[i]
			switch {
			case s.Assign != nil && strings.HasPrefix(s.Assign.Reg, "goto_"):
				*s = litmus.Stmt{Goto: strings.TrimPrefix(s.Assign.Reg, "goto_"), Line: s.Line, Col: s.Col}
			case s.Assign != nil && strings.HasPrefix(s.Assign.Reg, "label_"):
				*s = litmus.Stmt{Label: strings.TrimPrefix(s.Assign.Reg, "label_"), Line: s.Line, Col: s.Col}
			case s.If != nil:
				fix(s.If.Then)
				fix(s.If.Else)
			case s.Loop != nil:
				fix(s.Loop.Body)
				fix(s.Loop.Post)
			}
		}
	}
	for ti := range tt.Threads {
		fix(tt.Threads[ti].Body)
	}
	return tt
}

// searchFile reads tt's header and searches it under m on cache+fua.
func searchFile(t *testing.T, tt *litmus.Test, m memory.Model) (*explore.Result[State], error) {
	t.Helper()
	d, err := Read(tt.File, tt)
	if err != nil {
		return nil, err
	}
	dev, err := spec.ParseConfig("cache+fua")
	require.NoError(t, err)
	return d.Search(Config{Model: m, Device: dev, Failures: d.Failures, Crash: d.Crash}, explore.Options{Liveness: true})
}

// gotoHeader starts the goto tests' files: one thread, no final
// condition (the obligations are the assertions).
const gotoHeader = `C %s
(*
 * Crash: none
 * Device: cache+fua
 *)
{}
P0()
{
	int e;
	int r;
	int i = 0;
	int goto_done;
	int goto_skip;
	int goto_again;
	int goto_inside;
	int label_done;
	int label_skip;
	int label_again;
	int label_inside;
`

// TestGotoVerdicts: gotos forward out of a loop, backward into a loop of
// their own, and from outside a loop to a label inside it, each in a
// SAFE file and an UNSAFE one whose counterexample runs the goto. A goto
// that went elsewhere (the next statement, the thread's start, a
// position of an earlier pass of a loop) turns one of each pair.
func TestGotoVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		safe bool
		// via: a step of the counterexample (UNSAFE only).
		via string
	}{
		{"out of a loop", `
	while (1) {
		e = submit_bio_wait(i, 1, 0);
		i = i + 1;
		if (i == 2)
			goto_done = 0;
	}
	label_done = 0;
	e = blkdev_issue_flush(bdev);
	label_skip = 0;
	assert_durable(0, 1);
	assert_durable(1, 1);
}
`, true, ""},
		{"out of a loop, over the flush", `
	while (1) {
		e = submit_bio_wait(i, 1, 0);
		i = i + 1;
		if (i == 2)
			goto_skip = 0;
	}
	label_done = 0;
	e = blkdev_issue_flush(bdev);
	label_skip = 0;
	assert_durable(0, 1);
	assert_durable(1, 1);
}
`, false, "goto skip"},
		{"backward", `
	label_again = 0;
	e = submit_bio_wait(i, 1, 0);
	i = i + 1;
	if (i < 2)
		goto_again = 0;
	e = blkdev_issue_flush(bdev);
	assert_durable(0, 1);
	assert_durable(1, 1);
}
`, true, ""},
		{"backward, flushed in the first round only", `
	label_again = 0;
	e = submit_bio_wait(i, 1, 0);
	if (i == 0)
		e = blkdev_issue_flush(bdev);
	i = i + 1;
	if (i < 2)
		goto_again = 0;
	assert_durable(0, 1);
	assert_durable(1, 1);
}
`, false, "goto again"},
		{"into a loop", `
	e = blkdev_issue_flush(bdev);
	goto_inside = 0;
	while (i < 2) {
		e = submit_bio_wait(i, 1, 0);
		label_inside = 0;
		i = i + 1;
	}
	e = blkdev_issue_flush(bdev);
	assert_durable(1, 1);
	r = read_block(0);
	assert(r == 0);
}
`, true, ""},
		{"into a loop, past the write it skips", `
	e = blkdev_issue_flush(bdev);
	goto_inside = 0;
	while (i < 2) {
		e = submit_bio_wait(i, 1, 0);
		label_inside = 0;
		i = i + 1;
	}
	e = blkdev_issue_flush(bdev);
	assert_durable(0, 1);
}
`, false, "goto inside"},
	} {
		for _, m := range []memory.Model{memory.SC, memory.LKMM} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, m), func(t *testing.T) {
				tt := withGotos(t, "goto.litmus", fmt.Sprintf(gotoHeader, "goto")+tc.body)
				r, err := searchFile(t, tt, m)
				require.NoError(t, err)
				if tc.safe {
					require.Nil(t, r.Violation, "%v", r.Violation)
					assert.True(t, r.Exhausted)
					return
				}
				require.NotNil(t, r.Violation)
				assert.Equal(t, explore.Safety, r.Violation.Kind, "%v", r.Violation)
				assert.Contains(t, r.Violation.Timeline(), tc.via)
			})
		}
	}
}

// TestGotoErrors: a goto to a label the thread does not define, a label
// defined twice, and a label of another thread are errors at the
// statement (file, line, column); a loop of gotos that never touches
// memory or the device is a fault, not a search that hangs.
func TestGotoErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"undefined", `
	int goto_dnoe;
	e = submit_bio_wait(0, 1, 0);
	goto_dnoe = 0;
	label_done = 0;
}
`, "goto.litmus:23:2: goto dnoe: P0 has no label dnoe (did you mean done?)"},
		{"twice", `
	label_done = 0;
	e = submit_bio_wait(0, 1, 0);
	if (e == 0) {
		label_done = 0;
	}
}
`, "goto.litmus:24:3: label done defined twice in P0 (first at line 21)"},
		{"another thread's", `
	label_done = 0;
}
P1()
{
	int goto_done;
	assert(1);
	goto_done = 0;
}
`, "goto.litmus:27:2: goto done: P1 has no label done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt := withGotos(t, "goto.litmus", fmt.Sprintf(gotoHeader, "goto")+tc.body)
			_, err := Read("goto.litmus", tt)
			require.Error(t, err)
			var pe *litmus.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	t.Run("local loop", func(t *testing.T) {
		tt := withGotos(t, "goto.litmus", fmt.Sprintf(gotoHeader, "goto")+`
	assert(1);
	label_again = 0;
	i = i + 1;
	i = i - 1;
	goto_again = 0;
}
`)
		_, err := searchFile(t, tt, memory.SC)
		require.Error(t, err)
		assert.Regexp(t, `^goto\.litmus:25:2: P0: 1000 steps in a row that touch neither memory nor the device: a loop that never ends`, err.Error())
	})
}

// TestGotoMemoryOnly: the memory models refuse a goto and a label, as
// every durability statement.
func TestGotoMemoryOnly(t *testing.T) {
	for _, kind := range []string{"goto", "label"} {
		tt := withGotos(t, "mo.litmus", `C mo
{}
P0(int *x)
{
	int r;
	int `+kind+`_l;
	r = READ_ONCE(*x);
	if (r == 1)
		`+kind+`_l = 0;
}
exists (x=1)
`)
		_, err := Operational{Model: memory.SC}.Outcomes(tt)
		require.Error(t, err, kind)
		assert.ErrorIs(t, err, litmus.ErrUnsupported)
		assert.Contains(t, err.Error(), "a durability statement", kind)
	}
}

// TestGotoDeps: a label is where gotos from anywhere meet, so the
// dependency analysis knows nothing there: a store after it depends on
// no load before it (through a register, an if's condition, or a loop's
// loads), until an smp_mb starts the loads afresh. Without the label
// the same store depends on x.
func TestGotoDeps(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		deps       bool // the store to y depends on x
	}{
		{"data", `
	r = READ_ONCE(*x);
	WRITE_ONCE(*y, r);
`, true},
		{"data through a label", `
	r = READ_ONCE(*x);
	label_l = 0;
	WRITE_ONCE(*y, r);
`, false},
		{"ctrl", `
	r = READ_ONCE(*x);
	if (r == 1) {
		WRITE_ONCE(*y, 1);
	}
`, true},
		{"ctrl, entered by a goto", `
	r = READ_ONCE(*x);
	goto_l = 0;
	if (r == 1) {
		label_l = 0;
		WRITE_ONCE(*y, 1);
	}
`, false},
		{"after an arm with a label, then smp_mb", `
	s = READ_ONCE(*x);
	if (s == 1) {
		label_l = 0;
		r = 1;
	}
	smp_mb();
	r = READ_ONCE(*x);
	WRITE_ONCE(*y, r);
`, true},
		{"a loop, smp_mb first", `
	while (s == 0) {
		smp_mb();
		r = READ_ONCE(*x);
		WRITE_ONCE(*y, r);
		s = r;
	}
`, true},
		{"a loop, smp_mb first, a label before the store", `
	while (s == 0) {
		smp_mb();
		r = READ_ONCE(*x);
		label_l = 0;
		WRITE_ONCE(*y, r);
		s = r;
	}
`, false},
		{"a loop with a label, then smp_mb", `
	while (s == 0) {
		label_l = 0;
		smp_mb();
		r = READ_ONCE(*x);
		WRITE_ONCE(*y, r);
		s = r;
	}
`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt := withGotos(t, "deps.litmus", `C deps
{}
P0(int *x, int *y)
{
	int r;
	int s;
	int goto_l;
	int label_l;
	assert(1);
`+tc.body+`
}
`)
			op, err := compileDurable(memory.LKMM, tt, "deps.litmus")
			require.NoError(t, err)
			var deps []memory.LocSet
			for _, in := range op.code[0] {
				if in.kind == iAccess && in.access.Op == litmus.OpWriteOnce {
					deps = append(deps, in.deps)
				}
			}
			require.Len(t, deps, 1)
			assert.Equal(t, tc.deps, deps[0]&(1<<0) != 0, "deps %b", deps[0])
		})
	}
}

// TestUnderBranchGoto: an instruction a goto may skip or repeat is under
// a branch (CondAssignLocal), as one in an arm of an if or in a loop;
// one every run reaches once is not.
func TestUnderBranchGoto(t *testing.T) {
	tt := withGotos(t, "ub.litmus", `C ub
{}
P0()
{
	int c;
	int a;
	int b;
	int d;
	int f;
	int g;
	int h;
	int goto_l;
	int label_l;
	int goto_m;
	int label_m;
	a = 1;
	if (c == 1)
		goto_l = 0;
	b = 1;
	label_l = 0;
	d = 1;
	if (c == 2) {
		g = 1;
	} else {
		h = 1;
	}
	label_m = 0;
	f = 1;
	if (c == 3)
		goto_m = 0;
	assert(1);
}
`)
	op, err := compileDurable(memory.SC, tt, "ub.litmus")
	require.NoError(t, err)
	code := op.code[0]
	want := map[string]bool{"a": false, "b": true, "d": false, "g": true, "h": true, "f": true}
	seen := 0
	for i, in := range code {
		if in.kind != iAssign {
			continue
		}
		w, ok := want[in.assign.Reg]
		require.True(t, ok, in.assign.Reg)
		assert.Equal(t, w, underBranch(code, i), "%s = %s", in.assign.Reg, litmus.CExpr(in.assign.Val))
		seen++
	}
	assert.Equal(t, len(want), seen)
}

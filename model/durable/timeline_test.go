package durable

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/model/verdict"
)

// timelineTexts is the counterexample of testdata/durable/timeline-texts.litmus
// under SC on cache+fua, and its system.
func timelineTexts(t *testing.T) (*durSystem, *explore.Violation) {
	t.Helper()
	sys := durSys(t, "testdata/durable/timeline-texts.litmus", memory.SC)
	r := explore.Explore[State](sys, explore.Options{Workers: 1})
	require.NotNil(t, r.Violation, "the file is a negative control")
	return sys, r.Violation
}

// TestTimelineTexts: a counterexample reads without the file at hand.
// Each step shows the values of the registers it reads, as they were
// before it (item 1); flags are symbolic, a register that holds them too
// (item 2); a flush's submission says which completed writes it covers,
// its completion which it makes durable, and a REQ_PREFLUSH write's
// preflush likewise (item 3); only the actors that take a step have a
// column, and no line is wider than explore.TimelineWidth (item 4).
func TestTimelineTexts(t *testing.T) {
	_, v := timelineTexts(t)
	tl := v.Timeline()
	for _, tc := range []struct {
		item string
		want []string // each in the timeline
		not  []string // none in it
	}{
		{"values of the registers a device call reads", []string{
			"L24: submit_bio_wait(b=1, v=5, 0): W1 submitted",
			"submit_bio_wait((b + 1)=2, v=5, fl=REQ_PREFLUSH|REQ_FUA): W2 submitted"}, []string{"submit_bio_wait(b, v, 0)"}},
		{"the command a wait ends", []string{"L24: e = submit_bio_wait() returns 0 (W1)", "L25: f = blkdev_issue_flush() returns 0 (F1)"}, nil},
		{"values of a condition's registers", []string{"L29: if ((e == 0) && (f == 0)) [e=0, f=0]: taken"}, nil},
		{"values of an assertion's arguments", []string{"L30: assert_durable(b=1, (v + 1)=6): FAILS"}, nil},
		{"flags symbolic", []string{
			"L26: fl = REQ_PREFLUSH|REQ_FUA (REQ_PREFLUSH|REQ_FUA)",
			"L28: submit_bio_wait(3, 1, REQ_PREFLUSH|REQ_FUA): W3 submitted"}, []string{"(2 | 1)", "(1 | 2)", "fl=3", "(3)"}},
		{"what a flush covers", []string{
			"L25: blkdev_issue_flush(): F1 submitted, covers W1",
			"F1 complete: W1 durable"}, nil},
		{"what a preflush covers, what a FUA write makes durable", []string{
			"W3 submitted, its preflush covers W1, W2",
			"W3 preflushed, data sent: W1, W2 durable",
			"W3 complete: W3 durable"}, nil},
		{"columns for the actors that take a step only", []string{"step | P0 "}, []string{"P1", "memory"}},
	} {
		t.Run(tc.item, func(t *testing.T) {
			for _, w := range tc.want {
				assert.Contains(t, tl, w)
			}
			for _, n := range tc.not {
				assert.NotContains(t, tl, n)
			}
		})
	}
	assert.True(t, strings.HasSuffix(strings.Split(tl, "\n")[0], "| device"), "P0 and the device: %s", strings.Split(tl, "\n")[0])
	assertFits(t, tl)
}

// assertFits checks that no line of a timeline is wider than
// explore.TimelineWidth.
func assertFits(t *testing.T, tl string) {
	t.Helper()
	for i, l := range strings.Split(tl, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), explore.TimelineWidth, "line %d: %q", i+1, l)
	}
}

// TestTimelineWraps: a file whose steps are wider than the timeline may
// be has them wrapped inside their columns: every line fits, and the
// words are all there, in order.
func TestTimelineWraps(t *testing.T) {
	long := strings.Repeat("x", 40)
	src := `C wide
(*
 * Expect: unsafe
 * Device: cache+fua
 *)
{ 0:b_` + long + `=1; 1:b_` + long + `=1; }
P0(int *x)
{
	int r_` + long + `;
	r_` + long + ` = READ_ONCE(*x);
	if (r_` + long + ` == 1 && b_` + long + ` == 1)
		assert_durable(b_` + long + `, 7);
}
P1(int *x)
{
	int e_` + long + `;
	e_` + long + ` = submit_bio_wait(b_` + long + `, b_` + long + ` + 6, 0);
	WRITE_ONCE(*x, e_` + long + ` + 1);
}
`
	tt, err := litmus.Parse("wide.litmus", []byte(src))
	require.NoError(t, err)
	d, err := Read("wide.litmus", tt)
	require.NoError(t, err)
	sys, err := d.system(Config{Model: memory.TSO, Device: d.Devices[0]})
	require.NoError(t, err)
	r := explore.Explore[State](sys, explore.Options{Workers: 1})
	require.NotNil(t, r.Violation)
	tl := r.Violation.Timeline()
	assertFits(t, tl)
	var natural int
	for _, st := range r.Violation.Path {
		for _, l := range strings.Split(st.Text, "\n") {
			natural = max(natural, len(l))
		}
	}
	require.Greater(t, 4+3+natural+3+natural, explore.TimelineWidth, "the unwrapped table would be wider")
	assert.Contains(t, tl, "\n     |   ", "continuation rows, indented")
	squeeze := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "|", " ")), "") }
	for _, st := range r.Violation.Path {
		for _, l := range strings.Split(st.Text, "\n") {
			assert.Contains(t, squeeze(tl), squeeze(l), "every line is there, wrapped")
		}
	}
}

// TestTimelineJSON: the JSON form of a counterexample has the same texts
// (values, symbolic flags, covered writes) and, as data, the facts
// (item 5); the path rebuilt from the JSON alone replays to the failed
// assertion.
func TestTimelineJSON(t *testing.T) {
	sys, v := timelineTexts(t)
	b, err := json.Marshal(verdict.NewRecord("timeline-texts", verdict.Verdict{Outcome: verdict.Unsafe, Violation: v}, nil))
	require.NoError(t, err)
	var rec verdict.Record
	require.NoError(t, json.Unmarshal(b, &rec))
	require.NotNil(t, rec.Counterexample)
	require.Len(t, rec.Counterexample.Steps, len(v.Path))
	var texts []string
	for i, st := range rec.Counterexample.Steps {
		assert.Equal(t, v.Path[i].Text, st.Text, "the text, unwrapped")
		texts = append(texts, st.Text)
	}
	all := strings.Join(texts, "\n")
	for _, w := range []string{"submit_bio_wait(b=1, v=5, 0)", "fl=REQ_PREFLUSH|REQ_FUA", "F1 complete: W1 durable", "assert_durable(b=1, (v + 1)=6): FAILS"} {
		assert.Contains(t, all, w)
	}
	facts := func(text string) map[string]any {
		for _, st := range rec.Counterexample.Steps {
			if strings.Contains(st.Text, text) {
				m, _ := st.Facts.(map[string]any)
				return m
			}
		}
		t.Fatalf("no step %q", text)
		return nil
	}
	for _, tc := range []struct {
		step string
		want map[string]any
	}{
		{"W1 submitted", map[string]any{"values": map[string]any{"b": 1.0, "v": 5.0}, "flags": "0", "write": "W1"}},
		{"W2 submitted", map[string]any{"values": map[string]any{"b": 1.0, "v": 5.0, "fl": 3.0}, "flags": "REQ_PREFLUSH|REQ_FUA", "write": "W2", "covers": []any{"W1"}}},
		{"F1 submitted", map[string]any{"flush": "F1", "covers": []any{"W1"}}},
		{"F1 complete", map[string]any{"flush": "F1", "covers": []any{"W1"}, "durable": []any{"W1"}}},
		{"W3 preflushed", map[string]any{"write": "W3", "covers": []any{"W1", "W2"}}},
		{"W3 complete", map[string]any{"write": "W3", "durable": []any{"W3"}}},
		{"returns 0 (W1)", map[string]any{"write": "W1"}},
	} {
		assert.Equal(t, tc.want, facts(tc.step), tc.step)
	}
	end, err := explore.Replay[State](sys, rec.Counterexample.Path())
	require.NoError(t, err)
	assert.Equal(t, badDurable, end.bad.kind, "the replayed path fails the assertion again")
}

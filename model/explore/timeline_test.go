package explore

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTimelineColumns(t *testing.T) {
	got := Timeline([]string{"A", "device"}, []Step{{Actor: 0, Text: "W1 submit b0"}, {Actor: 1, Text: "W1 lands"}})
	assert.Equal(t, ""+
		"step | A            | device\n"+
		"   1 | W1 submit b0 |\n"+
		"   2 |              | W1 lands\n", got)
}

// TestTimelineLayout: only the actors that take a step have a column;
// a table wider than the width asked for has its widest columns narrowed
// and their lines wrapped, indented, between words.
func TestTimelineLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		actors []string
		path   []Step
		width  int
		want   string
	}{
		{"idle actors have no column", []string{"A", "B", "memory", "device"},
			[]Step{{Actor: 0, Text: "W1 submit b0"}, {Actor: 3, Text: "W1 lands"}}, 80, "" +
				"step | A            | device\n" +
				"   1 | W1 submit b0 |\n" +
				"   2 |              | W1 lands\n"},
		{"an empty path shows every actor", []string{"A", "memory"}, nil, 80, "step | A | memory\n"},
		{"a wide column is wrapped between words", []string{"A", "device"},
			[]Step{{Actor: 0, Text: "L1: submit_bio_wait(b=1, v=2, REQ_FUA): W1 submitted"}, {Actor: 1, Text: "W1 complete: W1 durable"}}, 60, "" +
				"step | A                           | device\n" +
				"   1 | L1: submit_bio_wait(b=1,    |\n" +
				"     |   v=2, REQ_FUA): W1         |\n" +
				"     |   submitted                 |\n" +
				"   2 |                             | W1 complete: W1 durable\n"},
		{"columns are narrowed alike, each line of a step wrapped", []string{"A", "B"},
			[]Step{{Actor: 0, Text: "one two three four five six\nseven"}, {Actor: 1, Text: "eight nine ten eleven twelve"}}, 50, "" +
				"step | A                    | B\n" +
				"   1 | one two three four   |\n" +
				"     |   five six           |\n" +
				"     | seven                |\n" +
				"   2 |                      | eight nine ten\n" +
				"     |                      |   eleven twelve\n"},
		{"a word longer than the column is cut before a '.', else where the column ends", []string{"A"},
			[]Step{{Actor: 0, Text: "atomic64_read(ddev.bt_flush_submitted_and_more)"}}, 30, "" +
				"step | A\n" +
				"   1 | atomic64_read(ddev\n" +
				"     |   .bt_flush_submitted_a\n" +
				"     |   nd_more)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := timeline(tc.actors, tc.path, tc.width)
			assert.Equal(t, tc.want, got)
			for _, l := range strings.Split(got, "\n") {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), max(tc.width, 4+3+minColumn), l)
			}
		})
	}
}

// TestViolationTimelineWraps: the violation's message is wrapped to
// TimelineWidth too, its later lines indented under the first's text.
func TestViolationTimelineWraps(t *testing.T) {
	msg := strings.Repeat("word ", 60)
	v := &Violation{Kind: Safety, Err: errors.New(msg), Actor: []string{"A"}, Path: []Step{{Actor: 0, Text: "x"}}}
	lines := strings.Split(strings.TrimSuffix(v.Timeline(), "\n"), "\n")
	assert.Greater(t, len(lines), 4)
	assert.True(t, strings.HasPrefix(lines[2], "=> safety violation: word"))
	for _, l := range lines[3:] {
		assert.True(t, strings.HasPrefix(l, "   word"), l)
	}
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), TimelineWidth, l)
	}
	assert.Equal(t, "safety violation: "+strings.TrimSpace(msg), strings.Join(strings.Fields(strings.TrimPrefix(strings.Join(lines[2:], " "), "=> ")), " "))
}

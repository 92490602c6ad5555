package explore

import (
	"fmt"
	"strings"
)

// Timeline renders a path with one column per actor and numbered steps, the
// way a kernel developer draws an interleaving on a whiteboard:
//
//	step | A            | flusher   | device
//	   1 | W1 submit b0 |           |
//	   2 |              |           | W1 lands
func Timeline(actors []string, path []Step) string {
	width := make([]int, len(actors))
	for a, name := range actors {
		width[a] = len(name)
	}
	for _, st := range path {
		if st.Actor < len(width) && len(st.Text) > width[st.Actor] {
			width[st.Actor] = len(st.Text)
		}
	}
	var b strings.Builder
	row := func(step string, cell func(a int) string) {
		line := fmt.Sprintf("%4s", step)
		for a := range actors {
			line += " | " + fmt.Sprintf("%-*s", width[a], cell(a))
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("step", func(a int) string { return actors[a] })
	for i, st := range path {
		row(fmt.Sprint(i+1), func(a int) string {
			if a == st.Actor {
				return st.Text
			}
			return ""
		})
	}
	return b.String()
}

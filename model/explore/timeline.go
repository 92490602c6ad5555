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
		for _, l := range strings.Split(st.Text, "\n") {
			if st.Actor < len(width) && len(l) > width[st.Actor] {
				width[st.Actor] = len(l)
			}
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
		// A step's text may have several lines (a step and the local
		// steps it takes with it): one row each, numbered once.
		for k, l := range strings.Split(st.Text, "\n") {
			num := ""
			if k == 0 {
				num = fmt.Sprint(i + 1)
			}
			row(num, func(a int) string {
				if a == st.Actor {
					return l
				}
				return ""
			})
		}
	}
	return b.String()
}

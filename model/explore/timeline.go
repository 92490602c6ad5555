package explore

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// TimelineWidth is the width Timeline keeps its table to where it can: 160
// columns with the two spaces `flushproof check` indents it by.
const TimelineWidth = 158

// minColumn is the narrowest a column is made to fit TimelineWidth: with
// many actors the table may be wider.
const minColumn = 16

// Timeline renders a path with one column per actor and numbered steps, the
// way a kernel developer draws an interleaving on a whiteboard:
//
//	step | A            | flusher   | device
//	   1 | W1 submit b0 |           |
//	   2 |              |           | W1 lands
//
// Only the actors that take a step in the path have a column (all of them
// for an empty path). A step's text may have several lines, one row each.
// If the table would be wider than TimelineWidth, the widest columns are
// narrowed and a line longer than its column goes on onto continuation
// rows, indented by two spaces, broken between words where it can.
func Timeline(actors []string, path []Step) string {
	return timeline(actors, path, TimelineWidth)
}

func timeline(actors []string, path []Step, maxWidth int) string {
	used := make([]bool, len(actors))
	for _, st := range path {
		if st.Actor >= 0 && st.Actor < len(used) {
			used[st.Actor] = true
		}
	}
	var cols []int // the actors with a column, in order
	col := make([]int, len(actors))
	for a := range actors {
		col[a] = -1
		if used[a] || len(path) == 0 {
			col[a] = len(cols)
			cols = append(cols, a)
		}
	}
	width := make([]int, len(cols))
	for c, a := range cols {
		width[c] = utf8.RuneCountInString(actors[a])
	}
	for _, st := range path {
		if st.Actor < 0 || st.Actor >= len(col) {
			continue
		}
		for _, l := range strings.Split(st.Text, "\n") {
			if c := col[st.Actor]; utf8.RuneCountInString(l) > width[c] {
				width[c] = utf8.RuneCountInString(l)
			}
		}
	}
	fit(width, cols, actors, maxWidth-4-3*len(cols))
	var b strings.Builder
	row := func(step string, cell func(c int) string) {
		line := fmt.Sprintf("%4s", step)
		for c := range cols {
			line += " | " + fmt.Sprintf("%-*s", width[c], cell(c))
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("step", func(c int) string { return actors[cols[c]] })
	for i, st := range path {
		// A step's text may have several lines (a step and the local
		// steps it takes with it): one row each, numbered once.
		c := -1
		if st.Actor >= 0 && st.Actor < len(col) {
			c = col[st.Actor]
		}
		k := 0
		for _, l := range strings.Split(st.Text, "\n") {
			parts := []string{l}
			if c >= 0 {
				parts = wrap(l, width[c], "  ")
			}
			for _, p := range parts {
				num := ""
				if k == 0 {
					num = fmt.Sprint(i + 1)
				}
				k++
				row(num, func(cc int) string {
					if cc == c {
						return p
					}
					return ""
				})
			}
		}
	}
	return b.String()
}

// fit narrows the widest columns until their widths add up to at most
// budget, none below minColumn or its actor's name: every column wider
// than some cap is cut to it, the cap as large as the budget lets it be,
// and what is left over goes to the columns cut, from the left.
func fit(width, cols []int, actors []string, budget int) {
	floor := make([]int, len(width))
	natural := slices.Clone(width)
	for c := range width {
		floor[c] = min(natural[c], max(minColumn, utf8.RuneCountInString(actors[cols[c]])))
	}
	total := func(cap int) int {
		n := 0
		for c, w := range natural {
			n += max(floor[c], min(w, cap))
		}
		return n
	}
	widest := slices.Max(append([]int{0}, natural...))
	if total(widest) <= budget {
		return
	}
	cap := 0 // the largest cap that fits, 0 if none does
	for lo, hi := 1, widest; lo <= hi; {
		mid := (lo + hi) / 2
		if total(mid) <= budget {
			cap, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	left := budget - total(cap)
	for c, w := range natural {
		width[c] = max(floor[c], min(w, cap))
		if width[c] < w && left > 0 {
			width[c]++
			left--
		}
	}
}

// wrap breaks line into pieces of at most w runes, the later ones
// indented by indent, between words where it can.
func wrap(line string, w int, indent string) []string {
	line = strings.TrimRight(line, " ")
	if utf8.RuneCountInString(line) <= w || w < 2*len(indent)+2 {
		return []string{line}
	}
	var out []string
	rest := []rune(line)
	lead := ""
	for len(lead)+len(rest) > w {
		room := w - len(lead)
		piece, next := rest[:room], rest[room:]
		if cut := breakAt(rest, room); cut > 0 {
			piece, next = rest[:cut], rest[cut:]
		}
		out = append(out, lead+strings.TrimRight(string(piece), " "))
		rest = []rune(strings.TrimLeft(string(next), " "))
		lead = indent
	}
	if len(rest) > 0 {
		out = append(out, lead+string(rest))
	}
	return out
}

// breakAt is where to break rest to keep at most room runes on the line:
// at the last space in the line's second half, else after its last '(' or
// ',', or before its last '.'; -1 for none.
func breakAt(rest []rune, room int) int {
	for i := room; i > room/2; i-- {
		if rest[i] == ' ' {
			return i
		}
	}
	for i := room; i > room/2; i-- {
		switch {
		case rest[i-1] == '(' || rest[i-1] == ',':
			return i
		case rest[i] == '.':
			return i
		}
	}
	return -1
}

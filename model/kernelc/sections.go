package kernelc

import (
	"regexp"
	"strings"

	"github.com/flushproof/flushproof/internal/patchapply"
)

// sectionMarker starts a part of a harness: "/* flushproof: PATH */",
// alone on its line. PATH is the kernel file the code after it comes
// from (fs/xfs/xfs_file.c), or "harness" for the harness's own code.
var sectionMarker = regexp.MustCompile(`^\s*/\*\s*flushproof:\s*(\S+)\s*\*/\s*$`)

// HarnessPart is the path a marker names for a harness's own code.
const HarnessPart = "harness"

// Sections lists the parts of a harness that come from kernel files: each
// runs from the line after its marker to the line before the next marker
// (or the end of the file). A kernel patch's hunks for that file apply
// there and nowhere else (check -patch).
func Sections(src []byte) []patchapply.Section {
	lines := strings.Split(string(src), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []patchapply.Section
	open := -1
	path := ""
	closeAt := func(last int) {
		if open >= 0 && path != HarnessPart && last >= open {
			out = append(out, patchapply.Section{Path: path, Range: patchapply.Range{First: open, Last: last}})
		}
	}
	for i, l := range lines {
		m := sectionMarker.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		closeAt(i) // the lines before this one, numbered from 1
		open, path = i+2, m[1]
	}
	closeAt(len(lines))
	return out
}

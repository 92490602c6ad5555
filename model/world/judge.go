package world

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/flushproof/flushproof/model/explore"
)

// The obligations of a program (explore.Obligations): its calls of
// Task.Assert and Task.MustSurvive, one obligation per call site in the
// program's source, named by file and line in the order the search first
// runs them, after a first one that any of them judges. A state is judged
// by the obligations that the steps into it run (every step that reaches
// it, so that the count does not depend on which worker reached it
// first), and, with SearchOptions.Exact, by the MustSurvive obligations
// it checks again there. A task's code between two calls is a function of
// the results of its calls so far (the program is deterministic), which
// the state's key holds, so every call site some run reaches is run by a
// step into some state: a site no state counts is one no run reaches.
//
// The search learns the sites as the program runs them: a site no run
// reaches is not listed (Go code has no list of its assertions). The
// first obligation, "any Assert or MustSurvive", is what a program
// without a reachable one shows: none judged. Sites beyond the 63rd are
// counted in it alone.

// anyObligation is the first obligation's name.
const anyObligation = "any Assert or MustSurvive"

// judgeSite marks the obligation of the call site of the program's call
// of Assert or MustSurvive (what) as judged in this step, and returns its
// bit; 0 outside a search.
func (w *World) judgeSite(what string) uint64 {
	s := w.srch
	if s == nil {
		return 0
	}
	var pc [1]uintptr
	// runtime.Callers, judgeSite, Assert or MustSurvive, the program.
	if runtime.Callers(3, pc[:]) == 0 {
		return 0
	}
	s.omu.Lock()
	bit, ok := s.sites[pc[0]]
	if !ok {
		if s.sites == nil {
			s.sites = map[uintptr]uint64{}
			s.names = []string{anyObligation}
		}
		fr, _ := runtime.CallersFrames(pc[:]).Next()
		name := fmt.Sprintf("%s at %s:%d", what, filepath.Join(filepath.Base(filepath.Dir(fr.File)), filepath.Base(fr.File)), fr.Line)
		bit = 1
		for i, n := range s.names {
			if n == name {
				bit = 1 << i // another return address of the same line
			}
		}
		if bit == 1 && len(s.names) < explore.MaxObligations {
			bit = 1 << len(s.names)
			s.names = append(s.names, name)
		}
		s.sites[pc[0]] = bit
	}
	s.omu.Unlock()
	bit |= 1
	w.judged |= bit
	return bit
}

// Obligations implements explore.Obligations: "any Assert or
// MustSurvive", then the call sites the search ran.
func (s *Search) Obligations() []string {
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.names == nil {
		return []string{anyObligation}
	}
	return append([]string(nil), s.names...)
}

// Judged implements explore.Obligations.
func (s *Search) Judged(st State, initial bool) uint64 { return s.node(st).judged }

var _ explore.Obligations[State] = (*Search)(nil)

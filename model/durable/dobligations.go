package durable

import (
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/memory"
)

// The obligations of a durability file (explore.Obligations): each check
// (assert, assert_durable) and the final condition. A check is judged by
// the steps that run it: in a state whose thread is at it, or whose
// thread's next step is followed by local steps that run it (Next's
// chains), or, for an initial state, on the thread's first local steps.
// The final condition is judged where Check judges it: in every state
// with Crash: any, once every thread has finished (and, under TSO, its
// stores have left the buffers) otherwise. A state where a check failed
// or a fault stopped the run judges nothing more, nor does one where a
// store rests on a guess of running ahead (ahead.go).
//
// Threads that the symmetry reduction treats as interchangeable run the
// same code: their checks at one instruction are one obligation, since
// the search keeps one state of each class of renamings and which member
// of a class is where in it is the representative's choice.

// obligations numbers the file's obligations (obNames, obBit, finalBit).
func (s *durSystem) obligations() {
	s.obBit = make([][]uint64, len(s.op.code))
	for t, code := range s.op.code {
		s.obBit[t] = make([]uint64, len(code))
	}
	classOf := map[int][]int{} // thread -> the members of its symmetry class
	for _, c := range s.sym {
		for _, m := range c.members {
			classOf[m] = c.members
		}
	}
	for t, code := range s.op.code {
		for pc, in := range code {
			if in.kind != iCheck || s.obBit[t][pc] != 0 {
				continue
			}
			members := classOf[t]
			if members == nil {
				members = []int{t}
			}
			var where []string
			for _, m := range members {
				mi := s.op.code[m][pc]
				where = append(where, fmt.Sprintf("P%d line %d", m, mi.line))
			}
			bit := uint64(0)
			if len(s.obNames) < explore.MaxObligations {
				bit = 1 << len(s.obNames)
			}
			s.obNames = append(s.obNames, fmt.Sprintf("%s (%s)", checkText(in.check), strings.Join(where, ", ")))
			for _, m := range members {
				s.obBit[m][pc] = bit
			}
		}
	}
	s.chainChecks = make([][]bool, len(s.op.code))
	for t, code := range s.op.code {
		s.chainChecks[t] = chainChecks(code, s.local[t], s.obBit[t])
	}
	if s.op.test.Quant != 0 || s.rec != nil {
		if len(s.obNames) < explore.MaxObligations {
			s.finalBit = 1 << len(s.obNames)
		}
		var names []string
		if s.op.test.Quant != 0 {
			names = append(names, fmt.Sprintf("the final condition (line %d)", s.op.test.CondLine))
		}
		if s.rec != nil {
			names = append(names, fmt.Sprintf("recovery() (line %d)", s.rec.line))
		}
		s.obNames = append(s.obNames, strings.Join(names, " and "))
	}
}

// chainChecks reports, per instruction of a thread's code, whether the
// local steps that follow its step (Next's chain) may run a check: some
// check is reachable from an instruction after it through local
// instructions alone. Judged takes the steps of the others only for their
// own instruction.
func chainChecks(code []instr, local []bool, bit []uint64) []bool {
	next := func(pc int) []int {
		out := []int{pc + 1}
		if k := code[pc].kind; k == iBranch || k == iJump {
			out = append(out, code[pc].target)
		}
		return out
	}
	reach := make([]bool, len(code)+1) // reach[len(code)]: the end, false
	for changed := true; changed; {
		changed = false
		for pc := len(code) - 1; pc >= 0; pc-- {
			if reach[pc] || !local[pc] {
				continue
			}
			r := bit[pc] != 0
			for _, n := range next(pc) {
				r = r || (n >= 0 && n <= len(code) && reach[n])
			}
			if r {
				reach[pc], changed = true, true
			}
		}
	}
	out := make([]bool, len(code))
	for pc := range code {
		for _, n := range next(pc) {
			out[pc] = out[pc] || (n >= 0 && n <= len(code) && reach[n])
		}
	}
	return out
}

// Obligations implements explore.Obligations.
func (s *durSystem) Obligations() []string { return s.obNames }

// Judged implements explore.Obligations.
func (s *durSystem) Judged(st State, initial bool) uint64 {
	if st.op.fault.kind != 0 || st.bad.kind != 0 || s.op.speculating(st.op) {
		return 0 // (a run whose stores rest on a guess judges nothing: ahead.go)
	}
	var m uint64
	if s.finalJudged(st) {
		m |= s.finalBit
	}
	for t, code := range s.op.code {
		pc := int(st.op.pc[t])
		if pc >= len(code) {
			continue
		}
		m |= s.obBit[t][pc]
		if s.full || !s.chainChecks[t][pc] {
			continue
		}
		s.step(st, t, code[pc], func(_ explore.Label, n State) {
			s.chainJudged(n, t, false, &m)
		})
	}
	if initial && !s.full {
		for _, raw := range s.rawInit() {
			var jm uint64
			if s.startChains(raw, &jm) == st {
				m |= jm
			}
		}
	}
	return m
}

// finalJudged reports whether the final condition is judged in st (a
// state without a failed check or a fault): Check judges it exactly there.
func (s *durSystem) finalJudged(st State) bool {
	if s.op.test.Quant == 0 && s.rec == nil {
		return false
	}
	if s.op.speculating(st.op) {
		// A store rests on a guess (ahead.go): judged where the
		// guesses are borne out.
		return false
	}
	if s.op.condPending(st.op) {
		// The condition reads a register a pending load has yet to set
		// (ahead.go): judged where the load is satisfied. Elsewhere a
		// pending load changes nothing a crash sees: nothing the run did
		// to memory (speculating above) or the device rests on a guess
		// about its value.
		return false
	}
	switch s.cfg.Crash {
	case CrashNone, CrashEnd:
		// The end is when every thread has finished and its stores have
		// left the store buffer (herd7's final state: a thread's stores
		// all reach memory); a crash at any other point finds memory as
		// it is, and a store still in a buffer is lost with the CPU.
		if !s.finished(st) {
			return false
		}
		if s.op.model == memory.TSO && !s.op.final(st.op) {
			return false
		}
	}
	return true
}

var _ explore.Obligations[State] = (*durSystem)(nil)

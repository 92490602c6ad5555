package litmus

import "fmt"

// MemoryOnly returns an error wrapping ErrUnsupported if t is not a
// memory-model test: it has durability statements (the device, assertions,
// loops, jumps, gotos and labels, wait_event), registers that start other
// than at 0, or a final condition over blocks. Only flushproof check
// (model/durable) runs those; the memory models call this first.
func MemoryOnly(t *Test) error {
	for th, regs := range t.RegInit {
		for r, v := range regs {
			if v == 0 {
				continue
			}
			return fmt.Errorf("%s: %w: the initial state sets %d:%s=%d (a memory model's registers start at 0; flushproof check runs such files)", t.Name, ErrUnsupported, th, r, v)
		}
	}
	return MemoryOps(t)
}

// MemoryOps is MemoryOnly but for registers set by the initial state,
// which a model that runs them (the LKMM reference) accepts.
func MemoryOps(t *Test) error {
	for ti, th := range t.Threads {
		if s := FirstDurable(th.Body); s != nil {
			return fmt.Errorf("%s: line %d: %w: P%d has %s, a durability statement (flushproof check runs such files)", t.Name, s.Line, ErrUnsupported, ti, StmtKind(s))
		}
	}
	var blk string
	t.Cond.Locs(func(l string) {
		if blk == "" && t.BlockOf(l) >= 0 {
			blk = l
		}
	})
	if blk != "" {
		return fmt.Errorf("%s: %w: the final condition names block %s (flushproof check runs such files)", t.Name, ErrUnsupported, blk)
	}
	return nil
}

// FirstDurable returns the first durability statement in body, or nil.
func FirstDurable(body []Stmt) *Stmt {
	for i := range body {
		s := &body[i]
		if s.Loop != nil || s.Jump != 0 || s.Dev != nil || s.Check != nil || s.Goto != "" || s.Label != "" {
			return s
		}
		if s.If != nil {
			if d := FirstDurable(s.If.Then); d != nil {
				return d
			}
			if d := FirstDurable(s.If.Else); d != nil {
				return d
			}
		}
	}
	return nil
}

// StmtKind names a statement's construct for errors.
func StmtKind(s *Stmt) string {
	switch {
	case s.Loop != nil:
		return "a loop"
	case s.Jump == Break:
		return "break"
	case s.Jump == Continue:
		return "continue"
	case s.Jump == Return:
		return "return"
	case s.Goto != "":
		return "goto"
	case s.Label != "":
		return "a label"
	case s.Dev != nil:
		return s.Dev.Kind.String() + "()"
	case s.Check != nil && s.Check.Durable:
		return "assert_durable()"
	case s.Check != nil:
		return "assert()"
	case s.If != nil:
		return "if"
	case s.Assign != nil:
		return "an assignment"
	}
	return "an access"
}

// String is the call's name in a file.
func (k DevKind) String() string {
	switch k {
	case DevWrite:
		return "submit_bio_wait"
	case DevFlush:
		return "blkdev_issue_flush"
	case DevRead:
		return "read_block"
	case DevWait:
		return "wait_event"
	case DevWake:
		return "wake_up"
	case DevSubmit:
		return "submit_bio"
	case DevBioWait:
		return "bio_wait"
	case DevComplete:
		return "complete"
	case DevCompleteAll:
		return "complete_all"
	case DevWaitDone:
		return "wait_for_completion"
	case DevReinit:
		return "reinit_completion"
	case DevReap:
		return "bio_endio"
	}
	return fmt.Sprintf("DevKind(%d)", uint8(k))
}

// Locs calls f with every location e reads (in a final condition).
func (e Expr) Locs(f func(string)) {
	if e.Loc != "" {
		f(e.Loc)
	}
	for _, a := range e.Args {
		a.Locs(f)
	}
}

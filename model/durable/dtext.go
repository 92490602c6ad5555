package durable

import (
	"fmt"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// DescribeFrom describes a step taken from st with the local steps that
// follow it in the same transition (Next).
func (s *durSystem) DescribeFrom(st State, l explore.Label) string {
	text := s.Describe(l)
	t := int(l.Actor)
	if s.full || t >= s.threads() {
		return text
	}
	pc := int(l.ID)
	var after State
	found := false
	s.step(st, t, s.op.code[t][pc], func(lb explore.Label, n State) {
		lb.Actor, lb.ID = uint8(t), uint16(pc)
		if lb == l && !found {
			after, found = n, true
		}
	})
	if !found {
		return text
	}
	_, more := s.chain(after, t, true)
	if len(more) == 0 {
		return text
	}
	return text + "\n" + strings.Join(more, "\n")
}

// Describe renders a step for the timeline, thread steps with their line
// in the file.
func (s *durSystem) Describe(lb explore.Label) string {
	nt := s.threads()
	switch int(lb.Actor) {
	case nt:
		return s.op.Describe(lb)
	case nt + 1:
		k := spec.Kind(lb.Kind)
		e := spec.Event{Kind: k, ID: int(lb.ID)}
		return e.String()
	}
	in := s.op.code[lb.Actor][lb.ID]
	text := ""
	if lb.Kind == kindFault && in.kind >= iDevSubmit {
		return fmt.Sprintf("L%d: %s: beyond the checker's bounds", in.line, s.stmtText(in))
	}
	switch in.kind {
	case iJump:
		text = in.jump
		if text == "" {
			text = "(end of then, skip else)"
		}
	case iBranch:
		taken := "not taken"
		if lb.Arg == 1 {
			taken = "taken"
		}
		text = fmt.Sprintf("if (%s): %s", strings.TrimSuffix(strings.TrimPrefix(litmus.CExpr(in.cond), "("), ")"), taken)
	case iAccess, iAssign:
		text = s.op.Describe(lb)
		if a := in.access; a != nil && a.Call != "" {
			text = strings.Replace(text, litmus.AccessText(a), litmus.CallText(a), 1)
		}
	case iNop:
		text = in.dev.Kind.String() + "()"
	case iCheck:
		text = checkText(in.check)
		if lb.Kind == kindFailed {
			text += ": FAILS"
		}
	case iDevSubmit:
		if in.dev.Kind == litmus.DevFlush {
			text = fmt.Sprintf("blkdev_issue_flush(): F%d submitted", lb.Arg)
		} else {
			text = fmt.Sprintf("%s: W%d submitted", s.stmtText(in), lb.Arg)
		}
	case iDevWait:
		call := in.dev.Kind.String() + "()"
		if in.dev.Kind == litmus.DevBioWait {
			call = s.stmtText(in)
		}
		text = fmt.Sprintf("%s returns %d", call, -int(lb.Arg))
		if in.dev.Reg != "" {
			text = in.dev.Reg + " = " + text
		}
	case iCompletion:
		text = fmt.Sprintf("%s(%s): %s was %d", in.access.Call, in.access.Loc, in.access.Loc, s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	case iDevRead:
		text = fmt.Sprintf("%s = read_block(%s) = %d", in.dev.Reg, litmus.CExpr(in.dev.Block), int8(uint8(lb.Arg)))
	case iAwait:
		text = fmt.Sprintf("wait_event(%s): %s = %d", litmus.CExpr(in.cond), litmus.AccessText(in.access), s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	}
	if lb.Alt != 0 && in.kind >= iDevSubmit {
		name := func(t int) string { return fmt.Sprintf("P%d", t) }
		text += " (" + memory.Alt(lb.Alt).Text(name, false) + ")"
	}
	return fmt.Sprintf("L%d: %s", in.line, text)
}

func checkText(c *litmus.Check) string {
	if c.Durable {
		return fmt.Sprintf("assert_durable(%s, %s)", litmus.Unparen(litmus.CExpr(c.Block)), litmus.Unparen(litmus.CExpr(c.Val)))
	}
	return fmt.Sprintf("assert(%s)", litmus.Unparen(litmus.CExpr(c.Cond)))
}

// flagsText renders write flags as the file would.
func flagsText(e litmus.Expr) string {
	if !e.IsConst {
		return litmus.CExpr(e)
	}
	var parts []string
	if e.Const&litmus.ReqPreflush != 0 {
		parts = append(parts, "REQ_PREFLUSH")
	}
	if e.Const&litmus.ReqFUA != 0 {
		parts = append(parts, "REQ_FUA")
	}
	if e.Const&litmus.ReqSync != 0 {
		parts = append(parts, "REQ_SYNC")
	}
	if rest := e.Const &^ (litmus.ReqFUA | litmus.ReqPreflush | litmus.ReqSync); rest != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprint(rest))
	}
	return strings.Join(parts, "|")
}

// stmtText renders a durability instruction's call, without results.
func (s *durSystem) stmtText(in instr) string {
	switch {
	case in.check != nil:
		return checkText(in.check)
	case in.dev != nil && (in.dev.Kind == litmus.DevWrite || in.dev.Kind == litmus.DevSubmit):
		text := fmt.Sprintf("%s(%s, %s, %s)", in.dev.Kind, litmus.CExpr(in.dev.Block), litmus.CExpr(in.dev.Val), flagsText(in.dev.Flags))
		if in.dev.Kind == litmus.DevSubmit && in.dev.Reg != "" {
			text = in.dev.Reg + " = " + text
		}
		return text
	case in.dev != nil && in.dev.Kind == litmus.DevBioWait:
		return fmt.Sprintf("bio_wait(%s)", litmus.CExpr(in.dev.Val))
	case in.dev != nil && in.dev.Kind.IsCompletion():
		return fmt.Sprintf("%s(%s)", in.dev.Load.Call, in.dev.Load.Loc)
	case in.dev != nil && in.dev.Kind == litmus.DevRead:
		return fmt.Sprintf("read_block(%s)", litmus.CExpr(in.dev.Block))
	case in.kind == iAwait:
		load := *in.access
		load.Reg = ""
		cond := strings.ReplaceAll(litmus.CExpr(in.cond), litmus.WaitReg, litmus.CallText(&load))
		return fmt.Sprintf("wait_event(%s)", litmus.Unparen(cond))
	case in.dev != nil:
		return in.dev.Kind.String() + "()"
	}
	return "?"
}

package durable

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
	"github.com/flushproof/flushproof/spec"
)

// How a counterexample's steps read (docs/durable-litmus.md, "The
// timeline"). A step taken from a known state (DescribeFrom: a
// counterexample's path) shows the values of the registers it reads, as
// they were before it: a device call's arguments inline
// (submit_bio_wait(b=1, v=2, REQ_FUA)), an assertion's too, and a
// condition's after it (if (s != 0) [s=0]: not taken). Flags are shown
// as the file spells them (REQ_PREFLUSH|REQ_FUA), and so is a register
// that holds flags. A flush's submission says which completed writes it
// covers, and a device step which writes it makes durable (F1 complete:
// W1, W3 durable). Without a state (Describe) the same texts go without
// the values.

// StepFacts are what a counterexample step's text says, as data: the
// "facts" of a step in the JSON form of a counterexample (docs/cli.md).
// They are the step's own, not those of the local steps the text shows
// after it.
type StepFacts struct {
	// Values are the registers the step reads, with their values before
	// it: a device call's or an assertion's arguments, a condition's
	// registers, an assignment's, a read-modify-write's.
	Values map[string]int64 `json:"values,omitempty"`
	// Flags are a write's flags, as the file spells them
	// (REQ_PREFLUSH|REQ_FUA; 0 for none).
	Flags string `json:"flags,omitempty"`
	// Write and Flush name the command the step submits, completes or
	// fails ("W2", "F1").
	Write string `json:"write,omitempty"`
	Flush string `json:"flush,omitempty"`
	// Covers, at a flush's submission (or a REQ_PREFLUSH write's on a
	// volatile cache): the completed writes its success will make
	// durable; at a flush's end, the writes it covered.
	Covers []string `json:"covers,omitempty"`
	// Durable are the writes the device step makes durable (a flush's
	// completion, a FUA write's, a preflush's).
	Durable []string `json:"durable,omitempty"`
}

// DescribeFrom describes a step taken from st with the local steps that
// follow it in the same transition (Next), each with the values of the
// registers it reads.
func (s *durSystem) DescribeFrom(st State, l explore.Label) string {
	text, _ := s.render(&st, l)
	t := int(l.Actor)
	if s.full || t >= s.threads() {
		return text
	}
	after, found := s.after(st, l)
	if !found {
		return text
	}
	_, more := s.chain(after, t, true)
	if len(more) == 0 {
		return text
	}
	return text + "\n" + strings.Join(more, "\n")
}

// FactsFrom implements explore.FactDescriber: a *StepFacts, nil for a
// step with nothing to say.
func (s *durSystem) FactsFrom(st State, l explore.Label) any {
	_, f := s.render(&st, l)
	if f == nil {
		return nil
	}
	return f
}

// after is the state thread l.Actor's step l leads to from st, before the
// local steps after it.
func (s *durSystem) after(st State, l explore.Label) (State, bool) {
	t := int(l.Actor)
	pc := int(st.op.pc[t])
	if t >= s.threads() || pc >= len(s.op.code[t]) || pc != int(l.ID) {
		return State{}, false
	}
	var after State
	found := false
	s.step(st, t, s.op.code[t][pc], func(lb explore.Label, n State) {
		lb.Actor, lb.ID = uint8(t), uint16(pc)
		if lb == l && !found {
			after, found = n, true
		}
	})
	return after, found
}

// Describe renders a step for the timeline, thread steps with their line
// in the file, without the state it is taken from (no register values).
func (s *durSystem) Describe(lb explore.Label) string {
	text, _ := s.render(nil, lb)
	return text
}

// render is a step's text and facts, taken from *st (nil: unknown, no
// values and no facts).
func (s *durSystem) render(st *State, lb explore.Label) (string, *StepFacts) {
	nt := s.threads()
	switch int(lb.Actor) {
	case nt:
		return s.op.Describe(lb), nil
	case nt + 1:
		return s.deviceText(st, lb)
	}
	t := int(lb.Actor)
	in := s.op.code[t][lb.ID]
	v := &vals{s: s, st: st, t: t}
	var f *StepFacts
	if st != nil {
		f = &StepFacts{}
	}
	text := ""
	switch lb.Kind {
	case kindDefer:
		if in.kind == iAccess {
			at := lb
			at.Kind = kindPlain
			return fmt.Sprintf("L%d: %s: left pending (what follows may run before it)", in.line, s.accessText(in, at, v)), v.facts(f)
		}
	case kindLate:
		if in.kind == iAccess {
			at := lb
			at.Kind = kindValue
			return fmt.Sprintf("L%d: %s (the pending access is satisfied)", in.line, s.accessText(in, at, v)), v.facts(f)
		}
	}
	if text, ok := s.op.describeAhead(t, lb); ok {
		return fmt.Sprintf("L%d: %s", in.line, text), v.facts(f)
	}
	if lb.Kind == kindFault && in.kind >= iDevSubmit {
		return fmt.Sprintf("L%d: %s: beyond the checker's bounds", in.line, s.stmtText(in, v)), v.facts(f)
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
		text = fmt.Sprintf("if (%s)%s: %s", litmus.Unparen(litmus.CExpr(in.cond)), v.list(in.cond), taken)
	case iAccess, iAssign:
		text = s.accessText(in, lb, v)
	case iNop:
		text = in.dev.Kind.String() + "()"
	case iCheck:
		text = checkValues(in.check, v)
		if lb.Kind == kindFailed {
			text += ": FAILS"
		}
	case iDevSubmit:
		text = s.submitText(in, lb, st, v, f)
	case iDevWait:
		call := in.dev.Kind.String() + "()"
		if in.dev.Kind == litmus.DevBioWait || in.dev.Kind == litmus.DevReap {
			call = s.stmtText(in, v)
		}
		text = fmt.Sprintf("%s returns %d", call, -int(lb.Arg))
		if in.dev.Reg != "" {
			text = in.dev.Reg + " = " + text
		}
		if name := s.waitsFor(st, t, in, v); name != "" {
			text += " (" + name + ")"
			if f != nil && name[0] == 'W' {
				f.Write = name
			} else if f != nil {
				f.Flush = name
			}
		}
	case iCompletion:
		text = fmt.Sprintf("%s(%s): %s was %d", in.access.Call, in.access.Loc, in.access.Loc, s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	case iDevRead:
		text = fmt.Sprintf("%s = %s = %d", in.dev.Reg, s.stmtText(in, v), int8(uint8(lb.Arg)))
	case iAwait:
		text = fmt.Sprintf("wait_event(%s)%s: %s = %d", litmus.Unparen(s.awaitCond(in)), v.list(in.cond), litmus.AccessText(in.access), s.op.real(in.loc, int64(int8(uint8(lb.Arg)))))
	}
	if lb.Alt != 0 && in.kind >= iDevSubmit {
		name := func(t int) string { return fmt.Sprintf("P%d", t) }
		text += " (" + memory.Alt(lb.Alt).Text(name, false) + ")"
	}
	return fmt.Sprintf("L%d: %s", in.line, text), v.facts(f)
}

// accessText is a memory access's or an assignment's text
// (opSystem.Describe, with the call as the file spelled it), with the
// values of the registers a read-modify-write or a computed assignment
// reads, and flags symbolic in an assignment to a register that holds
// flags.
func (s *durSystem) accessText(in instr, lb explore.Label, v *vals) string {
	if a := in.assign; a != nil {
		if !v.flagReg(a.Reg) {
			text := s.op.Describe(lb)
			if a.Val.Reg == "" && !a.Val.IsConst {
				text += v.list(a.Val) // a bare register's value is the result
			}
			return text
		}
		text := fmt.Sprintf("%s = %s", a.Reg, flagsExpr(a.Val))
		if lb.Kind == kindValue {
			text += fmt.Sprintf(" (%s)", flagsText(litmus.C(int64(int16(lb.Arg)))))
		}
		if a.Val.Reg == "" && !a.Val.IsConst {
			text += v.list(a.Val)
		}
		return text
	}
	text := s.op.Describe(lb)
	a := in.access
	if a.Call != "" {
		text = strings.Replace(text, litmus.AccessText(a), litmus.CallText(a), 1)
	}
	if info := a.Op.Info(); info.Reads && info.Writes {
		text += v.list(a.Expect, a.Val)
	}
	return text
}

// submitText is a submission's text: the call with its arguments' values
// and the command it submits, with what a flush (or a write's preflush)
// covers.
func (s *durSystem) submitText(in instr, lb explore.Label, st *State, v *vals, f *StepFacts) string {
	id := int(lb.Arg)
	var after *State
	if st != nil {
		if n, ok := s.after(*st, lb); ok {
			after = &n
		}
	}
	if in.dev.Kind == litmus.DevFlush || in.dev.Flush {
		text := fmt.Sprintf("blkdev_issue_flush(): F%d submitted", id)
		if in.dev.Flush {
			text = fmt.Sprintf("submit_bio(flush) as bio %d: F%d submitted", in.dev.Slot, id)
		}
		if f != nil {
			f.Flush = fmt.Sprintf("F%d", id)
		}
		if after != nil {
			cover := after.dev.FlushCover(id)
			text += ", " + coverText(cover)
			if f != nil {
				f.Covers = writeNames(cover)
			}
		}
		return text
	}
	text := fmt.Sprintf("%s: W%d submitted", s.stmtText(in, v), id)
	if f != nil {
		f.Write = fmt.Sprintf("W%d", id)
		f.Flags = v.flagsValue(in.dev.Flags)
	}
	if after != nil && s.cfg.Device.VolatileCache {
		if fl, ok := v.eval(in.dev.Flags); ok && fl&litmus.ReqPreflush != 0 {
			cover := after.dev.PreflushCover(id)
			text += ", its preflush " + coverText(cover)
			if f != nil {
				f.Covers = writeNames(cover)
			}
		}
	}
	return text
}

// waitsFor names the command a wait of thread t waits for in *st ("W2",
// "F1"), "" if unknown.
func (s *durSystem) waitsFor(st *State, t int, in instr, v *vals) string {
	if st == nil {
		return ""
	}
	slot := 0
	switch in.dev.Kind {
	case litmus.DevBioWait:
		h, ok := v.eval(in.dev.Val)
		if !ok || h < 1 || h >= ioSlots {
			return ""
		}
		slot = int(h)
	case litmus.DevReap:
		t, slot = in.dev.Owner, in.dev.Slot
	}
	switch id := st.io[t][slot]; {
	case id == 0 || id == ioDoneOK || id == ioDoneEIO:
		return ""
	case id&ioFlush != 0:
		return fmt.Sprintf("F%d", id&^ioFlush)
	default:
		return fmt.Sprintf("W%d", id)
	}
}

// coverText says which writes a flush covers.
func coverText(cover uint32) string {
	if cover == 0 {
		return "covers no write"
	}
	return "covers " + strings.Join(writeNames(cover), ", ")
}

// writeNames names the writes of a set (bit i: write W(i+1)).
func writeNames(ws uint32) []string {
	var out []string
	for m := ws; m != 0; m &= m - 1 {
		out = append(out, fmt.Sprintf("W%d", bits.TrailingZeros32(m)+1))
	}
	return out
}

// deviceText is a device step's text (the contract's event) and, from a
// known state, the writes it makes durable: a flush's completion names
// the writes it covers, every one durable from now on.
func (s *durSystem) deviceText(st *State, lb explore.Label) (string, *StepFacts) {
	e := spec.Event{Kind: spec.Kind(lb.Kind), ID: int(lb.ID)}
	text := e.String()
	if st == nil {
		return text, nil
	}
	f := &StepFacts{}
	if e.Kind.IsFlush() {
		f.Flush = fmt.Sprintf("F%d", e.ID)
	} else if e.Kind.IsWrite() {
		f.Write = fmt.Sprintf("W%d", e.ID)
	}
	n := st.dev
	if n.Apply(e) != nil {
		return text, f
	}
	var made uint32 // the writes the step makes durable
	for w := 1; w <= n.Writes(); w++ {
		if n.Durable(w) && !st.dev.Durable(w) {
			made |= 1 << (w - 1)
		}
	}
	switch e.Kind {
	case spec.FlushComplete:
		cover := st.dev.FlushCover(e.ID) | made
		f.Covers, f.Durable = writeNames(cover), writeNames(made)
		if cover == 0 {
			return text + ": covers no write", f
		}
		return text + ": " + strings.Join(writeNames(cover), ", ") + " durable", f
	case spec.FlushFail:
		cover := st.dev.FlushCover(e.ID)
		f.Covers = writeNames(cover)
		var notYet uint32
		for w := range bits.Len32(cover) {
			if cover&(1<<w) != 0 && !n.Durable(w+1) {
				notYet |= 1 << w
			}
		}
		if notYet != 0 {
			return text + ": " + strings.Join(writeNames(notYet), ", ") + " not made durable", f
		}
		return text, f
	case spec.WritePreflushed:
		cover := st.dev.PreflushCover(e.ID) | made
		f.Covers, f.Durable = writeNames(cover), writeNames(made)
		if cover == 0 {
			return text + ": its preflush covers no write", f
		}
		return text + ": " + strings.Join(writeNames(cover), ", ") + " durable", f
	}
	if made != 0 {
		f.Durable = writeNames(made)
		text += ": " + strings.Join(writeNames(made), ", ") + " durable"
	}
	return text, f
}

// checkText is an assertion as the file wrote it.
func checkText(c *litmus.Check) string { return checkValues(c, &vals{}) }

// checkValues is an assertion, with its arguments' values.
func checkValues(c *litmus.Check, v *vals) string {
	if c.Durable {
		return fmt.Sprintf("assert_durable(%s, %s)", v.arg(c.Block), v.arg(c.Val))
	}
	return fmt.Sprintf("assert(%s)%s", litmus.Unparen(litmus.CExpr(c.Cond)), v.list(c.Cond))
}

// awaitCond is a wait_event's condition as the file wrote it, the read in
// place of the register it reads into.
func (s *durSystem) awaitCond(in instr) string {
	load := *in.access
	load.Reg = ""
	return strings.ReplaceAll(litmus.CExpr(in.cond), litmus.WaitReg, litmus.CallText(&load))
}

// flagsText renders write flags as the file would: a constant as the
// names of its flags (REQ_PREFLUSH|REQ_FUA), other expressions by
// flagsExpr.
func flagsText(e litmus.Expr) string {
	if !e.IsConst {
		return flagsExpr(e)
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

// flagsExpr renders a flags expression: a part that reads no register
// folded to its flags (REQ_PREFLUSH | REQ_FUA, not (2 | 1)), bitwise
// operators over the others ((fl | REQ_FUA)), anything else in C.
func flagsExpr(e litmus.Expr) string {
	if e.IsConst {
		return flagsText(e)
	}
	if !hasReg(e) {
		if c, err := e.Eval(nil, nil); err == nil {
			return flagsText(litmus.C(c))
		}
	}
	switch {
	case len(e.Args) == 1 && e.Op == "~":
		return "~" + flagsExpr(e.Args[0])
	case len(e.Args) == 2 && (e.Op == "|" || e.Op == "&" || e.Op == "^"):
		return "(" + flagsExpr(e.Args[0]) + " " + e.Op + " " + flagsExpr(e.Args[1]) + ")"
	}
	return litmus.CExpr(e)
}

// hasReg reports whether e reads a register or a location.
func hasReg(e litmus.Expr) bool {
	if e.Reg != "" || e.Loc != "" {
		return true
	}
	return slices.ContainsFunc(e.Args, hasReg)
}

// stmtText renders a durability instruction's call, without results, its
// arguments with their values where v knows them.
func (s *durSystem) stmtText(in instr, v *vals) string {
	switch {
	case in.check != nil:
		return checkValues(in.check, v)
	case in.dev != nil && in.dev.Kind == litmus.DevSubmit && in.dev.Flush:
		return "submit_bio(flush)"
	case in.dev != nil && (in.dev.Kind == litmus.DevWrite || in.dev.Kind == litmus.DevSubmit):
		blk := v.arg(in.dev.Block)
		if in.dev.Blocks > 1 {
			blk += fmt.Sprintf(" (%d blocks)", in.dev.Blocks)
		}
		text := fmt.Sprintf("%s(%s, %s, %s)", in.dev.Kind, blk, v.arg(in.dev.Val), v.flagsArg(in.dev.Flags))
		switch {
		case in.dev.Kind == litmus.DevSubmit && in.dev.Reg != "":
			text = in.dev.Reg + " = " + text
		case in.dev.Kind == litmus.DevSubmit && in.dev.Slot > 0:
			text = fmt.Sprintf("submit_bio(%s, %s, %s) as bio %d", blk, v.arg(in.dev.Val), v.flagsArg(in.dev.Flags), in.dev.Slot)
		}
		return text
	case in.dev != nil && in.dev.Kind == litmus.DevBioWait:
		return fmt.Sprintf("bio_wait(%s)", v.arg(in.dev.Val))
	case in.dev != nil && in.dev.Kind == litmus.DevReap:
		return fmt.Sprintf("bi_end_io of P%d's bio %d", in.dev.Owner, in.dev.Slot)
	case in.dev != nil && in.dev.Kind.IsCompletion():
		return fmt.Sprintf("%s(%s)", in.dev.Load.Call, in.dev.Load.Loc)
	case in.dev != nil && in.dev.Kind == litmus.DevRead:
		return fmt.Sprintf("read_block(%s)", v.arg(in.dev.Block))
	case in.kind == iAwait:
		return fmt.Sprintf("wait_event(%s)", litmus.Unparen(s.awaitCond(in)))
	case in.dev != nil:
		return in.dev.Kind.String() + "()"
	}
	return "?"
}

// vals renders expressions of thread t with the values of their registers
// in *st (nil: without values), and collects what it showed for the
// step's facts.
type vals struct {
	s     *durSystem
	st    *State
	t     int
	shown map[string]int64
	flags map[string]bool // the thread's registers that hold flags (flagRegs), once asked
}

// reg is register name's value, if known.
func (v *vals) reg(name string) (int64, bool) {
	if v.st == nil || name == litmus.WaitReg {
		return 0, false
	}
	i, ok := v.s.op.regs[v.t][name]
	if !ok {
		return 0, false
	}
	x := int64(v.st.op.regs[v.t][i])
	if v.shown == nil {
		v.shown = map[string]int64{}
	}
	v.shown[name] = x
	return x, true
}

// eval is e's value, if every register it reads is known.
func (v *vals) eval(e litmus.Expr) (int64, bool) {
	ok := true
	x, err := e.Eval(func(_ int, name string) int64 {
		r, known := v.reg(name)
		ok = ok && known
		return r
	}, nil)
	return x, ok && err == nil
}

// value renders a register's value: symbolic flags for a register that
// holds flags.
func (v *vals) value(name string, x int64) string {
	if v.flagReg(name) {
		return flagsText(litmus.C(x))
	}
	return fmt.Sprint(x)
}

// arg renders a call's argument: a constant as it is, anything else with
// its value (b=1, (3 * t)=3).
func (v *vals) arg(e litmus.Expr) string {
	text := litmus.CExpr(e)
	if e.IsConst {
		return text
	}
	x, ok := v.eval(e)
	if !ok {
		return litmus.Unparen(text)
	}
	if e.Reg != "" {
		return text + "=" + v.value(e.Reg, x)
	}
	return text + "=" + fmt.Sprint(x)
}

// flagsArg renders a write's flags argument: symbolic, and, if it reads
// registers, with its value (fl=REQ_PREFLUSH|REQ_FUA).
func (v *vals) flagsArg(e litmus.Expr) string {
	text := flagsExpr(e)
	if !hasReg(e) {
		return text
	}
	x, ok := v.eval(e)
	if !ok {
		return text
	}
	return text + "=" + flagsText(litmus.C(x))
}

// flagsValue is a flags expression's value, symbolic; "" if unknown.
func (v *vals) flagsValue(e litmus.Expr) string {
	if !hasReg(e) {
		if x, err := e.Eval(nil, nil); err == nil {
			return flagsText(litmus.C(x))
		}
		return ""
	}
	x, ok := v.eval(e)
	if !ok {
		return ""
	}
	return flagsText(litmus.C(x))
}

// list renders the registers the expressions read with their values, in
// order of first use: " [a=1, b=0]"; "" for none or no state.
func (v *vals) list(es ...litmus.Expr) string {
	if v.st == nil {
		return ""
	}
	var names []string
	for _, e := range es {
		e.Regs(func(name string) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		})
	}
	var parts []string
	for _, name := range names {
		if x, ok := v.reg(name); ok {
			parts = append(parts, name+"="+v.value(name, x))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// flagReg reports whether register name of the thread holds flags: it is
// a write's flags argument, or part of one, or assigned to such a
// register (flagRegs).
func (v *vals) flagReg(name string) bool {
	if v.flags == nil {
		v.flags = flagRegs(v.s.op.code[v.t])
	}
	return v.flags[name]
}

// flagRegs are the registers of a thread's code whose values are flags:
// those a write's flags argument reads, and, again, those assigned to
// them.
func flagRegs(code []instr) map[string]bool {
	out := map[string]bool{}
	for _, in := range code {
		if d := in.dev; d != nil && (d.Kind == litmus.DevWrite || d.Kind == litmus.DevSubmit) {
			d.Flags.Regs(func(r string) { out[r] = true })
		}
	}
	for grew := true; grew; {
		grew = false
		for _, in := range code {
			if a := in.assign; a != nil && out[a.Reg] {
				a.Val.Regs(func(r string) {
					if !out[r] {
						out[r], grew = true, true
					}
				})
			}
		}
	}
	return out
}

// facts adds the values shown to f (nil: none asked).
func (v *vals) facts(f *StepFacts) *StepFacts {
	if f == nil {
		return nil
	}
	if len(v.shown) > 0 {
		f.Values = v.shown
	}
	if f.Values == nil && f.Flags == "" && f.Write == "" && f.Flush == "" && f.Covers == nil && f.Durable == nil {
		return nil
	}
	return f
}

package kernelc

import (
	"fmt"
	"strings"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// thread is one task being lowered.
type thread struct {
	l      *lowerer
	index  int
	out    *[]litmus.Stmt   // where statements go
	regs   map[string]bool  // register names taken
	known  map[string]int64 // registers known to hold a constant here
	frames []*frame         // the inlined calls, innermost last
	breaks []breakTarget    // loops and switches, innermost last
	nlabel int
	// fwd are the labels only forward gotos reach (a call's end, a
	// switch's cases and end), with what is known at the gotos so far:
	// at the label, what all its ways in agree on stays known.
	fwd map[string]*facts
	// dead: the statement emitted last was a jump, so no statement
	// falls through to the next.
	dead bool
	// lastDead is dead as the last sub left it: its list ends in a jump.
	lastDead bool
	// gotos counts the gotos emitted to each label of fwd.
	gotos map[string]int
	// inlined counts the calls inlined (maxInlined).
	inlined int
	// objs are the task's local objects, whose pointers facts follow.
	objs []*object
	// atLabel is what was known at each C label a backward goto may
	// reach: a goto to it must not bring a pointer pointing elsewhere.
	atLabel map[string]*facts
	// err is an error found where none could be returned (emit); stmt
	// returns it.
	err error
	// free are the registers finished calls named (reg takes them again).
	free map[string]bool
	// big are registers given a constant beyond what a register holds:
	// the assignment is not emitted, and reading one where its value is
	// not known is an error.
	big map[string]bool
	// recovery: the code of recovery(), not a task.
	recovery bool
	// endIOs counts the task's submit_bio calls with a bi_end_io.
	endIOs int
}

// frame is one inlined call.
type frame struct {
	name   string
	def    *cc.FunctionDefinition
	locals map[*cc.Declarator]*object
	labels map[string]string // a C label -> the thread's label
	top    bool              // the task's own function: return ends the thread
	ret    string            // the register of an integer result
	retPtr *val              // a pointer result, once a return gave it
	end    string            // the label after the body, "" if no return jumps
	t      *thread
	// backward are the C labels a goto after them reaches (cLabels).
	backward map[string]bool
	// named are the registers reg gave out while this call was the
	// innermost (release frees them when it ends).
	named []string
}

// breakTarget is where break goes: out of a litmus loop, or to a label
// (a switch).
type breakTarget struct {
	loop  bool
	label string
}

func (t *thread) newFrame(fn *cc.FunctionDefinition, top bool) *frame {
	f := &frame{name: fn.Declarator.Name(), def: fn, locals: map[*cc.Declarator]*object{}, labels: map[string]string{}, top: top, t: t}
	return f
}

// local makes the object of a local declarator.
func (f *frame) local(d *cc.Declarator, at litmus.Pos) *object {
	o := &object{name: d.Name(), decl: d, typ: d.Type(), at: at, regs: map[string]string{}, consts: map[string]int64{}, binds: map[string]val{}, frame: f}
	f.locals[d] = o
	f.t.objs = append(f.t.objs, o)
	return o
}

// reg returns a register name for want that the thread has not taken.
//
// A register a finished call named (its locals, its temporaries) is free
// again: the next call that wants that name takes it, so a function
// inlined at many calls names its registers once (a thread names at most
// 64).
func (t *thread) reg(want string) string {
	var f *frame
	if n := len(t.frames); n > 0 {
		f = t.frames[n-1]
	}
	return t.regIn(f, want)
}

// regIn is reg for a register that frame f names (nil: no call's, never
// freed).
func (t *thread) regIn(f *frame, want string) string {
	name := want
	for k := 2; t.regs[name] && !t.free[name]; k++ {
		name = fmt.Sprintf("%s#%d", want, k)
	}
	delete(t.free, name)
	t.regs[name] = true
	if f != nil {
		f.named = append(f.named, name)
	}
	return name
}

// release frees the registers a finished call named, but keep (its
// result).
func (t *thread) release(f *frame, keep string) {
	if t.free == nil {
		t.free = map[string]bool{}
	}
	for _, r := range f.named {
		if r == keep {
			continue
		}
		t.free[r] = true
		delete(t.known, r)
		delete(t.big, r)
	}
	f.named = nil
}

// leafReg is the register of a local object's scalar leaf.
func (t *thread) leafReg(o *object, path, want string) string {
	if r, ok := o.regs[path]; ok {
		return r
	}
	if want == "" {
		want = o.name + path
	}
	// The register is the object's, named by the call it is a local of
	// (a callee that writes its caller's local through a pointer must
	// not free it when it returns).
	r := t.regIn(o.frame, want)
	o.regs[path] = r
	return r
}

// label returns a fresh label name for a label that only forward gotos
// reach.
func (t *thread) label(what string) string {
	t.nlabel++
	lb := fmt.Sprintf("%s.%d", what, t.nlabel)
	if t.fwd == nil {
		t.fwd = map[string]*facts{}
	}
	t.fwd[lb] = nil
	return lb
}

func (t *thread) emit(s litmus.Stmt) {
	if s.Line == 0 {
		s.Line, s.Col = t.l.at.Line, t.l.at.Col
	}
	switch {
	case s.Label != "":
		if k, ok := t.fwd[s.Label]; ok && k != nil {
			if t.dead {
				t.restore(k)
			} else {
				t.restore(meetFacts(t.facts(), k))
			}
		} else if ok && t.dead {
			// No goto reached it yet and nothing falls through:
			// unreachable so far; nothing is known.
			t.forget()
		} else if !ok {
			// A C label a backward goto may reach: no constant is
			// known; the pointers must be what they are here when
			// the goto comes.
			t.forget()
			if t.atLabel == nil {
				t.atLabel = map[string]*facts{}
			}
			t.atLabel[s.Label] = t.facts()
		}
		// A goto to this very label just before it is a no-op.
		if n := len(*t.out); n > 0 && (*t.out)[n-1].Goto == s.Label {
			*t.out = (*t.out)[:n-1]
			t.gotos[s.Label]--
		}
		t.dead = false
		if _, ok := t.fwd[s.Label]; ok && t.gotos[s.Label] == 0 {
			// Only falling through reaches it: no label, which would
			// cost the dependency analysis what it knows.
			return
		}
	case s.Goto != "":
		if t.dead {
			return
		}
		if k, ok := t.fwd[s.Goto]; ok {
			if k == nil {
				t.fwd[s.Goto] = t.facts()
			} else {
				t.fwd[s.Goto] = meetFacts(k, t.facts())
			}
			if t.gotos == nil {
				t.gotos = map[string]int{}
			}
			t.gotos[s.Goto]++
		} else if at, ok := t.atLabel[s.Goto]; ok && t.err == nil {
			if what := t.bindsChanged(at); what != "" {
				t.err = t.l.unsupported(nil, "goto %s goes back to where %s: a pointer must point to one object at a label (the checker resolves pointers while lowering)", strings.SplitN(s.Goto, ".", 2)[0], what)
			}
		}
		t.dead = true
	case s.Jump != 0:
		t.dead = true
	default:
		if t.dead && !hasLabel([]litmus.Stmt{s}) {
			return // unreachable: nothing jumps here
		}
	}
	*t.out = append(*t.out, s)
}

// hasLabel reports whether body defines a label (a goto may reach it).
func hasLabel(body []litmus.Stmt) bool {
	for _, s := range body {
		switch {
		case s.Label != "":
			return true
		case s.If != nil && (hasLabel(s.If.Then) || hasLabel(s.If.Else)):
			return true
		case s.Loop != nil && (hasLabel(s.Loop.Body) || hasLabel(s.Loop.Post)):
			return true
		}
	}
	return false
}

// sub lowers f into a fresh statement list and returns it.
func (t *thread) sub(f func() error) ([]litmus.Stmt, error) {
	saved, dead := t.out, t.dead
	var out []litmus.Stmt
	t.out = &out
	err := f()
	t.out = saved
	t.lastDead, t.dead = t.dead, dead
	return out, err
}

// assign emits reg = e, keeping what is known of reg's value.
func (t *thread) assign(reg string, e litmus.Expr) {
	e = fold(e)
	if e.IsConst && !fitsRegister(e.Const) {
		// A constant no register holds (a flag 1 << 17, LLONG_MAX):
		// known, never in a register (load refuses to read it where it
		// is not known).
		if t.big == nil {
			t.big = map[string]bool{}
		}
		t.big[reg] = true
		t.known[reg] = e.Const
		return
	}
	delete(t.big, reg)
	t.emit(litmus.Stmt{Assign: &litmus.Assign{Reg: reg, Val: e}})
	if e.IsConst {
		t.known[reg] = e.Const
	} else {
		delete(t.known, reg)
	}
}

// fitsRegister reports whether a register holds v (durable's registers:
// -32768..32767).
func fitsRegister(v int64) bool { return v >= -32768 && v <= 32767 }

// forget drops what is known of every register (a loop's head, a label:
// other paths arrive there).
func (t *thread) forget() { clear(t.known) }

// body lowers a function's body in frame f.
func (t *thread) body(f *frame, cs *cc.CompoundStatement) error {
	t.frames = append(t.frames, f)
	defer func() { t.frames = t.frames[:len(t.frames)-1] }()
	return t.compound(cs)
}

func (t *thread) frame() *frame { return t.frames[len(t.frames)-1] }

func (t *thread) compound(cs *cc.CompoundStatement) error {
	for bil := cs.BlockItemList; bil != nil; bil = bil.BlockItemList {
		bi := bil.BlockItem
		switch bi.Case {
		case cc.BlockItemDecl:
			if err := t.localDecl(bi.Declaration); err != nil {
				return err
			}
		case cc.BlockItemStmt:
			if err := t.stmt(bi.Statement); err != nil {
				return err
			}
		case cc.BlockItemLabel:
			// __label__ declarations: labels are per call anyway.
		default:
			return t.l.unsupported(bi, "a nested function")
		}
	}
	return nil
}

// localDecl makes a declaration's locals and runs their initializers.
func (t *thread) localDecl(d *cc.Declaration) error {
	if d.Case != cc.DeclarationDecl {
		if d.Case == cc.DeclarationAssert {
			return nil
		}
		return t.l.unsupported(d, "__auto_type")
	}
	for list := d.InitDeclaratorList; list != nil; list = list.InitDeclaratorList {
		id := list.InitDeclarator
		dr := id.Declarator
		if dr.IsTypename() || dr.Type().Kind() == cc.Function || dr.IsExtern() || dr.IsSynthetic() || dr.Name() == "__func__" {
			continue
		}
		if dr.IsStatic() {
			return t.l.unsupported(dr, "a static local (%s): declare it at file scope", dr.Name())
		}
		t.l.at = t.l.pos(dr)
		o := t.frame().local(dr, t.l.pos(dr))
		if id.Initializer == nil {
			continue
		}
		if err := t.initLocal(o, "", dr.Type(), id.Initializer); err != nil {
			return err
		}
	}
	return nil
}

// initLocal runs a local's initializer: { } lists set the leaves named
// and zero the others, as C does.
func (t *thread) initLocal(o *object, path string, ty cc.Type, in *cc.Initializer) error {
	if in.Case == cc.InitializerExpr {
		if isAggregate(ty) {
			return t.l.unsupported(in, "a struct or array initialised from an expression")
		}
		v, err := t.rvalue(in.AssignmentExpression)
		if err != nil {
			return err
		}
		return t.store(place{obj: o, path: path, typ: ty}, v, in)
	}
	// Zero every leaf, then run the list as assignments.
	if err := t.zero(o, path, ty, in); err != nil {
		return err
	}
	return t.l.initialize(o, path, ty, in, func(o *object, path string, ty cc.Type, in *cc.Initializer) error {
		v, err := t.rvalue(in.AssignmentExpression)
		if err != nil {
			return err
		}
		return t.store(place{obj: o, path: path, typ: ty}, v, in)
	})
}

// zero stores 0 to every scalar leaf of o under path (pointers: NULL).
func (t *thread) zero(o *object, path string, ty cc.Type, at cc.Node) error {
	switch tt := ty.(type) {
	case *cc.StructType:
		switch {
		case isAtomicType(ty):
			// A local atomic is its task's register.
			t.assign(t.leafReg(o, path, ""), litmus.C(0))
			return nil
		case typeName(ty) == "spinlock_t" || typeName(ty) == "struct mutex":
			return nil // a local lock: taking it is nothing
		case isOpaque(ty):
			return t.l.unsupported(at, "a %s in a local variable: no other task can reach it to complete or wake it", typeName(ty))
		}
		for i := 0; i < tt.NumFields(); i++ {
			f := tt.FieldByIndex(i)
			if f.Name() == "" {
				continue
			}
			if err := t.zero(o, path+"."+f.Name(), f.Type(), at); err != nil {
				return err
			}
		}
		return nil
	case *cc.ArrayType:
		for i := int64(0); i < tt.Len(); i++ {
			if err := t.zero(o, fmt.Sprintf("%s[%d]", path, i), tt.Elem(), at); err != nil {
				return err
			}
		}
		return nil
	}
	if isPointer(ty) {
		o.binds[path] = val{kind: vNull}
		return nil
	}
	return t.store(place{obj: o, path: path, typ: ty}, intVal(litmus.C(0)), at)
}

// stmt lowers one statement: none that no path reaches (after a return,
// a goto, a break), unless it holds a label a jump may reach.
func (t *thread) stmt(s *cc.Statement) error {
	if t.dead && !cHasLabel(s) {
		return nil
	}
	err := t.stmt1(s)
	if err == nil {
		err, t.err = t.err, nil
	}
	return err
}

func (t *thread) stmt1(s *cc.Statement) error {
	switch s.Case {
	case cc.StatementCompound:
		return t.compound(s.CompoundStatement)
	case cc.StatementExpr:
		es := s.ExpressionStatement
		if es.ExpressionList == nil {
			return nil
		}
		t.l.at = t.l.pos(es)
		_, err := t.rvalue(es.ExpressionList)
		return err
	case cc.StatementSelection:
		return t.selection(s.SelectionStatement)
	case cc.StatementIteration:
		return t.iteration(s.IterationStatement)
	case cc.StatementJump:
		return t.jump(s.JumpStatement)
	case cc.StatementLabeled:
		return t.labeled(s.LabeledStatement)
	}
	return t.l.unsupported(s, "inline assembly")
}

// cond lowers a condition: its statements go out, its value is returned
// (an integer; a pointer's comparison with NULL is known statically).
func (t *thread) cond(n cc.ExpressionNode) (litmus.Expr, error) {
	v, err := t.rvalue(n)
	if err != nil {
		return litmus.Expr{}, err
	}
	switch v.kind {
	case vInt:
		return v.e, nil
	case vNull:
		return litmus.C(0), nil
	case vPtr, vFunc:
		return litmus.C(1), nil
	}
	return litmus.Expr{}, t.l.errf(n, "a condition with no value")
}

func (t *thread) selection(s *cc.SelectionStatement) error {
	t.l.at = t.l.pos(s)
	at := t.l.at
	if s.Case == cc.SelectionStatementSwitch {
		return t.switchStmt(s)
	}
	c, err := t.cond(s.ExpressionList)
	if err != nil {
		return err
	}
	c = fold(c)
	if c.IsConst {
		// Code under a constant condition (IS_ENABLED(...), a stub's
		// constant) is left out, as the compiler does.
		if c.Const != 0 {
			return t.stmt(s.Statement)
		}
		if s.Case == cc.SelectionStatementIfElse {
			return t.stmt(s.Statement2)
		}
		return nil
	}
	before := t.facts()
	then, err := t.sub(func() error { return t.stmt(s.Statement) })
	if err != nil {
		return err
	}
	afterThen, thenDead := t.facts(), t.lastDead
	t.restore(before)
	var els []litmus.Stmt
	elseDead := false
	if s.Case == cc.SelectionStatementIfElse {
		els, err = t.sub(func() error { return t.stmt(s.Statement2) })
		if err != nil {
			return err
		}
		elseDead = t.lastDead
	}
	// What is known after the if: what the arms that fall through agree
	// on (an arm that returns adds nothing).
	switch {
	case thenDead && !elseDead:
	case elseDead && !thenDead:
		t.restore(afterThen)
	default:
		t.restore(meetFacts(afterThen, t.facts()))
	}
	t.emit(litmus.Stmt{If: &litmus.If{Cond: c, Then: then, Else: els}, Line: at.Line, Col: at.Col})
	t.dead = thenDead && elseDead
	return nil
}

func meetKnown(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if w, ok := b[k]; ok && w == v {
			out[k] = v
		}
	}
	return out
}

// switchStmt lowers switch as a chain of tests and gotos to labels at
// its cases.
func (t *thread) switchStmt(s *cc.SelectionStatement) error {
	at := t.l.at
	v, err := t.rvalue(s.ExpressionList)
	if err != nil {
		return err
	}
	if v.kind != vInt {
		return t.l.errf(s, "switch on a value that is not an integer")
	}
	e := fold(v.e)
	if !e.IsConst && !isReg(e) {
		r := t.reg("switch")
		t.assign(r, e)
		e = litmus.R(r)
	}
	end := t.label("switch.end")
	dflt := ""
	cases := map[*cc.LabeledStatement]string{}
	known := "" // the case a constant switches to
	for _, ls := range s.LabeledStatements() {
		if ls.Switch() != s {
			continue
		}
		var cond litmus.Expr
		switch ls.Case {
		case cc.LabeledStatementLabel:
			continue // a goto's label inside the switch (labeled)
		case cc.LabeledStatementCaseLabel:
			k, ok := constValue(ls.ConstantExpression)
			if !ok {
				return t.l.errf(ls, "a case label that is not a constant")
			}
			cond = fold(litmus.Bin("==", e, litmus.C(k)))
		case cc.LabeledStatementRange: // GNU C: case LO ... HI
			lo, ok := constValue(ls.ConstantExpression)
			hi, ok2 := constValue(ls.ConstantExpression2)
			if !ok || !ok2 {
				return t.l.errf(ls, "a case range whose ends are not constants")
			}
			cond = fold(litmus.Bin("&&", litmus.Bin(">=", e, litmus.C(lo)), litmus.Bin("<=", e, litmus.C(hi))))
		case cc.LabeledStatementDefault:
			dflt = t.label("default")
			cases[ls] = dflt
			continue
		}
		lb := t.label("case")
		cases[ls] = lb
		if e.IsConst {
			// A constant switches to one case: no tests for the others,
			// whose code is lowered but not reached.
			if cond.IsConst && cond.Const != 0 && known == "" {
				known = lb
			}
			continue
		}
		then, _ := t.sub(func() error {
			t.emit(litmus.Stmt{Goto: lb, Line: at.Line, Col: at.Col})
			return nil
		})
		t.emit(litmus.Stmt{If: &litmus.If{Cond: cond, Then: then}, Line: at.Line, Col: at.Col})
	}
	switch {
	case known != "":
		t.emit(litmus.Stmt{Goto: known, Line: at.Line, Col: at.Col})
	case dflt != "":
		t.emit(litmus.Stmt{Goto: dflt})
	default:
		t.emit(litmus.Stmt{Goto: end})
	}
	t.frame().caseLabels(cases)
	t.breaks = append(t.breaks, breakTarget{label: end})
	err = t.stmt(s.Statement)
	t.breaks = t.breaks[:len(t.breaks)-1]
	if err != nil {
		return err
	}
	t.emit(litmus.Stmt{Label: end})
	return nil
}

// caseLabels records the labels of a switch's cases in the frame.
func (f *frame) caseLabels(m map[*cc.LabeledStatement]string) {
	for ls, lb := range m {
		f.labels[fmt.Sprintf("case %p", ls)] = lb
	}
}

func (t *thread) labeled(s *cc.LabeledStatement) error {
	f := t.frame()
	switch s.Case {
	case cc.LabeledStatementLabel:
		t.emit(litmus.Stmt{Label: f.cLabel(s.Token.SrcStr())})
	case cc.LabeledStatementCaseLabel, cc.LabeledStatementRange, cc.LabeledStatementDefault:
		lb, ok := f.labels[fmt.Sprintf("case %p", s)]
		if !ok {
			return t.l.errf(s, "a case label outside a switch")
		}
		t.emit(litmus.Stmt{Label: lb})
	default:
		return t.l.unsupported(s, "this kind of label")
	}
	return t.stmt(s.Statement)
}

// cLabel is the thread's label for C label name in this call. A label
// only forward gotos reach is one whose facts are met there (label).
func (f *frame) cLabel(name string) string {
	if lb, ok := f.labels[name]; ok {
		return lb
	}
	if f.backward == nil {
		f.backward = cLabels(f.def.CompoundStatement)
	}
	var lb string
	if f.backward[name] {
		f.t.nlabel++
		lb = fmt.Sprintf("%s.%s.%d", f.name, name, f.t.nlabel)
	} else {
		lb = f.t.label(f.name + "." + name)
	}
	f.labels[name] = lb
	return lb
}

func (t *thread) jump(s *cc.JumpStatement) error {
	t.l.at = t.l.pos(s)
	f := t.frame()
	switch s.Case {
	case cc.JumpStatementGoto:
		t.emit(litmus.Stmt{Goto: f.cLabel(s.Token2.SrcStr())})
		return nil
	case cc.JumpStatementBreak:
		if len(t.breaks) == 0 {
			return t.l.errf(s, "break outside a loop or switch")
		}
		b := t.breaks[len(t.breaks)-1]
		if b.loop {
			t.emit(litmus.Stmt{Jump: litmus.Break})
		} else {
			t.emit(litmus.Stmt{Goto: b.label})
		}
		return nil
	case cc.JumpStatementContinue:
		for i := len(t.breaks) - 1; i >= 0; i-- {
			if t.breaks[i].loop {
				t.emit(litmus.Stmt{Jump: litmus.Continue})
				return nil
			}
		}
		return t.l.errf(s, "continue outside a loop")
	case cc.JumpStatementReturn:
		return t.ret(s)
	}
	return t.l.unsupported(s, "a computed goto")
}

// ret lowers return: in the task's own function it ends the thread; in
// an inlined call it sets the result and jumps past the call's body.
func (t *thread) ret(s *cc.JumpStatement) error {
	f := t.frame()
	if s.ExpressionList != nil {
		v, err := t.rvalue(s.ExpressionList)
		if err != nil {
			return err
		}
		switch v.kind {
		case vInt:
			if isBool(f.def.Declarator.Type().(*cc.FunctionType).Result()) {
				v = toBool(v)
			}
			if !f.top {
				if f.ret == "" {
					f.ret = t.reg(f.name + ".ret")
				}
				t.assign(f.ret, v.e)
			}
		case vPtr, vFunc, vNull:
			if f.retPtr != nil && !f.retPtr.same(v) {
				return t.l.unsupported(s, "%s returns %s here and %s elsewhere: a pointer must be known while lowering", f.name, v, *f.retPtr)
			}
			f.retPtr = &v
		}
	}
	if f.top {
		t.emit(litmus.Stmt{Jump: litmus.Return})
		return nil
	}
	if f.end == "" {
		f.end = t.label(f.name + ".return")
	}
	t.emit(litmus.Stmt{Goto: f.end})
	return nil
}

func (t *thread) iteration(s *cc.IterationStatement) error {
	t.l.at = t.l.pos(s)
	at := t.l.at
	if s.Case == cc.IterationStatementFor && s.ExpressionList != nil {
		if call, ok := callOf(s.ExpressionList); ok && calleeName(call) == "__flushproof_llist_each" {
			return t.llistEach(s, call)
		}
	}
	switch s.Case {
	case cc.IterationStatementForDecl:
		if err := t.localDecl(s.Declaration); err != nil {
			return err
		}
	case cc.IterationStatementFor:
		if s.ExpressionList != nil {
			if _, err := t.rvalue(s.ExpressionList); err != nil {
				return err
			}
		}
	}
	var condN, postN cc.ExpressionNode
	switch s.Case {
	case cc.IterationStatementWhile, cc.IterationStatementDo:
		condN = s.ExpressionList
	case cc.IterationStatementFor:
		condN, postN = s.ExpressionList2, s.ExpressionList3
	case cc.IterationStatementForDecl:
		condN, postN = s.ExpressionList, s.ExpressionList2
	}
	// do { } while (0) (a macro's statement) is its body, when no
	// break or continue of its own leaves it.
	if s.Case == cc.IterationStatementDo {
		if c, ok := constValue(condN); ok && c == 0 && !jumpsOut(s.Statement) {
			return t.stmt(s.Statement)
		}
	}
	t.forgetLoop(s)
	// The condition: pure over registers, it is the loop's test; with
	// statements of its own (a load), it is tested inside the loop, at
	// the top of the body (while, for) or in the post (do).
	var test litmus.Expr
	var condStmts []litmus.Stmt
	if condN == nil {
		test = litmus.C(1)
	} else {
		var c litmus.Expr
		stmts, err := t.sub(func() error {
			var err error
			c, err = t.cond(condN)
			return err
		})
		if err != nil {
			return err
		}
		c = fold(c)
		if len(stmts) == 0 && s.Case != cc.IterationStatementDo {
			test = c
		} else {
			test = litmus.C(1)
			condStmts = append(stmts, litmus.Stmt{If: &litmus.If{Cond: litmus.Not(c), Then: []litmus.Stmt{{Jump: litmus.Break, Line: at.Line, Col: at.Col}}}, Line: at.Line, Col: at.Col})
		}
	}
	t.forgetLoop(s)
	entry := t.facts()
	t.breaks = append(t.breaks, breakTarget{loop: true})
	body, err := t.sub(func() error {
		if s.Case != cc.IterationStatementDo {
			*t.out = append(*t.out, condStmts...)
		}
		return t.stmt(s.Statement)
	})
	if err == nil {
		var post []litmus.Stmt
		post, err = t.sub(func() error {
			if postN != nil {
				if _, err := t.rvalue(postN); err != nil {
					return err
				}
			}
			if s.Case == cc.IterationStatementDo {
				*t.out = append(*t.out, condStmts...)
			}
			return nil
		})
		if what := t.bindsChanged(entry); what != "" && err == nil {
			err = t.l.unsupported(s, "in this loop %s: a pointer must point to one object for the whole loop (the checker resolves pointers while lowering, once for every iteration)", what)
		}
		t.emit(litmus.Stmt{Loop: &litmus.Loop{Cond: test, Body: body, Post: post}, Line: at.Line, Col: at.Col})
	}
	t.breaks = t.breaks[:len(t.breaks)-1]
	t.forgetLoop(s)
	return err
}

// jumpsOut reports whether s has a break or continue that leaves it (not
// one inside a loop or switch of its own).
func jumpsOut(s *cc.Statement) bool {
	found := false
	var walk func(n *cc.Statement)
	walk = func(n *cc.Statement) {
		if n == nil || found {
			return
		}
		switch n.Case {
		case cc.StatementJump:
			c := n.JumpStatement.Case
			if c == cc.JumpStatementBreak || c == cc.JumpStatementContinue {
				found = true
			}
		case cc.StatementCompound:
			for bil := n.CompoundStatement.BlockItemList; bil != nil; bil = bil.BlockItemList {
				if bil.BlockItem.Case == cc.BlockItemStmt {
					walk(bil.BlockItem.Statement)
				}
			}
		case cc.StatementSelection:
			if n.SelectionStatement.Case != cc.SelectionStatementSwitch {
				walk(n.SelectionStatement.Statement)
				walk(n.SelectionStatement.Statement2)
			} else {
				// A break in a switch is the switch's; a continue
				// leaves it.
				found = found || hasContinue(n.SelectionStatement.Statement)
			}
		case cc.StatementLabeled:
			walk(n.LabeledStatement.Statement)
		}
	}
	walk(s)
	return found
}

// hasContinue reports whether s has a continue not inside a loop of its
// own.
func hasContinue(s *cc.Statement) bool {
	if s == nil {
		return false
	}
	switch s.Case {
	case cc.StatementJump:
		return s.JumpStatement.Case == cc.JumpStatementContinue
	case cc.StatementCompound:
		for bil := s.CompoundStatement.BlockItemList; bil != nil; bil = bil.BlockItemList {
			if bil.BlockItem.Case == cc.BlockItemStmt && hasContinue(bil.BlockItem.Statement) {
				return true
			}
		}
	case cc.StatementSelection:
		return hasContinue(s.SelectionStatement.Statement) || hasContinue(s.SelectionStatement.Statement2)
	case cc.StatementLabeled:
		return hasContinue(s.LabeledStatement.Statement)
	}
	return false
}

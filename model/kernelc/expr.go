package kernelc

import (
	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// constValue is the value of an integer constant expression (a literal,
// an enumerator, sizeof, a macro's arithmetic), as cc's type checker
// computed it.
func constValue(n cc.ExpressionNode) (int64, bool) {
	if n == nil {
		return 0, false
	}
	switch v := n.Value().(type) {
	case cc.Int64Value:
		return int64(v), true
	case cc.UInt64Value:
		return int64(v), true
	}
	return 0, false
}

func isPointer(t cc.Type) bool { return t != nil && t.Kind() == cc.Ptr }

// opaque types are leaves although C declares them as structs: the
// atomics, locks, completions and wait queues of flushproof/kernel.h.
var opaqueTypes = map[string]bool{
	"atomic_t": true, "atomic64_t": true, "atomic_long_t": true, "spinlock_t": true,
	"struct mutex": true, "struct completion": true, "wait_queue_head_t": true,
	"struct wait_queue_head": true, "struct block_device": true,
}

func typeName(t cc.Type) string {
	if d := t.Typedef(); d != nil {
		return d.Name()
	}
	if st, ok := t.(*cc.StructType); ok {
		tag := st.Tag()
		return "struct " + tag.SrcStr()
	}
	return t.String()
}

// isAtomicType reports whether t is atomic_t, atomic64_t or atomic_long_t.
func isAtomicType(t cc.Type) bool {
	switch typeName(t) {
	case "atomic_t", "atomic64_t", "atomic_long_t":
		return true
	}
	return false
}

func isOpaque(t cc.Type) bool {
	if t == nil {
		return false
	}
	if d := t.Typedef(); d != nil && opaqueTypes[d.Name()] {
		return true
	}
	if st, ok := t.(*cc.StructType); ok {
		tag := st.Tag()
		return opaqueTypes["struct "+tag.SrcStr()]
	}
	return false
}

func isAggregate(t cc.Type) bool {
	if isOpaque(t) {
		return false
	}
	switch t.Kind() {
	case cc.Struct, cc.Union, cc.Array:
		return true
	}
	return false
}

// isScalar: an integer (bool, enum, char...) a register or location holds.
func isScalar(t cc.Type) bool {
	return t != nil && (cc.IsIntegerType(t) || t.Kind() == cc.Bool || t.Kind() == cc.Enum)
}

func isBool(t cc.Type) bool { return t != nil && t.Kind() == cc.Bool }

// toBool is a value converted to _Bool, as C converts it: 1 for any
// value but 0, a pointer 1 unless NULL.
func toBool(v val) val {
	switch v.kind {
	case vInt:
		if v.e.IsConst {
			return intVal(litmus.C(map[bool]int64{true: 1, false: 0}[v.e.Const != 0]))
		}
		if isComparison(v.e) {
			return v
		}
		return intVal(litmus.Bin("!=", v.e, litmus.C(0)))
	case vNull:
		return intVal(litmus.C(0))
	case vPtr, vFunc:
		return intVal(litmus.C(1))
	case vList:
		return intVal(litmus.Bin("!=", v.e, litmus.C(0)))
	}
	return v
}

// isComparison reports whether e is already 0 or 1.
func isComparison(e litmus.Expr) bool {
	switch e.Op {
	case "==", "!=", "<", "<=", ">", ">=", "&&", "||", "!":
		return true
	}
	return false
}

func isReg(e litmus.Expr) bool { return e.Reg != "" && e.Op == "" }

// fold evaluates e where it is constant.
func fold(e litmus.Expr) litmus.Expr {
	if e.Op == "" {
		return e
	}
	args := make([]litmus.Expr, len(e.Args))
	all := true
	for i, a := range e.Args {
		args[i] = fold(a)
		all = all && args[i].IsConst
	}
	e.Args = args
	if !all {
		return simplify(e)
	}
	v, err := e.Eval(func(int, string) int64 { return 0 }, nil)
	if err != nil {
		return e // division by zero: the run will say so
	}
	return litmus.C(v)
}

// simplify rewrites what a constant operand decides: x & 0, x * 0,
// 0 && x, 1 || x (a litmus expression has no side effects to keep).
func simplify(e litmus.Expr) litmus.Expr {
	if len(e.Args) != 2 {
		return e
	}
	for _, a := range e.Args {
		if !a.IsConst {
			continue
		}
		switch {
		case (e.Op == "&" || e.Op == "*" || e.Op == "&&") && a.Const == 0:
			return litmus.C(0)
		case e.Op == "||" && a.Const != 0:
			return litmus.C(1)
		}
	}
	return e
}

// rvalue lowers an expression for its value.
func (t *thread) rvalue(n cc.ExpressionNode) (val, error) {
	if c, ok := constValue(n); ok && n.Pure() && !isPointer(n.Type()) {
		return intVal(litmus.C(c)), nil
	}
	switch x := n.(type) {
	case *cc.ExpressionList:
		var v val
		for l := x; l != nil; l = l.ExpressionList {
			var err error
			if v, err = t.rvalue(l.AssignmentExpression); err != nil {
				return val{}, err
			}
		}
		return v, nil
	case *cc.AssignmentExpression:
		if x.Case == cc.AssignmentExpressionCond {
			return t.rvalue(x.ConditionalExpression)
		}
		return t.assignment(x)
	case *cc.ConditionalExpression:
		if x.Case == cc.ConditionalExpressionLOr {
			return t.rvalue(x.LogicalOrExpression)
		}
		return t.conditional(x)
	case *cc.LogicalOrExpression:
		if x.Case == cc.LogicalOrExpressionLAnd {
			return t.rvalue(x.LogicalAndExpression)
		}
		return t.logical(n, "||", x.LogicalOrExpression, x.LogicalAndExpression)
	case *cc.LogicalAndExpression:
		if x.Case == cc.LogicalAndExpressionOr {
			return t.rvalue(x.InclusiveOrExpression)
		}
		return t.logical(n, "&&", x.LogicalAndExpression, x.InclusiveOrExpression)
	case *cc.InclusiveOrExpression:
		if x.Case == cc.InclusiveOrExpressionXor {
			return t.rvalue(x.ExclusiveOrExpression)
		}
		return t.binary(n, "|", x.InclusiveOrExpression, x.ExclusiveOrExpression)
	case *cc.ExclusiveOrExpression:
		if x.Case == cc.ExclusiveOrExpressionAnd {
			return t.rvalue(x.AndExpression)
		}
		return t.binary(n, "^", x.ExclusiveOrExpression, x.AndExpression)
	case *cc.AndExpression:
		if x.Case == cc.AndExpressionEq {
			return t.rvalue(x.EqualityExpression)
		}
		return t.binary(n, "&", x.AndExpression, x.EqualityExpression)
	case *cc.EqualityExpression:
		switch x.Case {
		case cc.EqualityExpressionRel:
			return t.rvalue(x.RelationalExpression)
		case cc.EqualityExpressionEq:
			return t.binary(n, "==", x.EqualityExpression, x.RelationalExpression)
		}
		return t.binary(n, "!=", x.EqualityExpression, x.RelationalExpression)
	case *cc.RelationalExpression:
		ops := map[cc.RelationalExpressionCase]string{cc.RelationalExpressionLt: "<", cc.RelationalExpressionGt: ">", cc.RelationalExpressionLeq: "<=", cc.RelationalExpressionGeq: ">="}
		if op, ok := ops[x.Case]; ok {
			return t.binary(n, op, x.RelationalExpression, x.ShiftExpression)
		}
		return t.rvalue(x.ShiftExpression)
	case *cc.ShiftExpression:
		switch x.Case {
		case cc.ShiftExpressionLsh:
			return t.binary(n, "<<", x.ShiftExpression, x.AdditiveExpression)
		case cc.ShiftExpressionRsh:
			return t.binary(n, ">>", x.ShiftExpression, x.AdditiveExpression)
		}
		return t.rvalue(x.AdditiveExpression)
	case *cc.AdditiveExpression:
		switch x.Case {
		case cc.AdditiveExpressionAdd:
			return t.binary(n, "+", x.AdditiveExpression, x.MultiplicativeExpression)
		case cc.AdditiveExpressionSub:
			return t.binary(n, "-", x.AdditiveExpression, x.MultiplicativeExpression)
		}
		return t.rvalue(x.MultiplicativeExpression)
	case *cc.MultiplicativeExpression:
		switch x.Case {
		case cc.MultiplicativeExpressionMul:
			return t.binary(n, "*", x.MultiplicativeExpression, x.CastExpression)
		case cc.MultiplicativeExpressionDiv:
			return t.binary(n, "/", x.MultiplicativeExpression, x.CastExpression)
		case cc.MultiplicativeExpressionMod:
			return t.binary(n, "%", x.MultiplicativeExpression, x.CastExpression)
		}
		return t.rvalue(x.CastExpression)
	case *cc.CastExpression:
		if x.Case == cc.CastExpressionUnary {
			return t.rvalue(x.UnaryExpression)
		}
		v, err := t.rvalue(x.CastExpression)
		if err != nil {
			return val{}, err
		}
		to := x.TypeName.Type()
		switch {
		case to.Kind() == cc.Void:
			return val{kind: vVoid}, nil
		case isPointer(to) && v.kind == vInt:
			if c, ok := v.isConst(); ok && c == 0 {
				return val{kind: vNull}, nil
			}
			return val{}, t.l.unsupported(x, "an integer cast to a pointer")
		case isScalar(to) && v.kind != vInt:
			return val{}, t.l.unsupported(x, "a pointer cast to an integer")
		case isPointer(to) && v.kind == vPtr && v.p.typ != nil:
			// A cast to a pointer to another struct would read the
			// object's fields by the other struct's names: refused,
			// not guessed.
			elem := to.(*cc.PointerType).Elem()
			if elem.Kind() == cc.Struct && !isOpaque(elem) && !elem.IsCompatible(v.p.typ) {
				p, ok := asStruct(v.p, elem)
				if !ok {
					return val{}, t.l.unsupported(x, "%s (a %s) cast to a pointer to %s: the checker does not reinterpret an object as another type (it follows a cast to the type of a struct's first member, or to a struct whose fields begin the object's)", v.p, typeName(v.p.typ), typeName(elem))
				}
				return val{kind: vPtr, p: p}, nil
			}
		}
		if isBool(to) {
			return toBool(v), nil
		}
		// Other integer casts keep the value: values are integers, and
		// one a register or location cannot hold is an error row.
		return v, nil
	case *cc.UnaryExpression:
		return t.unary(x)
	case *cc.PostfixExpression:
		return t.postfix(x)
	case *cc.PrimaryExpression:
		return t.primary(x)
	}
	return val{}, t.l.unsupported(n, "this kind of expression (%T)", n)
}

// binary lowers a op b.
func (t *thread) binary(n cc.Node, op string, a, b cc.ExpressionNode) (val, error) {
	va, err := t.rvalue(a)
	if err != nil {
		return val{}, err
	}
	vb, err := t.rvalue(b)
	if err != nil {
		return val{}, err
	}
	if va.kind != vInt || vb.kind != vInt {
		if op != "==" && op != "!=" {
			return val{}, t.l.unsupported(n, "pointer arithmetic (%s %s %s)", va, op, vb)
		}
		eq := va.same(vb)
		if va.kind == vInt || vb.kind == vInt {
			// A pointer against an integer: only 0 (NULL) compares.
			iv := va
			pv := vb
			if vb.kind == vInt {
				iv, pv = vb, va
			}
			c, ok := iv.isConst()
			if !ok || c != 0 {
				return val{}, t.l.unsupported(n, "a pointer compared with an integer")
			}
			eq = pv.kind == vNull
		}
		if op == "!=" {
			eq = !eq
		}
		if eq {
			return intVal(litmus.C(1)), nil
		}
		return intVal(litmus.C(0)), nil
	}
	return intVal(fold(litmus.Bin(op, va.e, vb.e))), nil
}

// logical lowers a && b and a || b, short-circuit: b's statements (a
// load, a call) run only when a does not decide.
func (t *thread) logical(n cc.Node, op string, a, b cc.ExpressionNode) (val, error) {
	ca, err := t.cond(a)
	if err != nil {
		return val{}, err
	}
	ca = fold(ca)
	if ca.IsConst {
		if (op == "&&") == (ca.Const == 0) {
			return intVal(litmus.C(map[bool]int64{true: 0, false: 1}[op == "&&"])), nil
		}
		cb, err := t.cond(b)
		if err != nil {
			return val{}, err
		}
		return intVal(fold(litmus.Bin("!=", cb, litmus.C(0)))), nil
	}
	var cb litmus.Expr
	before := t.facts()
	stmts, err := t.sub(func() error {
		var err error
		cb, err = t.cond(b)
		return err
	})
	if err != nil {
		return val{}, err
	}
	if len(stmts) == 0 {
		return intVal(litmus.Bin(op, ca, cb)), nil
	}
	t.restore(meetFacts(before, t.facts()))
	r := t.reg(map[string]string{"&&": "and", "||": "or"}[op])
	t.assign(r, litmus.Bin("!=", ca, litmus.C(0)))
	test := litmus.R(r)
	if op == "||" {
		test = litmus.Not(test)
	}
	stmts = append(stmts, litmus.Stmt{Assign: &litmus.Assign{Reg: r, Val: litmus.Bin("!=", cb, litmus.C(0))}, Line: t.l.at.Line, Col: t.l.at.Col})
	t.emit(litmus.Stmt{If: &litmus.If{Cond: test, Then: stmts}})
	delete(t.known, r)
	return intVal(litmus.R(r)), nil
}

// conditional lowers c ? a : b.
func (t *thread) conditional(x *cc.ConditionalExpression) (val, error) {
	c, err := t.cond(x.LogicalOrExpression)
	if err != nil {
		return val{}, err
	}
	c = fold(c)
	if c.IsConst {
		if c.Const != 0 {
			return t.rvalue(x.ExpressionList)
		}
		return t.rvalue(x.ConditionalExpression)
	}
	r := t.reg("cond")
	before := t.facts()
	var va, vb val
	then, err := t.sub(func() error {
		var err error
		va, err = t.rvalue(x.ExpressionList)
		return err
	})
	if err != nil {
		return val{}, err
	}
	after := t.facts()
	t.restore(before)
	els, err := t.sub(func() error {
		var err error
		vb, err = t.rvalue(x.ConditionalExpression)
		return err
	})
	if err != nil {
		return val{}, err
	}
	t.restore(meetFacts(after, t.facts()))
	if va.kind == vVoid || vb.kind == vVoid {
		// c ? f() : (void)0, a statement: no value.
		t.emit(litmus.Stmt{If: &litmus.If{Cond: c, Then: then, Else: els}})
		return val{kind: vVoid}, nil
	}
	if va.kind != vInt || vb.kind != vInt {
		if va.same(vb) && len(then) == 0 && len(els) == 0 {
			return va, nil
		}
		return val{}, t.l.unsupported(x, "a pointer chosen at run time (%s or %s)", va, vb)
	}
	then = append(then, litmus.Stmt{Assign: &litmus.Assign{Reg: r, Val: va.e}, Line: t.l.at.Line, Col: t.l.at.Col})
	els = append(els, litmus.Stmt{Assign: &litmus.Assign{Reg: r, Val: vb.e}, Line: t.l.at.Line, Col: t.l.at.Col})
	t.emit(litmus.Stmt{If: &litmus.If{Cond: c, Then: then, Else: els}})
	delete(t.known, r)
	return intVal(litmus.R(r)), nil
}

var compound = map[cc.AssignmentExpressionCase]string{
	cc.AssignmentExpressionMul: "*", cc.AssignmentExpressionDiv: "/", cc.AssignmentExpressionMod: "%",
	cc.AssignmentExpressionAdd: "+", cc.AssignmentExpressionSub: "-", cc.AssignmentExpressionLsh: "<<",
	cc.AssignmentExpressionRsh: ">>", cc.AssignmentExpressionAnd: "&", cc.AssignmentExpressionXor: "^",
	cc.AssignmentExpressionOr: "|",
}

func (t *thread) assignment(x *cc.AssignmentExpression) (val, error) {
	p, err := t.lvalue(x.UnaryExpression)
	if err != nil {
		return val{}, err
	}
	v, err := t.rvalue(x.AssignmentExpression)
	if err != nil {
		return val{}, err
	}
	if op, ok := compound[x.Case]; ok {
		old, err := t.load(p, x)
		if err != nil {
			return val{}, err
		}
		if old.kind != vInt || v.kind != vInt {
			return val{}, t.l.unsupported(x, "pointer arithmetic")
		}
		v = intVal(fold(litmus.Bin(op, old.e, v.e)))
	}
	if err := t.store(p, v, x); err != nil {
		return val{}, err
	}
	return t.after(p, v), nil
}

// after is the value of an assignment expression: the register a local
// now holds, or the value stored.
func (t *thread) after(p place, v val) val {
	if !p.obj.global && v.kind == vInt {
		if r, ok := p.obj.regs[p.path]; ok {
			if c, ok := t.known[r]; ok {
				return intVal(litmus.C(c))
			}
			return intVal(litmus.R(r))
		}
	}
	return v
}

func (t *thread) unary(x *cc.UnaryExpression) (val, error) {
	switch x.Case {
	case cc.UnaryExpressionPostfix:
		return t.rvalue(x.PostfixExpression)
	case cc.UnaryExpressionInc, cc.UnaryExpressionDec:
		return t.incDec(x, x.UnaryExpression, x.Case == cc.UnaryExpressionInc, false)
	case cc.UnaryExpressionAddrof:
		if fn := funcName(x.CastExpression); fn != "" {
			return val{kind: vFunc, fn: fn}, nil
		}
		p, err := t.lvalue(x.CastExpression)
		if err != nil {
			return val{}, err
		}
		if p.dyn != nil {
			return val{}, t.l.unsupported(x, "the address of %s, an element chosen at run time: the checker resolves every pointer while lowering", p)
		}
		return val{kind: vPtr, p: p}, nil
	case cc.UnaryExpressionDeref:
		v, err := t.rvalue(x.CastExpression)
		if err != nil {
			return val{}, err
		}
		if v.kind == vFunc {
			return v, nil
		}
		p, err := t.deref(x, v)
		if err != nil {
			return val{}, err
		}
		return t.load(p, x)
	case cc.UnaryExpressionPlus:
		return t.rvalue(x.CastExpression)
	case cc.UnaryExpressionMinus, cc.UnaryExpressionCpl, cc.UnaryExpressionNot:
		v, err := t.rvalue(x.CastExpression)
		if err != nil {
			return val{}, err
		}
		op := map[cc.UnaryExpressionCase]string{cc.UnaryExpressionMinus: "-", cc.UnaryExpressionCpl: "~", cc.UnaryExpressionNot: "!"}[x.Case]
		if v.kind != vInt {
			if op == "!" {
				return intVal(litmus.C(map[bool]int64{true: 1, false: 0}[v.kind == vNull])), nil
			}
			return val{}, t.l.unsupported(x, "%s on a pointer", op)
		}
		return intVal(fold(litmus.Expr{Op: op, Args: []litmus.Expr{v.e}})), nil
	}
	return val{}, t.l.unsupported(x, "%s", exprText(x))
}

// incDec lowers ++ and --, prefix or postfix.
func (t *thread) incDec(n cc.Node, target cc.ExpressionNode, inc, post bool) (val, error) {
	p, err := t.lvalue(target)
	if err != nil {
		return val{}, err
	}
	old, err := t.load(p, n)
	if err != nil {
		return val{}, err
	}
	if old.kind != vInt {
		return val{}, t.l.unsupported(n, "pointer arithmetic (%s)", exprText(target))
	}
	d := int64(1)
	if !inc {
		d = -1
	}
	if post && p.obj.global {
		// The value read stays in its register.
		if err := t.store(p, intVal(litmus.Bin("+", old.e, litmus.C(d))), n); err != nil {
			return val{}, err
		}
		return old, nil
	}
	if err := t.store(p, intVal(litmus.Bin("+", old.e, litmus.C(d))), n); err != nil {
		return val{}, err
	}
	now := t.after(p, intVal(litmus.C(0)))
	if p.obj.global {
		return intVal(fold(litmus.Bin("+", old.e, litmus.C(d)))), nil
	}
	if post {
		return intVal(litmus.Bin("-", now.e, litmus.C(d))), nil
	}
	return now, nil
}

func (t *thread) postfix(x *cc.PostfixExpression) (val, error) {
	switch x.Case {
	case cc.PostfixExpressionPrimary:
		return t.rvalue(x.PrimaryExpression)
	case cc.PostfixExpressionCall:
		return t.call(x)
	case cc.PostfixExpressionInc, cc.PostfixExpressionDec:
		return t.incDec(x, x.PostfixExpression, x.Case == cc.PostfixExpressionInc, true)
	case cc.PostfixExpressionSelect, cc.PostfixExpressionPSelect, cc.PostfixExpressionIndex:
		p, err := t.lvalue(x)
		if err != nil {
			return val{}, err
		}
		return t.load(p, x)
	case cc.PostfixExpressionComplit:
		p, err := t.complit(x)
		if err != nil {
			return val{}, err
		}
		return t.load(p, x)
	}
	return val{}, t.l.unsupported(x, "this expression")
}

func (t *thread) primary(x *cc.PrimaryExpression) (val, error) {
	switch x.Case {
	case cc.PrimaryExpressionIdent:
		name := x.Token.SrcStr()
		if _, ok := x.ResolvedTo().(*cc.Enumerator); ok {
			if c, ok := constValue(x); ok {
				return intVal(litmus.C(c)), nil
			}
		}
		if d, ok := x.ResolvedTo().(*cc.Declarator); ok && d.Type().Kind() == cc.Function {
			return val{kind: vFunc, fn: name}, nil
		}
		p, err := t.ident(x)
		if err != nil {
			return val{}, err
		}
		return t.load(p, x)
	case cc.PrimaryExpressionExpr:
		return t.rvalue(x.ExpressionList)
	case cc.PrimaryExpressionStmt:
		return val{}, t.l.unsupported(x, "a statement expression ({ ... })")
	}
	return val{}, t.l.unsupported(x, "%s", exprText(x))
}

// asStruct is the place a pointer to p cast to a pointer to the struct
// elem designates, where C defines it: p's first member (or its first
// member's, and so on) is an elem, or elem's fields are the first fields
// of p's struct, by name and type (a common initial sequence), whose
// fields are then read by their names.
func asStruct(p place, elem cc.Type) (place, bool) {
	for {
		st, ok := p.typ.(*cc.StructType)
		if !ok || st.NumFields() == 0 {
			return place{}, false
		}
		if es, ok := elem.(*cc.StructType); ok && es.NumFields() <= st.NumFields() {
			prefix := true
			for i := 0; i < es.NumFields() && prefix; i++ {
				a, b := es.FieldByIndex(i), st.FieldByIndex(i)
				prefix = a.Name() == b.Name() && a.Type().IsCompatible(b.Type())
			}
			if prefix {
				return place{obj: p.obj, path: p.path, typ: p.typ}, true
			}
		}
		first := st.FieldByIndex(0)
		p = place{obj: p.obj, path: p.path + "." + first.Name(), typ: first.Type()}
		if first.Type().IsCompatible(elem) {
			return p, true
		}
	}
}

package kernelc

import (
	"fmt"
	"strings"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// Places: the objects C expressions designate, and reading and writing
// them (a register, a shared location, a pointer's object).

// lvalue lowers an expression that designates an object.
func (t *thread) lvalue(n cc.ExpressionNode) (place, error) {
	switch x := n.(type) {
	case *cc.UnaryExpression:
		switch x.Case {
		case cc.UnaryExpressionDeref:
			v, err := t.rvalue(x.CastExpression)
			if err != nil {
				return place{}, err
			}
			return t.deref(x, v)
		}
	case *cc.PostfixExpression:
		switch x.Case {
		case cc.PostfixExpressionSelect:
			p, err := t.lvalue(x.PostfixExpression)
			if err != nil {
				return place{}, err
			}
			return t.field(x, p, x.Token2.SrcStr())
		case cc.PostfixExpressionPSelect:
			v, err := t.rvalue(x.PostfixExpression)
			if err != nil {
				return place{}, err
			}
			p, err := t.deref(x, v)
			if err != nil {
				return place{}, err
			}
			return t.field(x, p, x.Token2.SrcStr())
		case cc.PostfixExpressionIndex:
			base, err := t.rvalue(x.PostfixExpression)
			if err != nil {
				return place{}, err
			}
			iv, err := t.rvalue(x.ExpressionList)
			if err != nil {
				return place{}, err
			}
			if base.kind != vPtr {
				return place{}, t.l.errf(x, "indexing %s, which is not an array", base)
			}
			i, ok := iv.isConst()
			if !ok {
				return t.dynElement(x, base.p, iv)
			}
			return t.element(x, base.p, i)
		case cc.PostfixExpressionComplit:
			return t.complit(x)
		}
	case *cc.PrimaryExpression:
		if x.Case == cc.PrimaryExpressionIdent {
			return t.ident(x)
		}
	}
	if in := inner(n); in != nil {
		return t.lvalue(in)
	}
	return place{}, t.l.errf(n, "%s is not an object", exprText(n))
}

// ident resolves a name to its object.
func (t *thread) ident(x *cc.PrimaryExpression) (place, error) {
	name := x.Token.SrcStr()
	if d, ok := x.ResolvedTo().(*cc.Declarator); ok {
		for i := len(t.frames) - 1; i >= 0; i-- {
			if o := t.frames[i].locals[d]; o != nil {
				return place{obj: o, typ: o.typ}, nil
			}
		}
		if o := t.l.globals[name]; o != nil && (d.StorageDuration() == cc.Static || d.IsExtern()) {
			return place{obj: o, typ: o.typ}, nil
		}
		if d.IsParam() || d.StorageDuration() == cc.Automatic {
			return place{}, t.l.errf(x, "%s: a local of a function that is not running", name)
		}
	}
	return place{}, t.l.errf(x, "%s is not an object of the file (a function? declared only in a header?)", name)
}

// deref is the object a pointer value points to.
func (t *thread) deref(n cc.Node, v val) (place, error) {
	switch v.kind {
	case vPtr:
		return v.p, nil
	case vNull:
		return place{}, t.l.errf(n, "a NULL pointer dereferenced")
	}
	return place{}, t.l.errf(n, "dereferencing %s, which is not a pointer the checker resolved", v)
}

func (t *thread) field(n cc.Node, p place, name string) (place, error) {
	st, ok := p.typ.(*cc.StructType)
	if !ok || isOpaque(p.typ) {
		if ut, ok := p.typ.(*cc.UnionType); ok {
			_ = ut
			return place{}, t.l.unsupported(n, "a union (%s.%s)", p, name)
		}
		return place{}, t.l.errf(n, "%s is not a struct with fields", p)
	}
	f := st.FieldByName(name)
	if f == nil {
		return place{}, t.l.errf(n, "%s has no field %s", typeName(p.typ), name)
	}
	if f.IsBitfield() {
		return place{}, t.l.unsupported(n, "a bit-field (%s.%s)", p, name)
	}
	return place{obj: p.obj, path: p.path + "." + name, typ: f.Type()}, nil
}

func (t *thread) element(n cc.Node, p place, i int64) (place, error) {
	// p is the array's first element (an array decays to it): the
	// element i is the array's path with i for 0.
	base, ok := strings.CutSuffix(p.path, "[0]")
	if !ok {
		return place{}, t.l.unsupported(n, "indexing %s, which is not an array's first element", p)
	}
	at, _ := typeAt(p.obj.typ, base).(*cc.ArrayType)
	if at != nil && (i < 0 || i >= at.Len()) {
		return place{}, t.l.errf(n, "index %d out of the bounds of %s%s (%d elements)", i, p.obj.name, base, at.Len())
	}
	return place{obj: p.obj, path: fmt.Sprintf("%s[%d]", base, i), typ: p.typ}, nil
}

// dynElement is the element of the array p is the first element of, at
// an index known only at run time (v): a place with dyn set.
func (t *thread) dynElement(n cc.Node, p place, v val) (place, error) {
	if p.dyn != nil {
		return place{}, t.l.unsupported(n, "a second index known only at run time (%s)", v)
	}
	if v.kind != vInt {
		return place{}, t.l.errf(n, "an array index that is not an integer")
	}
	base, ok := strings.CutSuffix(p.path, "[0]")
	if !ok {
		return place{}, t.l.unsupported(n, "indexing %s, which is not an array's first element", p)
	}
	at, ok := typeAt(p.obj.typ, base).(*cc.ArrayType)
	if !ok || at.Len() <= 0 {
		return place{}, t.l.unsupported(n, "indexing %s%s at run time, whose length is not known", p.obj.name, base)
	}
	if at.Len() > 16 {
		return place{}, t.l.unsupported(n, "indexing %s%s at run time: %d elements, and the checker picks one of at most 16", p.obj.name, base, at.Len())
	}
	return place{obj: p.obj, path: base + "[*]", typ: p.typ, dyn: &dynIndex{e: v.e, n: at.Len()}}, nil
}

// each calls f with each element a place with a run-time index can be,
// under a branch on the index, after a check that the index is in the
// array's bounds (an index out of them fails the check: the C code has
// a bug).
func (t *thread) each(p place, f func(q place) error) error {
	d := p.dyn
	t.emit(litmus.Stmt{Check: &litmus.Check{Cond: fold(litmus.Bin("&&", litmus.Bin(">=", d.e, litmus.C(0)), litmus.Bin("<", d.e, litmus.C(d.n))))}})
	for k := int64(0); k < d.n; k++ {
		q := place{obj: p.obj, path: strings.Replace(p.path, "[*]", fmt.Sprintf("[%d]", k), 1), typ: p.typ}
		before := t.facts()
		then, err := t.sub(func() error { return f(q) })
		if err != nil {
			return err
		}
		t.restore(meetFacts(before, t.facts()))
		t.emit(litmus.Stmt{If: &litmus.If{Cond: fold(litmus.Bin("==", d.e, litmus.C(k))), Then: then}})
	}
	return nil
}

// typeAt is the type at path in an object of type t (nil if the path
// leads nowhere).
func typeAt(t cc.Type, path string) cc.Type {
	cur := t
	for path != "" && cur != nil {
		switch {
		case strings.HasPrefix(path, "."):
			rest := path[1:]
			name := rest
			if end := strings.IndexAny(rest, ".["); end >= 0 {
				name, rest = rest[:end], rest[end:]
			} else {
				rest = ""
			}
			st, ok := cur.(*cc.StructType)
			if !ok {
				return nil
			}
			f := st.FieldByName(name)
			if f == nil {
				return nil
			}
			cur, path = f.Type(), rest
		case strings.HasPrefix(path, "["):
			end := strings.Index(path, "]")
			at, ok := cur.(*cc.ArrayType)
			if !ok || end < 0 {
				return nil
			}
			cur, path = at.Elem(), path[end+1:]
		default:
			return nil
		}
	}
	return cur
}

// load reads a place's value.
func (t *thread) load(p place, at cc.Node) (val, error) {
	if p.dyn != nil {
		if !isScalar(p.typ) {
			return val{}, t.l.unsupported(at, "%s, a %s chosen at run time, used as a value", p, typeName(p.typ))
		}
		r := t.reg(leafName(p))
		err := t.each(p, func(q place) error {
			v, err := t.load(q, at)
			if err != nil {
				return err
			}
			t.assign(r, v.e)
			return nil
		})
		delete(t.known, r)
		return intVal(litmus.R(r)), err
	}
	if why, ok := p.obj.unknown[p.path]; ok {
		return val{}, t.l.unsupported(at, "%s in a bi_end_io: %s", p, why)
	}
	switch {
	case p.typ != nil && p.typ.Kind() == cc.Array:
		return val{kind: vPtr, p: place{obj: p.obj, path: p.path + "[0]", typ: p.typ.(*cc.ArrayType).Elem()}}, nil
	case isPointer(p.typ) || (p.typ != nil && p.typ.Kind() == cc.Function):
		v, ok := p.obj.binds[p.path]
		switch {
		case !ok && p.obj.global:
			return val{kind: vNull}, nil // a file-scope pointer starts NULL
		case !ok:
			return val{}, t.l.errf(at, "%s is read before it is given a value", p)
		case v.kind == vAmbig:
			return val{}, t.l.unsupported(at, "%s points to %s, by the path taken to here: a pointer must point to one object where it is used (the checker resolves pointers while lowering)", p, v.fn)
		}
		return v, nil
	case isOpaque(p.typ) || isAggregate(p.typ):
		return val{}, t.l.unsupported(at, "%s (a %s) used as a value", p, typeName(p.typ))
	}
	if !p.obj.global {
		if c, ok := p.obj.consts[p.path]; ok {
			return intVal(litmus.C(c)), nil
		}
		r := t.leafReg(p.obj, p.path, "")
		if c, ok := t.known[r]; ok {
			return intVal(litmus.C(c)), nil
		}
		if t.big[r] {
			return val{}, t.l.unsupported(at, "%s was given a value beyond the -32768..32767 a register holds, and is read here where that value is not known while lowering (after a loop's head or a label): keep such constants out of the code a loop changes", p)
		}
		return intVal(litmus.R(r)), nil
	}
	// A plain read of shared memory: a marked one (docs/kernel-c.md).
	r := t.reg(p.String())
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpReadOnce, Loc: t.l.location(p), Reg: r, Call: "(plain read)"}})
	return intVal(litmus.R(r)), nil
}

// store writes v to a place.
func (t *thread) store(p place, v val, at cc.Node) error {
	if isBool(p.typ) {
		v = toBool(v)
	}
	if p.dyn != nil {
		if !isScalar(p.typ) || v.kind != vInt {
			return t.l.unsupported(at, "a store of %s to %s, chosen at run time", v, p)
		}
		return t.each(p, func(q place) error { return t.store(q, v, at) })
	}
	switch {
	case isPointer(p.typ) || (p.typ != nil && p.typ.Kind() == cc.Function):
		if v.kind == vInt {
			if c, ok := v.isConst(); ok && c == 0 {
				v = val{kind: vNull}
			} else {
				return t.l.unsupported(at, "an integer stored to the pointer %s", p)
			}
		}
		if p.obj.global {
			return t.l.unsupported(at, "a pointer stored to shared memory (%s = %s): give it in the initializer", p, v)
		}
		delete(p.obj.unknown, p.path)
		p.obj.binds[p.path] = v
		return nil
	case isAggregate(p.typ) || isOpaque(p.typ):
		return t.l.unsupported(at, "an assignment of a whole %s (%s)", typeName(p.typ), p)
	}
	if v.kind != vInt {
		return t.l.errf(at, "%s stored to the integer %s", v, p)
	}
	if !p.obj.global {
		delete(p.obj.unknown, p.path)
		delete(p.obj.consts, p.path)
		t.assign(t.leafReg(p.obj, p.path, ""), v.e)
		return nil
	}
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpWriteOnce, Loc: t.l.location(p), Val: fold(v.e), Call: "(plain write)"}})
	return nil
}

// complit is a compound literal, (struct opts){ .a = 1 }: an unnamed local
// of the enclosing function, made and initialised where it stands, as C
// does (C11 6.5.2.5). No name resolves to it, so loops forget what it
// holds (forgetLoop).
func (t *thread) complit(x *cc.PostfixExpression) (place, error) {
	ty := x.Type()
	at := t.l.pos(x)
	o := &object{name: "complit", typ: ty, at: at, regs: map[string]string{}, consts: map[string]int64{}, binds: map[string]val{}}
	if len(t.frames) > 0 {
		o.frame = t.frame()
	}
	t.objs = append(t.objs, o)
	in := &cc.Initializer{Case: cc.InitializerInitList, InitializerList: x.InitializerList, Token: x.Token3}
	if !isAggregate(ty) {
		return place{}, t.l.unsupported(x, "a compound literal of %s, which is not a struct or an array (write the value)", ty)
	}
	if err := t.initLocal(o, "", ty, in); err != nil {
		return place{}, err
	}
	return place{obj: o, typ: ty}, nil
}

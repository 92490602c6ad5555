package kernelc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// Lock-less lists (include/linux/llist.h, lib/llist.c).
//
// The checker resolves pointers while lowering, and an llist is pointers
// stored in shared memory at run time. So an llist here holds nodes of
// file-scope objects of one struct type, each numbered by its place
// among the file-scope objects of that type (declaration order, arrays
// element by element, at most llistMax), and the head is a shared
// location holding the stack of their numbers, newest in the lowest base-4
// digit. The operations are the kernel's, on that word:
//
//   - llist_add(): read the head, then cmpxchg it from what was read to the
//     stack with the node pushed, again until it succeeds (lib/llist.c's
//     llist_add_batch(), a try_cmpxchg loop: fully ordered); it returns
//     whether the list was empty. Adding a node already on the list (which
//     corrupts it in the kernel) fails an assertion.
//   - llist_del_all(): xchg(head, empty) (fully ordered), a list the code
//     holds in a register; llist_reverse_order() reverses its digits.
//   - llist_for_each_entry(pos, list, member): a loop that pops a number
//     per pass and runs the body with pos pointing to that object: the
//     body is lowered once per object that may be on the list.
//   - llist_empty(): READ_ONCE(head) is empty.

// llistMax is the most objects of one type an llist may hold: a stack of
// three base-4 digits is at most 63, within what a location holds.
const llistMax = 3

// llistNodes are the file-scope objects of struct type ty, in declaration
// order (arrays element by element): the objects an llist of ty holds.
func (l *lowerer) llistNodes(n cc.Node, ty cc.Type) ([]place, error) {
	var objs []*object
	for _, o := range l.globals {
		objs = append(objs, o)
	}
	slices.SortFunc(objs, func(a, b *object) int {
		if a.at.Line != b.at.Line {
			return a.at.Line - b.at.Line
		}
		return a.at.Col - b.at.Col
	})
	want := typeName(ty)
	var out []place
	for _, o := range objs {
		switch at := o.typ.(type) {
		case *cc.ArrayType:
			if typeName(at.Elem()) == want {
				for i := int64(0); i < at.Len(); i++ {
					out = append(out, place{obj: o, path: fmt.Sprintf("[%d]", i), typ: at.Elem()})
				}
			}
		default:
			if typeName(o.typ) == want {
				out = append(out, place{obj: o, typ: o.typ})
			}
		}
	}
	if len(out) > llistMax {
		return nil, l.unsupported(n, "%d file-scope objects of %s, which an llist may hold: the checker keeps an llist as a stack of at most %d", len(out), want, llistMax)
	}
	return out, nil
}

// llistHead is the location of an llist_head argument.
func (t *thread) llistHead(x cc.Node, arg cc.ExpressionNode) (string, error) {
	v, err := t.rvalue(arg)
	if err != nil {
		return "", err
	}
	p, err := t.deref(arg, v)
	if err != nil {
		return "", err
	}
	if typeName(p.typ) != "struct llist_head" || !p.obj.global {
		return "", t.l.errf(arg, "%s is not a file-scope struct llist_head", p)
	}
	f, err := t.field(x, p, "__flushproof_llist")
	if err != nil {
		return "", err
	}
	return t.l.location(f), nil
}

// llistAdd is llist_add(new, head).
func llistAdd(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if len(args) != 2 {
		return val{}, t.l.errf(x, "llist_add takes a node and a head")
	}
	v, err := t.rvalue(args[0])
	if err != nil {
		return val{}, err
	}
	node, err := t.deref(args[0], v)
	if err != nil {
		return val{}, err
	}
	cut := strings.LastIndex(node.path, ".")
	if !node.obj.global || typeName(node.typ) != "struct llist_node" || cut < 0 {
		return val{}, t.l.unsupported(args[0], "llist_add of %s: the node must be the struct llist_node field of a file-scope object", node)
	}
	cty, err := t.typeAt(args[0], node.obj.typ, node.path[:cut])
	if err != nil {
		return val{}, err
	}
	nodes, err := t.l.llistNodes(args[0], cty)
	if err != nil {
		return val{}, err
	}
	idx := slices.IndexFunc(nodes, func(p place) bool { return p.obj == node.obj && p.path == node.path[:cut] })
	if idx < 0 {
		return val{}, t.l.errf(args[0], "llist_add of %s, which is not one of the objects of %s", node, typeName(cty))
	}
	id := int64(idx + 1)
	loc, err := t.llistHead(x, args[1])
	if err != nil {
		return val{}, err
	}
	at := t.l.at
	again := fmt.Sprintf("llist_add.%d", t.nlabel)
	t.nlabel++
	t.emit(litmus.Stmt{Label: again}) // a backward goto's: nothing known here
	old := t.reg("llist.first")
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpReadOnce, Loc: loc, Reg: old, Call: "llist_add"}})
	o := litmus.R(old)
	on := litmus.Bin("||", litmus.Bin("||", litmus.Bin("==", litmus.Bin("%", o, litmus.C(4)), litmus.C(id)),
		litmus.Bin("==", litmus.Bin("%", litmus.Bin("/", o, litmus.C(4)), litmus.C(4)), litmus.C(id))),
		litmus.Bin("==", litmus.Bin("/", o, litmus.C(16)), litmus.C(id)))
	t.emit(litmus.Stmt{Check: &litmus.Check{Cond: litmus.Not(on)}}) // the node is not on the list already
	nw := t.reg("llist.new")
	t.assign(nw, litmus.Bin("+", litmus.Bin("*", o, litmus.C(4)), litmus.C(id)))
	r := t.reg("llist.old")
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpCmpxchg, Loc: loc, Reg: r, Expect: o, Val: litmus.R(nw), Call: "llist_add"}})
	delete(t.known, old)
	delete(t.known, r)
	retry, _ := t.sub(func() error {
		t.emit(litmus.Stmt{Goto: again, Line: at.Line, Col: at.Col})
		return nil
	})
	t.emit(litmus.Stmt{If: &litmus.If{Cond: litmus.Bin("!=", litmus.R(r), o), Then: retry}, Line: at.Line, Col: at.Col})
	return intVal(litmus.Bin("==", o, litmus.C(0))), nil
}

// llistDelAll is llist_del_all(head).
func llistDelAll(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if len(args) != 1 {
		return val{}, t.l.errf(x, "llist_del_all takes a head")
	}
	loc, err := t.llistHead(x, args[0])
	if err != nil {
		return val{}, err
	}
	r := t.regIn(nil, "llist") // the list may outlive the call that took it
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpXchg, Loc: loc, Reg: r, Val: litmus.C(0), Call: "llist_del_all"}})
	delete(t.known, r)
	return val{kind: vList, e: litmus.R(r)}, nil
}

// llistEmpty is llist_empty(head).
func llistEmpty(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if len(args) != 1 {
		return val{}, t.l.errf(x, "llist_empty takes a head")
	}
	loc, err := t.llistHead(x, args[0])
	if err != nil {
		return val{}, err
	}
	r := t.reg("llist_empty")
	t.emit(litmus.Stmt{Access: &litmus.Access{Op: litmus.OpReadOnce, Loc: loc, Reg: r, Call: "llist_empty"}})
	delete(t.known, r)
	return intVal(litmus.Bin("==", litmus.R(r), litmus.C(0))), nil
}

// llistReverse is llist_reverse_order(list): its digits reversed.
func llistReverse(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if len(args) != 1 {
		return val{}, t.l.errf(x, "llist_reverse_order takes a list")
	}
	v, err := t.rvalue(args[0])
	if err != nil {
		return val{}, err
	}
	if v.kind == vNull {
		return v, nil
	}
	if v.kind != vList {
		return val{}, t.l.errf(args[0], "llist_reverse_order of %s, not a list llist_del_all took", v)
	}
	e := v.e
	d := func(k int64) litmus.Expr { return litmus.Bin("%", litmus.Bin("/", e, litmus.C(k)), litmus.C(4)) }
	one := litmus.Bin("*", litmus.Bin("<", e, litmus.C(4)), e)
	two := litmus.Bin("*", litmus.Bin("&&", litmus.Bin(">=", e, litmus.C(4)), litmus.Bin("<", e, litmus.C(16))),
		litmus.Bin("+", litmus.Bin("*", d(1), litmus.C(4)), d(4)))
	three := litmus.Bin("*", litmus.Bin(">=", e, litmus.C(16)),
		litmus.Bin("+", litmus.Bin("+", litmus.Bin("*", d(1), litmus.C(16)), litmus.Bin("*", d(4), litmus.C(4))), d(16)))
	r := t.regIn(nil, "llist")
	t.assign(r, litmus.Bin("+", litmus.Bin("+", one, two), three))
	return val{kind: vList, e: litmus.R(r)}, nil
}

// llistEach lowers llist_for_each_entry(pos, list, member) { body }: a
// loop that pops a number per pass, with the body once per object that
// may be on the list, pos pointing to it.
func (t *thread) llistEach(s *cc.IterationStatement, call *cc.PostfixExpression) error {
	at := t.l.at
	args := argList(call)
	if len(args) != 3 {
		return t.l.errf(call, "llist_for_each_entry(pos, node, member)")
	}
	pp, err := t.lvalue(unaddr(args[0]))
	if err != nil {
		return err
	}
	if !isPointer(pp.typ) || pp.obj.global {
		return t.l.errf(args[0], "llist_for_each_entry's cursor %s must be a local pointer", pp)
	}
	cty := pp.typ.(*cc.PointerType).Elem()
	member, err := strconv.Unquote(exprText(args[2]))
	if err != nil {
		return t.l.errf(args[2], "llist_for_each_entry's member %s", exprText(args[2]))
	}
	lv, err := t.rvalue(args[1])
	if err != nil {
		return err
	}
	if lv.kind == vNull {
		return nil // an empty list: no pass
	}
	if lv.kind != vList {
		return t.l.errf(args[1], "llist_for_each_entry over %s, not a list llist_del_all took", lv)
	}
	nodes, err := t.l.llistNodes(s, cty)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := t.field(args[2], n, member); err != nil {
			return err
		}
	}
	it := t.reg("llist.it")
	t.assign(it, lv.e)
	delete(t.known, it)
	id := t.reg("llist.id")
	t.forgetLoop(s)
	before, had := pp.obj.binds[pp.path]
	entry := t.facts()
	t.breaks = append(t.breaks, breakTarget{loop: true})
	body, err := t.sub(func() error {
		t.emit(litmus.Stmt{Assign: &litmus.Assign{Reg: id, Val: litmus.Bin("%", litmus.R(it), litmus.C(4))}, Line: at.Line, Col: at.Col})
		t.emit(litmus.Stmt{Assign: &litmus.Assign{Reg: it, Val: litmus.Bin("/", litmus.R(it), litmus.C(4))}, Line: at.Line, Col: at.Col})
		for i, n := range nodes {
			t.restore(entry)
			pp.obj.binds[pp.path] = val{kind: vPtr, p: n}
			arm, err := t.sub(func() error { return t.stmt(s.Statement) })
			if err != nil {
				return err
			}
			// The cursor aside, a pointer the body changes would differ
			// from one pass to the next.
			delete(pp.obj.binds, pp.path)
			if had {
				pp.obj.binds[pp.path] = before
			}
			if what := t.bindsChanged(entry); what != "" {
				return t.l.unsupported(s, "in this loop %s: a pointer must point to one object for the whole loop (the checker resolves pointers while lowering, once for every iteration)", what)
			}
			t.emit(litmus.Stmt{If: &litmus.If{Cond: litmus.Bin("==", litmus.R(id), litmus.C(int64(i+1))), Then: arm}, Line: at.Line, Col: at.Col})
		}
		return nil
	})
	t.breaks = t.breaks[:len(t.breaks)-1]
	if err != nil {
		return err
	}
	t.emit(litmus.Stmt{Loop: &litmus.Loop{Cond: litmus.Bin("!=", litmus.R(it), litmus.C(0)), Body: body}, Line: at.Line, Col: at.Col})
	t.forgetLoop(s)
	delete(pp.obj.binds, pp.path) // past the list's end: no object
	return nil
}

// unaddr is e without a leading &.
func unaddr(e cc.ExpressionNode) cc.ExpressionNode {
	for n := e; n != nil; {
		if u, ok := n.(*cc.UnaryExpression); ok && u.Case == cc.UnaryExpressionAddrof {
			return u.CastExpression
		}
		in := inner(n)
		if in == nil {
			break
		}
		n = in
	}
	return e
}

// typeAt is the type of the part of an object of type ty at path
// (".a", "[2].b").
func (t *thread) typeAt(n cc.Node, ty cc.Type, path string) (cc.Type, error) {
	for path != "" {
		switch {
		case strings.HasPrefix(path, "."):
			name := path[1:]
			if i := strings.IndexAny(name, ".["); i >= 0 {
				name = name[:i]
			}
			st, ok := ty.(*cc.StructType)
			if !ok || st.FieldByName(name) == nil {
				return nil, t.l.errf(n, "%s has no field %s", typeName(ty), name)
			}
			ty, path = st.FieldByName(name).Type(), path[1+len(name):]
		case strings.HasPrefix(path, "["):
			at, ok := ty.(*cc.ArrayType)
			end := strings.Index(path, "]")
			if !ok || end < 0 {
				return nil, t.l.errf(n, "%s is not an array", typeName(ty))
			}
			ty, path = at.Elem(), path[end+1:]
		default:
			return nil, t.l.errf(n, "a path %s", path)
		}
	}
	return ty, nil
}

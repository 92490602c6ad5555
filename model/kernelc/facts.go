package kernelc

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"modernc.org/cc/v4"
)

// What lowering knows at a point of a task's code, flowing along it:
// which registers hold a known constant, and which object each local
// pointer points to. Where paths meet (after an if, at a label only
// forward gotos reach) what they agree on stays known; a pointer that
// points to different objects on different paths is ambiguous there,
// and using it is an error (the checker resolves pointers while
// lowering). A loop's head is reached from its end too: a constant is
// forgotten there, and a pointer the loop points elsewhere is an error.

// facts is what is known at a point.
type facts struct {
	known map[string]int64
	binds map[*object]map[string]val // the local objects' pointer leaves
}

// facts returns a copy of what is known now.
func (t *thread) facts() *facts {
	f := &facts{known: maps.Clone(t.known), binds: map[*object]map[string]val{}}
	for _, o := range t.objs {
		f.binds[o] = maps.Clone(o.binds)
	}
	return f
}

// restore makes f what is known now (objects made since keep theirs).
func (t *thread) restore(f *facts) {
	t.known = maps.Clone(f.known)
	for o, b := range f.binds {
		o.binds = maps.Clone(b)
	}
}

// meetFacts is what a and b agree on.
func meetFacts(a, b *facts) *facts {
	f := &facts{known: meetKnown(a.known, b.known), binds: map[*object]map[string]val{}}
	for o, ba := range a.binds {
		bb, ok := b.binds[o]
		if !ok {
			continue
		}
		m := map[string]val{}
		for _, path := range slices.Sorted(maps.Keys(ba)) {
			va := ba[path]
			vb, ok := bb[path]
			switch {
			case ok && va.same(vb):
				m[path] = va
			case ok:
				m[path] = ambiguous(va, vb)
			default:
				m[path] = ambiguous(va, val{kind: vVoid})
			}
		}
		for path, vb := range bb {
			if _, ok := ba[path]; !ok {
				m[path] = ambiguous(val{kind: vVoid}, vb)
			}
		}
		f.binds[o] = m
	}
	return f
}

// ambiguous is a pointer that points to a on one path and b on another.
func ambiguous(a, b val) val {
	if a.kind == vAmbig {
		a, b = b, a
	}
	s := map[string]bool{}
	for _, v := range []val{a, b} {
		if v.kind == vAmbig {
			for _, p := range strings.Split(v.fn, " or ") {
				s[p] = true
			}
			continue
		}
		if v.kind == vVoid {
			s["nothing yet"] = true
			continue
		}
		s[v.String()] = true
	}
	return val{kind: vAmbig, fn: strings.Join(slices.Sorted(maps.Keys(s)), " or ")}
}

// bindsChanged names a pointer whose object differs between before and
// now, "" if none did.
func (t *thread) bindsChanged(before *facts) string {
	for _, o := range t.objs {
		b, ok := before.binds[o]
		if !ok {
			continue
		}
		for _, path := range slices.Sorted(maps.Keys(o.binds)) {
			if v, ok := b[path]; ok && !v.same(o.binds[path]) {
				return fmt.Sprintf("%s%s points to %s, then to %s", o.name, path, v, o.binds[path])
			}
		}
	}
	return ""
}

// cLabels tells, for a function's C labels, which a goto after them can
// reach again (a backward goto): what is known there is not only what
// the code before it knew.
func cLabels(cs *cc.CompoundStatement) map[string]bool {
	labels := map[string][2]int{}
	var walk func(s *cc.Statement)
	walk = func(s *cc.Statement) {
		if s == nil {
			return
		}
		switch s.Case {
		case cc.StatementLabeled:
			ls := s.LabeledStatement
			if ls.Case == cc.LabeledStatementLabel {
				p := ls.Token.Position()
				labels[ls.Token.SrcStr()] = [2]int{p.Line, p.Column}
			}
			walk(ls.Statement)
		case cc.StatementCompound:
			for bil := s.CompoundStatement.BlockItemList; bil != nil; bil = bil.BlockItemList {
				if bil.BlockItem.Case == cc.BlockItemStmt {
					walk(bil.BlockItem.Statement)
				}
			}
		case cc.StatementSelection:
			walk(s.SelectionStatement.Statement)
			walk(s.SelectionStatement.Statement2)
		case cc.StatementIteration:
			walk(s.IterationStatement.Statement)
		}
	}
	for bil := cs.BlockItemList; bil != nil; bil = bil.BlockItemList {
		if bil.BlockItem.Case == cc.BlockItemStmt {
			walk(bil.BlockItem.Statement)
		}
	}
	backward := map[string]bool{}
	for _, g := range cs.Gotos() {
		if g.Case != cc.JumpStatementGoto {
			continue
		}
		name := g.Token2.SrcStr()
		at, ok := labels[name]
		p := g.Position()
		if !ok || p.Line > at[0] || p.Line == at[0] && p.Column > at[1] {
			backward[name] = true
		}
	}
	return backward
}

// cHasLabel reports whether a statement holds a label a goto or a switch
// can jump to.
func cHasLabel(s *cc.Statement) bool {
	if s == nil {
		return false
	}
	switch s.Case {
	case cc.StatementLabeled:
		return true
	case cc.StatementCompound:
		for bil := s.CompoundStatement.BlockItemList; bil != nil; bil = bil.BlockItemList {
			if bil.BlockItem.Case == cc.BlockItemStmt && cHasLabel(bil.BlockItem.Statement) {
				return true
			}
		}
	case cc.StatementSelection:
		return cHasLabel(s.SelectionStatement.Statement) || cHasLabel(s.SelectionStatement.Statement2)
	case cc.StatementIteration:
		return cHasLabel(s.IterationStatement.Statement)
	}
	return false
}

// forgetLoop forgets, at a loop's head and after it, what the loop may
// change: the registers of every local the loop assigns (by its name,
// through its fields and elements), of every local whose address is
// taken anywhere (a pointer, or a call, may change it), and every
// register no local holds (temporaries). What the loop leaves alone
// stays known, so a flag set before the loop is still a constant in it.
func (t *thread) forgetLoop(s *cc.IterationStatement) {
	assigned := map[*cc.Declarator]bool{}
	walkAssigned(reflect.ValueOf(s), assigned, map[uintptr]bool{})
	keep := map[string]bool{}
	for _, o := range t.objs {
		if o.decl == nil || assigned[o.decl] || o.decl.AddressTaken() {
			continue
		}
		for _, r := range o.regs {
			keep[r] = true
		}
	}
	for r := range t.known {
		if !keep[r] {
			delete(t.known, r)
		}
	}
}

// walkAssigned records the declarators of the names assigned in a syntax
// tree: the object an assignment, ++ or -- writes, when it is a name with
// fields and constant or run-time indexes after it (a write through a
// pointer changes an object whose address is taken: forgetLoop forgets
// those anyway).
func walkAssigned(v reflect.Value, out map[*cc.Declarator]bool, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			if seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
		}
		switch n := v.Interface().(type) {
		case *cc.AssignmentExpression:
			if n.Case != cc.AssignmentExpressionCond {
				rootName(n.UnaryExpression, out)
			}
		case *cc.UnaryExpression:
			if n.Case == cc.UnaryExpressionInc || n.Case == cc.UnaryExpressionDec {
				rootName(n.UnaryExpression, out)
			}
		case *cc.PostfixExpression:
			if n.Case == cc.PostfixExpressionInc || n.Case == cc.PostfixExpressionDec {
				rootName(n.PostfixExpression, out)
			}
		}
		walkAssigned(v.Elem(), out, seen)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				walkAssigned(v.Field(i), out, seen)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkAssigned(v.Index(i), out, seen)
		}
	}
}

// rootName records the declarator of the name an lvalue starts from
// (x in x.f[2].g), if it starts from one.
func rootName(n cc.ExpressionNode, out map[*cc.Declarator]bool) {
	for n != nil {
		switch x := n.(type) {
		case *cc.PostfixExpression:
			if x.Case == cc.PostfixExpressionSelect || x.Case == cc.PostfixExpressionIndex {
				n = x.PostfixExpression
				continue
			}
		case *cc.PrimaryExpression:
			if x.Case == cc.PrimaryExpressionIdent {
				if d, ok := x.ResolvedTo().(*cc.Declarator); ok {
					out[d] = true
				}
				return
			}
		}
		// Through a wrapper; through a pointer (->, *) or a call there is
		// no name: an address-taken object, which forgetLoop forgets.
		n = inner(n)
	}
}

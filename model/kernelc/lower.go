package kernelc

import (
	"fmt"
	"path/filepath"
	"strings"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// Lowering: a harness's tasks, with every function they call inlined, as
// the threads of a litmus.Test. C locals become registers, the leaves of
// file-scope objects shared locations, pointers the objects they point to
// (resolved while lowering, never at run time), and each call of a
// primitive of flushproof/kernel.h the litmus statement it is.

// Parse reads a kernel C harness: the file's functions, the tasks its
// harness() function spawns, and its header comment (Expect, Device,
// Failures, Crash, Models, as a durability litmus file has them). What
// the checker cannot resolve or express is a *litmus.Error at the
// file's line and column.
func Parse(file string, src []byte) (*litmus.Test, error) {
	return parseAs(file, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), src)
}

// parseAs is Parse with the test's name given (a patched file's errors
// name the file with its patches; its test is named by the file).
func parseAs(file, name string, src []byte) (*litmus.Test, error) {
	hdr, err := headerComment(file, src)
	if err != nil {
		return nil, err
	}
	ast, err := translate(file, src)
	if err != nil {
		return nil, err
	}
	l := &lowerer{
		file:     file,
		ast:      ast,
		funcs:    map[string]*cc.FunctionDefinition{},
		globals:  map[string]*object{},
		locIndex: map[string]int{},
		test:     &litmus.Test{Name: name, File: file, Init: map[string]int64{}, Header: hdr},
	}
	if err := l.file1(); err != nil {
		return nil, err
	}
	return l.test, nil
}

type lowerer struct {
	file     string
	ast      *cc.AST
	at       litmus.Pos // where the statement being lowered stands
	funcs    map[string]*cc.FunctionDefinition
	globals  map[string]*object
	locIndex map[string]int
	test     *litmus.Test
	th       *thread // the thread being lowered
	endIOs   []endIO // the actors of the submit_bio calls (endio.go)
}

// object is a C object: a file-scope variable (global: its scalar leaves
// are shared locations) or a local of one inlined call (its scalar leaves
// are registers of the thread).
type object struct {
	name   string
	decl   *cc.Declarator // a local's declarator
	typ    cc.Type
	global bool
	at     litmus.Pos
	regs   map[string]string // local: a leaf's path -> its register
	consts map[string]int64  // local: a leaf that is a constant (a parameter never written)
	binds  map[string]val    // a pointer leaf's path -> what it points to
	init   map[string]int64  // global: a leaf's initial value
	// unknown: a local leaf whose value is not known to this task, and
	// why (the bio a bi_end_io sees: endio.go); reading it is an error.
	unknown map[string]string
	// frame is the call a local belongs to, which frees its registers
	// when it returns; nil for one that lives as long as its task.
	frame *frame
}

// place is an lvalue: a leaf (or aggregate) of an object, by path
// (".bi_iter.bi_sector", "[2]").
type place struct {
	obj  *object
	path string
	typ  cc.Type
	// dyn is an array index known only at run time: the path holds
	// "[*]" for it, and a load or store is one per element, chosen by
	// the index (dynamic).
	dyn *dynIndex
}

// dynIndex is an array index computed at run time, and the array's
// length.
type dynIndex struct {
	e litmus.Expr
	n int64
}

func (p place) String() string { return p.obj.name + p.path }

type vkind uint8

const (
	vInt   vkind = iota + 1 // an integer: e
	vPtr                    // a pointer to p
	vFunc                   // a function designator: fn
	vNull                   // the null pointer
	vVoid                   // no value
	vAmbig                  // a pointer to one object or another, by the path taken: fn says which
	vList                   // an llist taken off its head (llist_del_all): e holds its nodes (llist.go)
)

// val is the value of a C expression while lowering: an integer
// expression over registers and constants, or a pointer resolved to its
// object.
type val struct {
	kind vkind
	e    litmus.Expr
	p    place
	fn   string
}

func intVal(e litmus.Expr) val { return val{kind: vInt, e: e} }

// isConst reports whether v is an integer constant, and which.
func (v val) isConst() (int64, bool) {
	if v.kind == vInt && v.e.IsConst {
		return v.e.Const, true
	}
	return 0, false
}

func (v val) same(o val) bool {
	if v.kind != o.kind {
		return false
	}
	switch v.kind {
	case vPtr:
		return v.p.obj == o.p.obj && v.p.path == o.p.path
	case vFunc:
		return v.fn == o.fn
	case vInt, vList:
		return v.e.String() == o.e.String()
	}
	return true
}

func (v val) String() string {
	switch v.kind {
	case vPtr:
		return "&" + v.p.String()
	case vFunc:
		return v.fn
	case vNull:
		return "NULL"
	case vVoid:
		return "void"
	case vAmbig:
		return v.fn
	case vList:
		return "the llist in " + v.e.String()
	}
	return v.e.String()
}

// file1 reads the file scope: functions, globals, then harness().
func (l *lowerer) file1() error {
	var harness, recovery *cc.FunctionDefinition
	for tu := l.ast.TranslationUnit; tu != nil; tu = tu.TranslationUnit {
		ed := tu.ExternalDeclaration
		switch ed.Case {
		case cc.ExternalDeclarationFuncDef:
			fd := ed.FunctionDefinition
			name := fd.Declarator.Name()
			switch name {
			case "harness":
				harness = fd
				continue
			case "recovery":
				recovery = fd
				continue
			}
			l.funcs[name] = fd
		case cc.ExternalDeclarationDecl:
			if err := l.globalDecl(ed.Declaration); err != nil {
				return err
			}
		}
	}
	if harness == nil {
		return &litmus.Error{File: l.file, Line: 1, Col: 1, Msg: "no harness() function: a harness says which tasks run, void harness(void) { spawn(task, 0); spawn(task, 1); } (docs/kernel-c.md)"}
	}
	if err := l.harness(harness); err != nil {
		return err
	}
	if recovery != nil {
		if err := l.recovery(recovery); err != nil {
			return err
		}
	}
	l.foldUnwritten()
	return nil
}

// foldUnwritten turns a READ_ONCE (or plain read) of a location no task
// writes into the assignment of its initial value, the only value any
// model lets it read, and drops a location nothing then accesses: a
// file-scope object that only configures the code (a flag, a mount's
// options) costs no location and no step. An acquire load keeps its
// step: its ordering stays.
func (l *lowerer) foldUnwritten() {
	written := map[string]bool{}
	accessed := map[string]bool{}
	var scan func(body []litmus.Stmt)
	scan = func(body []litmus.Stmt) {
		for _, s := range body {
			switch {
			case s.Access != nil && s.Access.Loc != "":
				accessed[s.Access.Loc] = true
				if s.Access.Op.Info().Writes {
					written[s.Access.Loc] = true
				}
			case s.Dev != nil && s.Dev.Load != nil:
				accessed[s.Dev.Load.Loc] = true
				if s.Dev.Load.Op.Info().Writes {
					written[s.Dev.Load.Loc] = true
				}
			case s.If != nil:
				scan(s.If.Then)
				scan(s.If.Else)
			case s.Loop != nil:
				scan(s.Loop.Body)
				scan(s.Loop.Post)
			}
		}
	}
	bodies := []*[]litmus.Stmt{}
	for i := range l.test.Threads {
		bodies = append(bodies, &l.test.Threads[i].Body)
	}
	if l.test.Recovery != nil {
		bodies = append(bodies, &l.test.Recovery.Body)
	}
	for _, b := range bodies {
		scan(*b)
	}
	var fold func(body []litmus.Stmt)
	fold = func(body []litmus.Stmt) {
		for i := range body {
			s := &body[i]
			switch {
			case s.Access != nil && s.Access.Op == litmus.OpReadOnce && s.Access.Reg != "" && !written[s.Access.Loc]:
				s.Assign = &litmus.Assign{Reg: s.Access.Reg, Val: litmus.C(l.test.Init[s.Access.Loc])}
				s.Access = nil
			case s.If != nil:
				fold(s.If.Then)
				fold(s.If.Else)
			case s.Loop != nil:
				fold(s.Loop.Body)
				fold(s.Loop.Post)
			}
		}
	}
	for _, b := range bodies {
		fold(*b)
	}
	clear(accessed)
	for _, b := range bodies {
		scan(*b)
	}
	var locs []string
	var at []litmus.Pos
	for i, loc := range l.test.Locs {
		if accessed[loc] {
			locs = append(locs, loc)
			at = append(at, l.test.LocAt[i])
			continue
		}
		delete(l.test.Init, loc)
	}
	l.test.Locs, l.test.LocAt = locs, at
}

// recovery lowers recovery(): code that runs alone on each crash image
// (litmus.Test.Recovery).
func (l *lowerer) recovery(fn *cc.FunctionDefinition) error {
	ft := fn.Declarator.Type().(*cc.FunctionType)
	if ps := ft.Parameters(); len(ps) > 1 || len(ps) == 1 && ps[0].Type().Kind() != cc.Void {
		return l.errf(fn, "recovery() takes no parameters")
	}
	var body []litmus.Stmt
	t := &thread{l: l, index: len(l.test.Threads), out: &body, regs: map[string]bool{}, known: map[string]int64{}, recovery: true}
	l.th = t
	defer func() { l.th = nil }()
	if err := t.body(t.newFrame(fn, true), fn.CompoundStatement); err != nil {
		return err
	}
	p := l.pos(fn)
	l.test.Recovery = &litmus.Thread{Body: body, Line: p.Line, Col: p.Col}
	return nil
}

// globalDecl makes the file-scope objects of a declaration (functions'
// prototypes and typedefs aside) with their initial values.
func (l *lowerer) globalDecl(d *cc.Declaration) error {
	if d.Case != cc.DeclarationDecl {
		return nil
	}
	for list := d.InitDeclaratorList; list != nil; list = list.InitDeclaratorList {
		id := list.InitDeclarator
		dr := id.Declarator
		if dr.IsTypename() || dr.Type().Kind() == cc.Function {
			continue
		}
		if dr.Position().Filename != l.file {
			continue // the header's, the predefined's, the end's
		}
		name := dr.Name()
		o := l.globals[name]
		if o == nil {
			o = &object{name: name, typ: dr.Type(), global: true, at: l.pos(dr), binds: map[string]val{}, init: map[string]int64{}}
			l.globals[name] = o
		}
		if id.Initializer != nil {
			if err := l.initialize(o, "", dr.Type(), id.Initializer, l.globalLeaf); err != nil {
				return err
			}
		}
	}
	return nil
}

// globalLeaf records one leaf of a file-scope object's initializer: a
// constant for an integer, an object or function for a pointer.
func (l *lowerer) globalLeaf(o *object, path string, t cc.Type, in *cc.Initializer) error {
	if isPointer(t) || t.Kind() == cc.Function {
		v, err := l.staticPointer(in.AssignmentExpression)
		if err != nil {
			return err
		}
		o.binds[path] = v
		return nil
	}
	if !isScalar(t) {
		return l.unsupported(in, "an initial value for %s%s, a %s", o.name, path, typeName(t))
	}
	c, ok := constValue(in.AssignmentExpression)
	if !ok {
		return l.errf(in, "the initial value of %s%s is not a constant", o.name, path)
	}
	o.init[path] = c
	return nil
}

// initialize walks an initializer to its leaves, calling leaf for each
// (positional or designated, fields in order, as C reads them).
func (l *lowerer) initialize(o *object, path string, t cc.Type, in *cc.Initializer, leaf func(*object, string, cc.Type, *cc.Initializer) error) error {
	if in.Case == cc.InitializerExpr {
		if isAggregate(t) {
			return l.unsupported(in, "a struct or array initialised from an expression (give its fields: { .f = 1 })")
		}
		return leaf(o, path, t, in)
	}
	if isOpaque(t) {
		// ATOMIC_INIT(i) is { (i) }: an atomic's one word, which the
		// checker keeps as the leaf itself.
		il := in.InitializerList
		if il == nil || il.InitializerList != nil || il.Designation != nil || il.Initializer.Case != cc.InitializerExpr {
			return l.unsupported(in, "an initializer of %s other than { value } (ATOMIC_INIT)", typeName(t))
		}
		if !isAtomicType(t) {
			return l.unsupported(in, "an initial value for a %s", typeName(t))
		}
		return leaf(o, path, l.ast.Int, il.Initializer)
	}
	// { ... }: positional or designated, fields in order.
	next := 0
	for il := in.InitializerList; il != nil; il = il.InitializerList {
		sub, subT := "", cc.Type(nil)
		if il.Designation != nil {
			dl := il.Designation.DesignatorList
			if dl.DesignatorList != nil {
				return l.unsupported(il, "a nested designator (.a.b = ...): write { .a = { .b = ... } }")
			}
			ds := dl.Designator
			switch ds.Case {
			case cc.DesignatorField, cc.DesignatorField2:
				st, ok := t.(*cc.StructType)
				if !ok {
					return l.errf(ds, "a field designator in the initializer of %s%s, which is not a struct", o.name, path)
				}
				name := ds.Token2.SrcStr()
				if ds.Case == cc.DesignatorField2 {
					name = ds.Token.SrcStr()
				}
				f := st.FieldByName(name)
				if f == nil {
					return l.errf(ds, "%s has no field %s", t, name)
				}
				sub, subT, next = path+"."+name, f.Type(), f.Index()+1
			case cc.DesignatorIndex:
				at, ok := t.(*cc.ArrayType)
				if !ok {
					return l.errf(ds, "an index designator in the initializer of %s%s, which is not an array", o.name, path)
				}
				i, ok := constValue(ds.ConstantExpression)
				if !ok || i < 0 || i >= at.Len() {
					return l.errf(ds, "index out of %s's bounds", t)
				}
				sub, subT, next = fmt.Sprintf("%s[%d]", path, i), at.Elem(), int(i)+1
			default:
				return l.unsupported(ds, "a range designator")
			}
		} else {
			switch tt := t.(type) {
			case *cc.StructType:
				f := tt.NamedFieldByIndex(next)
				if f == nil {
					return l.errf(il, "too many values in the initializer of %s%s", o.name, path)
				}
				sub, subT = path+"."+f.Name(), f.Type()
			case *cc.ArrayType:
				if int64(next) >= tt.Len() {
					return l.errf(il, "too many values in the initializer of %s%s", o.name, path)
				}
				sub, subT = fmt.Sprintf("%s[%d]", path, next), tt.Elem()
			default:
				if next > 0 {
					return l.errf(il, "too many values in the initializer of %s%s", o.name, path)
				}
				sub, subT = path, t
			}
			next++
		}
		if err := l.initialize(o, sub, subT, il.Initializer, leaf); err != nil {
			return err
		}
	}
	return nil
}

// staticPointer is the value of a pointer initializer: &object(.field),
// an array or function name, or NULL.
func (l *lowerer) staticPointer(n cc.ExpressionNode) (val, error) {
	if c, ok := constValue(n); ok && c == 0 {
		return val{kind: vNull}, nil
	}
	t := &thread{l: l, regs: map[string]bool{}, known: map[string]int64{}}
	var out []litmus.Stmt
	t.out = &out
	saved := l.th
	l.th = t
	defer func() { l.th = saved }()
	v, err := t.rvalue(n)
	if err != nil {
		return val{}, err
	}
	if len(out) > 0 || (v.kind != vPtr && v.kind != vFunc && v.kind != vNull) {
		return val{}, l.errf(n, "a pointer's initial value must be the address of an object, a function or NULL")
	}
	return v, nil
}

// harness reads harness(): each spawn(fn, args...) is a thread.
func (l *lowerer) harness(fd *cc.FunctionDefinition) error {
	var daemons []string
	for bil := fd.CompoundStatement.BlockItemList; bil != nil; bil = bil.BlockItemList {
		bi := bil.BlockItem
		if bi.Case == cc.BlockItemDecl && implicitDecl(bi.Declaration) {
			continue
		}
		if bi.Case != cc.BlockItemStmt || bi.Statement.Case != cc.StatementExpr || bi.Statement.ExpressionStatement.ExpressionList == nil {
			return l.errf(bi, "harness() holds only spawn(task, args...) and spawn_daemon(task, args...) calls")
		}
		call, ok := callOf(bi.Statement.ExpressionStatement.ExpressionList)
		if !ok {
			return l.errf(bi, "harness() holds only spawn(task, args...) and spawn_daemon(task, args...) calls")
		}
		callee := calleeName(call)
		if callee != "spawn" && callee != "spawn_daemon" {
			return l.errf(call, "harness() holds only spawn(task, args...) and spawn_daemon(task, args...) calls, not %s()", callee)
		}
		args := argList(call)
		if len(args) == 0 {
			return l.errf(call, "%s() needs the task's function", callee)
		}
		fnName := identName(args[0])
		fn := l.funcs[fnName]
		if fn == nil {
			return l.errf(args[0], "%s(%s...): the task must be a function defined in the file", callee, exprText(args[0]))
		}
		if len(l.test.Threads) == 8 {
			return l.unsupported(call, "a 9th task; the checker runs at most 8 threads")
		}
		if callee == "spawn_daemon" {
			daemons = append(daemons, fmt.Sprintf("P%d", len(l.test.Threads)))
		}
		if err := l.thread(fn, args[1:], call); err != nil {
			return err
		}
	}
	if len(l.test.Threads) == 0 {
		return l.errf(fd, "harness() spawns no task")
	}
	actors, err := l.endIOThreads()
	if err != nil {
		return err
	}
	daemons = append(daemons, actors...)
	if len(daemons) > 0 {
		if l.test.Header == nil {
			l.test.Header = map[string]litmus.HeaderField{}
		}
		if f, ok := l.test.Header["daemons"]; ok {
			return &litmus.Error{File: l.file, Line: f.Line, Col: f.Col, Msg: "a Daemons: line in the header of a harness: spawn_daemon() says which tasks are daemons"}
		}
		p := l.pos(fd)
		l.test.Header["daemons"] = litmus.HeaderField{Value: strings.Join(daemons, ", "), Line: p.Line, Col: p.Col}
	}
	return nil
}

// thread lowers one task: fn called with args (constants, or addresses
// of file-scope objects).
func (l *lowerer) thread(fn *cc.FunctionDefinition, args []cc.ExpressionNode, at cc.Node) error {
	var body []litmus.Stmt
	t := &thread{l: l, index: len(l.test.Threads), out: &body, regs: map[string]bool{}, known: map[string]int64{}}
	l.th = t
	defer func() { l.th = nil }()
	p := l.pos(at)
	regInit := map[string]int64{}
	regAt := map[string]litmus.Pos{}
	ft := fn.Declarator.Type().(*cc.FunctionType)
	params := ft.Parameters()
	if len(params) == 1 && params[0].Type().Kind() == cc.Void {
		params = nil
	}
	if len(args) != len(params) {
		return l.errf(at, "%s takes %d arguments, spawned with %d", fn.Declarator.Name(), len(params), len(args))
	}
	fr := t.newFrame(fn, true)
	for i, prm := range params {
		if prm.Declarator == nil {
			return l.errf(fn, "a task's parameters need names")
		}
		o := fr.local(prm.Declarator, l.pos(prm.Declarator))
		switch {
		case isPointer(prm.Type()):
			v, err := l.staticPointer(args[i])
			if err != nil {
				return err
			}
			o.binds[""] = v
		case isScalar(prm.Type()):
			c, ok := constValue(args[i])
			if !ok {
				return l.errf(args[i], "a task's argument must be a constant or the address of a file-scope object")
			}
			r := t.leafReg(o, "", prm.Name())
			regInit[r] = c
			regAt[r] = litmus.Pos{Line: p.Line, Col: p.Col}
		default:
			return l.unsupported(args[i], "a task's parameter of type %s", prm.Type())
		}
	}
	if err := t.body(fr, fn.CompoundStatement); err != nil {
		return err
	}
	for len(l.test.RegInit) < t.index {
		l.test.RegInit = append(l.test.RegInit, map[string]int64{})
		l.test.RegInitAt = append(l.test.RegInitAt, map[string]litmus.Pos{})
	}
	l.test.RegInit = append(l.test.RegInit, regInit)
	l.test.RegInitAt = append(l.test.RegInitAt, regAt)
	l.test.Threads = append(l.test.Threads, litmus.Thread{Body: body, Line: p.Line, Col: p.Col})
	return nil
}

// location returns the shared location of a global leaf, naming it on
// first use.
func (l *lowerer) location(p place) string {
	name := p.String()
	if _, ok := l.locIndex[name]; !ok {
		l.locIndex[name] = len(l.test.Locs)
		l.test.Locs = append(l.test.Locs, name)
		l.test.LocAt = append(l.test.LocAt, p.obj.at)
		if v := p.obj.init[p.path]; v != 0 {
			l.test.Init[name] = v
		}
	}
	return name
}

// implicitDecl reports whether a declaration is one the compiler makes
// (__func__), not the file's.
func implicitDecl(d *cc.Declaration) bool {
	for list := d.InitDeclaratorList; list != nil; list = list.InitDeclaratorList {
		dr := list.InitDeclarator.Declarator
		if !dr.IsSynthetic() && dr.Name() != "__func__" {
			return false
		}
	}
	return d.InitDeclaratorList != nil
}

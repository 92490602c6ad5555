package kernelc

import (
	"strconv"
	"strings"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/spec"
)

// call lowers a function call: a function of the file is inlined, a
// primitive of flushproof/kernel.h becomes its statement, a trace_*
// call is a no-op; anything else is an error (write it as a stub).
func (t *thread) call(x *cc.PostfixExpression) (val, error) {
	saved := t.l.at
	t.l.at = t.l.pos(x)
	defer func() { t.l.at = saved }()
	name := funcName(x.PostfixExpression)
	if name == "" {
		// A call through a pointer: it must be known.
		v, err := t.rvalue(x.PostfixExpression)
		if err != nil {
			return val{}, err
		}
		if v.kind != vFunc {
			return val{}, t.l.errf(x, "a call through %s, which is not a function the checker resolved", exprText(x.PostfixExpression))
		}
		name = v.fn
	}
	args := argList(x)
	if fn := t.l.funcs[name]; fn != nil {
		return t.inline(x, fn, args)
	}
	if p, ok := prims[name]; ok {
		return p(t, x, name, args)
	}
	if op, ok := atomicCall(name); ok {
		return t.atomic(x, name, op, args)
	}
	if strings.HasPrefix(name, "trace_") {
		return val{kind: vVoid}, nil
	}
	if strings.HasPrefix(name, "atomic") {
		return val{}, t.l.unsupported(x, "%s: the checker's memory has add, xchg and cmpxchg read-modify-writes, not this one (docs/kernel-c.md lists the atomics)", name)
	}
	return val{}, t.l.errf(x, "%s() is neither defined in the file nor a primitive of flushproof/kernel.h: paste its kernel code or write it as a stub in C%s", name, litmus.DidYouMean(name, t.l.names()))
}

// names are the functions and primitives a call may name, for "did you
// mean".
func (l *lowerer) names() []string {
	var out []string
	for n := range l.funcs {
		out = append(out, n)
	}
	for n := range prims {
		if !strings.HasPrefix(n, "__") {
			out = append(out, n)
		}
	}
	return out
}

// maxInlined bounds the calls inlined into one task (a function that
// calls another twice, 20 levels deep, is a million calls).
const maxInlined = 2000

// inline lowers a call of a function of the file in place.
func (t *thread) inline(x *cc.PostfixExpression, fn *cc.FunctionDefinition, args []cc.ExpressionNode) (val, error) {
	name := fn.Declarator.Name()
	for _, f := range t.frames {
		if f.def == fn {
			return val{}, t.l.unsupported(x, "%s calls itself (recursion): the checker inlines every call", name)
		}
	}
	if len(t.frames) >= 32 {
		return val{}, t.l.unsupported(x, "calls nested more than 32 deep")
	}
	if t.inlined++; t.inlined > maxInlined {
		return val{}, t.l.unsupported(x, "more than %d calls inlined into one task: the checker inlines every call, and this much code is past what it can search", maxInlined)
	}
	ft := fn.Declarator.Type().(*cc.FunctionType)
	params := ft.Parameters()
	if len(params) == 1 && params[0].Type().Kind() == cc.Void {
		params = nil
	}
	if len(args) != len(params) {
		return val{}, t.l.errf(x, "%s takes %d arguments, called with %d", name, len(params), len(args))
	}
	vals := make([]val, len(args))
	for i, a := range args {
		v, err := t.rvalue(a)
		if err != nil {
			return val{}, err
		}
		vals[i] = v
	}
	return t.inlineArgs(x, fn, vals, args)
}

// inlineVals lowers a call of fn, of the file, with the arguments' values
// given (the actor of a bi_end_io calls it on the bio).
func (t *thread) inlineVals(x cc.Node, fn *cc.FunctionDefinition, vals []val) (val, error) {
	ft := fn.Declarator.Type().(*cc.FunctionType)
	params := ft.Parameters()
	if len(params) == 1 && params[0].Type().Kind() == cc.Void {
		params = nil
	}
	if len(vals) != len(params) {
		return val{}, t.l.errf(fn, "%s takes %d arguments, called with %d", fn.Declarator.Name(), len(params), len(vals))
	}
	args := make([]cc.ExpressionNode, len(vals))
	return t.inlineArgs(x, fn, vals, args)
}

// inlineArgs is inline once the arguments are values; args are where
// they stand (nil where none does: errors are then at x).
func (t *thread) inlineArgs(x cc.Node, fn *cc.FunctionDefinition, vals []val, args []cc.ExpressionNode) (val, error) {
	name := fn.Declarator.Name()
	ft := fn.Declarator.Type().(*cc.FunctionType)
	params := ft.Parameters()
	if len(params) == 1 && params[0].Type().Kind() == cc.Void {
		params = nil
	}
	argAt := func(i int) cc.Node {
		if args[i] == nil {
			return x
		}
		return args[i]
	}
	f := t.newFrame(fn, false)
	for i, prm := range params {
		if prm.Declarator == nil {
			continue // an unnamed parameter is never read
		}
		o := f.local(prm.Declarator, t.l.pos(prm.Declarator))
		pt := prm.Type()
		switch {
		case isPointer(pt) || pt.Kind() == cc.Function:
			if vals[i].kind == vInt {
				if c, ok := vals[i].isConst(); ok && c == 0 {
					vals[i] = val{kind: vNull}
				} else {
					return val{}, t.l.unsupported(argAt(i), "an integer passed for the pointer %s of %s", prm.Name(), name)
				}
			}
			o.binds[""] = vals[i]
		case isScalar(pt):
			if vals[i].kind != vInt {
				return val{}, t.l.errf(argAt(i), "%s passed for the integer %s of %s", vals[i], prm.Name(), name)
			}
			if isBool(pt) {
				vals[i] = toBool(vals[i])
			}
			if c, ok := vals[i].isConst(); ok && prm.Declarator.WriteCount() == 0 && !prm.Declarator.AddressTaken() {
				// A constant the function never changes stays a
				// constant: no register, and no value a register
				// cannot hold (LLONG_MAX for a range's end).
				o.consts[""] = c
				continue
			}
			if isBool(pt) {
				vals[i] = toBool(vals[i])
			}
			r := t.leafReg(o, "", prm.Name())
			t.assign(r, vals[i].e)
		default:
			return val{}, t.l.unsupported(argAt(i), "a %s passed by value to %s", typeName(pt), name)
		}
	}
	if err := t.body(f, fn.CompoundStatement); err != nil {
		return val{}, err
	}
	if f.end != "" {
		t.emit(litmus.Stmt{Label: f.end})
	}
	t.release(f, f.ret)
	rt := ft.Result()
	switch {
	case rt.Kind() == cc.Void:
		return val{kind: vVoid}, nil
	case isPointer(rt):
		if f.retPtr == nil {
			return val{}, t.l.errf(fn, "%s returns no pointer", name)
		}
		return *f.retPtr, nil
	}
	if f.ret == "" {
		return val{}, t.l.errf(fn, "%s returns no value", name)
	}
	if c, ok := t.known[f.ret]; ok {
		return intVal(litmus.C(c)), nil
	}
	return intVal(litmus.R(f.ret)), nil
}

// The primitives of flushproof/kernel.h other than the atomics.
type prim func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error)

var prims map[string]prim

func init() {
	fence := func(op litmus.Op) prim {
		return func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
			t.emit(litmus.Stmt{Access: &litmus.Access{Op: op, Call: name}})
			return val{kind: vVoid}, nil
		}
	}
	lock := func(op litmus.Op) prim {
		return func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
			if p, ok := t.localArg(args, 0); ok && !p.obj.global {
				// A lock in a local: only its own task takes it, so
				// taking it never waits, and no other task reads it to
				// synchronise with: nothing to do.
				return val{kind: vVoid}, nil
			}
			loc, err := t.sharedArg(x, name, args, 0)
			if err != nil {
				return val{}, err
			}
			t.emit(litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Call: name}})
			return val{kind: vVoid}, nil
		}
	}
	completion := func(kind litmus.DevKind, op litmus.Op, v int64) prim {
		return func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
			loc, err := t.sharedArg(x, name, args, 0)
			if err != nil {
				return val{}, err
			}
			t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: kind, Load: &litmus.Access{Op: op, Loc: loc, Val: litmus.C(v), Call: name}}})
			return val{kind: vVoid}, nil
		}
	}
	nop := func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
		if _, err := t.sharedArg(x, name, args, 0); err != nil {
			return val{}, err
		}
		return val{kind: vVoid}, nil
	}
	prims = map[string]prim{
		"smp_mb":                 fence(litmus.OpMb),
		"smp_rmb":                fence(litmus.OpRmb),
		"smp_wmb":                fence(litmus.OpWmb),
		"barrier":                fence(litmus.OpBarrier),
		"smp_mb__before_atomic":  fence(litmus.OpMbBeforeAtomic),
		"smp_mb__after_atomic":   fence(litmus.OpMbAfterAtomic),
		"smp_mb__after_spinlock": fence(litmus.OpMbAfterSpinlock),

		"__flushproof_read_once":     marked(litmus.OpReadOnce, "READ_ONCE"),
		"__flushproof_load_acquire":  marked(litmus.OpLoadAcquire, "smp_load_acquire"),
		"__flushproof_write_once":    marked(litmus.OpWriteOnce, "WRITE_ONCE"),
		"__flushproof_store_release": marked(litmus.OpStoreRelease, "smp_store_release"),

		"spin_lock":       lock(litmus.OpSpinLock),
		"spin_unlock":     lock(litmus.OpSpinUnlock),
		"spin_lock_irq":   lock(litmus.OpSpinLock),
		"spin_unlock_irq": lock(litmus.OpSpinUnlock),
		"mutex_lock":      lock(litmus.OpSpinLock),
		"mutex_unlock":    lock(litmus.OpSpinUnlock),
		// An object starts initialised: the init calls of a harness's
		// set-up order nothing.
		"spin_lock_init":      nop,
		"mutex_init":          nop,
		"init_waitqueue_head": nop,

		"complete":            completion(litmus.DevComplete, litmus.OpAddReturnRel, 1),
		"complete_all":        completion(litmus.DevCompleteAll, litmus.OpXchgRel, litmus.CompleteAll),
		"wait_for_completion": completion(litmus.DevWaitDone, litmus.OpAddReturnAcq, -1),
		"init_completion":     completion(litmus.DevReinit, litmus.OpWriteOnce, 0),
		"reinit_completion":   completion(litmus.DevReinit, litmus.OpWriteOnce, 0),

		"__flushproof_wait_event": waitEvent,
		"wake_up":                 wake,
		"wake_up_all":             wake,

		"blkdev_issue_flush":      issueFlush,
		"submit_bio_wait":         submitBioWait,
		"bio_init":                bioInit,
		"__flushproof_read_block": readBlock,
		"blk_status_to_errno":     statusToErrno,
		"submit_bio":              submitBio,

		"__flushproof_container_of": containerOf,
		"llist_add":                 llistAdd,
		"llist_del_all":             llistDelAll,
		"llist_empty":               llistEmpty,
		"llist_reverse_order":       llistReverse,

		"test_bit":              bitOp(bitTest),
		"set_bit":               bitOp(bitSet),
		"clear_bit":             bitOp(bitClear),
		"clear_bit_unlock":      bitOp(bitClearUnlock),
		"test_and_set_bit":      bitOp(bitTestAndSet),
		"test_and_clear_bit":    bitOp(bitTestAndClear),
		"test_and_set_bit_lock": bitOp(bitTestAndSetLock),

		"assert_durable": assertDurable,
		"assert":         assertCond,
		"spawn":          spawnOutside,
		"spawn_daemon":   spawnOutside,
	}
}

// localArg resolves argument i to the object it points to, if it can
// (no statement is emitted: a pointer's value is known while lowering).
func (t *thread) localArg(args []cc.ExpressionNode, i int) (place, bool) {
	if i >= len(args) {
		return place{}, false
	}
	var v val
	stmts, err := t.sub(func() error {
		var err error
		v, err = t.rvalue(args[i])
		return err
	})
	if err != nil || len(stmts) > 0 || v.kind != vPtr {
		return place{}, false
	}
	return v.p, true
}

// sharedArg resolves argument i to a shared location: a leaf of a
// file-scope object.
func (t *thread) sharedArg(x cc.Node, name string, args []cc.ExpressionNode, i int) (string, error) {
	if i >= len(args) {
		return "", t.l.errf(x, "%s needs %d arguments", name, i+1)
	}
	v, err := t.rvalue(args[i])
	if err != nil {
		return "", err
	}
	p, err := t.deref(args[i], v)
	if err != nil {
		return "", err
	}
	if !p.obj.global {
		return "", t.l.unsupported(args[i], "%s on %s, a local: only file-scope objects are shared", name, p)
	}
	if isAggregate(p.typ) {
		return "", t.l.errf(args[i], "%s on %s, a %s", name, p, typeName(p.typ))
	}
	return t.l.location(p), nil
}

// marked lowers READ_ONCE, WRITE_ONCE, smp_load_acquire and
// smp_store_release of any scalar: on a local it is the register.
func marked(op litmus.Op, kname string) prim {
	return func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
		v, err := t.rvalue(args[0])
		if err != nil {
			return val{}, err
		}
		p, err := t.deref(args[0], v)
		if err != nil {
			return val{}, err
		}
		info := op.Info()
		if !p.obj.global || isPointer(p.typ) {
			if info.Writes {
				w, err := t.rvalue(args[1])
				if err != nil {
					return val{}, err
				}
				return val{kind: vVoid}, t.store(p, w, x)
			}
			return t.load(p, x)
		}
		if !isScalar(p.typ) {
			return val{}, t.l.errf(x, "%s of %s, a %s", kname, p, typeName(p.typ))
		}
		loc := t.l.location(p)
		if info.Writes {
			w, err := t.rvalue(args[1])
			if err != nil {
				return val{}, err
			}
			if w.kind != vInt {
				return val{}, t.l.unsupported(args[1], "a pointer stored to shared memory")
			}
			t.emit(litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Val: fold(w.e), Call: kname}})
			return val{kind: vVoid}, nil
		}
		r := t.reg(leafName(p))
		t.emit(litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Reg: r, Call: kname}})
		return intVal(litmus.R(r)), nil
	}
}

// leafName is the last name of a place's path: the register a read of it
// goes to is named after it.
func leafName(p place) string {
	s := p.String()
	if i := strings.LastIndexAny(s, ".>"); i >= 0 && i+1 < len(s) {
		return s[i+1:]
	}
	return s
}

func waitEvent(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if _, err := t.rvalue(args[0]); err != nil {
		return val{}, err
	}
	var c litmus.Expr
	stmts, err := t.sub(func() error {
		var err error
		c, err = t.cond(args[1])
		return err
	})
	if err != nil {
		return val{}, err
	}
	if len(stmts) != 1 || stmts[0].Access == nil || !stmts[0].Access.Op.Info().Reads || stmts[0].Access.Op.IsRMW() {
		return val{}, t.l.unsupported(x, "a wait_event condition must read shared memory exactly once (READ_ONCE(x) == 1, say), and do nothing else")
	}
	a := *stmts[0].Access
	old := a.Reg
	a.Reg = litmus.WaitReg
	t.regs[litmus.WaitReg] = true
	t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevWait, Val: renameReg(c, old, litmus.WaitReg), Load: &a, Reg: litmus.WaitReg}})
	return val{kind: vVoid}, nil
}

func renameReg(e litmus.Expr, from, to string) litmus.Expr {
	if e.Reg == from && e.Op == "" {
		e.Reg = to
		return e
	}
	if len(e.Args) > 0 {
		args := make([]litmus.Expr, len(e.Args))
		for i, a := range e.Args {
			args[i] = renameReg(a, from, to)
		}
		e.Args = args
	}
	return e
}

func wake(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if _, err := t.rvalue(args[0]); err != nil {
		return val{}, err
	}
	t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevWake}})
	return val{kind: vVoid}, nil
}

func issueFlush(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if _, err := t.rvalue(args[0]); err != nil {
		return val{}, err
	}
	r := t.reg(name + ".ret")
	t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevFlush, Reg: r}})
	delete(t.known, r)
	return intVal(litmus.R(r)), nil
}

// The bio's flags, as kernel.h numbers them: the operation in the low
// byte, REQ_FUA, REQ_PREFLUSH and REQ_SYNC from bit 8 in the order of
// litmus.ReqFUA, ReqPreflush and ReqSync.
const (
	reqOpMask  = 0xff
	reqOpWrite = 1
	reqOpFlush = 2
	reqShift   = 8
)

// bioField is a leaf of a bio.
func (t *thread) bioField(x cc.Node, bio place, path string) (val, error) {
	p := bio
	for _, f := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		var err error
		if p, err = t.field(x, p, f); err != nil {
			return val{}, err
		}
	}
	return t.load(p, x)
}

func (t *thread) bioArg(x cc.Node, name string, args []cc.ExpressionNode) (place, error) {
	if len(args) == 0 {
		return place{}, t.l.errf(x, "%s needs the bio", name)
	}
	v, err := t.rvalue(args[0])
	if err != nil {
		return place{}, err
	}
	p, err := t.deref(args[0], v)
	if err != nil {
		return place{}, err
	}
	if typeName(p.typ) != "struct bio" {
		return place{}, t.l.errf(args[0], "%s of %s, which is not a struct bio", name, p)
	}
	if p.obj.global {
		return place{}, t.l.unsupported(args[0], "a bio in a file-scope object (%s): declare it where it is submitted", p)
	}
	return p, nil
}

func submitBioWait(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	_, d, err := t.bioSubmitted(x, name, args)
	if err != nil {
		return val{}, err
	}
	r := t.reg(name + ".ret")
	d.Reg = r
	t.emit(litmus.Stmt{Dev: d})
	delete(t.known, r)
	return intVal(litmus.R(r)), nil
}

// bioSubmitted is the bio a submit call names and the command it asks
// for (bioCommand).
func (t *thread) bioSubmitted(x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (place, *litmus.DevOp, error) {
	bio, err := t.bioArg(x, name, args)
	if err != nil {
		return place{}, nil, err
	}
	d, err := t.bioCommand(x, name, bio)
	return bio, d, err
}

// bioCommand is the device command a bio asks for: a write of its blocks
// or a cache flush (REQ_OP_FLUSH, an empty REQ_PREFLUSH bio), without its
// result register.
func (t *thread) bioCommand(x *cc.PostfixExpression, name string, bio place) (*litmus.DevOp, error) {
	opf, err := t.bioField(x, bio, "bi_opf")
	if err != nil {
		return nil, err
	}
	c, ok := opf.isConst()
	if !ok {
		return nil, t.l.unsupported(x, "%s of a bio whose bi_opf (%s) is not known here: set it to constant flags before submitting", name, opf)
	}
	flags := litmus.C(c >> reqShift & (litmus.ReqFUA | litmus.ReqPreflush | litmus.ReqSync))
	switch c & reqOpMask {
	case reqOpFlush:
		return &litmus.DevOp{Kind: litmus.DevFlush}, nil
	case reqOpWrite:
		size, err := t.bioField(x, bio, "bi_iter.bi_size")
		if err != nil {
			return nil, err
		}
		sz, ok := size.isConst()
		if !ok {
			return nil, t.l.unsupported(x, "%s of a bio whose bi_iter.bi_size (%s) is not known here: set it to a constant", name, size)
		}
		if sz == 0 {
			if c>>reqShift&litmus.ReqPreflush == 0 {
				return nil, t.l.errf(x, "%s of an empty write bio without REQ_PREFLUSH: set bi_iter.bi_size", name)
			}
			// An empty REQ_PREFLUSH bio: a cache flush
			// (block/blk-flush.c).
			return &litmus.DevOp{Kind: litmus.DevFlush}, nil
		}
		if sz < 0 || sz%blockBytes != 0 || sz/blockBytes > spec.MaxBlocks {
			return nil, t.l.errf(x, "%s of a bio of %d bytes: the checker's device has %d blocks of %d bytes (PAGE_SIZE), and a bio writes whole blocks", name, sz, spec.MaxBlocks, blockBytes)
		}
		block, err := t.bioField(x, bio, "bi_iter.bi_sector")
		if err != nil {
			return nil, err
		}
		data, err := t.bioField(x, bio, "bi_flushproof_value")
		if err != nil {
			return nil, err
		}
		return &litmus.DevOp{Kind: litmus.DevWrite, Block: block.e, Val: data.e, Flags: flags, Blocks: int(sz / blockBytes)}, nil
	}
	return nil, t.l.unsupported(x, "%s of a bio whose operation is %d: the checker submits writes and flushes (REQ_OP_WRITE, REQ_OP_FLUSH)", name, c&reqOpMask)
}

// blockBytes is the size of a block of the checker's device: a bio of
// bi_size bytes writes bi_size / blockBytes consecutive blocks from
// bi_sector, each with bi_flushproof_value.
const blockBytes = 4096

// bioInit is bio_init() (block/bio.c): the bio zeroed, then its device
// and flags set.
func bioInit(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if len(args) != 5 {
		return val{}, t.l.errf(x, "bio_init takes 5 arguments")
	}
	bio, err := t.bioArg(x, name, args)
	if err != nil {
		return val{}, err
	}
	if err := t.zero(bio.obj, bio.path, bio.typ, x); err != nil {
		return val{}, err
	}
	// zero left the pointers NULL; bi_bdev is the device given.
	bdev, err := t.rvalue(args[1])
	if err != nil {
		return val{}, err
	}
	bio.obj.binds[bio.path+".bi_bdev"] = bdev
	opf, err := t.rvalue(args[4])
	if err != nil {
		return val{}, err
	}
	p, err := t.field(x, bio, "bi_opf")
	if err != nil {
		return val{}, err
	}
	return val{kind: vVoid}, t.store(p, opf, x)
}

func readBlock(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if _, err := t.rvalue(args[0]); err != nil {
		return val{}, err
	}
	b, err := t.rvalue(args[1])
	if err != nil {
		return val{}, err
	}
	if b.kind != vInt {
		return val{}, t.l.errf(args[1], "a block number that is not an integer")
	}
	r := t.reg("read_block.ret")
	t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevRead, Block: b.e, Reg: r}})
	delete(t.known, r)
	return intVal(litmus.R(r)), nil
}

func statusToErrno(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	v, err := t.rvalue(args[0])
	if err != nil {
		return val{}, err
	}
	return intVal(fold(litmus.Bin("*", litmus.Bin("!=", v.e, litmus.C(0)), litmus.C(-litmus.EIO)))), nil
}

func assertDurable(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	b, err := t.rvalue(args[0])
	if err != nil {
		return val{}, err
	}
	v, err := t.rvalue(args[1])
	if err != nil {
		return val{}, err
	}
	if b.kind != vInt || v.kind != vInt {
		return val{}, t.l.errf(x, "assert_durable takes a block and a value")
	}
	t.emit(litmus.Stmt{Check: &litmus.Check{Durable: true, Block: b.e, Val: v.e}})
	return val{kind: vVoid}, nil
}

func assertCond(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	c, err := t.cond(args[0])
	if err != nil {
		return val{}, err
	}
	t.emit(litmus.Stmt{Check: &litmus.Check{Cond: c}})
	return val{kind: vVoid}, nil
}

func spawnOutside(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	return val{}, t.l.errf(x, "%s() belongs in harness()", name)
}

// atomic ops: the operation, its ordering, and how its arguments read.
type atomicOpInfo struct {
	op      litmus.Op // the access
	val     string    // where the value comes from: "arg0", "-arg0", "1", "-1", "arg1" (xchg), "cmpxchg", "try"
	test    bool      // *_and_test: the result is (new value == 0)
	returns bool
}

var orderSuffix = []string{"_relaxed", "_acquire", "_release"}

// atomicCall parses the name of an atomic_t, atomic64_t or atomic_long_t
// operation of Documentation/atomic_t.txt.
func atomicCall(name string) (atomicOpInfo, bool) {
	rest := ""
	for _, pfx := range []string{"atomic64_", "atomic_long_", "atomic_"} {
		if r, ok := strings.CutPrefix(name, pfx); ok {
			rest = r
			break
		}
	}
	if rest == "" {
		return atomicOpInfo{}, false
	}
	switch rest {
	case "read":
		return atomicOpInfo{op: litmus.OpReadOnce, returns: true}, true
	case "read_acquire":
		return atomicOpInfo{op: litmus.OpLoadAcquire, returns: true}, true
	case "set":
		return atomicOpInfo{op: litmus.OpWriteOnce, val: "arg1"}, true
	case "set_release":
		return atomicOpInfo{op: litmus.OpStoreRelease, val: "arg1"}, true
	case "add":
		return atomicOpInfo{op: litmus.OpAdd, val: "arg0"}, true
	case "sub":
		return atomicOpInfo{op: litmus.OpAdd, val: "-arg0"}, true
	case "inc":
		return atomicOpInfo{op: litmus.OpAdd, val: "1"}, true
	case "dec":
		return atomicOpInfo{op: litmus.OpAdd, val: "-1"}, true
	case "inc_and_test":
		return atomicOpInfo{op: litmus.OpAddReturn, val: "1", test: true, returns: true}, true
	case "dec_and_test":
		return atomicOpInfo{op: litmus.OpAddReturn, val: "-1", test: true, returns: true}, true
	case "sub_and_test":
		return atomicOpInfo{op: litmus.OpAddReturn, val: "-arg0", test: true, returns: true}, true
	}
	ord := 0
	for i, s := range orderSuffix {
		if r, ok := strings.CutSuffix(rest, s); ok {
			rest, ord = r, i+1
			break
		}
	}
	// Each family's four ops in the order of litmus.Op: full, relaxed,
	// acquire, release.
	fam := map[string]struct {
		base litmus.Op
		val  string
	}{
		"add_return": {litmus.OpAddReturn, "arg0"}, "sub_return": {litmus.OpAddReturn, "-arg0"},
		"inc_return": {litmus.OpAddReturn, "1"}, "dec_return": {litmus.OpAddReturn, "-1"},
		"fetch_add": {litmus.OpFetchAdd, "arg0"}, "fetch_sub": {litmus.OpFetchAdd, "-arg0"},
		"fetch_inc": {litmus.OpFetchAdd, "1"}, "fetch_dec": {litmus.OpFetchAdd, "-1"},
		"xchg": {litmus.OpXchg, "arg1"}, "cmpxchg": {litmus.OpCmpxchg, "cmpxchg"},
		"try_cmpxchg": {litmus.OpCmpxchg, "try"},
	}
	f, ok := fam[rest]
	if !ok {
		return atomicOpInfo{}, false
	}
	return atomicOpInfo{op: f.base + litmus.Op(ord), val: f.val, returns: true}, true
}

// atomic lowers an atomic operation on a shared atomic_t.
func (t *thread) atomic(x *cc.PostfixExpression, name string, info atomicOpInfo, args []cc.ExpressionNode) (val, error) {
	// The atomic is the argument that is a pointer: the first, or the
	// second for add(i, v) and the like.
	vi := 0
	if strings.HasPrefix(info.val, "arg0") || strings.HasPrefix(info.val, "-arg0") {
		vi = 1
	}
	want := map[string]int{"": 1, "1": 1, "-1": 1, "arg0": 2, "-arg0": 2, "arg1": 2, "cmpxchg": 3, "try": 3}[info.val]
	if len(args) != want {
		return val{}, t.l.errf(x, "%s takes %d arguments", name, want)
	}
	var vals []val
	for i, a := range args {
		if i == vi {
			vals = append(vals, val{})
			continue
		}
		if info.val == "try" && i == 1 {
			vals = append(vals, val{})
			continue
		}
		v, err := t.rvalue(a)
		if err != nil {
			return val{}, err
		}
		if v.kind != vInt {
			return val{}, t.l.errf(a, "%s's argument %s is not an integer", name, exprText(a))
		}
		vals = append(vals, v)
	}
	if p, ok := t.localArg(args, vi); ok && !p.obj.global {
		return t.localAtomic(x, name, p, info, vals, args)
	}
	loc, err := t.sharedArg(x, name, args, vi)
	if err != nil {
		return val{}, err
	}
	a := &litmus.Access{Op: info.op, Loc: loc, Call: name}
	switch info.val {
	case "arg0":
		a.Val = vals[0].e
	case "-arg0":
		a.Val = fold(litmus.Expr{Op: "-", Args: []litmus.Expr{vals[0].e}})
	case "1":
		a.Val = litmus.C(1)
	case "-1":
		a.Val = litmus.C(-1)
	case "arg1":
		a.Val = vals[1].e
	case "cmpxchg":
		a.Expect, a.Val = vals[1].e, vals[2].e
	case "try":
		return t.tryCmpxchg(x, name, a, args[1], vals[2])
	}
	if !info.returns {
		t.emit(litmus.Stmt{Access: a})
		return val{kind: vVoid}, nil
	}
	r := t.reg(loc[strings.LastIndex(loc, ".")+1:])
	a.Reg = r
	t.emit(litmus.Stmt{Access: a})
	delete(t.known, r)
	if info.test {
		return intVal(litmus.Bin("==", litmus.R(r), litmus.C(0))), nil
	}
	return intVal(litmus.R(r)), nil
}

// tryCmpxchg is try_cmpxchg(v, &old, new): cmpxchg(v, old, new), then
// success is (what it found == old), and old gets what it found (equal
// to old on success, so the store is unconditional).
func (t *thread) tryCmpxchg(x cc.Node, name string, a *litmus.Access, oldArg cc.ExpressionNode, nv val) (val, error) {
	ov, err := t.rvalue(oldArg)
	if err != nil {
		return val{}, err
	}
	oldP, err := t.deref(oldArg, ov)
	if err != nil {
		return val{}, err
	}
	old, err := t.load(oldP, x)
	if err != nil {
		return val{}, err
	}
	if old.kind != vInt {
		return val{}, t.l.errf(oldArg, "%s's old value is not an integer", name)
	}
	a.Expect, a.Val = old.e, nv.e
	found := t.reg("found")
	a.Reg = found
	t.emit(litmus.Stmt{Access: a})
	delete(t.known, found)
	ok := t.reg(name + ".ret")
	t.assign(ok, litmus.Bin("==", litmus.R(found), old.e))
	if err := t.store(oldP, intVal(litmus.R(found)), x); err != nil {
		return val{}, err
	}
	return intVal(litmus.R(ok)), nil
}

// containerOf is container_of(ptr, type, member): the object that holds
// the member ptr points to, found by the member's path.
func containerOf(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	v, err := t.rvalue(args[0])
	if err != nil {
		return val{}, err
	}
	p, err := t.deref(args[0], v)
	if err != nil {
		return val{}, err
	}
	member, err := strconv.Unquote(exprText(args[1]))
	if err != nil {
		return val{}, t.l.errf(args[1], "container_of's member %s", exprText(args[1]))
	}
	member = strings.ReplaceAll(member, " ", "")
	outer, ok := strings.CutSuffix(p.path, "."+member)
	if !ok {
		return val{}, t.l.errf(x, "container_of(%s, ..., %s): %s is not the %s of a struct", exprText(args[0]), member, p, member)
	}
	return val{kind: vPtr, p: place{obj: p.obj, path: outer, typ: typeAt(p.obj.typ, outer)}}, nil
}

// The atomic bit operations of include/asm-generic/bitops/atomic.h and
// lock.h, with the orderings of Documentation/atomic_bitops.txt: test_bit
// and the RMWs that return nothing are unordered, test_and_set_bit and
// test_and_clear_bit fully ordered, test_and_set_bit_lock acquire when it
// sets the bit, clear_bit_unlock release. The checker's memory has no
// fetch_or, so an RMW is a read and a compare-and-swap of the word, again
// until it succeeds: the successful cmpxchg is the RMW, with the ordering
// (a failed one orders nothing). As the generic code does, test_and_set_bit
// returns 1 without an RMW when its read finds the bit set (and
// test_and_clear_bit 0 when it finds it clear): then it orders nothing.
type bitKind uint8

const (
	bitTest bitKind = iota + 1
	bitSet
	bitClear
	bitClearUnlock
	bitTestAndSet
	bitTestAndClear
	bitTestAndSetLock
)

func bitOp(k bitKind) prim {
	return func(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
		if len(args) != 2 {
			return val{}, t.l.errf(x, "%s takes a bit number and the word's address", name)
		}
		nr, err := t.rvalue(args[0])
		if err != nil {
			return val{}, err
		}
		if nr.kind != vInt {
			return val{}, t.l.errf(args[0], "%s: a bit number that is not an integer", name)
		}
		loc, err := t.sharedArg(x, name, args, 1)
		if err != nil {
			return val{}, err
		}
		mask := fold(litmus.Bin("<<", litmus.C(1), nr.e))
		read := func(r string) litmus.Stmt {
			return litmus.Stmt{Access: &litmus.Access{Op: litmus.OpReadOnce, Loc: loc, Reg: r, Call: name}}
		}
		if k == bitTest {
			old := t.reg("word")
			t.emit(read(old))
			delete(t.known, old)
			return intVal(litmus.Bin("!=", litmus.Bin("&", litmus.R(old), mask), litmus.C(0))), nil
		}
		op := map[bitKind]litmus.Op{bitSet: litmus.OpCmpxchgRlx, bitClear: litmus.OpCmpxchgRlx, bitClearUnlock: litmus.OpCmpxchgRel,
			bitTestAndSet: litmus.OpCmpxchg, bitTestAndClear: litmus.OpCmpxchg, bitTestAndSetLock: litmus.OpCmpxchgAcq}[k]
		setting := k == bitSet || k == bitTestAndSet || k == bitTestAndSetLock
		old, found, ret := t.reg("word"), t.reg("found"), ""
		newVal := litmus.Bin("|", litmus.R(old), mask)
		if !setting {
			newVal = litmus.Bin("&", litmus.R(old), litmus.Expr{Op: "~", Args: []litmus.Expr{mask}})
		}
		returns := k == bitTestAndSet || k == bitTestAndClear || k == bitTestAndSetLock
		at := t.l.at
		stmt := func(s litmus.Stmt) litmus.Stmt { s.Line, s.Col = at.Line, at.Col; return s }
		var body []litmus.Stmt
		body = append(body, stmt(read(old)))
		bit := litmus.Bin("!=", litmus.Bin("&", litmus.R(old), mask), litmus.C(0))
		if returns {
			ret = t.reg(name + ".ret")
			// Already as asked: no RMW, no ordering.
			done := bit
			if !setting {
				done = litmus.Not(bit)
			}
			body = append(body, stmt(litmus.Stmt{If: &litmus.If{Cond: done, Then: []litmus.Stmt{
				stmt(litmus.Stmt{Assign: &litmus.Assign{Reg: ret, Val: bit}}),
				stmt(litmus.Stmt{Jump: litmus.Break}),
			}}}))
		}
		body = append(body, stmt(litmus.Stmt{Access: &litmus.Access{Op: op, Loc: loc, Expect: litmus.R(old), Val: newVal, Reg: found, Call: name}}))
		success := []litmus.Stmt{}
		if returns {
			success = append(success, stmt(litmus.Stmt{Assign: &litmus.Assign{Reg: ret, Val: bit}}))
		}
		success = append(success, stmt(litmus.Stmt{Jump: litmus.Break}))
		body = append(body, stmt(litmus.Stmt{If: &litmus.If{Cond: litmus.Bin("==", litmus.R(found), litmus.R(old)), Then: success}}))
		t.emit(litmus.Stmt{Loop: &litmus.Loop{Cond: litmus.C(1), Body: body}})
		for _, r := range []string{old, found, ret} {
			delete(t.known, r)
		}
		if !returns {
			return val{kind: vVoid}, nil
		}
		return intVal(litmus.R(ret)), nil
	}
}

// localAtomic is an atomic operation on an atomic_t in a local: only its
// task touches it, so it is the computation on a register, with no step
// and no ordering (nothing another task reads synchronises with it).
func (t *thread) localAtomic(x cc.Node, name string, p place, info atomicOpInfo, vals []val, args []cc.ExpressionNode) (val, error) {
	if !isAtomicType(p.typ) {
		return val{}, t.l.errf(x, "%s on %s, a %s", name, p, typeName(p.typ))
	}
	r := t.leafReg(p.obj, p.path, "")
	cur := func() litmus.Expr {
		if c, ok := t.known[r]; ok {
			return litmus.C(c)
		}
		return litmus.R(r)
	}
	operand := func() litmus.Expr {
		switch info.val {
		case "arg0":
			return vals[0].e
		case "-arg0":
			return fold(litmus.Expr{Op: "-", Args: []litmus.Expr{vals[0].e}})
		case "1":
			return litmus.C(1)
		case "-1":
			return litmus.C(-1)
		case "arg1":
			return vals[1].e
		}
		return litmus.Expr{}
	}
	op := info.op
	switch {
	case op == litmus.OpReadOnce || op == litmus.OpLoadAcquire:
		return intVal(cur()), nil
	case op == litmus.OpWriteOnce || op == litmus.OpStoreRelease:
		t.assign(r, operand())
		return val{kind: vVoid}, nil
	case op == litmus.OpAdd:
		t.assign(r, litmus.Bin("+", cur(), operand()))
		return val{kind: vVoid}, nil
	case op.ReturnsNew():
		t.assign(r, litmus.Bin("+", cur(), operand()))
		if info.test {
			return intVal(fold(litmus.Bin("==", cur(), litmus.C(0)))), nil
		}
		return intVal(cur()), nil
	}
	old := t.reg("old")
	t.assign(old, cur())
	switch {
	case op >= litmus.OpFetchAdd && op <= litmus.OpFetchAddRel:
		t.assign(r, litmus.Bin("+", litmus.R(old), operand()))
	case op.IsXchg():
		t.assign(r, operand())
	case op.IsCmpxchg() && info.val == "cmpxchg":
		swap, _ := t.sub(func() error { t.assign(r, vals[2].e); return nil })
		t.emit(litmus.Stmt{If: &litmus.If{Cond: litmus.Bin("==", litmus.R(old), vals[1].e), Then: swap}})
		delete(t.known, r)
	case op.IsCmpxchg():
		// try_cmpxchg(v, &expected, new)
		ev, err := t.rvalue(args[1])
		if err != nil {
			return val{}, err
		}
		ep, err := t.deref(args[1], ev)
		if err != nil {
			return val{}, err
		}
		expected, err := t.load(ep, x)
		if err != nil {
			return val{}, err
		}
		ok := t.reg(name + ".ret")
		t.assign(ok, litmus.Bin("==", litmus.R(old), expected.e))
		swap, _ := t.sub(func() error { t.assign(r, vals[2].e); return nil })
		t.emit(litmus.Stmt{If: &litmus.If{Cond: litmus.R(ok), Then: swap}})
		delete(t.known, r)
		if err := t.store(ep, intVal(litmus.R(old)), x); err != nil {
			return val{}, err
		}
		return intVal(litmus.R(ok)), nil
	default:
		return val{}, t.l.unsupported(x, "%s on a local atomic", name)
	}
	return intVal(litmus.R(old)), nil
}

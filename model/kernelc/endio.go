package kernelc

import (
	"fmt"

	"modernc.org/cc/v4"

	"github.com/flushproof/flushproof/model/litmus"
)

// Asynchronous bios: submit_bio(bio) with a bi_end_io.
//
// In the kernel, submit_bio() hands the bio to the block layer and
// returns; when the device ends it, the block layer calls bio_endio(),
// which runs the bio's bi_end_io in the completion's context (an
// interrupt, a softirq, a workqueue): not the submitter's. Here each
// submit_bio call a task makes gets an actor of its own, a thread that
// waits for the bio that call submitted to end (litmus.DevReap: its
// status, 0 or -EIO, and the bio's handle freed), runs the bi_end_io on
// it, and waits for the next one. So the end_io runs at any point after
// the device ended the bio, concurrently with everything else, as in the
// kernel. Each call has one bio in flight at a time: a second submit_bio
// from it before the first's bi_end_io ran is an error of the search
// (the checker gives the call one handle).
//
// The bio the bi_end_io sees is the one submitted: bi_status is
// BLK_STS_IOERR if the device failed it and BLK_STS_OK otherwise;
// bi_private and the other pointers point where they pointed at the
// submit, which must be file-scope objects (a submitter's local is its
// own registers here, out of the actor's reach); a scalar field keeps the
// value it had at the submit if that was known while lowering, and
// reading one that was not is an error.

// endIO is an actor to lower: the bi_end_io of the bios one submit_bio
// call of thread owner sends into its handle slot.
type endIO struct {
	owner, slot int
	fn          *cc.FunctionDefinition
	bio         *object // what the bi_end_io's bio holds (see above)
	at          cc.Node
}

// maxEndIOSlots is the number of submit_bio calls with a bi_end_io a task
// may make: the durability checker's handles of a thread (three).
const maxEndIOSlots = 3

func submitBio(t *thread, x *cc.PostfixExpression, name string, args []cc.ExpressionNode) (val, error) {
	if t.recovery {
		return val{}, t.l.unsupported(x, "submit_bio in recovery(): recovery reads and writes the crash image alone (read_block, submit_bio_wait)")
	}
	bio, d, err := t.bioSubmitted(x, name, args)
	if err != nil {
		return val{}, err
	}
	end, ok := bio.obj.binds[bio.path+".bi_end_io"]
	if !ok || end.kind != vFunc {
		return val{}, t.l.errf(x, "submit_bio of a bio whose bi_end_io is not set to a function of the file (%s): set it before submitting, or use submit_bio_wait()", bio)
	}
	fn := t.l.funcs[end.fn]
	if fn == nil {
		return val{}, t.l.errf(x, "the bi_end_io %s() of %s is not defined in the file: paste it or write it as a stub in C", end.fn, bio)
	}
	if t.endIOs == maxEndIOSlots {
		return val{}, t.l.unsupported(x, "a %dth submit_bio call in one task: the checker runs at most %d per task, each with an actor for its bi_end_io", maxEndIOSlots+1, maxEndIOSlots)
	}
	t.endIOs++
	slot := t.endIOs
	snap := t.bioSnapshot(x, bio)
	d.Flush = d.Kind == litmus.DevFlush
	d.Kind, d.Slot, d.Reg = litmus.DevSubmit, slot, ""
	t.emit(litmus.Stmt{Dev: d})
	t.l.endIOs = append(t.l.endIOs, endIO{owner: t.index, slot: slot, fn: fn, bio: snap, at: x})
	return val{kind: vVoid}, nil
}

// bioSnapshot is the bio a bi_end_io sees of the submitted bio: its known
// scalar fields and its pointers to file-scope objects; the others are
// marked unknown (object.unknown).
func (t *thread) bioSnapshot(x cc.Node, bio place) *object {
	o := &object{name: "bio", typ: bio.typ, at: t.l.pos(x), regs: map[string]string{}, consts: map[string]int64{},
		binds: map[string]val{}, unknown: map[string]string{}}
	var walk func(path string, ty cc.Type)
	walk = func(path string, ty cc.Type) {
		switch tt := ty.(type) {
		case *cc.StructType:
			if isOpaque(ty) {
				return
			}
			for i := 0; i < tt.NumFields(); i++ {
				f := tt.FieldByIndex(i)
				if f.Name() == "" {
					continue
				}
				walk(path+"."+f.Name(), f.Type())
			}
			return
		case *cc.ArrayType:
			for i := int64(0); i < tt.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", path, i), tt.Elem())
			}
			return
		}
		src := bio.path + path
		if isPointer(ty) || ty.Kind() == cc.Function {
			v, ok := bio.obj.binds[src]
			switch {
			case !ok:
				o.unknown[path] = "not set before the submit_bio"
			case v.kind == vPtr && !v.p.obj.global:
				o.unknown[path] = fmt.Sprintf("it points to %s, a local of the submitting task, which the actor cannot reach: point it to a file-scope object", v.p)
			case v.kind == vAmbig:
				o.unknown[path] = "it points to one of several objects at the submit_bio"
			default:
				o.binds[path] = v
			}
			return
		}
		if !isScalar(ty) {
			return
		}
		if c, ok := bio.obj.consts[src]; ok {
			o.consts[path] = c
			return
		}
		if r, ok := bio.obj.regs[src]; ok {
			if c, ok := t.known[r]; ok {
				o.consts[path] = c
				return
			}
		}
		o.unknown[path] = "its value at the submit_bio is known only at run time (a register of the submitting task)"
	}
	walk("", bio.typ)
	return o
}

// endIOThreads lowers the actors of the submit_bio calls: each a daemon
// that reaps its bio, runs the bi_end_io on it and waits for the next.
// An actor's bi_end_io may submit bios too: those get actors after it.
func (l *lowerer) endIOThreads() ([]string, error) {
	var daemons []string
	for i := 0; i < len(l.endIOs); i++ {
		e := l.endIOs[i]
		if len(l.test.Threads) == 8 {
			return nil, l.unsupported(e.at, "the actor of this submit_bio's bi_end_io would be a 9th thread; the checker runs at most 8")
		}
		daemons = append(daemons, fmt.Sprintf("P%d", len(l.test.Threads)))
		if err := l.endIOThread(e); err != nil {
			return nil, err
		}
	}
	return daemons, nil
}

func (l *lowerer) endIOThread(e endIO) error {
	var body []litmus.Stmt
	t := &thread{l: l, index: len(l.test.Threads), out: &body, regs: map[string]bool{}, known: map[string]int64{}}
	l.th = t
	defer func() { l.th = nil }()
	p := l.pos(e.at)
	l.at = p
	const top = "bi_end_io.next" // a label the loop's goto reaches backwards
	t.emit(litmus.Stmt{Label: top})
	st := t.reg("bi_status")
	t.emit(litmus.Stmt{Dev: &litmus.DevOp{Kind: litmus.DevReap, Owner: e.owner, Slot: e.slot, Reg: st}, Line: p.Line, Col: p.Col})
	bio := e.bio // this actor's alone
	t.objs = append(t.objs, bio)
	// bi_status: BLK_STS_IOERR if the bio failed (-EIO), else BLK_STS_OK.
	delete(bio.consts, ".bi_status")
	delete(bio.unknown, ".bi_status")
	t.assign(t.leafReg(bio, ".bi_status", "bi_status"), litmus.Bin("*", litmus.Bin("!=", litmus.R(st), litmus.C(0)), litmus.C(blkStsIOErr)))
	if _, err := t.inlineVals(e.at, e.fn, []val{{kind: vPtr, p: place{obj: bio, typ: e.bio.typ}}}); err != nil {
		return err
	}
	t.emit(litmus.Stmt{Goto: top})
	for len(l.test.RegInit) < t.index {
		l.test.RegInit = append(l.test.RegInit, nil)
	}
	l.test.Threads = append(l.test.Threads, litmus.Thread{Body: body, Line: p.Line, Col: p.Col})
	return nil
}

// blkStsIOErr is BLK_STS_IOERR (include/linux/blk_types.h), as kernel.h
// defines it.
const blkStsIOErr = 10

package litmus

import "strings"

// The kernel primitives the parser knows, and their calls (Parse).

// argKind is how a primitive takes an argument.
type argKind uint8

const (
	argDeref argKind = iota + 1 // *x
	argPtr                      // x
	argVal                      // an expression
)

// primitive is one spelling of a primitive: its op, its arguments, and how
// Access.Val is made (a constant for inc/dec, negated for sub).
type primitive struct {
	op    Op
	args  []argKind
	val   int64 // inc: 1, dec: -1, 0: from the argument
	neg   bool  // sub: the argument negated
	order []string
	// thenMb: an smp_mb() follows the access (smp_store_mb).
	thenMb bool
	// test compares the returned value with 0 into the register
	// ("==" for atomic_dec_and_test, "<" for atomic_add_negative).
	test string
}

// prims maps every accepted spelling to its primitive, built by init below.
var prims = map[string]primitive{}

func init() {
	plain := map[string]primitive{
		"READ_ONCE":              {op: OpReadOnce, args: []argKind{argDeref}},
		"WRITE_ONCE":             {op: OpWriteOnce, args: []argKind{argDeref, argVal}},
		"smp_load_acquire":       {op: OpLoadAcquire, args: []argKind{argPtr}},
		"smp_store_release":      {op: OpStoreRelease, args: []argKind{argPtr, argVal}},
		"atomic_read":            {op: OpReadOnce, args: []argKind{argPtr}},
		"atomic_set":             {op: OpWriteOnce, args: []argKind{argPtr, argVal}},
		"atomic_read_acquire":    {op: OpLoadAcquire, args: []argKind{argPtr}},
		"atomic_set_release":     {op: OpStoreRelease, args: []argKind{argPtr, argVal}},
		"smp_mb":                 {op: OpMb},
		"smp_rmb":                {op: OpRmb},
		"smp_wmb":                {op: OpWmb},
		"smp_mb__before_atomic":  {op: OpMbBeforeAtomic},
		"smp_mb__after_atomic":   {op: OpMbAfterAtomic},
		"smp_mb__after_spinlock": {op: OpMbAfterSpinlock},
		"barrier":                {op: OpBarrier},
		"atomic_inc":             {op: OpAdd, args: []argKind{argPtr}, val: 1},
		"atomic_dec":             {op: OpAdd, args: []argKind{argPtr}, val: -1},
		"atomic_add":             {op: OpAdd, args: []argKind{argVal, argPtr}},
		"atomic_sub":             {op: OpAdd, args: []argKind{argVal, argPtr}, neg: true},
		"spin_lock":              {op: OpSpinLock, args: []argKind{argPtr}},
		"spin_unlock":            {op: OpSpinUnlock, args: []argKind{argPtr}},

		// The rest of tools/memory-model/linux-kernel.def.
		"rcu_dereference":                {op: OpReadOnce, args: []argKind{argDeref}},
		"rcu_assign_pointer":             {op: OpStoreRelease, args: []argKind{argDeref, argVal}},
		"smp_store_mb":                   {op: OpWriteOnce, args: []argKind{argDeref, argVal}, thenMb: true},
		"rcu_read_lock":                  {op: OpRcuLock},
		"rcu_read_unlock":                {op: OpRcuUnlock},
		"synchronize_rcu":                {op: OpSyncRcu},
		"synchronize_rcu_expedited":      {op: OpSyncRcu},
		"srcu_read_lock":                 {op: OpSrcuLock, args: []argKind{argPtr}},
		"srcu_read_unlock":               {op: OpSrcuUnlock, args: []argKind{argPtr, argVal}},
		"srcu_down_read":                 {op: OpSrcuLock, args: []argKind{argPtr}},
		"srcu_up_read":                   {op: OpSrcuUnlock, args: []argKind{argPtr, argVal}},
		"synchronize_srcu":               {op: OpSyncSrcu, args: []argKind{argPtr}},
		"synchronize_srcu_expedited":     {op: OpSyncSrcu, args: []argKind{argPtr}},
		"smp_mb__after_srcu_read_unlock": {op: OpMbAfterSrcuUnlock},
		"smp_mb__after_unlock_lock":      {op: OpMbAfterUnlockLock},
		"spin_trylock":                   {op: OpSpinTrylock, args: []argKind{argPtr}},
		"spin_is_locked":                 {op: OpSpinIsLocked, args: []argKind{argPtr}},
		"atomic_add_unless":              {op: OpAddUnless, args: []argKind{argPtr, argVal, argVal}},
		"atomic_sub_and_test":            {op: OpAddReturn, args: []argKind{argVal, argPtr}, neg: true, test: "=="},
		"atomic_dec_and_test":            {op: OpAddReturn, args: []argKind{argPtr}, val: -1, test: "=="},
		"atomic_inc_and_test":            {op: OpAddReturn, args: []argKind{argPtr}, val: 1, test: "=="},
		"atomic_add_negative":            {op: OpAddReturn, args: []argKind{argVal, argPtr}, test: "<"},
	}
	for k, v := range plain {
		prims[k] = v
	}
	// The ordered families: name, then name_relaxed, _acquire, _release.
	family := func(base Op, names map[string]primitive) {
		for name, pr := range names {
			for i, sfx := range []string{"", "_relaxed", "_acquire", "_release"} {
				q := pr
				q.op = base + Op(i)
				prims[name+sfx] = q
			}
		}
	}
	family(OpAddReturn, map[string]primitive{
		"atomic_inc_return": {args: []argKind{argPtr}, val: 1},
		"atomic_dec_return": {args: []argKind{argPtr}, val: -1},
		"atomic_add_return": {args: []argKind{argVal, argPtr}},
		"atomic_sub_return": {args: []argKind{argVal, argPtr}, neg: true},
	})
	family(OpFetchAdd, map[string]primitive{
		"atomic_fetch_inc": {args: []argKind{argPtr}, val: 1},
		"atomic_fetch_dec": {args: []argKind{argPtr}, val: -1},
		"atomic_fetch_add": {args: []argKind{argVal, argPtr}},
		"atomic_fetch_sub": {args: []argKind{argVal, argPtr}, neg: true},
	})
	family(OpXchg, map[string]primitive{
		"xchg":        {args: []argKind{argPtr, argVal}},
		"atomic_xchg": {args: []argKind{argPtr, argVal}},
	})
	family(OpCmpxchg, map[string]primitive{
		"cmpxchg":        {args: []argKind{argPtr, argVal, argVal}},
		"atomic_cmpxchg": {args: []argKind{argPtr, argVal, argVal}},
	})
	// atomic64_t and atomic_long_t have the same operations with the same
	// orderings (Documentation/atomic_t.txt); their values here are the
	// small integers a location holds.
	for name, pr := range prims {
		if rest, ok := strings.CutPrefix(name, "atomic_"); ok {
			prims["atomic64_"+rest] = pr
			prims["atomic_long_"+rest] = pr
		}
	}
}

// call reads "name(args)" (name is read, "(" is next) into one access whose
// result, if any, goes to reg.
func (p *parser) call(name token, reg string) ([]Stmt, error) {
	if d, ok := devPrims[name.text]; ok {
		return p.devCall(name, d, reg)
	}
	pr, ok := prims[name.text]
	if !ok {
		if s := DidYouMean(name.text, functionNames()); s != "" {
			return nil, p.errf(name.at(), "unknown function %s()%s", name.text, s)
		}
		return nil, p.errf(name.at(), "unsupported construct: %s()", name.text)
	}
	info := pr.op.Info()
	if reg != "" && !info.Returns && pr.test == "" {
		return nil, p.errf(name.at(), "%s() returns no value to assign to %s", name.text, reg)
	}
	p.next() // (
	a := &Access{Op: pr.op, Reg: reg, Call: name.text}
	var vals []Expr
	var pre []Stmt // loads called in the arguments, which run first
	for i, k := range pr.args {
		if i > 0 {
			if _, err := p.expect(",", "between the arguments of "+name.text); err != nil {
				return nil, err
			}
		}
		switch k {
		case argDeref, argPtr:
			loc, addr, err := p.locOperand(name.text, k == argDeref)
			if err != nil {
				return nil, err
			}
			a.Loc, a.Addr = loc, addr
		case argVal:
			var e Expr
			h, err := p.hoisting(func() (err error) {
				e, err = p.expr()
				return err
			})
			if err != nil {
				return nil, err
			}
			pre = append(pre, h...)
			vals = append(vals, e)
		}
	}
	if _, err := p.expect(")", "closing "+name.text+"("); err != nil {
		return nil, err
	}
	switch {
	case pr.val != 0:
		a.Val = C(pr.val)
	case len(vals) == 1 && pr.neg:
		a.Val = Expr{Op: "-", Args: []Expr{vals[0]}}
	case len(vals) == 1:
		a.Val = vals[0]
	case len(vals) == 2 && pr.op == OpAddUnless: // atomic_add_unless(x, v, u)
		a.Val, a.Expect = vals[0], vals[1]
	case len(vals) == 2: // cmpxchg(x, old, new)
		a.Expect, a.Val = vals[0], vals[1]
	}
	out := append(pre, Stmt{Access: a, Line: name.line, Col: name.col})
	if pr.thenMb {
		out = append(out, Stmt{Access: &Access{Op: OpMb, Call: name.text}, Line: name.line, Col: name.col})
	}
	if pr.test != "" && reg != "" {
		out = append(out, Stmt{Assign: &Assign{Reg: reg, Val: Bin(pr.test, R(reg), C(0))}, Line: name.line, Col: name.col})
	}
	return out, nil
}

// devPrim is a durability call (durable.go): what it is, how many value
// arguments it takes after an optional leading name (a wait queue, the
// block device), and whether it returns a value.
type devPrim struct {
	kind    DevKind
	check   int // 1: assert_durable, 2: assert
	args    int
	named   int // 1: a leading name argument is required; 2: it is optional and the only one
	returns bool
	// completion: the only argument is a location parameter, the
	// completion, which the call accesses as this RMW (DevOp.Load).
	completion Op
	val        int64 // the completion access's Val
}

// devPrims are the durability calls the parser knows.
var devPrims = map[string]devPrim{
	"submit_bio_wait":    {kind: DevWrite, args: 3, returns: true},
	"blkdev_issue_flush": {kind: DevFlush, named: 2, returns: true},
	"read_block":         {kind: DevRead, args: 1, returns: true},
	"wait_event":         {kind: DevWait, named: 1, args: 1},
	"wake_up":            {kind: DevWake, named: 1},
	"assert_durable":     {check: 1, args: 2},
	"assert":             {check: 2, args: 1},
	"submit_bio":         {kind: DevSubmit, args: 3, returns: true},
	"bio_wait":           {kind: DevBioWait, args: 1, returns: true},
	// A completion's count: complete() adds one, complete_all() sets
	// it to CompleteAll, wait_for_completion() waits until it is
	// positive and takes one (docs/durable-litmus.md gives their
	// ordering).
	"complete":            {kind: DevComplete, completion: OpAddReturnRel, val: 1},
	"complete_all":        {kind: DevCompleteAll, completion: OpXchgRel, val: CompleteAll},
	"wait_for_completion": {kind: DevWaitDone, completion: OpAddReturnAcq, val: -1},
	// The block layer's wait (blk_wait_io(), in submit_bio_wait()):
	// the same wait, with the time counted as IO wait.
	"wait_for_completion_io": {kind: DevWaitDone, completion: OpAddReturnAcq, val: -1},
	"reinit_completion":      {kind: DevReinit, completion: OpWriteOnce, val: 0},
}

// CompleteAll is the count complete_all() leaves (the kernel's UINT_MAX):
// complete() and wait_for_completion() leave it as it is.
const CompleteAll = 100

// devCall reads a durability call (name is read, "(" is next).
func (p *parser) devCall(name token, d devPrim, reg string) ([]Stmt, error) {
	if reg != "" && !d.returns {
		return nil, p.errf(name.at(), "%s() returns no value to assign to %s", name.text, reg)
	}
	p.next() // (
	if d.completion != 0 {
		t := p.peek()
		if p.is("*") || p.is("&") {
			return nil, p.errf(t.at(), "unsupported construct: %s%s in %s() (it takes the completion's pointer parameter itself: %s(%s))", t.text, p.peekAt(1).text, name.text, name.text, p.peekAt(1).text)
		}
		loc, err := p.ident("a completion")
		if err != nil {
			return nil, err
		}
		if !p.params[loc.text] {
			return nil, p.errf(loc.at(), "%s() on %s, which is not a location parameter of this thread (a completion is one: P0(struct completion *c))%s", name.text, loc.text, DidYouMean(loc.text, keys(p.params)))
		}
		if _, err := p.expect(")", "closing "+name.text+"("); err != nil {
			return nil, err
		}
		a := &Access{Op: d.completion, Loc: loc.text, Val: C(d.val), Call: name.text}
		return []Stmt{{Dev: &DevOp{Kind: d.kind, Load: a}, Line: name.line, Col: name.col}}, nil
	}
	if d.named > 0 {
		switch {
		case d.named == 2 && p.is(")"):
		case p.peek().kind == tokIdent && (p.peekAt(1).text == "," || p.peekAt(1).text == ")"):
			if p.params[p.peek().text] {
				return nil, p.errf(p.peek().at(), "%s() takes a name of its own here, not the location %s", name.text, p.peek().text)
			}
			p.labels = append(p.labels, label{call: d.kind, tok: p.next()})
			if d.args > 0 {
				if _, err := p.expect(",", "after the first argument of "+name.text); err != nil {
					return nil, err
				}
			}
		case d.named == 2:
			return nil, p.errf(p.peek().at(), "want the block device's name or nothing in %s(), got %q", name.text, p.peek().text)
		default:
			return nil, p.errf(p.peek().at(), "want a wait queue's name as the first argument of %s(), got %q", name.text, p.peek().text)
		}
	}
	var vals []Expr
	var load *Access
	for i := 0; i < d.args; i++ {
		if i > 0 {
			if _, err := p.expect(",", "between the arguments of "+name.text); err != nil {
				return nil, err
			}
		}
		if d.kind == DevWait {
			p.waitLoad = &load
		}
		e, err := p.expr()
		p.waitLoad = nil
		if err != nil {
			return nil, err
		}
		vals = append(vals, e)
	}
	if _, err := p.expect(")", "closing "+name.text+"("); err != nil {
		return nil, err
	}
	st := Stmt{Line: name.line, Col: name.col}
	switch {
	case d.check == 1:
		st.Check = &Check{Durable: true, Block: vals[0], Val: vals[1]}
	case d.check == 2:
		st.Check = &Check{Cond: vals[0]}
	default:
		op := &DevOp{Kind: d.kind, Reg: reg}
		switch d.kind {
		case DevWrite, DevSubmit:
			op.Block, op.Val, op.Flags = vals[0], vals[1], vals[2]
		case DevBioWait:
			op.Val = vals[0]
		case DevRead:
			op.Block = vals[0]
		case DevWait:
			if load == nil {
				return nil, p.errf(name.at(), "the condition of %s() reads no memory (it must read a location: READ_ONCE(*x) == 1, say)", name.text)
			}
			op.Val, op.Load, op.Reg = vals[0], load, WaitReg
		}
		st.Dev = op
	}
	return []Stmt{st}, nil
}

// WaitReg is the register a wait_event's read goes to.
const WaitReg = "__wait"

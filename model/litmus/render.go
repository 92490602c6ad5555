package litmus

import (
	"fmt"
	"strings"
)

// AccessText renders an access as the kernel call (in a normal form: the
// Op's name, location first).
func AccessText(a *Access) string {
	args := []string{}
	if a.Loc != "" {
		args = append(args, a.Loc)
	}
	if a.Op.IsCmpxchg() {
		args = append(args, CExpr(a.Expect))
	}
	info := a.Op.Info()
	if info.Writes && a.Op != OpSpinLock && a.Op != OpSpinUnlock {
		args = append(args, CExpr(a.Val))
	}
	call := fmt.Sprintf("%s(%s)", a.Op, strings.Join(args, ", "))
	if a.Reg != "" {
		return a.Reg + " = " + call
	}
	return call
}

// CExpr renders thread code's expression in C.
func CExpr(e Expr) string {
	switch {
	case e.IsConst:
		return fmt.Sprint(e.Const)
	case e.Reg != "":
		return e.Reg
	case e.Loc != "":
		return e.Loc
	case len(e.Args) == 1:
		return e.Op + CExpr(e.Args[0])
	case len(e.Args) == 2:
		return "(" + CExpr(e.Args[0]) + " " + e.Op + " " + CExpr(e.Args[1]) + ")"
	}
	return "?"
}

// Unparen drops parentheses around the whole of s.
func Unparen(s string) string {
	if !strings.HasPrefix(s, "(") {
		return s
	}
	depth := 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return s
			}
		}
	}
	return s[1 : len(s)-1]
}

// CallText renders an access as the file spelled it: atomic_inc(x),
// atomic_add(2, x), r = READ_ONCE(*x).
func CallText(a *Access) string {
	if d, ok := devPrims[a.Call]; ok && d.completion != 0 {
		return a.Call + "(" + a.Loc + ")"
	}
	pr, ok := prims[a.Call]
	if !ok {
		return AccessText(a)
	}
	var args []string
	vals := []Expr{a.Val}
	if a.Op.IsCmpxchg() {
		vals = []Expr{a.Expect, a.Val}
	}
	for _, k := range pr.args {
		switch k {
		case argDeref:
			args = append(args, "*"+a.Loc)
		case argPtr:
			args = append(args, a.Loc)
		case argVal:
			v := Expr{}
			if len(vals) > 0 {
				v, vals = vals[0], vals[1:]
			}
			if pr.neg && len(v.Args) == 1 && v.Op == "-" {
				v = v.Args[0]
			}
			args = append(args, CExpr(v))
		}
	}
	call := a.Call + "(" + strings.Join(args, ", ") + ")"
	if a.Reg != "" {
		return a.Reg + " = " + call
	}
	return call
}

package kernelc

import (
	"strings"

	"modernc.org/cc/v4"
)

// Helpers over cc's nodes.

// inner is the one child of an expression that is only a wrapper around
// it (a production with one child: a bare operand of each precedence
// level, parentheses), nil for any other expression.
func inner(n cc.ExpressionNode) cc.ExpressionNode {
	switch x := n.(type) {
	case *cc.ExpressionList:
		if x.ExpressionList == nil {
			return x.AssignmentExpression
		}
	case *cc.AssignmentExpression:
		if x.Case == cc.AssignmentExpressionCond {
			return x.ConditionalExpression
		}
	case *cc.ConditionalExpression:
		if x.Case == cc.ConditionalExpressionLOr {
			return x.LogicalOrExpression
		}
	case *cc.LogicalOrExpression:
		if x.Case == cc.LogicalOrExpressionLAnd {
			return x.LogicalAndExpression
		}
	case *cc.LogicalAndExpression:
		if x.Case == cc.LogicalAndExpressionOr {
			return x.InclusiveOrExpression
		}
	case *cc.InclusiveOrExpression:
		if x.Case == cc.InclusiveOrExpressionXor {
			return x.ExclusiveOrExpression
		}
	case *cc.ExclusiveOrExpression:
		if x.Case == cc.ExclusiveOrExpressionAnd {
			return x.AndExpression
		}
	case *cc.AndExpression:
		if x.Case == cc.AndExpressionEq {
			return x.EqualityExpression
		}
	case *cc.EqualityExpression:
		if x.Case == cc.EqualityExpressionRel {
			return x.RelationalExpression
		}
	case *cc.RelationalExpression:
		if x.Case == cc.RelationalExpressionShift {
			return x.ShiftExpression
		}
	case *cc.ShiftExpression:
		if x.Case == cc.ShiftExpressionAdd {
			return x.AdditiveExpression
		}
	case *cc.AdditiveExpression:
		if x.Case == cc.AdditiveExpressionMul {
			return x.MultiplicativeExpression
		}
	case *cc.MultiplicativeExpression:
		if x.Case == cc.MultiplicativeExpressionCast {
			return x.CastExpression
		}
	case *cc.CastExpression:
		if x.Case == cc.CastExpressionUnary {
			return x.UnaryExpression
		}
	case *cc.UnaryExpression:
		if x.Case == cc.UnaryExpressionPostfix {
			return x.PostfixExpression
		}
	case *cc.PostfixExpression:
		if x.Case == cc.PostfixExpressionPrimary {
			return x.PrimaryExpression
		}
	case *cc.PrimaryExpression:
		if x.Case == cc.PrimaryExpressionExpr {
			return x.ExpressionList
		}
	}
	return nil
}

// callOf finds the call an expression statement makes, through the
// wrappers (inner).
func callOf(n cc.ExpressionNode) (*cc.PostfixExpression, bool) {
	for ; n != nil; n = inner(n) {
		if x, ok := n.(*cc.PostfixExpression); ok && x.Case == cc.PostfixExpressionCall {
			return x, true
		}
	}
	return nil, false
}

// ident is the identifier an expression is, through the wrappers, nil if
// it is not one.
func ident(n cc.ExpressionNode) *cc.PrimaryExpression {
	for ; n != nil; n = inner(n) {
		if x, ok := n.(*cc.PrimaryExpression); ok && x.Case == cc.PrimaryExpressionIdent {
			return x
		}
	}
	return nil
}

// identName is the identifier an expression is, "" if it is not one.
func identName(n cc.ExpressionNode) string {
	if x := ident(n); x != nil {
		return x.Token.SrcStr()
	}
	return ""
}

func calleeName(call *cc.PostfixExpression) string { return identName(call.PostfixExpression) }

// funcName is the function an expression names, "" if it is not a
// function's name: a local of the same name as a function is the local.
func funcName(n cc.ExpressionNode) string {
	if x := ident(n); x != nil {
		if d, ok := x.ResolvedTo().(*cc.Declarator); ok && d.Type().Kind() == cc.Function {
			return x.Token.SrcStr()
		}
	}
	return ""
}

func argList(call *cc.PostfixExpression) []cc.ExpressionNode {
	var out []cc.ExpressionNode
	for l := call.ArgumentExpressionList; l != nil; l = l.ArgumentExpressionList {
		out = append(out, l.AssignmentExpression)
	}
	return out
}

// exprText is n's source text, on one line.
func exprText(n cc.Node) string {
	var b strings.Builder
	for i, tok := range cc.NodeTokens(n) {
		if i > 0 && len(tok.Sep()) > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tok.SrcStr())
	}
	return b.String()
}

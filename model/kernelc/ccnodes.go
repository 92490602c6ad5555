package kernelc

import (
	"strings"

	"modernc.org/cc/v4"
)

// Helpers over cc's nodes.

// callOf finds the call an expression statement makes, through the
// one-child productions.
func callOf(n cc.ExpressionNode) (*cc.PostfixExpression, bool) {
	for {
		switch x := n.(type) {
		case *cc.ExpressionList:
			if x.ExpressionList != nil {
				return nil, false
			}
			n = x.AssignmentExpression
		case *cc.AssignmentExpression:
			if x.Case != cc.AssignmentExpressionCond {
				return nil, false
			}
			n = x.ConditionalExpression
		case *cc.ConditionalExpression:
			if x.Case != cc.ConditionalExpressionLOr {
				return nil, false
			}
			n = x.LogicalOrExpression
		case *cc.LogicalOrExpression:
			n = x.LogicalAndExpression
		case *cc.LogicalAndExpression:
			n = x.InclusiveOrExpression
		case *cc.InclusiveOrExpression:
			n = x.ExclusiveOrExpression
		case *cc.ExclusiveOrExpression:
			n = x.AndExpression
		case *cc.AndExpression:
			n = x.EqualityExpression
		case *cc.EqualityExpression:
			n = x.RelationalExpression
		case *cc.RelationalExpression:
			n = x.ShiftExpression
		case *cc.ShiftExpression:
			n = x.AdditiveExpression
		case *cc.AdditiveExpression:
			n = x.MultiplicativeExpression
		case *cc.MultiplicativeExpression:
			n = x.CastExpression
		case *cc.CastExpression:
			if x.Case != cc.CastExpressionUnary {
				return nil, false
			}
			n = x.UnaryExpression
		case *cc.UnaryExpression:
			if x.Case != cc.UnaryExpressionPostfix {
				return nil, false
			}
			n = x.PostfixExpression
		case *cc.PostfixExpression:
			if x.Case == cc.PostfixExpressionCall {
				return x, true
			}
			return nil, false
		default:
			return nil, false
		}
		if n == nil {
			return nil, false
		}
	}
}

// identName is the identifier an expression is, through the one-child
// productions and parentheses, "" if it is not one.
func identName(n cc.ExpressionNode) string {
	for n != nil {
		switch x := n.(type) {
		case *cc.PrimaryExpression:
			switch x.Case {
			case cc.PrimaryExpressionIdent:
				return x.Token.SrcStr()
			case cc.PrimaryExpressionExpr:
				n = x.ExpressionList
				continue
			}
			return ""
		case *cc.PostfixExpression:
			if x.Case != cc.PostfixExpressionPrimary {
				return ""
			}
			n = x.PrimaryExpression
		case *cc.UnaryExpression:
			if x.Case != cc.UnaryExpressionPostfix {
				return ""
			}
			n = x.PostfixExpression
		case *cc.CastExpression:
			if x.Case != cc.CastExpressionUnary {
				return ""
			}
			n = x.UnaryExpression
		case *cc.ExpressionList:
			if x.ExpressionList != nil {
				return ""
			}
			n = x.AssignmentExpression
		case *cc.AssignmentExpression:
			if x.Case != cc.AssignmentExpressionCond {
				return ""
			}
			n = x.ConditionalExpression
		case *cc.ConditionalExpression:
			if x.Case != cc.ConditionalExpressionLOr {
				return ""
			}
			n = x.LogicalOrExpression
		case *cc.LogicalOrExpression:
			n = x.LogicalAndExpression
		case *cc.LogicalAndExpression:
			n = x.InclusiveOrExpression
		case *cc.InclusiveOrExpression:
			n = x.ExclusiveOrExpression
		case *cc.ExclusiveOrExpression:
			n = x.AndExpression
		case *cc.AndExpression:
			n = x.EqualityExpression
		case *cc.EqualityExpression:
			n = x.RelationalExpression
		case *cc.RelationalExpression:
			n = x.ShiftExpression
		case *cc.ShiftExpression:
			n = x.AdditiveExpression
		case *cc.AdditiveExpression:
			n = x.MultiplicativeExpression
		case *cc.MultiplicativeExpression:
			n = x.CastExpression
		default:
			return ""
		}
	}
	return ""
}

func calleeName(call *cc.PostfixExpression) string { return identName(call.PostfixExpression) }

// funcName is the function an expression names (through parentheses),
// "" if it is not a function's name: a local of the same name as a
// function is the local.
func funcName(n cc.ExpressionNode) string {
	for n != nil {
		switch x := n.(type) {
		case *cc.PrimaryExpression:
			switch x.Case {
			case cc.PrimaryExpressionIdent:
				if d, ok := x.ResolvedTo().(*cc.Declarator); ok && d.Type().Kind() == cc.Function {
					return x.Token.SrcStr()
				}
				return ""
			case cc.PrimaryExpressionExpr:
				n = x.ExpressionList
				continue
			}
			return ""
		case *cc.PostfixExpression:
			if x.Case != cc.PostfixExpressionPrimary {
				return ""
			}
			n = x.PrimaryExpression
		case *cc.UnaryExpression:
			if x.Case != cc.UnaryExpressionPostfix {
				return ""
			}
			n = x.PostfixExpression
		case *cc.CastExpression:
			if x.Case != cc.CastExpressionUnary {
				return ""
			}
			n = x.UnaryExpression
		case *cc.ExpressionList:
			if x.ExpressionList != nil {
				return ""
			}
			n = x.AssignmentExpression
		default:
			return ""
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

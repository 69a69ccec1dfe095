package main

import (
	"go/ast"
	"go/token"
)

// Site says where in the source a mutant's operator lies, as far as
// gremlins' coverage is concerned.
type Site int

const (
	// SiteOther is code inside a statement block: gremlins sees whether it ran.
	SiteOther Site = iota
	// SiteCase is the expression list of a case clause of a switch statement,
	// which lies in no block of the cover profile.
	SiteCase
	// SiteConst is a constant declaration, which the compiler evaluates.
	SiteConst
)

// String names the site as the log does.
func (s Site) String() string {
	switch s {
	case SiteCase:
		return "case"
	case SiteConst:
		return "const"
	default:
		return "other"
	}
}

// Classify says where pos lies in file. A position in a case clause's
// expressions (before its colon) of a switch statement (with a tag or
// without; not a type switch) is SiteCase, and sw is that switch; a position
// in a const declaration is SiteConst. A position in the body of a function
// literal is SiteOther even inside such a clause or declaration: the body has
// blocks of its own, so gremlins already knew whether it ran.
func Classify(file *ast.File, pos token.Pos) (site Site, sw *ast.SwitchStmt) {
	path := enclosing(file, pos)
	for i := len(path) - 1; i >= 0; i-- {
		switch n := path[i].(type) {
		case *ast.FuncLit:
			if n.Body.Pos() <= pos {
				return SiteOther, nil
			}
		case *ast.CaseClause:
			if pos >= n.Colon || i == 0 {
				continue
			}
			// A case clause's parent is the switch's body, and its parent the switch.
			if i >= 2 {
				if s, ok := path[i-2].(*ast.SwitchStmt); ok {
					return SiteCase, s
				}
			}
		case *ast.GenDecl:
			if n.Tok == token.CONST {
				return SiteConst, nil
			}
		}
	}
	return SiteOther, nil
}

// enclosing returns the nodes of file that hold pos, outermost first.
func enclosing(file *ast.File, pos token.Pos) []ast.Node {
	var path []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		path = append(path, n)
		return true
	})
	return path
}

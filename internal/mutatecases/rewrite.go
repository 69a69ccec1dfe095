package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
)

// mutations is gremlins v0.6.0's table of replacements
// (internal/engine/mappings.go): for each mutator, the token each operator
// becomes. make mutate enables gremlins' default mutators
// (ARITHMETIC_BASE, CONDITIONALS_BOUNDARY, CONDITIONALS_NEGATION,
// INCREMENT_DECREMENT, INVERT_NEGATIVES); the others are here so that a run
// that enables them is understood too.
var mutations = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {
		token.ADD: token.SUB,
		token.MUL: token.QUO,
		token.QUO: token.MUL,
		token.REM: token.MUL,
		token.SUB: token.ADD,
	},
	"CONDITIONALS_BOUNDARY": {
		token.GEQ: token.GTR,
		token.GTR: token.GEQ,
		token.LEQ: token.LSS,
		token.LSS: token.LEQ,
	},
	"CONDITIONALS_NEGATION": {
		token.EQL: token.NEQ,
		token.GEQ: token.LSS,
		token.GTR: token.LEQ,
		token.LEQ: token.GTR,
		token.LSS: token.GEQ,
		token.NEQ: token.EQL,
	},
	"INCREMENT_DECREMENT": {
		token.DEC: token.INC,
		token.INC: token.DEC,
	},
	"INVERT_NEGATIVES": {
		token.SUB: token.ADD,
	},
	"INVERT_ASSIGNMENTS": {
		token.ADD_ASSIGN: token.SUB_ASSIGN,
		token.MUL_ASSIGN: token.QUO_ASSIGN,
		token.QUO_ASSIGN: token.MUL_ASSIGN,
		token.REM_ASSIGN: token.REM_ASSIGN, // sic: gremlins' table leaves %= as it is
		token.SUB_ASSIGN: token.ADD_ASSIGN,
	},
	"INVERT_BITWISE": {
		token.AND:     token.OR,
		token.OR:      token.AND,
		token.XOR:     token.AND,
		token.AND_NOT: token.AND,
		token.SHL:     token.SHR,
		token.SHR:     token.SHL,
	},
	"INVERT_BWASSIGN": {
		token.AND_ASSIGN:     token.OR_ASSIGN,
		token.OR_ASSIGN:      token.AND_ASSIGN,
		token.XOR_ASSIGN:     token.AND_ASSIGN,
		token.AND_NOT_ASSIGN: token.AND_ASSIGN,
		token.SHL_ASSIGN:     token.SHR_ASSIGN,
		token.SHR_ASSIGN:     token.SHL_ASSIGN,
	},
	"INVERT_LOGICAL": {
		token.LAND: token.LOR,
		token.LOR:  token.LAND,
	},
	"INVERT_LOOPCTRL": {
		token.BREAK:    token.CONTINUE,
		token.CONTINUE: token.BREAK,
	},
	"REMOVE_SELF_ASSIGNMENTS": {
		token.ADD_ASSIGN:     token.ASSIGN,
		token.AND_ASSIGN:     token.ASSIGN,
		token.AND_NOT_ASSIGN: token.ASSIGN,
		token.MUL_ASSIGN:     token.ASSIGN,
		token.OR_ASSIGN:      token.ASSIGN,
		token.QUO_ASSIGN:     token.ASSIGN,
		token.REM_ASSIGN:     token.ASSIGN,
		token.SHL_ASSIGN:     token.ASSIGN,
		token.SHR_ASSIGN:     token.ASSIGN,
		token.SUB_ASSIGN:     token.ASSIGN,
		token.XOR_ASSIGN:     token.ASSIGN,
	},
}

// Mutate returns src with the mutant applied: the operator token at
// line:column (1-based; the column counts bytes, as go/token's does) replaced
// by the one gremlins' table gives for the mutator. It refuses when no
// operator gremlins mutates (of a binary or unary expression, an increment or
// decrement, an assignment, a break or continue) starts there, when the
// mutator does not apply to that operator, and when the replaced source would
// not read as the same tokens with only that one changed. src is not modified.
func Mutate(src []byte, filename string, line, column int, mutator string) ([]byte, error) {
	table, ok := mutations[mutator]
	if !ok {
		return nil, fmt.Errorf("mutatecases: %s:%d:%d: unknown mutator %q", filename, line, column, mutator)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("mutatecases: %w", err)
	}
	pos, err := position(fset.File(file.Pos()), line, column)
	if err != nil {
		return nil, err
	}
	old, ok := operatorAt(file, pos)
	if !ok {
		return nil, fmt.Errorf("mutatecases: %s:%d:%d: no operator gremlins mutates starts here", filename, line, column)
	}
	repl, ok := table[old]
	if !ok {
		return nil, fmt.Errorf("mutatecases: %s:%d:%d: %s does not apply to %q", filename, line, column, mutator, old)
	}
	off := fset.File(file.Pos()).Offset(pos)
	if !bytes.HasPrefix(src[off:], []byte(old.String())) {
		return nil, fmt.Errorf("mutatecases: %s:%d:%d: the source there is not %q", filename, line, column, old)
	}
	out := make([]byte, 0, len(src)+len(repl.String()))
	out = append(out, src[:off]...)
	out = append(out, repl.String()...)
	out = append(out, src[off+len(old.String()):]...)
	if err := sameTokensBut(src, out, off, repl); err != nil {
		return nil, fmt.Errorf("mutatecases: %s:%d:%d: %s: %w", filename, line, column, mutator, err)
	}
	return out, nil
}

// position returns the token.Pos of line:column in f, or an error when f has
// no such line or the line no such column.
func position(f *token.File, line, column int) (token.Pos, error) {
	if line < 1 || line > f.LineCount() || column < 1 {
		return token.NoPos, fmt.Errorf("mutatecases: %s:%d:%d: no such position", f.Name(), line, column)
	}
	start := f.Offset(f.LineStart(line))
	end := f.Size()
	if line < f.LineCount() {
		end = f.Offset(f.LineStart(line + 1))
	}
	if start+column-1 >= end {
		return token.NoPos, fmt.Errorf("mutatecases: %s:%d:%d: line %d has %d bytes", f.Name(), line, column, line, end-start)
	}
	return f.Pos(start + column - 1), nil
}

// operatorAt returns the operator of the node that gremlins would mutate at
// pos (the nodes of gremlins' engine.NewTokenNode).
func operatorAt(file *ast.File, pos token.Pos) (token.Token, bool) {
	var found token.Token
	ok := false
	ast.Inspect(file, func(n ast.Node) bool {
		if ok || n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		var tok token.Token
		at := token.NoPos
		switch n := n.(type) {
		case *ast.BinaryExpr:
			tok, at = n.Op, n.OpPos
		case *ast.UnaryExpr:
			tok, at = n.Op, n.OpPos
		case *ast.IncDecStmt:
			tok, at = n.Tok, n.TokPos
		case *ast.AssignStmt:
			tok, at = n.Tok, n.TokPos
		case *ast.BranchStmt:
			tok, at = n.Tok, n.TokPos
		}
		if at == pos {
			found, ok = tok, true
		}
		return !ok
	})
	return found, ok
}

// sameTokensBut checks that mutated scans as src does, token for token, but
// for the token at offset off, which must be repl: a replacement that merged
// with its neighbours (a / before a comment, a - before a -) is refused.
func sameTokensBut(src, mutated []byte, off int, repl token.Token) error {
	a, b := scanTokens(src), scanTokens(mutated)
	if len(a) != len(b) {
		return fmt.Errorf("the replacement changes the source's tokens (%d, not %d)", len(b), len(a))
	}
	shift := len(mutated) - len(src)
	seen := false
	for i := range a {
		at, bt := a[i], b[i]
		if at.off == off {
			if bt.off != off || bt.tok != repl {
				return fmt.Errorf("the replacement reads as %s, not %s", bt.tok, repl)
			}
			seen = true
			continue
		}
		want := at.off
		if at.off > off {
			want += shift
		}
		if bt.off != want || bt.tok != at.tok || bt.lit != at.lit {
			return fmt.Errorf("the replacement changes the token at offset %d (%s %q)", at.off, at.tok, at.lit)
		}
	}
	if !seen {
		return fmt.Errorf("no token starts at offset %d", off)
	}
	return nil
}

type scanned struct {
	off int
	tok token.Token
	lit string
}

// scanTokens returns src's tokens, comments included; an illegal token is a
// token like another, so that a replacement that makes one is refused.
func scanTokens(src []byte) []scanned {
	fset := token.NewFileSet()
	f := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(f, src, func(token.Position, string) {}, scanner.ScanComments)
	var out []scanned
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		out = append(out, scanned{off: f.Offset(pos), tok: tok, lit: lit})
	}
}

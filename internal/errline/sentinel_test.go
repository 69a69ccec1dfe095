package errline_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packagePrefix is the "name: " a message starts with when it names its
// package.
var packagePrefix = regexp.MustCompile(`^[a-z][a-z/]*: `)

// A sentinel error (var ErrX = errors.New("…")) says what went wrong and
// nothing more: the call that returns it wraps it with the package and
// the operation, "transfer: copy float32 [3] into float32 [1]: want the
// same dtype and shape: endpoints differ". A sentinel that starts with its
// package's name makes every such message say the package twice.
func TestSentinelsDoNotRepeatThePackage(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found, prefixed []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "third_party" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if !strings.HasPrefix(name.Name, "Err") || i >= len(spec.Values) {
					continue
				}
				msg, ok := errorsNewText(spec.Values[i])
				if !ok {
					continue
				}
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel+": "+name.Name)
				if packagePrefix.MatchString(msg) {
					prefixed = append(prefixed, rel+": "+name.Name+" = "+strconv.Quote(msg))
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(found), 30, "the walk finds the project's sentinels")
	assert.Empty(t, prefixed, "sentinels that name their package: the messages that wrap them say it twice")
}

// errorsNewText returns the message of an errors.New("…") call.
func errorsNewText(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" {
		return "", false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "errors" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	msg, err := strconv.Unquote(lit.Value)
	return msg, err == nil
}

package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guideBlock matches an example in guide.md: its name, its imports, its
// code and what it prints.
var guideBlock = regexp.MustCompile("(?s)<!-- example: (\\w+) -->\n```go\n(import \\(\n.*?\n\\)\n)\n(.*?)\n```\n\nIt prints:\n\n```text\n(.*?)\n```")

// exampleSource is an Example function's body as the guide shows it: one
// tab less, without the Output comment, the output it wants, and the
// import declaration of the packages the body uses, as gofmt writes it.
type exampleSource struct{ code, output, imports string }

// importsOf is the import declaration of the packages body uses, of the
// file's imports: the standard library's first, then a blank line, then
// the others, each group sorted.
func importsOf(body *ast.BlockStmt, fileImports map[string]string) string {
	used := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
				if path, ok := fileImports[id.Name]; ok {
					used[path] = true
				}
			}
		}
		return true
	})
	var std, other []string
	for path := range used {
		if strings.Contains(strings.Split(path, "/")[0], ".") {
			other = append(other, path)
		} else {
			std = append(std, path)
		}
	}
	slices.Sort(std)
	slices.Sort(other)
	var b strings.Builder
	b.WriteString("import (\n")
	for _, p := range std {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteString("\n")
	}
	for _, p := range other {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n")
	return b.String()
}

func examples(t *testing.T, file string) map[string]exampleSource {
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	require.NoError(t, err)
	fileImports := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		require.NoError(t, err)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		fileImports[name] = path
	}
	out := map[string]exampleSource{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
			continue
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		code, output, found := strings.Cut(body, "\t// Output:\n")
		require.True(t, found, "%s has no Output", fn.Name.Name)
		var lines []string
		for _, l := range strings.Split(strings.Trim(code, "\n"), "\n") {
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		var outs []string
		for _, l := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
			outs = append(outs, strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(l), "//"), " "))
		}
		out[fn.Name.Name] = exampleSource{strings.Join(lines, "\n"), strings.Join(outs, "\n"), importsOf(fn.Body, fileImports)}
	}
	return out
}

// TestGuideShowsTheTestedCode: every Go block of the guide is the body of
// the Example it names, under the imports that body needs, and shows that
// Example's output; every Example of the guide's file is in the guide.
func TestGuideShowsTheTestedCode(t *testing.T) {
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	want := examples(t, "guide_example_test.go")
	require.NotEmpty(t, want)
	seen := map[string]bool{}
	for _, m := range guideBlock.FindAllStringSubmatch(string(guide), -1) {
		name, imports, code, output := m[1], m[2], m[3], m[4]
		ex, ok := want[name]
		if !assert.True(t, ok, "guide.md shows %s, which guide_example_test.go does not have", name) {
			continue
		}
		assert.False(t, seen[name], "%s is shown twice", name)
		seen[name] = true
		assert.Equal(t, ex.imports, imports, "guide.md's imports for %s", name)
		assert.Equal(t, ex.code, code, "guide.md's code for %s", name)
		assert.Equal(t, ex.output, output, "guide.md's output for %s", name)
	}
	for name := range want {
		assert.True(t, seen[name], "%s is not in guide.md", name)
	}
	assert.Equal(t, strings.Count(string(guide), "```go"), len(seen), "every Go block of the guide is a tested example")
}

// TestGuidePythonInstall: the guide's Python section shows how to install
// the module, the same recipe as the README's, and its offline steps are
// the ones python/install_check.sh runs in CI.
func TestGuidePythonInstall(t *testing.T) {
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	check, err := os.ReadFile("../python/install_check.sh")
	require.NoError(t, err)
	python := string(guide[strings.Index(string(guide), "## Interop from Python"):])
	m := regexp.MustCompile("(?s)<!-- python: install -->\n```sh\n(.*?)```").FindStringSubmatch(python)
	require.NotNil(t, m, "the guide's Python section has an install block")
	assert.Contains(t, string(readme), "```sh\n"+m[1]+"```", "the README shows the same recipe")
	for _, step := range []struct{ guide, script string }{
		{"/usr/bin/python3 -m venv --system-site-packages ", `"$PY" -m venv --system-site-packages `},
		{"/bin/pip install --no-build-isolation --no-index ./python", `/bin/pip" install --no-build-isolation --no-index "$ROOT/python"`},
		{"/bin/python -m cuarray info", `/bin/python" -m cuarray info`},
	} {
		assert.Contains(t, m[1], step.guide)
		assert.Contains(t, string(check), step.script, "install_check.sh runs the guide's step %q", step.guide)
	}
}

// TestGuideEmulatedDriverKeys: the guide's table of CUARRAY_EMULATED_DRIVER
// keys names exactly the keys the emulated driver reads, as its own error
// for an unknown key lists them.
func TestGuideEmulatedDriverKeys(t *testing.T) {
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	src, err := os.ReadFile("../device/cuda/emulated/state.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`unknown option \(([^)]*)\)`).FindSubmatch(src)
	require.NotNil(t, m, "the emulated driver lists its keys in its error for an unknown one")
	var want []string
	for _, k := range strings.Split(string(m[1]), ",") {
		want = append(want, strings.TrimSpace(k))
	}
	i := strings.Index(string(guide), "<!-- emulated driver keys -->")
	require.GreaterOrEqual(t, i, 0, "the guide has the table of keys")
	table, _, _ := strings.Cut(string(guide[i:]), "\n\n")
	var got []string
	for _, row := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(table, -1) {
		got = append(got, row[1])
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got, "the keys of the guide's table")
}

// TestGuideShowsTheKernelSources: every source the guide shows under
// `<!-- file: PATH -->` is that file of the repository, whole.
func TestGuideShowsTheKernelSources(t *testing.T) {
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```\\w*\n(.*?)\n```").FindAllStringSubmatch(string(guide), -1)
	require.Len(t, blocks, 2, "the guide shows saxpy.cu and stencil.cu")
	for _, b := range blocks {
		src, err := os.ReadFile("../" + b[1])
		require.NoError(t, err)
		assert.Equal(t, strings.TrimRight(string(src), "\n"), b[2], "guide.md's copy of %s", b[1])
	}
}

package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guideBlock matches an example in guide.md: its name, its code and what
// it prints.
var guideBlock = regexp.MustCompile("(?s)<!-- example: (\\w+) -->\n```go\n(.*?)\n```\n\nIt prints:\n\n```text\n(.*?)\n```")

// exampleSource is an Example function's body as the guide shows it: one
// tab less, without the Output comment, and the output it wants.
type exampleSource struct{ code, output string }

func examples(t *testing.T, file string) map[string]exampleSource {
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	require.NoError(t, err)
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
		out[fn.Name.Name] = exampleSource{strings.Join(lines, "\n"), strings.Join(outs, "\n")}
	}
	return out
}

// TestGuideShowsTheTestedCode: every Go block of the guide is the body of
// the Example it names, and shows that Example's output; every Example
// of the guide's file is in the guide.
func TestGuideShowsTheTestedCode(t *testing.T) {
	guide, err := os.ReadFile("guide.md")
	require.NoError(t, err)
	want := examples(t, "guide_example_test.go")
	require.NotEmpty(t, want)
	seen := map[string]bool{}
	for _, m := range guideBlock.FindAllStringSubmatch(string(guide), -1) {
		name, code, output := m[1], m[2], m[3]
		ex, ok := want[name]
		if !assert.True(t, ok, "guide.md shows %s, which guide_example_test.go does not have", name) {
			continue
		}
		assert.False(t, seen[name], "%s is shown twice", name)
		seen[name] = true
		assert.Equal(t, ex.code, code, "guide.md's code for %s", name)
		assert.Equal(t, ex.output, output, "guide.md's output for %s", name)
	}
	for name := range want {
		assert.True(t, seen[name], "%s is not in guide.md", name)
	}
	assert.Equal(t, strings.Count(string(guide), "```go"), len(seen), "every Go block of the guide is a tested example")
}

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marker goes right before the operator a test case points at; it is a
// comment, so the source parses as it would without it.
const marker = "/*@*/"

// markedPos parses src and returns the position just after its marker.
func markedPos(t *testing.T, src string) (*token.FileSet, *ast.File, token.Pos) {
	t.Helper()
	i := strings.Index(src, marker)
	require.GreaterOrEqual(t, i, 0, "the snippet has no marker")
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "snippet.go", src, parser.SkipObjectResolution)
	require.NoError(t, err, "the snippet parses")
	pos := fset.File(file.Pos()).Pos(i + len(marker))
	return fset, file, pos
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		src        string
		want       Site
		switchLine int // the line of the switch a case site belongs to
	}{
		{"tagless switch case", "package p\nfunc f(x int) int {\n\tswitch {\n\tcase x /*@*/< 0:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteCase, 3},
		{"second expression of a case", "package p\nfunc f(x int) bool {\n\tswitch {\n\tcase x == 1, x /*@*/!= 2:\n\t\treturn true\n\t}\n\treturn false\n}\n", SiteCase, 3},
		{"tagged switch case", "package p\nconst n = 1\nfunc f(x int) int {\n\tswitch x {\n\tcase n /*@*/+ 1:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteCase, 4},
		{"switch with init", "package p\nfunc f(x int) int {\n\tswitch y := x * 2; {\n\tcase y /*@*/> 3:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteCase, 3},
		{"labelled switch", "package p\nfunc f(x int) int {\nL:\n\tswitch {\n\tcase x /*@*/>= 3:\n\t\tbreak L\n\t}\n\treturn 0\n}\n", SiteCase, 4},
		{"inner switch in a case body", "package p\nfunc f(x, y int) int {\n\tswitch {\n\tcase x > 0:\n\t\tswitch {\n\t\tcase y /*@*/<= 1:\n\t\t\treturn 2\n\t\t}\n\t}\n\treturn 0\n}\n", SiteCase, 5},
		{"switch tag", "package p\nfunc f(x int) int {\n\tswitch x /*@*/+ 1 {\n\tcase 2:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"switch init", "package p\nfunc f(x int) int {\n\tswitch y := x /*@*/* 2; {\n\tcase y > 3:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"case body", "package p\nfunc f(x int) int {\n\tswitch {\n\tcase x < 0:\n\t\treturn x /*@*/- 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"function literal called in a case", "package p\nfunc f(x int) int {\n\tswitch {\n\tcase func() bool { return x /*@*/< 1 }():\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"type switch case", "package p\nfunc f(v any) int {\n\tswitch v.(type) {\n\tcase [2 /*@*/* 3]int:\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"select case", "package p\nfunc f(c chan int, x int) {\n\tselect {\n\tcase c <- x /*@*/+ 1:\n\tdefault:\n\t}\n}\n", SiteOther, 0},
		{"if condition", "package p\nfunc f(x int) int {\n\tif x /*@*/< 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n", SiteOther, 0},
		{"const", "package p\nconst c = 1 /*@*/+ 2\n", SiteConst, 0},
		{"const block with iota", "package p\ntype T int\nconst (\n\tA T = iota /*@*/+ 1\n\tB\n)\n", SiteConst, 0},
		{"const in a function", "package p\nfunc f() int {\n\tconst k = 2 /*@*/* 3\n\treturn k\n}\n", SiteConst, 0},
		{"var", "package p\nvar v = 1 /*@*/+ 2\n", SiteOther, 0},
		{"function literal in a var", "package p\nvar f = func(x int) bool { return x /*@*/> 2 }\n", SiteOther, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset, file, pos := markedPos(t, tc.src)
			site, sw := Classify(file, pos)
			assert.Equal(t, tc.want, site, "the site of the marked operator")
			if tc.want != SiteCase {
				assert.Nil(t, sw, "only a case site has a switch")
				return
			}
			require.NotNil(t, sw, "a case site names its switch")
			assert.Equal(t, tc.switchLine, fset.Position(sw.Pos()).Line, "the switch the case belongs to")
		})
	}
}

func TestSiteString(t *testing.T) {
	for site, want := range map[Site]string{SiteOther: "other", SiteCase: "case", SiteConst: "const"} {
		assert.Equal(t, want, site.String())
	}
}

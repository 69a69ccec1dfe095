package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProfile(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var want []Block
	var text strings.Builder
	text.WriteString("mode: set\n")
	for range 5 + r.IntN(20) {
		b := Block{StartLine: 1 + r.IntN(300), StartCol: 1 + r.IntN(60)}
		b.EndLine = b.StartLine + r.IntN(20)
		b.EndCol = 1 + r.IntN(60)
		if b.EndLine == b.StartLine {
			b.EndCol = b.StartCol + r.IntN(20)
		}
		count := r.IntN(3)
		b.Ran = count > 0
		want = append(want, b)
		fmt.Fprintf(&text, "example.com/m/pkg/a.go:%d.%d,%d.%d %d %d\n", b.StartLine, b.StartCol, b.EndLine, b.EndCol, 1+r.IntN(4), count)
	}
	text.WriteString("example.com/m/pkg/b.go:3.14,5.2 1 0\n")
	prof, err := ParseProfile(strings.NewReader(text.String()))
	require.NoError(t, err)
	assert.Equal(t, want, prof["example.com/m/pkg/a.go"], "a.go's blocks in order")
	assert.Equal(t, []Block{{StartLine: 3, StartCol: 14, EndLine: 5, EndCol: 2}}, prof["example.com/m/pkg/b.go"])
	assert.Len(t, prof, 2)
}

func TestParseProfileRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text, refusal string
	}{
		{"empty", "", "empty"},
		{"no mode", "m/a.go:1.1,2.2 1 1\n", "not a mode"},
		{"unknown mode", "mode: sometimes\n", "not a mode"},
		{"no file name", "mode: set\n1.1,2.2 1 1\n", "no file name"},
		{"two fields", "mode: set\nm/a.go:1.1,2.2 1\n", "want extent, statements and count"},
		{"no comma", "mode: set\nm/a.go:1.1 2.2 1 1\n", "want extent"},
		{"no column", "mode: set\nm/a.go:1,2.2 1 1\n", "not line.column"},
		{"line 0", "mode: set\nm/a.go:0.1,2.2 1 1\n", "not a line or column"},
		{"ends before it starts", "mode: set\nm/a.go:5.1,2.2 1 1\n", "ends before it starts"},
		{"ends before it starts on its line", "mode: set\nm/a.go:5.9,5.2 1 1\n", "ends before it starts"},
		{"negative count", "mode: count\nm/a.go:1.1,2.2 1 -1\n", "count"},
		{"statements not a number", "mode: count\nm/a.go:1.1,2.2 x 1\n", "statements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile(strings.NewReader(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.refusal)
		})
	}
}

// FuzzParseProfile checks that ParseProfile never panics and that every
// block it accepts starts at line and column 1 or later and ends where or
// after it starts.
func FuzzParseProfile(f *testing.F) {
	f.Add("mode: set\nexample.com/m/a.go:3.14,5.2 1 1\n")
	f.Add("mode: atomic\nc:/x/a.go:1.1,1.9 2 0\n\n")
	f.Add("mode: count\n:1.1,1.1 1 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		prof, err := ParseProfile(strings.NewReader(text))
		if err != nil {
			return
		}
		for name, blocks := range prof {
			require.NotEmpty(t, name)
			for _, b := range blocks {
				require.GreaterOrEqual(t, b.StartLine, 1)
				require.GreaterOrEqual(t, b.StartCol, 1)
				require.GreaterOrEqual(t, b.EndCol, 1)
				require.True(t, b.EndLine > b.StartLine || (b.EndLine == b.StartLine && b.EndCol >= b.StartCol))
				require.True(t, b.contains(b.StartLine, b.StartCol) && b.contains(b.EndLine, b.EndCol), "a block holds its ends")
			}
		}
	})
}

func TestBlockContains(t *testing.T) {
	b := Block{StartLine: 10, StartCol: 5, EndLine: 12, EndCol: 3}
	for _, tc := range []struct {
		line, col int
		want      bool
	}{
		{10, 5, true}, {10, 4, false}, {10, 200, true}, {11, 1, true}, {12, 3, true}, {12, 4, false},
		{9, 50, false}, {13, 1, false},
	} {
		assert.Equal(t, tc.want, b.contains(tc.line, tc.col), "%d:%d", tc.line, tc.col)
	}
}

// The blocks in TestSwitchReached are those `go test -coverprofile` (go1.26)
// writes for switchSrc: the block before the switch runs up to the switch's
// opening brace, each case body's from after its colon; the case conditions
// lie in none.
const switchSrc = `package p

func f(x int) int {
	y := x * 2
	switch {
	case y < 0:
		return -1
	case y > 10:
		return 1
	}
	return 0
}
`

func TestSwitchReached(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", switchSrc, 0)
	require.NoError(t, err)
	var sw *ast.SwitchStmt
	ast.Inspect(file, func(n ast.Node) bool {
		if s, ok := n.(*ast.SwitchStmt); ok {
			sw = s
		}
		return sw == nil
	})
	require.NotNil(t, sw)
	before := Block{StartLine: 3, StartCol: 19, EndLine: 5, EndCol: 9}
	firstCase := Block{StartLine: 6, StartCol: 13, EndLine: 7, EndCol: 12}
	secondCase := Block{StartLine: 8, StartCol: 14, EndLine: 9, EndCol: 11}
	after := Block{StartLine: 11, StartCol: 2, EndLine: 11, EndCol: 10}
	ran := func(b Block) Block { b.Ran = true; return b }
	for _, tc := range []struct {
		name   string
		blocks []Block
		want   bool
	}{
		{"nothing ran", []Block{before, firstCase, secondCase, after}, false},
		{"the block before the switch ran", []Block{ran(before), firstCase, secondCase, after}, true},
		{"a case body ran", []Block{before, firstCase, ran(secondCase), after}, true},
		{"only the code after the switch ran", []Block{before, firstCase, secondCase, ran(after)}, false},
		{"no blocks", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SwitchReached(fset, tc.blocks, sw))
		})
	}
}

package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markedLineColumn returns the line and byte column (1-based) just after
// src's marker.
func markedLineColumn(t *testing.T, src string) (int, int) {
	t.Helper()
	i := strings.Index(src, marker)
	require.GreaterOrEqual(t, i, 0, "the snippet has no marker")
	i += len(marker)
	line := strings.Count(src[:i], "\n") + 1
	return line, i - strings.LastIndex(src[:i], "\n")
}

func TestMutate(t *testing.T) {
	const head = "package p\n\nfunc f(a, b int, c bool) int {\n"
	for _, tc := range []struct {
		mutator  string
		stmt     string // with the marker before the operator
		want     string // stmt after the mutation, marker kept
		refusal  string // a part of the error, when the mutant is refused
		position bool   // when set, the marker's position is replaced by line 99
		shift    int    // added to the marker's column
	}{
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/== b {", want: "if a /*@*/!= b {"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/!= b {", want: "if a /*@*/== b {"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/< b {", want: "if a /*@*/>= b {"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/>= b {", want: "if a /*@*/< b {"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/> b {", want: "if a /*@*/<= b {"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/<= b {", want: "if a /*@*/> b {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a /*@*/< b {", want: "if a /*@*/<= b {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a /*@*/<= b {", want: "if a /*@*/< b {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a /*@*/> b {", want: "if a /*@*/>= b {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a /*@*/>= b {", want: "if a /*@*/> b {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a/*@*/<b {", want: "if a/*@*/<=b {"},
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*/+ b > 0 {", want: "if a /*@*/- b > 0 {"},
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*/- b > 0 {", want: "if a /*@*/+ b > 0 {"},
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*/* b > 0 {", want: "if a /*@*// b > 0 {"},
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*/% b > 0 {", want: "if a /*@*/* b > 0 {"},
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*// b > 0 {", want: "if a /*@*/* b > 0 {"},
		{mutator: "INVERT_NEGATIVES", stmt: "if /*@*/-a > 0 {", want: "if /*@*/+a > 0 {"},
		{mutator: "INVERT_NEGATIVES", stmt: "if a /*@*/- b > 0 {", want: "if a /*@*/+ b > 0 {"},
		{mutator: "INVERT_NEGATIVES", stmt: "if a - /*@*/-b > 0 {", want: "if a - /*@*/+b > 0 {"},
		{mutator: "INCREMENT_DECREMENT", stmt: "a/*@*/++\n\tif c {", want: "a/*@*/--\n\tif c {"},
		{mutator: "INCREMENT_DECREMENT", stmt: "a/*@*/--\n\tif c {", want: "a/*@*/++\n\tif c {"},
		{mutator: "INVERT_LOGICAL", stmt: "if c /*@*/&& a > b {", want: "if c /*@*/|| a > b {"},
		{mutator: "INVERT_ASSIGNMENTS", stmt: "a /*@*/+= b\n\tif c {", want: "a /*@*/-= b\n\tif c {"},
		{mutator: "REMOVE_SELF_ASSIGNMENTS", stmt: "a /*@*/*= b\n\tif c {", want: "a /*@*/= b\n\tif c {"},
		{mutator: "CONDITIONALS_BOUNDARY", stmt: "if a /*@*/== b {", refusal: `CONDITIONALS_BOUNDARY does not apply to "=="`},
		{mutator: "INVERT_NEGATIVES", stmt: "if a /*@*/+ b > 0 {", refusal: `INVERT_NEGATIVES does not apply to "+"`},
		{mutator: "INCREMENT_DECREMENT", stmt: "if a /*@*/< b {", refusal: `INCREMENT_DECREMENT does not apply to "<"`},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if /*@*/a == b {", refusal: "no operator gremlins mutates starts here"},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/<= b {", shift: 1, refusal: "no operator gremlins mutates starts here"},
		{mutator: "NO_SUCH_MUTATOR", stmt: "if a /*@*/== b {", refusal: `unknown mutator "NO_SUCH_MUTATOR"`},
		{mutator: "CONDITIONALS_NEGATION", stmt: "if a /*@*/== b {", position: true, refusal: "no such position"},
		// `*` becoming `/` right before a comment starts a line comment.
		{mutator: "ARITHMETIC_BASE", stmt: "if a /*@*/*/*c*/b > 0 {", refusal: "changes the source's tokens"},
	} {
		t.Run(tc.mutator+" "+tc.stmt, func(t *testing.T) {
			src := head + "\t" + tc.stmt + "\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
			line, col := markedLineColumn(t, src)
			col += tc.shift
			if tc.position {
				line = 99
			}
			got, err := Mutate([]byte(src), "p.go", line, col, tc.mutator)
			if tc.refusal != "" {
				require.Error(t, err, "the mutant is refused")
				assert.Contains(t, err.Error(), tc.refusal)
				assert.Contains(t, err.Error(), "p.go:", "the error names the file")
				return
			}
			require.NoError(t, err)
			want := head + "\t" + tc.want + "\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
			assert.Equal(t, want, string(got), "only the operator changes")
			_, err = parser.ParseFile(token.NewFileSet(), "p.go", got, 0)
			assert.NoError(t, err, "the mutant parses")
		})
	}
}

func TestMutateLeavesItsInputAlone(t *testing.T) {
	src := []byte("package p\n\nfunc f(a, b int) bool { return a < b }\n")
	orig := string(src)
	got, err := Mutate(src, "p.go", 3, 34, "CONDITIONALS_NEGATION")
	require.NoError(t, err)
	assert.Equal(t, "package p\n\nfunc f(a, b int) bool { return a >= b }\n", string(got))
	assert.Equal(t, orig, string(src), "the source given is not modified")
}

func TestMutateRefusesSourceThatDoesNotParse(t *testing.T) {
	_, err := Mutate([]byte("package p\nfunc f( {\n"), "p.go", 2, 3, "ARITHMETIC_BASE")
	require.Error(t, err)
}

// TestMutationsAreGremlins checks the table against gremlins' documented
// replacements for the mutators make mutate enables.
func TestMutationsAreGremlins(t *testing.T) {
	for mutator, want := range map[string]map[token.Token]token.Token{
		"ARITHMETIC_BASE":       {token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL, token.REM: token.MUL},
		"CONDITIONALS_BOUNDARY": {token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR},
		"CONDITIONALS_NEGATION": {token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ, token.GEQ: token.LSS, token.GTR: token.LEQ, token.LEQ: token.GTR},
		"INCREMENT_DECREMENT":   {token.INC: token.DEC, token.DEC: token.INC},
		"INVERT_NEGATIVES":      {token.SUB: token.ADD},
	} {
		assert.Equal(t, want, mutations[mutator], mutator)
	}
}

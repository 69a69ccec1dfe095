package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"strconv"
	"strings"
)

// Block is one block of a Go cover profile: its extent (1-based lines and
// byte columns, the end column just past its last byte) and whether the tests
// ran it.
type Block struct {
	StartLine, StartCol int
	EndLine, EndCol     int
	Ran                 bool
}

// Profile is a Go cover profile's blocks, by file name as the profile writes
// it (the package's import path, a slash, the file's name).
type Profile map[string][]Block

// ParseProfile reads the profile `go test -coverprofile` writes: a line
// "mode: set|count|atomic", then one line per block,
// "name:startLine.startCol,endLine.endCol statements count".
func ParseProfile(r io.Reader) (Profile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("mutatecases: cover profile: %w", err)
		}
		return nil, fmt.Errorf("mutatecases: cover profile: empty")
	}
	mode, ok := strings.CutPrefix(sc.Text(), "mode: ")
	if !ok || (mode != "set" && mode != "count" && mode != "atomic") {
		return nil, fmt.Errorf("mutatecases: cover profile: first line %q is not a mode", sc.Text())
	}
	prof := Profile{}
	for n := 2; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		name, b, err := parseBlock(line)
		if err != nil {
			return nil, fmt.Errorf("mutatecases: cover profile line %d: %w", n, err)
		}
		prof[name] = append(prof[name], b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mutatecases: cover profile: %w", err)
	}
	return prof, nil
}

func parseBlock(line string) (string, Block, error) {
	colon := strings.LastIndexByte(line, ':')
	if colon <= 0 {
		return "", Block{}, fmt.Errorf("%q: no file name", line)
	}
	fields := strings.Fields(line[colon+1:])
	if len(fields) != 3 {
		return "", Block{}, fmt.Errorf("%q: want extent, statements and count", line)
	}
	var nums [4]int
	start, end, ok := strings.Cut(fields[0], ",")
	if !ok {
		return "", Block{}, fmt.Errorf("%q: extent %q has no comma", line, fields[0])
	}
	for i, s := range []string{start, end} {
		l, c, ok := strings.Cut(s, ".")
		if !ok {
			return "", Block{}, fmt.Errorf("%q: %q is not line.column", line, s)
		}
		var err error
		if nums[2*i], err = positive(l); err != nil {
			return "", Block{}, fmt.Errorf("%q: %w", line, err)
		}
		if nums[2*i+1], err = positive(c); err != nil {
			return "", Block{}, fmt.Errorf("%q: %w", line, err)
		}
	}
	if nums[2] < nums[0] || (nums[2] == nums[0] && nums[3] < nums[1]) {
		return "", Block{}, fmt.Errorf("%q: the block ends before it starts", line)
	}
	if _, err := strconv.ParseUint(fields[1], 10, 31); err != nil {
		return "", Block{}, fmt.Errorf("%q: statements: %w", line, err)
	}
	count, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil {
		return "", Block{}, fmt.Errorf("%q: count: %w", line, err)
	}
	return line[:colon], Block{StartLine: nums[0], StartCol: nums[1], EndLine: nums[2], EndCol: nums[3], Ran: count > 0}, nil
}

func positive(s string) (int, error) {
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%q is not a line or column", s)
	}
	return int(v), nil
}

// contains says whether the block holds the position line:column, its ends
// included.
func (b Block) contains(line, column int) bool {
	if line < b.StartLine || line > b.EndLine {
		return false
	}
	if line == b.StartLine && column < b.StartCol {
		return false
	}
	return line != b.EndLine || column <= b.EndCol
}

// SwitchReached says whether the tests reached the switch statement sw of a
// file whose blocks in the profile are blocks: the block that holds the
// statement (it runs up to the switch's opening brace) ran, or a block inside
// the switch's body (a case's body, or a statement within it) ran.
func SwitchReached(fset *token.FileSet, blocks []Block, sw *ast.SwitchStmt) bool {
	at := fset.Position(sw.Pos())
	lbrace := fset.Position(sw.Body.Lbrace)
	rbrace := fset.Position(sw.Body.Rbrace)
	for _, b := range blocks {
		if !b.Ran {
			continue
		}
		if b.contains(at.Line, at.Column) {
			return true
		}
		inside := Block{StartLine: lbrace.Line, StartCol: lbrace.Column, EndLine: rbrace.Line, EndCol: rbrace.Column}
		if inside.contains(b.StartLine, b.StartCol) {
			return true
		}
	}
	return false
}

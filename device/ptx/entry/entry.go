// Package entry reads the parameters of a PTX module's kernels from their
// .entry declarations alone, without the interpreter (package ptx): the
// bodies are skipped, so a module the interpreter cannot run (textures,
// matrix instructions), which a GPU's JIT compiles, has its kernels'
// parameters read all the same. Package kernel checks a launch's
// arguments against them; package ptx's Kernel.Params are the same
// Params, laid out the same way.
//
//	params, err := entry.Params(text) // errors: "ptx: line 12: ..."
//	for _, p := range params["saxpy"] {
//		fmt.Println(p.Decl(), p.Offset) // .f32 0, .u64 8, .u64 16, .u32 24
//	}
package entry

import (
	"fmt"
	"strconv"
	"strings"
)

// Param is one kernel parameter: its place in the parameter buffer (the
// CUDA ABI: each at its alignment, in order) and its PTX type.
type Param struct {
	// Name is the parameter's PTX name.
	Name string
	// Offset, Size and Align place it in the parameter buffer.
	Offset, Size, Align int
	// Type is its PTX type without the dot ("u32", "f64", "b8"), Vector
	// its vector width (1, or 2 and 4 for .v2 and .v4), and Elems the
	// elements of an array parameter (a struct passed by value is
	// `.align 8 .b8 name[24]`), 0 for one that is not an array.
	Type   string
	Vector int
	Elems  int
}

// Decl writes the parameter's type as its declaration does, without the
// name: ".u32", ".align 8 .b8[24]", ".v2 .f32". An .align that only
// repeats the type's own alignment is left out.
func (p Param) Decl() string {
	var b strings.Builder
	if tw := TypeSize(p.Type) * max(p.Vector, 1); p.Align != tw && p.Align > 0 {
		fmt.Fprintf(&b, ".align %d ", p.Align)
	}
	if p.Vector > 1 {
		fmt.Fprintf(&b, ".v%d ", p.Vector)
	}
	b.WriteString(".")
	b.WriteString(p.Type)
	if p.Elems > 0 {
		fmt.Fprintf(&b, "[%d]", p.Elems)
	}
	return b.String()
}

// typeSizes are the bytes of each PTX scalar type (a predicate counts as 1).
var typeSizes = map[string]int{
	"b8": 1, "u8": 1, "s8": 1, "pred": 1,
	"b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
	"b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
	"b64": 8, "u64": 8, "s64": 8, "f64": 8,
	"b128": 16,
}

// TypeSize returns the bytes of the PTX scalar type t ("u32": 4), 0 for
// a name that is not one.
func TypeSize(t string) int { return typeSizes[t] }

// Params returns the parameters of each kernel (.entry) of a PTX module,
// laid out as the CUDA ABI lays them out. A kernel without parameters
// has a nil list. Errors name the PTX line.
func Params(src string) (map[string][]Param, error) {
	entries := map[string][]Param{}
	// Lines are counted only where an error or a declaration needs one.
	at, atLine := 0, 1
	line := func(i int) int {
		atLine += strings.Count(src[at:i], "\n")
		at = i
		return atLine
	}
	depth, decl, declLine := 0, -1, 0
	for i := 0; i < len(src); i++ {
		// Inside a body only braces, comments and strings matter.
		special := "{}/\";."
		if depth > 0 {
			special = "{}/\""
		}
		j := strings.IndexAny(src[i:], special)
		if j < 0 {
			break
		}
		i += j
		switch c := src[i]; {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(src)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, errf(line(i), "unterminated comment")
			}
			i += j + 3
		case c == '"':
			j := strings.IndexAny(src[i+1:], "\"\n")
			if j < 0 || src[i+1+j] != '"' {
				return nil, errf(line(i), "unterminated string")
			}
			i += j + 1
		case (c == '{' || c == ';') && decl >= 0:
			// The declaration of an .entry ends at its body or, declared
			// only, at its semicolon.
			name, ps, err := entryDecl(src[decl:i], declLine)
			if err != nil {
				return nil, err
			}
			if _, ok := entries[name]; !ok || c == '{' {
				entries[name] = ps
			}
			decl = -1
			if c == '{' {
				depth++
			}
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return nil, errf(line(i), "unbalanced }")
			}
			depth--
		case c == '.' && depth == 0 && decl < 0 && strings.HasPrefix(src[i:], ".entry") &&
			(i+6 == len(src) || !isIdentChar(src[i+6])) && (i == 0 || !isIdentChar(src[i-1])):
			decl, declLine = i+len(".entry"), line(i)
			i += len(".entry") - 1
		}
	}
	if decl >= 0 {
		return nil, errf(declLine, "the declaration of an .entry does not end")
	}
	if depth != 0 {
		return nil, errf(line(len(src)), "unbalanced {")
	}
	return entries, nil
}

// errf returns an error naming the PTX line, as package ptx's do.
func errf(line int, format string, args ...any) error {
	return fmt.Errorf("ptx: line %d: %s", line, fmt.Sprintf(format, args...))
}

// entryDecl reads an .entry's declaration after the keyword (its name, its
// parameter list, performance directives), which starts on PTX line
// line, and lays out its parameters.
func entryDecl(decl string, line int) (string, []Param, error) {
	d := &declReader{src: decl, line: line}
	name := d.next()
	if name.kind != ident || strings.HasPrefix(name.text, ".") {
		return "", nil, errf(name.line, "expected a name, found %q", name.text)
	}
	var ps []Param
	if t := d.next(); t.text != "(" {
		return name.text, nil, nil // no parameter list: performance directives follow, or nothing
	}
	off := 0
	for {
		t := d.next()
		switch {
		case t.text == ")":
			return name.text, ps, nil
		case t.kind == end:
			return "", nil, errf(t.line, "unterminated parameter list")
		case t.text == ".reg":
			return "", nil, errf(t.line, ".reg parameters are not supported")
		case t.text != ".param":
			return "", nil, errf(t.line, "expected .param, found %q", t.text)
		}
		p, err := d.param(t.line)
		if err != nil {
			return "", nil, err
		}
		off = (off + p.Align - 1) / p.Align * p.Align
		p.Offset = off
		off += p.Size
		ps = append(ps, p)
		if d.peek().text == "," {
			d.next()
		}
	}
}

// param reads one parameter after its .param, which is on PTX line line.
func (d *declReader) param(line int) (Param, error) {
	p := Param{Vector: 1}
	for {
		t := d.peek()
		if t.kind != ident || !strings.HasPrefix(t.text, ".") {
			break
		}
		d.next()
		switch name := t.text[1:]; {
		case name == "align":
			n, err := d.integer()
			if err != nil {
				return p, err
			}
			p.Align = int(n)
		case typeSizes[name] > 0:
			p.Type = name
		case name == "v2" || name == "v4":
			p.Vector = int(name[1] - '0')
		}
		// .ptr, .global and such are accepted
	}
	if p.Type == "" {
		return p, errf(line, "parameter without a type")
	}
	t := d.next()
	if t.kind != ident || strings.HasPrefix(t.text, ".") {
		return p, errf(t.line, "expected a name, found %q", t.text)
	}
	p.Name = t.text
	elems, array := 1, false
	for d.peek().text == "[" {
		d.next()
		array = true
		n, err := d.integer()
		if err != nil {
			return p, err
		}
		if n < 0 || n > 1<<20 {
			return p, errf(line, "parameter array size %d out of range", n)
		}
		elems *= int(n)
		if t := d.next(); t.text != "]" {
			return p, errf(t.line, "expected \"]\", found %q", t.text)
		}
	}
	if array {
		p.Elems = elems
	}
	p.Size = elems * TypeSize(p.Type) * p.Vector
	if p.Align == 0 {
		p.Align = TypeSize(p.Type) * p.Vector
	}
	if p.Align <= 0 || p.Align&(p.Align-1) != 0 {
		return p, errf(line, "bad alignment %d", p.Align)
	}
	return p, nil
}

// integer reads a PTX integer: decimal, 0x hex, 0 octal, 0b binary,
// with an optional U suffix and minus sign.
func (d *declReader) integer() (int64, error) {
	t := d.next()
	neg := t.text == "-"
	if neg {
		t = d.next()
	}
	if t.kind != number {
		return 0, errf(t.line, "expected a number, found %q", t.text)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(t.text, "U"), "u")
	base := 10
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0b") || strings.HasPrefix(s, "0B"):
		base, s = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	u, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, errf(t.line, "bad number %q", t.text)
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// declReader splits a declaration into tokens, as package ptx's lexer
// does, dropping comments.
type declReader struct {
	src  string
	pos  int
	line int
	tok  *token // peeked
}

type tokenKind uint8

const (
	end tokenKind = iota
	ident
	number
	punct
	other
)

type token struct {
	kind tokenKind
	text string
	line int
}

func (d *declReader) peek() token {
	if d.tok == nil {
		t := d.scan()
		d.tok = &t
	}
	return *d.tok
}

func (d *declReader) next() token {
	t := d.peek()
	d.tok = nil
	return t
}

// scan reads the next token.
func (d *declReader) scan() token {
	s := d.src
	for d.pos < len(s) {
		c := s[d.pos]
		switch {
		case c == '\n':
			d.line++
			d.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			d.pos++
		case c == '/' && d.pos+1 < len(s) && s[d.pos+1] == '/':
			for d.pos < len(s) && s[d.pos] != '\n' {
				d.pos++
			}
		case c == '/' && d.pos+1 < len(s) && s[d.pos+1] == '*':
			j := strings.Index(s[d.pos+2:], "*/")
			if j < 0 { // Params has found the comment's end
				d.pos = len(s)
				break
			}
			d.line += strings.Count(s[d.pos:d.pos+2+j], "\n")
			d.pos += j + 4
		case isIdentStart(c):
			j := d.pos + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			t := token{ident, s[d.pos:j], d.line}
			d.pos = j
			return t
		case c >= '0' && c <= '9':
			j := d.pos + 1
			for j < len(s) && isIdentChar(s[j]) && s[j] != '%' && s[j] != '$' {
				j++
			}
			t := token{number, s[d.pos:j], d.line}
			d.pos = j
			return t
		default:
			t := token{punct, s[d.pos : d.pos+1], d.line}
			d.pos++
			return t
		}
	}
	return token{end, "", d.line}
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '%' || c == '.'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

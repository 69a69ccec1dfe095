package ptx

import (
	"fmt"
	"strconv"
	"strings"
)

// parser walks the token stream of one module.
type parser struct {
	toks []token
	pos  int
	m    *Module
}

// errf returns a parse error naming the PTX line.
func errf(line int, format string, args ...any) error {
	return fmt.Errorf("ptx: line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *parser) eof() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() token {
	if p.eof() {
		line := 1
		if len(p.toks) > 0 {
			line = p.toks[len(p.toks)-1].line
		}
		return token{kind: tkPunct, text: "", line: line}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token {
	t := p.peek()
	if !p.eof() {
		p.pos++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return !p.eof() && t.text == text && t.kind != tkString
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(text string) error {
	t := p.peek()
	if !p.accept(text) {
		return errf(t.line, "expected %q, found %q", text, t.text)
	}
	return nil
}

func (p *parser) ident() (token, error) {
	t := p.next()
	if t.kind != tkIdent {
		return t, errf(t.line, "expected a name, found %q", t.text)
	}
	return t, nil
}

func (p *parser) integer() (int64, int, error) {
	t := p.peek()
	neg := p.accept("-")
	t2 := p.next()
	if t2.kind != tkNumber {
		return 0, t.line, errf(t.line, "expected a number, found %q", t2.text)
	}
	v, err := parseInt(t2.text)
	if err != nil {
		return 0, t.line, errf(t.line, "bad number %q", t2.text)
	}
	if neg {
		v = -v
	}
	return v, t.line, nil
}

// parseInt parses a PTX integer literal: decimal, 0x hex, 0 octal, 0b binary, optional U suffix.
func parseInt(s string) (int64, error) {
	s = strings.TrimSuffix(strings.TrimSuffix(s, "U"), "u")
	var u uint64
	var err error
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		u, err = strconv.ParseUint(s[2:], 16, 64)
	case strings.HasPrefix(s, "0b") || strings.HasPrefix(s, "0B"):
		u, err = strconv.ParseUint(s[2:], 2, 64)
	case len(s) > 1 && s[0] == '0':
		u, err = strconv.ParseUint(s[1:], 8, 64)
	default:
		u, err = strconv.ParseUint(s, 10, 64)
	}
	return int64(u), err
}

// parseModule parses the whole module.
func (p *parser) parseModule() error {
	for !p.eof() {
		t := p.peek()
		switch {
		case p.accept(".version"):
			p.m.ptxVersion = parseVersion(p.next().text)
		case p.accept(".target"):
			p.m.sm = parseTarget(p.next().text)
			for p.accept(",") {
				p.next()
			}
		case p.accept(".address_size"):
			n, line, err := p.integer()
			if err != nil {
				return err
			}
			if n != 64 {
				return errf(line, ".address_size %d: only 64-bit addressing is supported", n)
			}
		case p.accept(".file"):
			p.next()
			for p.peek().kind == tkString || p.is(",") || p.peek().kind == tkNumber {
				p.next()
			}
		case p.accept(".section"):
			if err := p.skipBraces(); err != nil {
				return err
			}
		case p.accept(".pragma"):
			p.next()
			if err := p.expect(";"); err != nil {
				return err
			}
		case p.is(".visible") || p.is(".extern") || p.is(".weak") || p.is(".entry") || p.is(".func") ||
			p.is(".global") || p.is(".const") || p.is(".shared") || p.is(".local"):
			if err := p.parseTopDecl(); err != nil {
				return err
			}
		default:
			return errf(t.line, "unexpected %q at module level", t.text)
		}
	}
	return nil
}

func (p *parser) skipBraces() error {
	for !p.eof() && !p.is("{") {
		p.next()
	}
	depth := 0
	for !p.eof() {
		t := p.next()
		if t.text == "{" {
			depth++
		} else if t.text == "}" {
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
	return errf(p.peek().line, "unterminated section")
}

// parseTopDecl parses a function, kernel or module variable.
func (p *parser) parseTopDecl() error {
	extern := false
	for {
		if p.accept(".visible") || p.accept(".weak") {
			continue
		}
		if p.accept(".extern") {
			extern = true
			continue
		}
		break
	}
	t := p.peek()
	switch {
	case p.accept(".entry"):
		return p.parseFunc(true, t.line)
	case p.accept(".func"):
		return p.parseFunc(false, t.line)
	}
	v, err := p.parseVarDecl()
	if err != nil {
		return err
	}
	v.extern = extern
	return p.m.addModuleVar(v)
}

// varDecl is a declared variable: .global, .const, .shared, .local or .param.
type varDecl struct {
	name   string
	sp     space
	t      typ
	align  int
	size   int // bytes; 0 with unsized for an extern array
	elems  int
	vec    int
	init   []byte
	extern bool
	line   int
	array  bool
}

// parseVarDecl parses `.space [.align N] [.vN] .type name[N]... [= init];`.
func (p *parser) parseVarDecl() (*varDecl, error) {
	t := p.next()
	v := &varDecl{line: t.line, vec: 1}
	sp, ok := spaceNames[strings.TrimPrefix(t.text, ".")]
	if !ok {
		return nil, errf(t.line, "unexpected %q", t.text)
	}
	v.sp = sp
	for {
		if p.accept(".align") {
			n, _, err := p.integer()
			if err != nil {
				return nil, err
			}
			v.align = int(n)
			continue
		}
		if p.accept(".ptr") {
			continue
		}
		tk := p.peek()
		if tk.kind == tkIdent && strings.HasPrefix(tk.text, ".") {
			name := tk.text[1:]
			if ty, ok := typNames[name]; ok {
				v.t = ty
				p.next()
				continue
			}
			if name == "v2" || name == "v4" || name == "v8" {
				v.vec = int(name[1] - '0')
				p.next()
				continue
			}
			if _, ok := spaceNames[name]; ok { // .ptr .global
				p.next()
				continue
			}
			return nil, errf(tk.line, "unsupported declaration modifier %q", tk.text)
		}
		break
	}
	if v.t == tNone {
		return nil, errf(v.line, "declaration without a type")
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	v.name = name.text
	v.elems = 1
	for p.accept("[") {
		v.array = true
		if p.accept("]") {
			v.elems = 0
			continue
		}
		n, _, err := p.integer()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<32 {
			return nil, errf(name.line, "array size %d out of range", n)
		}
		v.elems *= int(n)
		if v.elems > 1<<32 {
			return nil, errf(name.line, "array of %s too large", v.name)
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	esz := v.t.size() * v.vec
	if v.elems > 1<<31/max(esz, 1) {
		return nil, errf(v.line, "%s is too large", v.name)
	}
	v.size = v.elems * esz
	if v.align == 0 {
		v.align = esz
	}
	if v.align <= 0 || v.align&(v.align-1) != 0 {
		return nil, errf(v.line, "bad alignment %d", v.align)
	}
	if p.accept("=") {
		if err := p.parseInit(v); err != nil {
			return nil, err
		}
	}
	if err := p.expect(";"); err != nil {
		return nil, err
	}
	return v, nil
}

// parseInit reads an initializer: a scalar or a braced list of numbers.
func (p *parser) parseInit(v *varDecl) error {
	var vals []token
	var negs []bool
	depth := 0
	for !p.eof() && !p.is(";") {
		t := p.next()
		switch {
		case t.text == "{":
			depth++
		case t.text == "}":
			depth--
		case t.text == ",":
		case t.text == "-":
			vals = append(vals, token{})
			negs = append(negs, true)
			nt := p.next()
			vals[len(vals)-1] = nt
		case t.kind == tkNumber:
			vals = append(vals, t)
			negs = append(negs, false)
		default:
			return errf(t.line, "unsupported initializer %q (only numbers are)", t.text)
		}
	}
	if depth != 0 {
		return errf(v.line, "unbalanced initializer")
	}
	esz := v.t.size()
	if v.elems == 0 {
		v.elems = len(vals) / v.vec
		v.size = v.elems * esz * v.vec
	}
	if len(vals) > v.size/max(esz, 1) {
		return errf(v.line, "initializer has %d values for %d elements", len(vals), v.size/max(esz, 1))
	}
	v.init = make([]byte, v.size)
	for i, t := range vals {
		bits, err := literalBits(t.text, negs[i], v.t)
		if err != nil {
			return errf(t.line, "%v", err)
		}
		for b := 0; b < esz; b++ {
			v.init[i*esz+b] = byte(bits >> (8 * b))
		}
	}
	return nil
}

// parseFunc parses an .entry or .func after its keyword.
func (p *parser) parseFunc(entry bool, line int) error {
	f := &function{entry: entry, line: line}
	if !entry && p.is("(") {
		rets, err := p.parseParamList()
		if err != nil {
			return err
		}
		f.rets = rets
	}
	name, err := p.ident()
	if err != nil {
		return err
	}
	f.name = name.text
	if p.is("(") {
		params, err := p.parseParamList()
		if err != nil {
			return err
		}
		f.params = params
	}
	// performance directives
	for {
		t := p.peek()
		switch {
		case p.accept(".maxntid"), p.accept(".reqntid"):
			var dims [3]int
			for i := 0; i < 3; i++ {
				n, _, err := p.integer()
				if err != nil {
					return err
				}
				dims[i] = int(n)
				if !p.accept(",") {
					break
				}
			}
			for i := range dims {
				if dims[i] == 0 {
					dims[i] = 1
				}
			}
			if t.text == ".maxntid" {
				f.maxntid = dims
			} else {
				f.reqntid = dims
			}
			continue
		case p.accept(".minnctapersm"), p.accept(".maxnreg"), p.accept(".maxnctapersm"), p.accept(".maxclusterrank"):
			if _, _, err := p.integer(); err != nil {
				return err
			}
			continue
		case p.accept(".noreturn"):
			continue
		case p.accept(".pragma"):
			p.next()
			p.accept(";")
			continue
		}
		break
	}
	if p.accept(";") {
		return p.m.declareFunc(f)
	}
	if !p.is("{") {
		return errf(p.peek().line, "expected the body of %s", f.name)
	}
	if err := p.parseBody(f); err != nil {
		return err
	}
	return p.m.addFunc(f)
}

// parseParamList parses `( .param ... name, ... )`.
func (p *parser) parseParamList() ([]*varDecl, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var out []*varDecl
	for !p.accept(")") {
		if p.eof() {
			return nil, errf(p.peek().line, "unterminated parameter list")
		}
		if !p.is(".param") && !p.is(".reg") {
			return nil, errf(p.peek().line, "expected .param, found %q", p.peek().text)
		}
		if p.is(".reg") {
			return nil, errf(p.peek().line, ".reg parameters are not supported")
		}
		v, err := p.parseParamDecl()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.accept(",")
	}
	return out, nil
}

// parseParamDecl parses one `.param ...` declaration without the semicolon.
func (p *parser) parseParamDecl() (*varDecl, error) {
	// reuse parseVarDecl's body: it wants a trailing ';', so parse by hand
	t := p.next()
	v := &varDecl{line: t.line, sp: spParam, vec: 1}
	for {
		if p.accept(".align") {
			n, _, err := p.integer()
			if err != nil {
				return nil, err
			}
			v.align = int(n)
			continue
		}
		tk := p.peek()
		if tk.kind == tkIdent && strings.HasPrefix(tk.text, ".") {
			name := tk.text[1:]
			if ty, ok := typNames[name]; ok {
				v.t = ty
			} else if name == "v2" || name == "v4" {
				v.vec = int(name[1] - '0')
			}
			// .ptr, .global and such are accepted
			p.next()
			continue
		}
		break
	}
	if v.t == tNone {
		return nil, errf(v.line, "parameter without a type")
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	v.name = name.text
	v.elems = 1
	for p.accept("[") {
		v.array = true
		n, _, err := p.integer()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<20 {
			return nil, errf(v.line, "parameter array size %d out of range", n)
		}
		v.elems *= int(n)
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	v.size = v.elems * v.t.size() * v.vec
	if v.align == 0 {
		v.align = v.t.size() * v.vec
	}
	if v.align <= 0 || v.align&(v.align-1) != 0 {
		return nil, errf(v.line, "bad alignment %d", v.align)
	}
	return v, nil
}

// rawOp is an operand as written.
type rawOp struct {
	kind  uint8 // roName, roNum, roVec, roAddr, roNot, roPair, roList, roSink
	name  string
	num   string
	neg   bool
	elems []rawOp
	off   int64
	line  int
}

const (
	roName uint8 = iota
	roNum
	roVec
	roAddr
	roNot
	roPair
	roList
	roSink
)

// rawInst is an instruction as written.
type rawInst struct {
	guard    string
	guardNeg bool
	opcode   string
	ops      []rawOp
	line     int
}

// parseBody parses a function body into f's statements.
func (p *parser) parseBody(f *function) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	b := newBuilder(p.m, f)
	depth := 1
	for depth > 0 {
		if p.eof() {
			return errf(p.peek().line, "unterminated body of %s", f.name)
		}
		t := p.peek()
		switch {
		case p.accept("{"):
			depth++
			b.pushScope()
		case p.accept("}"):
			depth--
			if depth > 0 {
				b.popScope()
			}
		case p.accept(".reg"):
			if err := p.parseRegDecl(b, t.line); err != nil {
				return err
			}
		case p.is(".local") || p.is(".shared") || p.is(".const") || p.is(".global"):
			v, err := p.parseVarDecl()
			if err != nil {
				return err
			}
			if err := b.declareVar(v); err != nil {
				return err
			}
		case p.is(".param"):
			v, err := p.parseParamDecl()
			if err != nil {
				return err
			}
			if err := p.expect(";"); err != nil {
				return err
			}
			if err := b.declareVar(v); err != nil {
				return err
			}
		case p.accept(".pragma"):
			p.next()
			if err := p.expect(";"); err != nil {
				return err
			}
		case p.accept(".loc"):
			for p.peek().kind == tkNumber || p.is(",") || (p.peek().kind == tkIdent && !strings.Contains(p.peek().text, ".") && p.peek().line == t.line) {
				p.next()
			}
		case t.kind == tkIdent && p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == ":" && !strings.HasPrefix(t.text, "."):
			p.pos += 2
			if err := b.label(t.text, t.line); err != nil {
				return err
			}
		case t.kind == tkIdent && strings.HasPrefix(t.text, "."):
			return errf(t.line, "unsupported directive %s", t.text)
		default:
			ri, err := p.parseInst()
			if err != nil {
				return err
			}
			if err := b.inst(ri); err != nil {
				return err
			}
		}
	}
	return b.finish()
}

// parseRegDecl parses `.reg [.vN] .type names;`.
func (p *parser) parseRegDecl(b *builder, line int) error {
	var t typ
	for {
		tk := p.peek()
		if tk.kind == tkIdent && strings.HasPrefix(tk.text, ".") {
			if ty, ok := typNames[tk.text[1:]]; ok {
				t = ty
				p.next()
				continue
			}
			if tk.text == ".v2" || tk.text == ".v4" {
				return errf(tk.line, "vector registers are not supported")
			}
			return errf(tk.line, "unsupported register modifier %s", tk.text)
		}
		break
	}
	if t == tNone {
		return errf(line, ".reg without a type")
	}
	for {
		name, err := p.ident()
		if err != nil {
			return err
		}
		count := -1
		if p.accept("<") {
			n, _, err := p.integer()
			if err != nil {
				return err
			}
			if n < 0 || n > 1<<20 {
				return errf(line, "register count %d out of range", n)
			}
			count = int(n)
			if err := p.expect(">"); err != nil {
				return err
			}
		}
		if err := b.declareReg(name.text, t, count, line); err != nil {
			return err
		}
		if !p.accept(",") {
			break
		}
	}
	return p.expect(";")
}

// parseInst parses one instruction through its semicolon.
func (p *parser) parseInst() (rawInst, error) {
	var ri rawInst
	t := p.peek()
	ri.line = t.line
	if p.accept("@") {
		ri.guardNeg = p.accept("!")
		g, err := p.ident()
		if err != nil {
			return ri, err
		}
		ri.guard = g.text
	}
	op, err := p.ident()
	if err != nil {
		return ri, err
	}
	ri.opcode = op.text
	for !p.accept(";") {
		if p.eof() {
			return ri, errf(ri.line, "missing ';' after %s", ri.opcode)
		}
		o, err := p.parseOperand()
		if err != nil {
			if base, _, _ := strings.Cut(ri.opcode, "."); !knownOps[base] {
				return ri, errf(ri.line, "unsupported instruction %s", ri.opcode)
			}
			return ri, err
		}
		ri.ops = append(ri.ops, o)
		if !p.accept(",") && !p.is(";") {
			// call's lists follow without commas in some forms
			if !p.is("(") {
				return ri, errf(p.peek().line, "unexpected %q in operands of %s", p.peek().text, ri.opcode)
			}
		}
	}
	return ri, nil
}

// parseOperand parses one operand.
func (p *parser) parseOperand() (rawOp, error) {
	t := p.peek()
	o := rawOp{line: t.line}
	switch {
	case p.accept("{"):
		o.kind = roVec
		err := p.parseElems(&o, "}", "vector")
		return o, err
	case p.accept("("):
		o.kind = roList
		err := p.parseElems(&o, ")", "list")
		return o, err
	case p.accept("["):
		o.kind = roAddr
		if tk := p.peek(); tk.kind == tkIdent {
			o.name = tk.text
			p.next()
			if p.accept("+") {
				n, _, err := p.integer()
				if err != nil {
					return o, err
				}
				o.off = n
			} else if p.is("-") {
				n, _, err := p.integer()
				if err != nil {
					return o, err
				}
				o.off = n
			}
		} else {
			n, _, err := p.integer()
			if err != nil {
				return o, err
			}
			o.off = n
		}
		return o, p.expect("]")
	case p.accept("!"):
		n, err := p.ident()
		if err != nil {
			return o, err
		}
		o.kind, o.name = roNot, n.text
		return o, nil
	case p.is("-") || t.kind == tkNumber:
		o.kind = roNum
		o.neg = p.accept("-")
		n := p.next()
		if n.kind != tkNumber {
			return o, errf(t.line, "expected a number, found %q", n.text)
		}
		o.num = n.text
		return o, nil
	case t.kind == tkIdent:
		p.next()
		if t.text == "_" && !p.is("|") {
			o.kind = roSink
			return o, nil
		}
		o.kind, o.name = roName, t.text
		if p.accept("|") {
			n2, err := p.ident()
			if err != nil {
				return o, err
			}
			o.kind = roPair
			o.elems = []rawOp{pairElem(t.text, t.line), pairElem(n2.text, t.line)}
		} else if p.accept("+") {
			n, _, err := p.integer()
			if err != nil {
				return o, err
			}
			o.off = n
		}
		return o, nil
	}
	return o, errf(t.line, "unexpected %q in operands", t.text)
}

// parseElems parses the operands of a vector or list into o.elems, up to
// and including close; what names the bracket in the error of one left
// open, at the line where it opened (o.line).
func (p *parser) parseElems(o *rawOp, close, what string) error {
	for !p.accept(close) {
		if p.eof() {
			return errf(o.line, "unterminated %s", what)
		}
		e, err := p.parseOperand()
		if err != nil {
			return err
		}
		o.elems = append(o.elems, e)
		p.accept(",")
	}
	return nil
}

// knownOps are the opcodes the interpreter decodes (some forms of them
// are still refused when decoded).
var knownOps = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`add sub mul mad fma div rem abs neg min max and or xor not cnot shl shr
		popc clz brev bfind bfe bfi prmt sad shf setp selp slct cvt cvta mov ld ldu st atom red bra call ret exit
		trap membar fence prefetch prefetchu nanosleep pmevent bar barrier activemask shfl vote addc subc madc
		rcp sqrt rsqrt ex2 lg2 sin cos tanh copysign testp set mul24 mad24 griddepcontrol discard applypriority createpolicy brx`) {
		knownOps[s] = true
	}
}

package ptx

import (
	"strconv"
)

// function is a parsed .entry or .func, decoded with its own register
// numbering; link places it in a kernel's program.
type function struct {
	name     string
	entry    bool
	declOnly bool
	line     int
	params   []*varDecl
	rets     []*varDecl
	maxntid  [3]int
	reqntid  [3]int

	code    []inst
	regs    []typ       // type of each register
	consts  []constInit // registers holding immediates and symbol addresses
	special []specialInit

	locals    []*varDecl // .local variables, at offsets in localOff
	localOff  map[*varDecl]int
	localSize int
	shareds   []*varDecl
	sharedOff map[*varDecl]int
	sharedSz  int
	// the parameter frame of a .func: return values, parameters, and the
	// .param variables of its call sites; of a kernel: its call sites'.
	frameOff  map[*varDecl]int
	frameSize int
	kparamOff map[*varDecl]int // a kernel's parameters in Launch.Params
	kparamSz  int
	ccReg     int32 // the carry flag's register, -1 until used
}

// constInit is a register that holds a constant: a number, or the
// address of a symbol, resolved when the kernel is linked.
type constInit struct {
	reg int32
	val uint64
	sym *symRef
}

// specialInit is a register that holds a special register's value.
type specialInit struct {
	reg  int32
	kind special
}

// symKind is where a symbol lives.
type symKind uint8

const (
	symGlobal symKind = iota
	symShared
	symDynShared
	symLocal
	symFrame  // a .func's parameter frame, or a call site's .param variable
	symKParam // a kernel's parameter
)

// symRef is a reference to a variable: resolved to an address when the
// kernel is linked.
type symRef struct {
	kind symKind
	fn   *function
	v    *varDecl
	g    *global
}

// builder decodes one function's body.
type builder struct {
	m       *Module
	f       *function
	scopes  []map[string]int32
	ranges  []map[string][2]int32 // prefix -> base, count
	vars    []map[string]*varDecl
	labels  map[string]int32
	fixups  []fixup
	constOf map[uint64]int32
}

type fixup struct {
	pc    int
	label string
	line  int
}

func newBuilder(m *Module, f *function) *builder {
	b := &builder{m: m, f: f, labels: map[string]int32{}, constOf: map[uint64]int32{}}
	f.localOff = map[*varDecl]int{}
	f.sharedOff = map[*varDecl]int{}
	f.frameOff = map[*varDecl]int{}
	f.kparamOff = map[*varDecl]int{}
	f.ccReg = -1
	b.pushScope()
	for _, v := range f.rets {
		b.addFrame(v)
		b.vars[0][v.name] = v
	}
	for _, v := range f.params {
		if f.entry {
			f.kparamSz = alignUp(f.kparamSz, v.align)
			f.kparamOff[v] = f.kparamSz
			f.kparamSz += v.size
		} else {
			b.addFrame(v)
		}
		b.vars[0][v.name] = v
	}
	return b
}

func alignUp(n, a int) int {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}

func (b *builder) addFrame(v *varDecl) {
	b.f.frameSize = alignUp(b.f.frameSize, v.align)
	b.f.frameOff[v] = b.f.frameSize
	b.f.frameSize += v.size
}

func (b *builder) pushScope() {
	b.scopes = append(b.scopes, map[string]int32{})
	b.ranges = append(b.ranges, map[string][2]int32{})
	b.vars = append(b.vars, map[string]*varDecl{})
}

func (b *builder) popScope() {
	n := len(b.scopes) - 1
	b.scopes, b.ranges, b.vars = b.scopes[:n], b.ranges[:n], b.vars[:n]
}

// maxRegs bounds a function's registers.
const maxRegs = 1 << 16

// newReg allocates a register of type t.
func (b *builder) newReg(t typ) int32 {
	b.f.regs = append(b.f.regs, t)
	return int32(len(b.f.regs) - 1)
}

func (b *builder) declareReg(name string, t typ, count, line int) error {
	top := len(b.scopes) - 1
	if count < 0 {
		b.scopes[top][name] = b.newReg(t)
		return nil
	}
	if len(b.f.regs)+count > maxRegs {
		return errf(line, "more than %d registers", maxRegs)
	}
	base := int32(len(b.f.regs))
	for i := 0; i < count; i++ {
		b.newReg(t)
	}
	b.ranges[top][name] = [2]int32{base, int32(count)}
	return nil
}

// reg resolves a register name.
func (b *builder) reg(name string) (int32, typ, bool) {
	for i := len(b.scopes) - 1; i >= 0; i-- {
		if r, ok := b.scopes[i][name]; ok {
			return r, b.f.regs[r], true
		}
		// %r12: prefix %r, index 12
		j := len(name)
		for j > 0 && name[j-1] >= '0' && name[j-1] <= '9' {
			j--
		}
		if j < len(name) && j > 0 {
			if rg, ok := b.ranges[i][name[:j]]; ok {
				n, err := strconv.Atoi(name[j:])
				if err == nil && n >= 0 && int32(n) < rg[1] && (n == 0 || name[j] != '0') {
					r := rg[0] + int32(n)
					return r, b.f.regs[r], true
				}
			}
		}
	}
	return 0, tNone, false
}

// variable resolves a variable name to a symbol.
func (b *builder) variable(name string) (*symRef, bool) {
	for i := len(b.vars) - 1; i >= 0; i-- {
		if v, ok := b.vars[i][name]; ok {
			switch v.sp {
			case spLocal:
				return &symRef{kind: symLocal, fn: b.f, v: v}, true
			case spShared:
				if v.extern || (v.array && v.elems == 0) {
					return &symRef{kind: symDynShared, v: v}, true
				}
				return &symRef{kind: symShared, fn: b.f, v: v}, true
			case spParam:
				if _, ok := b.f.kparamOff[v]; ok {
					return &symRef{kind: symKParam, fn: b.f, v: v}, true
				}
				return &symRef{kind: symFrame, fn: b.f, v: v}, true
			}
		}
	}
	if g, ok := b.m.globals[name]; ok {
		return &symRef{kind: symGlobal, g: g, v: g.v}, true
	}
	for _, v := range b.m.shared {
		if v.name == name {
			if v.extern || v.elems == 0 {
				return &symRef{kind: symDynShared, v: v}, true
			}
			return &symRef{kind: symShared, v: v}, true
		}
	}
	return nil, false
}

func (b *builder) declareVar(v *varDecl) error {
	top := len(b.vars) - 1
	switch v.sp {
	case spLocal:
		b.f.localSize = alignUp(b.f.localSize, v.align)
		b.f.localOff[v] = b.f.localSize
		b.f.localSize += v.size
		b.f.locals = append(b.f.locals, v)
	case spShared:
		if !(v.extern || v.array && v.elems == 0) {
			b.f.sharedSz = alignUp(b.f.sharedSz, v.align)
			b.f.sharedOff[v] = b.f.sharedSz
			b.f.sharedSz += v.size
			b.f.shareds = append(b.f.shareds, v)
		}
	case spParam:
		b.addFrame(v)
	default:
		return errf(v.line, ".%s variables inside a function are not supported", v.sp)
	}
	b.vars[top][v.name] = v
	return nil
}

func (b *builder) label(name string, line int) error {
	if _, dup := b.labels[name]; dup {
		return errf(line, "label %s defined twice", name)
	}
	b.labels[name] = int32(len(b.f.code))
	return nil
}

// constReg returns a register holding v.
func (b *builder) constReg(v uint64) int32 {
	if r, ok := b.constOf[v]; ok {
		return r
	}
	r := b.newReg(tB64)
	b.f.consts = append(b.f.consts, constInit{reg: r, val: v})
	b.constOf[v] = r
	return r
}

// symReg returns a register holding a symbol's address plus off.
func (b *builder) symReg(s *symRef, off int64) int32 {
	r := b.newReg(tB64)
	b.f.consts = append(b.f.consts, constInit{reg: r, val: uint64(off), sym: s})
	return r
}

// specialReg returns a register holding a special register.
func (b *builder) specialReg(k special) int32 {
	for _, s := range b.f.special {
		if s.kind == k {
			return s.reg
		}
	}
	r := b.newReg(tB64)
	b.f.special = append(b.f.special, specialInit{reg: r, kind: k})
	return r
}

func (b *builder) finish() error {
	for _, fx := range b.fixups {
		pc, ok := b.labels[fx.label]
		if !ok {
			return errf(fx.line, "undefined label %s", fx.label)
		}
		b.f.code[fx.pc].target = pc
	}
	// a body that falls off its end returns
	b.f.code = append(b.f.code, inst{op: opRet, guard: -1, line: int32(lastLine(b.f))})
	return nil
}

func lastLine(f *function) int {
	if len(f.code) > 0 {
		return int(f.code[len(f.code)-1].line)
	}
	return f.line
}

// isSpecialName says whether name is a special register.
func isSpecialName(name string) bool {
	_, ok := specialNames[name]
	return ok
}

package ptx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// mods are an opcode's modifiers, sorted by kind.
type mods struct {
	types  []typ
	rnd    uint8
	intRnd bool // rni, rzi, rmi, rpi
	ftz    bool
	sat    bool
	approx bool
	full   bool
	cmp    string
	bop    string
	sp     space
	hasSp  bool
	vec    int
	other  map[string]bool
}

var cmpNames = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"lo": true, "ls": true, "hi": true, "hs": true, "equ": true, "neu": true, "ltu": true, "leu": true,
	"gtu": true, "geu": true, "num": true, "nan": true}

// ignored modifiers: ordering, scope, caching and hints, which the
// interpreter (one thread of execution, coherent memory) honours trivially.
var ignoredMods = map[string]bool{"nc": true, "volatile": true, "relaxed": true, "acquire": true, "release": true,
	"acq_rel": true, "sc": true, "cta": true, "gpu": true, "sys": true, "ca": true, "cg": true, "cs": true, "lu": true,
	"cv": true, "wb": true, "wt": true, "uni": true, "sync": true, "aligned": true, "weak": true, "mmio": true,
	"L1::evict_normal": true, "L1::evict_unchanged": true, "L1::evict_first": true, "L1::evict_last": true,
	"L1::no_allocate": true, "L2::evict_normal": true, "L2::evict_first": true, "L2::evict_last": true,
	"L2::64B": true, "L2::128B": true, "L2::256B": true, "noftz": true}

func parseMods(parts []string) (mods, error) {
	m := mods{vec: 1, other: map[string]bool{}}
	for _, s := range parts {
		if t, ok := typNames[s]; ok {
			m.types = append(m.types, t)
			continue
		}
		switch s {
		case "rn":
			m.rnd = rnNear
		case "rz":
			m.rnd = rnZero
		case "rm":
			m.rnd = rnDown
		case "rp":
			m.rnd = rnUp
		case "rni":
			m.rnd, m.intRnd = rnNear, true
		case "rzi":
			m.rnd, m.intRnd = rnZero, true
		case "rmi":
			m.rnd, m.intRnd = rnDown, true
		case "rpi":
			m.rnd, m.intRnd = rnUp, true
		case "ftz":
			m.ftz = true
		case "sat", "satfinite":
			m.sat = true
		case "approx":
			m.approx = true
		case "full":
			m.full = true
		case "v2", "v4":
			m.vec = int(s[1] - '0')
		case "and", "or", "xor":
			// bool op of setp, or atomic op: the caller decides
			m.other[s] = true
			m.bop = s
		default:
			if cmpNames[s] {
				m.cmp = s
				m.other[s] = true
				continue
			}
			if sp, ok := spaceNames[s]; ok {
				m.sp, m.hasSp = sp, true
				continue
			}
			if ignoredMods[s] {
				m.other[s] = true
				continue
			}
			m.other[s] = true
		}
	}
	return m, nil
}

// literalBits returns the bits of a numeric literal for type t.
func literalBits(text string, neg bool, t typ) (uint64, error) {
	lower := strings.ToLower(text)
	var f float64
	isFloat := false
	switch {
	case strings.HasPrefix(lower, "0f") && len(lower) == 10:
		u, err := strconv.ParseUint(lower[2:], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("bad float literal %s", text)
		}
		f, isFloat = float64(math.Float32frombits(uint32(u))), true
		if t == tF32 || t == tB32 || t == tU32 || t == tS32 {
			if neg {
				u ^= 1 << 31
			}
			if t == tF32 || !neg {
				return u, nil
			}
		}
	case strings.HasPrefix(lower, "0d") && len(lower) == 18:
		u, err := strconv.ParseUint(lower[2:], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("bad double literal %s", text)
		}
		f, isFloat = math.Float64frombits(u), true
		if t == tF64 || t == tB64 || t == tU64 || t == tS64 {
			if neg {
				u ^= 1 << 63
			}
			return u, nil
		}
	case !strings.HasPrefix(lower, "0x") && strings.ContainsAny(lower, ".e"):
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return 0, fmt.Errorf("bad float literal %s", text)
		}
		f, isFloat = v, true
	}
	if isFloat {
		if neg {
			f = -f
		}
		switch t {
		case tF32:
			return uint64(math.Float32bits(float32(f))), nil
		case tF64:
			return math.Float64bits(f), nil
		case tF16:
			return uint64(f32ToF16(float32(f), rnNear)), nil
		}
		return 0, fmt.Errorf("float literal %s for a .%s operand", text, typName(t))
	}
	v, err := parseInt(text)
	if err != nil {
		return 0, fmt.Errorf("bad integer literal %s", text)
	}
	if neg {
		v = -v
	}
	switch t {
	case tF32:
		return uint64(math.Float32bits(float32(v))), nil
	case tF64:
		return math.Float64bits(float64(v)), nil
	case tPred:
		if v != 0 {
			return 1, nil
		}
		return 0, nil
	}
	if t == tNone {
		return uint64(v), nil
	}
	return t.trunc(uint64(v)), nil
}

func typName(t typ) string {
	for n, v := range typNames {
		if v == t {
			return n
		}
	}
	return "?"
}

// src resolves a source operand of type t to a register.
func (b *builder) src(o rawOp, t typ) (int32, error) {
	switch o.kind {
	case roName:
		if r, _, ok := b.reg(o.name); ok {
			if o.off != 0 {
				return 0, errf(o.line, "register %s with an offset", o.name)
			}
			return r, nil
		}
		if k, ok := specialNames[o.name]; ok {
			if k == spClock || k == spClock64 || k == spGlobalTimer || k == spGlobalTimerLo || k == spGlobalTimerHi {
				return 0, errf(o.line, "%s may only be read by mov", o.name)
			}
			return b.specialReg(k), nil
		}
		if s, ok := b.variable(o.name); ok {
			return b.symReg(s, o.off), nil
		}
		if o.name == "WARP_SZ" {
			return b.constReg(32), nil
		}
		return 0, errf(o.line, "undefined name %s", o.name)
	case roNum:
		v, err := literalBits(o.num, o.neg, t)
		if err != nil {
			return 0, errf(o.line, "%v", err)
		}
		return b.constReg(v), nil
	}
	return 0, errf(o.line, "unsupported operand")
}

// dst resolves a destination register; a sink gives -1.
func (b *builder) dst(o rawOp) (int32, error) {
	switch o.kind {
	case roSink:
		return -1, nil
	case roName:
		if r, _, ok := b.reg(o.name); ok {
			return r, nil
		}
		return 0, errf(o.line, "undefined register %s", o.name)
	}
	return 0, errf(o.line, "destination must be a register")
}

// addr resolves an address operand into in.ab, in.off and in.sym.
func (b *builder) addr(in *inst, o rawOp) error {
	if o.kind != roAddr {
		return errf(o.line, "expected an address [...]")
	}
	in.ab, in.off = -1, o.off
	if o.name == "" {
		return nil
	}
	if r, _, ok := b.reg(o.name); ok {
		in.ab = r
		return nil
	}
	if s, ok := b.variable(o.name); ok {
		in.sym = s
		return nil
	}
	return errf(o.line, "undefined name %s in address", o.name)
}

// inst decodes one instruction and appends it to the function.
func (b *builder) inst(ri rawInst) error {
	in, err := b.decode(ri)
	if err != nil {
		return err
	}
	in.line = int32(ri.line)
	in.guard = -1
	if ri.guard != "" {
		r, t, ok := b.reg(ri.guard)
		if !ok || t != tPred {
			return errf(ri.line, "guard %s is not a predicate register", ri.guard)
		}
		in.guard, in.gneg = r, ri.guardNeg
	}
	b.f.code = append(b.f.code, in)
	return nil
}

func unsupported(ri rawInst) error {
	return errf(ri.line, "unsupported instruction %s", ri.opcode)
}

func (b *builder) nops(ri rawInst, n int) error {
	if len(ri.ops) != n {
		return errf(ri.line, "%s takes %d operands, has %d", ri.opcode, n, len(ri.ops))
	}
	return nil
}

// decode turns an instruction as written into its decoded form.
func (b *builder) decode(ri rawInst) (inst, error) {
	in := inst{ab: -1}
	for i := range in.d {
		in.d[i] = -1
	}
	parts := strings.Split(ri.opcode, ".")
	base := parts[0]
	m, err := parseMods(parts[1:])
	if err != nil {
		return in, err
	}
	if err := b.validate(ri, base, parts[1:], m); err != nil {
		return in, err
	}
	t := tNone
	if len(m.types) > 0 {
		t = m.types[0]
	}
	in.t = t
	if out, done, err := b.decodeHalf(ri, in, m, base); done {
		return out, err
	}
	switch base {
	case "bra", "brx":
		if base == "brx" {
			return in, unsupported(ri)
		}
		if len(ri.ops) != 1 || ri.ops[0].kind != roName {
			return in, errf(ri.line, "bra takes a label")
		}
		in.op = opBra
		b.fixups = append(b.fixups, fixup{pc: len(b.f.code), label: ri.ops[0].name, line: ri.line})
		return in, nil
	case "ret":
		in.op = opRet
		return in, nil
	case "exit":
		in.op = opExit
		return in, nil
	case "trap":
		in.op = opTrap
		return in, nil
	case "membar", "fence", "prefetch", "prefetchu", "nanosleep", "pmevent", "griddepcontrol", "discard", "applypriority", "createpolicy":
		if base == "createpolicy" {
			return in, unsupported(ri)
		}
		in.op = opNop
		return in, nil
	case "call":
		return b.decodeCall(ri, in, m)
	case "bar", "barrier":
		return b.decodeBar(ri, in, m, parts)
	case "activemask":
		if err := b.nops(ri, 1); err != nil {
			return in, err
		}
		in.op = opActivemask
		if err := b.checkRegSizes(ri, []typ{tB32}, false); err != nil {
			return in, err
		}
		in.d[0], err = b.dst(ri.ops[0])
		return in, err
	case "shfl":
		return b.decodeShfl(ri, in, m, parts)
	case "vote":
		return b.decodeVote(ri, in, m, parts)
	case "match":
		return b.decodeMatch(ri, in, m)
	case "redux":
		return b.decodeRedux(ri, in, m, parts)
	case "isspacep":
		return b.decodeIsspacep(ri, in, parts)
	case "lop3":
		return b.decodeLop3(ri, in, m)
	case "fns":
		return b.decodeFns(ri, in, m)
	case "set":
		if len(ri.ops) == 4 {
			return b.decodeSetBool(ri, in, m)
		}
	case "ld", "ldu":
		return b.decodeLd(ri, in, m)
	case "st":
		return b.decodeSt(ri, in, m)
	case "atom", "red":
		return b.decodeAtom(ri, in, m, base == "atom", parts)
	case "mov":
		return b.decodeMov(ri, in, m)
	case "setp":
		return b.decodeSetp(ri, in, m)
	case "selp":
		if err := b.nops(ri, 4); err != nil {
			return in, err
		}
		in.op = opSelp
		if err := b.checkRegSizes(ri, []typ{t, t, t, tPred}, false); err != nil {
			return in, err
		}
		if in.d[0], err = b.dst(ri.ops[0]); err != nil {
			return in, err
		}
		for i := 0; i < 2; i++ {
			if in.a[i], err = b.src(ri.ops[i+1], t); err != nil {
				return in, err
			}
		}
		in.a[2], err = b.predSrc(&in, ri.ops[3])
		return in, err
	case "cvta":
		if err := b.nops(ri, 2); err != nil {
			return in, err
		}
		toSp := m.other["to"]
		win := uint64(0)
		switch m.sp {
		case spShared:
			win = sharedWindow
		case spLocal:
			win = localWindow
		case spParam:
			win = 0 // kernel parameter addresses are already generic
		case spGlobal, spConst:
		default:
			return in, unsupported(ri)
		}
		if toSp {
			in.f1 = func(a uint64) uint64 { return a - win }
			if win == 0 {
				in.f1 = func(a uint64) uint64 { return a }
			}
		} else {
			in.f1 = func(a uint64) uint64 { return a + win }
		}
		if t == tU32 { // 32-bit shared-window pointers
			return in, errf(ri.line, "32-bit cvta is not supported")
		}
		if err := b.checkRegSizes(ri, []typ{t, t}, false); err != nil {
			return in, err
		}
		return b.alu(ri, in, 1, t)
	case "addc", "subc", "madc":
		return b.decodeCarry(ri, in, m, base)
	case "vadd", "vsub", "vabsdiff", "vmin", "vmax":
		return b.decodeVideo(ri, in, m, base)
	case "add", "sub", "mad", "mul":
		if m.other["cc"] {
			return b.decodeCarry(ri, in, m, base)
		}
	}
	if t == tNone {
		return in, unsupported(ri)
	}
	if (base == "min" || base == "max") && m.other["xorsign"] && t == tF32 { // the half types' is halfFunc's
		fn := minmaxXorsignAbs(m, base == "max")
		in.f2 = fn.f2
		return b.alu(ri, in, 2, t)
	}
	if fn, n, ok, err := aluFunc(base, m, t); ok || err != nil {
		if err != nil {
			return in, errf(ri.line, "%s: %v", ri.opcode, err)
		}
		in.f1, in.f2, in.f3, in.f4 = fn.f1, fn.f2, fn.f3, fn.f4
		srcT := fn.srcT
		if srcT == tNone {
			srcT = t
		}
		if err := b.checkOperandSizes(ri, base, m, n, srcT, fn.srcT2); err != nil {
			return in, err
		}
		return b.aluT(ri, in, n, srcT, fn.srcT2)
	}
	return in, unsupported(ri)
}

// alu finishes a one, two or three source ALU instruction.
func (b *builder) alu(ri rawInst, in inst, n int, t typ) (inst, error) {
	return b.aluT(ri, in, n, t, tNone)
}

func (b *builder) aluT(ri rawInst, in inst, n int, t, t2 typ) (inst, error) {
	if err := b.nops(ri, n+1); err != nil {
		return in, err
	}
	var err error
	if in.d[0], err = b.dst(ri.ops[0]); err != nil {
		return in, err
	}
	for i := 0; i < n; i++ {
		tt := t
		if i == n-1 && t2 != tNone {
			tt = t2
		}
		if in.a[i], err = b.src(ri.ops[i+1], tt); err != nil {
			return in, err
		}
	}
	in.op = opALU1 + opcode(n-1)
	in.na = uint8(n)
	return in, nil
}

func (b *builder) decodeMov(ri rawInst, in inst, m mods) (inst, error) {
	if err := b.nops(ri, 2); err != nil {
		return in, err
	}
	t := in.t
	d, s := ri.ops[0], ri.ops[1]
	var err error
	if d.kind == roVec { // unpack
		in.op = opMovUnpack
		in.nd = uint8(len(d.elems))
		if in.nd > 4 || in.nd < 2 {
			return in, errf(ri.line, "mov unpack into %d registers", in.nd)
		}
		for i, e := range d.elems {
			if in.d[i], err = b.dst(e); err != nil {
				return in, err
			}
		}
		in.a[0], err = b.src(s, t)
		return in, err
	}
	if s.kind == roVec {
		in.op = opMovPack
		in.na = uint8(len(s.elems))
		if in.na > 4 || in.na < 2 {
			return in, errf(ri.line, "mov pack of %d registers", in.na)
		}
		for i, e := range s.elems {
			if in.a[i], err = b.src(e, tNone); err != nil {
				return in, err
			}
		}
		in.d[0], err = b.dst(d)
		return in, err
	}
	if s.kind == roName {
		if k, ok := specialNames[s.name]; ok && (k == spClock || k == spClock64 || k == spGlobalTimer || k == spGlobalTimerLo || k == spGlobalTimerHi) {
			in.op = opClock
			in.sub = uint8(k)
			in.d[0], err = b.dst(d)
			return in, err
		}
		if _, ok := b.m.funcs[s.name]; ok {
			if _, _, isReg := b.reg(s.name); !isReg {
				return in, errf(ri.line, "function addresses (indirect calls) are not supported")
			}
		}
	}
	tr := t
	in.f1 = func(a uint64) uint64 { return tr.trunc(a) }
	if t == tPred {
		in.f1 = func(a uint64) uint64 { return a & 1 }
	}
	if err := b.checkRegSizes(ri, []typ{t, t}, false); err != nil {
		return in, err
	}
	return b.alu(ri, in, 1, t)
}

func (b *builder) decodeSetp(ri rawInst, in inst, m mods) (inst, error) {
	if len(ri.ops) != 3 && len(ri.ops) != 4 {
		return in, errf(ri.line, "setp takes 3 or 4 operands")
	}
	t := in.t
	cmp, err := cmpFunc(m.cmp, t, m.ftz)
	if err != nil {
		return in, errf(ri.line, "%s: %v", ri.opcode, err)
	}
	in.op, in.cmp = opSetp, cmp
	if err := b.checkRegSizes(ri, []typ{tPred, t, t, tPred}, false); err != nil {
		return in, err
	}
	if err = b.dstOrPair(&in, ri.ops[0], true); err != nil {
		return in, err
	}
	for i := 0; i < 2; i++ {
		if in.a[i], err = b.src(ri.ops[i+1], t); err != nil {
			return in, err
		}
	}
	if len(ri.ops) == 4 {
		if in.a[2], err = b.predSrc(&in, ri.ops[3]); err != nil {
			return in, err
		}
		if in.bop = boolOp(m.bop); in.bop == nil {
			return in, errf(ri.line, "setp with a predicate operand needs .and, .or or .xor")
		}
	}
	return in, nil
}

func (b *builder) decodeCarry(ri rawInst, in inst, m mods, base string) (inst, error) {
	t := in.t
	if t.size() != 4 && t.size() != 8 {
		return in, unsupported(ri)
	}
	if b.f.ccReg < 0 {
		b.f.ccReg = b.newReg(tB32)
	}
	in.op = opCarry
	if m.other["cc"] {
		in.flags |= flCarryOut
	}
	if strings.HasSuffix(base, "c") {
		in.flags |= flCarryIn
	}
	bits := t.bits()
	mask := uint64(1)<<bits - 1
	if bits == 64 {
		mask = math.MaxUint64
	}
	n := 2
	switch strings.TrimSuffix(base, "c") {
	case "add":
		in.fc = func(a, b, _, cin uint64) (uint64, uint64) { return addCarry(a&mask, b&mask, cin, bits) }
	case "sub":
		in.fc = func(a, b, _, cin uint64) (uint64, uint64) { return subBorrow(a&mask, b&mask, cin, bits) }
	case "mad":
		n = 3
		hi := m.other["hi"]
		if !hi && !m.other["lo"] {
			return in, unsupported(ri)
		}
		signed := t.signed()
		in.fc = func(a, b, c, cin uint64) (uint64, uint64) {
			p := mulPart(a, b, bits, signed, hi)
			return addCarry(p&mask, c&mask, cin, bits)
		}
	default:
		return in, unsupported(ri)
	}
	if err := b.nops(ri, n+1); err != nil {
		return in, err
	}
	if err := b.checkRegSizes(ri, []typ{t, t, t, t}, false); err != nil {
		return in, err
	}
	var err error
	if in.d[0], err = b.dst(ri.ops[0]); err != nil {
		return in, err
	}
	for i := 0; i < n; i++ {
		if in.a[i], err = b.src(ri.ops[i+1], t); err != nil {
			return in, err
		}
	}
	in.na = uint8(n)
	in.a[3] = b.f.ccReg
	return in, nil
}

func (b *builder) decodeCall(ri rawInst, in inst, m mods) (inst, error) {
	in.op = opCall
	if m.other["uni"] {
		in.flags |= flUni
	}
	cs := &callSite{}
	ops := ri.ops
	if len(ops) > 0 && ops[0].kind == roList {
		for _, e := range ops[0].elems {
			s, ok := b.variable(e.name)
			if !ok || s.kind != symFrame {
				return in, errf(ri.line, "call return %s is not a .param variable", e.name)
			}
			cs.rets = append(cs.rets, s)
		}
		ops = ops[1:]
	}
	if len(ops) == 0 || ops[0].kind != roName {
		return in, errf(ri.line, "call without a function")
	}
	if _, _, isReg := b.reg(ops[0].name); isReg {
		return in, errf(ri.line, "indirect calls are not supported")
	}
	cs.callee = ops[0].name
	ops = ops[1:]
	if len(ops) > 0 && ops[0].kind == roList {
		for _, e := range ops[0].elems {
			s, ok := b.variable(e.name)
			if !ok || s.kind != symFrame {
				return in, errf(ri.line, "call argument %s is not a .param variable", e.name)
			}
			cs.args = append(cs.args, s)
		}
		ops = ops[1:]
	}
	if len(ops) > 0 {
		return in, errf(ri.line, "indirect calls (prototype operand) are not supported")
	}
	in.call = cs
	return in, nil
}

func (b *builder) decodeBar(ri rawInst, in inst, m mods, parts []string) (inst, error) {
	kind := ""
	if len(parts) > 1 {
		kind = parts[1]
	}
	if parts[0] == "bar" && kind == "warp" {
		if err := b.nops(ri, 1); err != nil {
			return in, err
		}
		in.op = opWarpSync
		if err := b.checkRegSizes(ri, []typ{tB32}, false); err != nil {
			return in, err
		}
		var err error
		in.a[0], err = b.src(ri.ops[0], tB32)
		return in, err
	}
	switch kind {
	case "sync", "":
		in.op = opBar
	case "arrive":
		in.op = opBarArrive
	case "red":
		return b.decodeBarRed(ri, in, m)
	default:
		if kind == "cta" && len(parts) > 2 && (parts[2] == "sync" || parts[2] == "arrive") {
			in.op = opBar
			if parts[2] == "arrive" {
				in.op = opBarArrive
			}
			break
		}
		return in, unsupported(ri)
	}
	if len(ri.ops) < 1 || len(ri.ops) > 2 {
		return in, errf(ri.line, "%s takes a barrier and an optional thread count", ri.opcode)
	}
	if err := b.checkBarOperands(ri, ri.ops); err != nil {
		return in, err
	}
	var err error
	if in.a[0], err = b.src(ri.ops[0], tU32); err != nil {
		return in, err
	}
	if len(ri.ops) == 2 {
		in.flags |= flBarCount
		if in.a[1], err = b.src(ri.ops[1], tU32); err != nil {
			return in, err
		}
	}
	return in, nil
}

// dstOrPair resolves destination d, or d|p (flPair) where pair allows it.
func (b *builder) dstOrPair(in *inst, d rawOp, pair bool) (err error) {
	if d.kind == roPair && pair {
		in.flags |= flPair
		if in.d[0], err = b.dst(d.elems[0]); err != nil {
			return err
		}
		in.d[1], err = b.dst(d.elems[1])
		return err
	}
	in.d[0], err = b.dst(d)
	return err
}

// predSrc resolves predicate operand {!}p, a negation as flNegC.
func (b *builder) predSrc(in *inst, p rawOp) (int32, error) {
	if p.kind == roNot {
		in.flags |= flNegC
		p.kind = roName
	}
	return b.src(p, tPred)
}

// boolOp is setp's and set's .BoolOp (nil for none of .and, .or, .xor).
func boolOp(name string) func(x, y bool) bool {
	switch name {
	case "and":
		return func(x, y bool) bool { return x && y }
	case "or":
		return func(x, y bool) bool { return x || y }
	case "xor":
		return func(x, y bool) bool { return x != y }
	}
	return nil
}

// syncOperands decodes the operands of shfl.sync, vote.sync, match.sync
// and redux.sync after their operand count is checked: the destination
// (d|p where pair), then sources of types ts (a tPred one {!}p), the
// member mask last.
func (b *builder) syncOperands(ri rawInst, in *inst, pair bool, ts ...typ) error {
	err := b.dstOrPair(in, ri.ops[0], pair)
	for i, t := range ts {
		if err != nil {
			return err
		}
		if t == tPred {
			in.a[i], err = b.predSrc(in, ri.ops[i+1])
		} else {
			in.a[i], err = b.src(ri.ops[i+1], t)
		}
	}
	return err
}

func (b *builder) decodeShfl(ri rawInst, in inst, m mods, parts []string) (inst, error) {
	if !m.other["sync"] {
		return in, errf(ri.line, "shfl without .sync is not supported (sm_70 and later need shfl.sync)")
	}
	switch {
	case m.other["idx"]:
		in.sub = shIdx
	case m.other["up"]:
		in.sub = shUp
	case m.other["down"]:
		in.sub = shDown
	case m.other["bfly"]:
		in.sub = shBfly
	default:
		return in, unsupported(ri)
	}
	if err := b.nops(ri, 5); err != nil {
		return in, err
	}
	if len(m.types) != 1 || in.t != tB32 {
		return in, errf(ri.line, "%s: shfl.sync takes .b32", ri.opcode)
	}
	if err := b.checkRegSizes(ri, []typ{tB32, tB32, tB32, tB32, tB32}, false); err != nil {
		return in, err
	}
	in.op = opShfl
	return in, b.syncOperands(ri, &in, true, tB32, tB32, tB32, tB32)
}

func (b *builder) decodeVote(ri rawInst, in inst, m mods, parts []string) (inst, error) {
	if !m.other["sync"] {
		return in, errf(ri.line, "vote without .sync is not supported")
	}
	switch {
	case m.other["all"]:
		in.sub = voAll
	case m.other["any"]:
		in.sub = voAny
	case m.other["uni"] && !m.other["ballot"]:
		in.sub = voUni
	case m.other["ballot"]:
		in.sub = voBallot
	default:
		return in, unsupported(ri)
	}
	if err := b.nops(ri, 3); err != nil {
		return in, err
	}
	// "vote.sync.mode.pred d, {!}a, membermask", "vote.sync.ballot.b32 d, {!}a, membermask"
	dt := tPred
	if in.sub == voBallot {
		dt = tB32
	}
	if len(m.types) != 1 || in.t != dt {
		if dt == tB32 {
			return in, errf(ri.line, "%s: vote.sync.ballot takes .b32", ri.opcode)
		}
		return in, errf(ri.line, "%s: vote.sync.all, .any and .uni take .pred", ri.opcode)
	}
	if err := b.checkRegSizes(ri, []typ{dt, tPred, tB32}, false); err != nil {
		return in, err
	}
	in.op = opVote
	return in, b.syncOperands(ri, &in, false, tPred, tB32)
}

func (b *builder) memSpace(ri rawInst, in *inst, m mods) error {
	in.sp = spGeneric
	if m.hasSp {
		in.sp = m.sp
	}
	if m.other["volatile"] || m.other["relaxed"] || m.other["acquire"] || m.other["release"] {
		in.flags |= flVolatile
	}
	if len(m.types) != 1 {
		return errf(ri.line, "%s: needs one type", ri.opcode)
	}
	if in.t.size() == 0 || in.t == tPred {
		return errf(ri.line, "%s: bad type", ri.opcode)
	}
	return nil
}

func (b *builder) decodeLd(ri rawInst, in inst, m mods) (inst, error) {
	if err := b.memSpace(ri, &in, m); err != nil {
		return in, err
	}
	if err := b.nops(ri, 2); err != nil {
		return in, err
	}
	in.op = opLd
	d := ri.ops[0]
	if err := b.checkReg(ri, d, in.t, true); err != nil {
		return in, err
	}
	var err error
	if d.kind == roVec {
		if len(d.elems) != m.vec {
			return in, errf(ri.line, "%s: %d registers for .v%d", ri.opcode, len(d.elems), m.vec)
		}
		for i, e := range d.elems {
			if in.d[i], err = b.dst(e); err != nil {
				return in, err
			}
		}
	} else {
		if m.vec != 1 {
			return in, errf(ri.line, "%s: vector load into one register", ri.opcode)
		}
		if in.d[0], err = b.dst(d); err != nil {
			return in, err
		}
	}
	in.nd = uint8(m.vec)
	if err := b.addr(&in, ri.ops[1]); err != nil {
		return in, err
	}
	return in, b.checkParamAccess(ri, &in)
}

func (b *builder) decodeSt(ri rawInst, in inst, m mods) (inst, error) {
	if err := b.memSpace(ri, &in, m); err != nil {
		return in, err
	}
	if err := b.nops(ri, 2); err != nil {
		return in, err
	}
	in.op = opSt
	if err := b.addr(&in, ri.ops[0]); err != nil {
		return in, err
	}
	s := ri.ops[1]
	if err := b.checkReg(ri, s, in.t, true); err != nil {
		return in, err
	}
	var err error
	if s.kind == roVec {
		if len(s.elems) != m.vec {
			return in, errf(ri.line, "%s: %d registers for .v%d", ri.opcode, len(s.elems), m.vec)
		}
		for i, e := range s.elems {
			if in.a[i], err = b.src(e, in.t); err != nil {
				return in, err
			}
		}
	} else {
		if m.vec != 1 {
			return in, errf(ri.line, "%s: vector store of one register", ri.opcode)
		}
		if in.a[0], err = b.src(s, in.t); err != nil {
			return in, err
		}
	}
	in.na = uint8(m.vec)
	if in.sp == spParam && in.sym != nil && in.sym.kind == symKParam {
		return in, errf(ri.line, "stores to kernel parameters are not supported")
	}
	return in, b.checkParamAccess(ri, &in)
}

// checkParamAccess settles which parameter memory a .param access reads.
func (b *builder) checkParamAccess(ri rawInst, in *inst) error {
	if in.sp != spParam {
		if in.sym != nil && in.sym.kind == symKParam {
			return errf(ri.line, "kernel parameter %s outside .param accesses", in.sym.v.name)
		}
		return nil
	}
	if in.sym == nil {
		if in.ab < 0 {
			return errf(ri.line, "absolute .param address")
		}
		in.sp = spKParam // through a register: the kernel's parameters
		return nil
	}
	if in.sym.kind == symKParam {
		in.sp = spKParam
	} else if in.sym.kind != symFrame {
		return errf(ri.line, "%s is not a parameter", in.sym.v.name)
	}
	if in.ab >= 0 {
		return errf(ri.line, "register plus parameter symbol address")
	}
	return nil
}

func (b *builder) decodeAtom(ri rawInst, in inst, m mods, ret bool, parts []string) (inst, error) {
	in.op = opAtom
	if ret {
		in.flags |= flAtomRet
	}
	in.sp = spGeneric
	if m.hasSp {
		in.sp = m.sp
	}
	if in.sp != spGeneric && in.sp != spGlobal && in.sp != spShared {
		return in, errf(ri.line, "%s: atomics on .%s memory", ri.opcode, in.sp)
	}
	opName := ""
	for _, p := range parts[1:] {
		switch p {
		case "add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec":
			opName = p
		}
	}
	ops := map[string]uint8{"add": atAdd, "min": atMin, "max": atMax, "exch": atExch, "cas": atCas,
		"and": atAnd, "or": atOr, "xor": atXor, "inc": atInc, "dec": atDec}
	k, ok := ops[opName]
	if !ok || m.vec != 1 || len(m.types) != 1 {
		return in, unsupported(ri)
	}
	in.sub = k
	t := in.t
	switch {
	case t.float() && !(k == atAdd || k == atExch || k == atMin || k == atMax):
		return in, unsupported(ri)
	case k == atCas && t == tB16: // atom.cas.b16 (sm_70)
	case t == tF16 || t == tBF16 || t == tF16x2 || t == tBF16x2 || t.size() < 4 || t.size() > 8 || t == tB128:
		return in, unsupported(ri)
	case (k == atMin || k == atMax) && t.float():
		return in, unsupported(ri)
	}
	want := 2
	if k == atCas {
		want = 3
	}
	if ret {
		want++
	}
	if err := b.nops(ri, want); err != nil {
		return in, err
	}
	for _, o := range ri.ops { // d, b and c are of the type; a is the address
		if o.kind == roAddr {
			continue
		}
		if err := b.checkReg(ri, o, t, false); err != nil {
			return in, err
		}
	}
	ops2 := ri.ops
	var err error
	if ret {
		if in.d[0], err = b.dst(ops2[0]); err != nil {
			return in, err
		}
		ops2 = ops2[1:]
	}
	if err := b.addr(&in, ops2[0]); err != nil {
		return in, err
	}
	if in.sym != nil && in.sym.kind != symGlobal && in.sym.kind != symShared && in.sym.kind != symDynShared {
		return in, errf(ri.line, "%s on %s", ri.opcode, in.sym.v.name)
	}
	for i, o := range ops2[1:] {
		if in.a[i], err = b.src(o, t); err != nil {
			return in, err
		}
	}
	in.na = uint8(len(ops2) - 1)
	in.flags |= flRaceExempt
	return in, nil
}

// decodeBarRed decodes bar.red.popc.u32 d, a{, b}, {!}c and
// bar.red.{and,or}.pred p, a{, b}, {!}c.
func (b *builder) decodeBarRed(ri rawInst, in inst, m mods) (inst, error) {
	switch {
	case m.other["popc"] && in.t == tU32:
		in.sub = redPopc
	case m.bop == "and" && in.t == tPred:
		in.sub = redAnd
	case m.bop == "or" && in.t == tPred:
		in.sub = redOr
	default:
		return in, unsupported(ri)
	}
	if len(ri.ops) != 3 && len(ri.ops) != 4 {
		return in, errf(ri.line, "%s takes a destination, a barrier, an optional count and a predicate", ri.opcode)
	}
	in.op = opBar
	in.flags |= flBarRed
	if err := b.checkBarOperands(ri, ri.ops[1:len(ri.ops)-1]); err != nil {
		return in, err
	}
	if err := b.checkRegSizes(ri, []typ{in.t}, false); err != nil {
		return in, err
	}
	var err error
	if in.d[0], err = b.dst(ri.ops[0]); err != nil {
		return in, err
	}
	if in.a[0], err = b.src(ri.ops[1], tU32); err != nil {
		return in, err
	}
	if len(ri.ops) == 4 {
		in.flags |= flBarCount
		if in.a[1], err = b.src(ri.ops[2], tU32); err != nil {
			return in, err
		}
	}
	in.a[2], err = b.predSrc(&in, ri.ops[len(ri.ops)-1])
	return in, err
}

// checkOperandSizes refuses an ALU instruction with a register operand
// whose size is not its type's, as ptxas does ("Arguments mismatch"): the
// ISA's operand type checking lets a register of any type of the same
// size stand for an operand (bit-size types are compatible with every type
// of their size) and a predicate only for a .pred operand; only ld, st
// and cvt take wider registers ("ld, st, and cvt instructions permit
// source and destination data operands to be wider than the
// instruction-type size"). Immediates, special registers and addresses
// are not checked.
func (b *builder) checkOperandSizes(ri rawInst, base string, m mods, n int, srcT, srcT2 typ) error {
	if len(ri.ops) != n+1 {
		return nil // aluT reports the operand count
	}
	t := m.types[0]
	dt := t
	srcs := make([]typ, n)
	for i := range srcs {
		srcs[i] = srcT
	}
	if srcT2 != tNone {
		srcs[n-1] = srcT2
	}
	switch base {
	case "popc", "clz", "bfind":
		dt = tU32
	case "testp":
		dt = tPred
	case "mul", "mad":
		if m.other["wide"] {
			dt = map[int]typ{2: tB32, 4: tB64}[t.size()]
		}
	case "bfe": // "bfe.type d, a, b, c": b and c are .u32
		srcs[1] = tU32
	case "bfi": // "bfi.type f, a, b, c, d": c and d are .u32
		srcs[2] = tU32
	}
	return b.checkRegSizes(ri, append([]typ{dt}, srcs...), false)
}

// checkRegSizes checks the register operands of ri against types, one
// for each operand (tNone: not checked), as checkOperandSizes says; wider
// lets a register be wider than its type (cvt's operands).
func (b *builder) checkRegSizes(ri rawInst, types []typ, wider bool) error {
	for i, want := range types {
		if i < len(ri.ops) {
			if err := b.checkReg(ri, ri.ops[i], want, wider); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReg checks one operand o against type want (tNone: not checked),
// the elements of a vector operand each.
func (b *builder) checkReg(ri rawInst, o rawOp, want typ, wider bool) error {
	if o.kind == roVec {
		for _, e := range o.elems {
			if err := b.checkReg(ri, e, want, wider); err != nil {
				return err
			}
		}
		return nil
	}
	if o.kind != roName || want == tNone {
		return nil
	}
	_, rt, ok := b.reg(o.name)
	if !ok {
		return nil
	}
	switch {
	case (rt == tPred) != (want == tPred):
	case rt == tPred, rt.size() == want.size(), wider && rt.size() > want.size():
		return nil
	}
	return errf(ri.line, "%s: operand %s is a .%s register, the instruction's operand there is .%s", ri.opcode, o.name, typName(rt), typName(want))
}

// checkBarOperands checks bar's and barrier's a and b: registers are 32
// bits wide; an immediate barrier a is 0..15 ("a logical barrier resource
// as an immediate constant or register with value 0 through 15"), an
// immediate thread count b a multiple of the warp size of at most 1024
// ("the value in b must be a multiple of warp size"); a count in a
// register is checked when the barrier runs.
func (b *builder) checkBarOperands(ri rawInst, ops []rawOp) error {
	for i, o := range ops {
		if err := b.checkReg(ri, o, tU32, false); err != nil {
			return err
		}
		if o.kind != roNum || i > 1 {
			continue
		}
		v, err := parseInt(o.num)
		if err != nil || o.neg {
			v = -1
		}
		if i == 0 && (v < 0 || v > 15) {
			return errf(ri.line, "%s: barrier %s is not 0..15", ri.opcode, o.num)
		}
		if i == 1 && (v < 0 || v%32 != 0 || v > 1024) {
			return errf(ri.line, "%s: thread count %s is not a multiple of the warp size of at most 1024", ri.opcode, o.num)
		}
	}
	return nil
}

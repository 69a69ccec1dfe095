package ptx

import (
	"fmt"

	"github.com/cuarray/cuarray/device/ptx/entry"
)

// Param is one kernel parameter: its place in Launch.Params (the CUDA
// ABI: each at its alignment, in order) and its PTX type. Package entry
// reads the same from a module's declarations alone.
type Param = entry.Param

// paramOf is the Param of kernel parameter v at offset off.
func paramOf(v *varDecl, off int) Param {
	p := Param{Name: v.name, Offset: off, Size: v.size, Align: v.align, Type: typeNames[v.t], Vector: v.vec}
	if v.array {
		p.Elems = v.elems
	}
	return p
}

// Kernel is a kernel of a module, linked with the functions it calls.
type Kernel struct {
	// Name is the kernel's PTX name.
	Name string
	// Params are its parameters; ParamBytes the buffer size they need.
	Params     []Param
	ParamBytes int
	// MaxNTID and ReqNTID are the .maxntid and .reqntid directives (zero
	// when absent).
	MaxNTID, ReqNTID [3]int
	// StaticShared is the bytes of .shared memory the kernel declares.
	StaticShared int
	// LocalBytes is each thread's .local memory (the kernel's and its callees').
	LocalBytes int
	// Registers is the registers per thread the interpreter uses (declared
	// ones plus those that hold constants).
	Registers int

	prog *program
	mod  *Module
	line int
}

// program is a kernel's code with its callees, in one register file.
type program struct {
	code       []inst
	nregs      int
	consts     []constInit
	special    []specialInit
	localBytes int
	frameBytes int
	static     int
	funcs      []progFunc
	warps      warpPool // the warps of finished launches, for the next
}

// progFunc is a function placed in a program.
type progFunc struct {
	name  string
	entry int32
	frame int // offset of its parameter frame
	f     *function
}

// link places a kernel and the functions it calls in one program.
func (m *Module) link(kf *function) (*Kernel, error) {
	prog := &program{}
	order := []*function{kf}
	index := map[*function]int{kf: 0}
	for i := 0; i < len(order); i++ {
		for _, in := range order[i].code {
			if in.op != opCall {
				continue
			}
			g, ok := m.funcs[in.call.callee]
			if !ok || g.declOnly {
				return nil, errf(int(in.line), "call of undefined function %s", in.call.callee)
			}
			if g.entry {
				return nil, errf(int(in.line), "call of kernel %s", g.name)
			}
			if _, seen := index[g]; !seen {
				index[g] = len(order)
				order = append(order, g)
			}
		}
	}
	// shared memory: the module's variables, then each function's
	sharedOff := map[*varDecl]int{}
	for _, v := range m.shared {
		if v.extern || v.elems == 0 {
			continue
		}
		prog.static = alignUp(prog.static, v.align)
		sharedOff[v] = prog.static
		prog.static += v.size
	}
	regBase := make([]int32, len(order))
	pcBase := make([]int32, len(order))
	localBase := make([]int, len(order))
	sharedBase := make([]int, len(order))
	for i, f := range order {
		regBase[i] = int32(prog.nregs)
		prog.nregs += len(f.regs)
		pcBase[i] = int32(len(prog.code))
		prog.code = append(prog.code, f.code...)
		prog.localBytes = alignUp(prog.localBytes, 16)
		localBase[i] = prog.localBytes
		prog.localBytes += f.localSize
		prog.static = alignUp(prog.static, 16)
		sharedBase[i] = prog.static
		prog.static += f.sharedSz
		prog.frameBytes = alignUp(prog.frameBytes, 16)
		prog.funcs = append(prog.funcs, progFunc{name: f.name, entry: pcBase[i], frame: prog.frameBytes, f: f})
		prog.frameBytes += f.frameSize
	}
	dynBase := alignUp(prog.static, 16)
	// symAddr is a symbol's address in its state space.
	symAddr := func(s *symRef) (uint64, space) {
		switch s.kind {
		case symGlobal:
			return s.g.addr, spGlobal
		case symShared:
			if off, ok := sharedOff[s.v]; ok {
				return uint64(off), spShared
			}
			return uint64(sharedBase[index[s.fn]] + s.fn.sharedOff[s.v]), spShared
		case symDynShared:
			return uint64(dynBase), spShared
		case symLocal:
			return uint64(localBase[index[s.fn]] + s.fn.localOff[s.v]), spLocal
		case symFrame:
			return uint64(prog.funcs[index[s.fn]].frame + s.fn.frameOff[s.v]), spParam
		case symKParam:
			return uint64(s.fn.kparamOff[s.v]), spKParam
		}
		return 0, spGeneric
	}
	window := map[space]uint64{spShared: sharedWindow, spLocal: localWindow, spKParam: paramWindow}
	for i, f := range order {
		rb := regBase[i]
		for pc := pcBase[i]; pc < pcBase[i]+int32(len(f.code)); pc++ {
			in := &prog.code[pc]
			for j := range in.d {
				if in.d[j] >= 0 {
					in.d[j] += rb
				}
			}
			for j := range in.a {
				in.a[j] += rb
			}
			if in.guard >= 0 {
				in.guard += rb
			}
			if in.ab >= 0 {
				in.ab += rb
			}
			if in.op == opBra {
				in.target += pcBase[i]
			}
			if in.sym != nil {
				a, sp := symAddr(in.sym)
				switch {
				case in.sp == spGeneric:
					in.off += int64(a + window[sp])
				case in.sp == sp || in.sp == spConst && sp == spGlobal || in.sp == spGlobal && sp == spGlobal:
					in.off += int64(a)
				default:
					return nil, errf(int(in.line), "%s is not in the .%s state space", in.sym.v.name, in.sp)
				}
			}
			if in.op == opCall {
				cs := *in.call
				g := m.funcs[cs.callee]
				ci := index[g]
				cs.fn = ci
				if len(cs.args) != len(g.params) || len(cs.rets) != len(g.rets) {
					return nil, errf(int(in.line), "call of %s with %d arguments and %d results; it has %d and %d",
						g.name, len(cs.args), len(cs.rets), len(g.params), len(g.rets))
				}
				cs.copyIn, cs.copyOut = nil, nil
				for j, s := range cs.args {
					from, _ := symAddr(s)
					to := prog.funcs[ci].frame + g.frameOff[g.params[j]]
					cs.copyIn = append(cs.copyIn, frameCopy{int(from), to, min(s.v.size, g.params[j].size)})
				}
				for j, s := range cs.rets {
					to, _ := symAddr(s)
					from := prog.funcs[ci].frame + g.frameOff[g.rets[j]]
					cs.copyOut = append(cs.copyOut, frameCopy{from, int(to), min(s.v.size, g.rets[j].size)})
				}
				in.call = &cs
			}
		}
		for _, c := range f.consts {
			v := c.val
			if c.sym != nil {
				a, sp := symAddr(c.sym)
				switch sp {
				case spKParam:
					a += paramWindow
				case spParam:
					a += frameWindow
				}
				v += a
			}
			prog.consts = append(prog.consts, constInit{reg: c.reg + rb, val: v})
		}
		for _, s := range f.special {
			prog.special = append(prog.special, specialInit{reg: s.reg + rb, kind: s.kind})
		}
	}
	k := &Kernel{Name: kf.name, MaxNTID: kf.maxntid, ReqNTID: kf.reqntid, StaticShared: prog.static,
		LocalBytes: prog.localBytes, Registers: prog.nregs, ParamBytes: kf.kparamSz, prog: prog, line: kf.line, mod: m}
	for _, v := range kf.params {
		k.Params = append(k.Params, paramOf(v, kf.kparamOff[v]))
	}
	if prog.nregs > 1<<20 {
		return nil, fmt.Errorf("ptx: line %d: kernel %s uses too many registers", kf.line, kf.name)
	}
	return k, nil
}

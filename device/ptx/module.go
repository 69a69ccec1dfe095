package ptx

import (
	"fmt"
	"sort"
	"unsafe"
)

// Module is a parsed PTX module: its kernels, ready to run, and its
// .global and .const variables. The module owns the memory of its
// variables (Go memory that does not move, initialized from the PTX): a
// variable's device address is the host address of that memory, and
// Module.Lookup finds it, so a driver can serve cuModuleGetGlobal and
// copies to and from the variables through it.
type Module struct {
	funcs   map[string]*function
	order   []*function
	globals map[string]*global
	gorder  []*global
	shared  []*varDecl // module-level .shared variables
	kernels map[string]*Kernel
	// sm and ptxVersion are the module's .target (70 for sm_70) and
	// .version (78 for 7.8); 0 when the module does not say.
	sm, ptxVersion int
}

// maxGlobalBytes bounds a module variable, which the module allocates.
const maxGlobalBytes = 64 << 20

// global is a module variable in module-owned memory.
type global struct {
	v    *varDecl
	mem  []byte
	addr uint64
}

// GlobalInfo describes a module variable.
type GlobalInfo struct {
	// Name is the variable's PTX name.
	Name string
	// Addr is its device address: the host address of the module's memory.
	Addr uint64
	// Size is its size in bytes.
	Size int
	// Const says whether it is in the .const state space.
	Const bool
	// Mem is the variable's memory, owned by the module.
	Mem []byte
}

// Parse parses a PTX module and prepares each kernel to run. Errors name
// the PTX line ("ptx: line 123: ..."); an instruction the interpreter
// does not support is refused here, named with its line, rather than run
// wrongly.
func Parse(src string) (m *Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("ptx: internal error while parsing: %v", r)
		}
	}()
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	m = &Module{funcs: map[string]*function{}, globals: map[string]*global{}, kernels: map[string]*Kernel{}}
	p := &parser{toks: toks, m: m}
	if err := p.parseModule(); err != nil {
		return nil, err
	}
	for _, f := range m.order {
		if !f.entry {
			continue
		}
		k, err := m.link(f)
		if err != nil {
			return nil, err
		}
		m.kernels[f.name] = k
	}
	return m, nil
}

// Kernel returns the kernel (.entry) called name.
func (m *Module) Kernel(name string) (*Kernel, bool) {
	k, ok := m.kernels[name]
	return k, ok
}

// Kernels returns the names of the module's kernels, sorted.
func (m *Module) Kernels() []string {
	out := make([]string, 0, len(m.kernels))
	for n := range m.kernels {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Global returns the .global or .const variable called name.
func (m *Module) Global(name string) (GlobalInfo, bool) {
	g, ok := m.globals[name]
	if !ok {
		return GlobalInfo{}, false
	}
	return GlobalInfo{Name: name, Addr: g.addr, Size: len(g.mem), Const: g.v.sp == spConst, Mem: g.mem}, true
}

// Lookup returns the module variable holding addr, as Memory.Lookup does
// for allocations.
func (m *Module) Lookup(addr uint64) (base uint64, mem []byte, ok bool) {
	for _, g := range m.gorder {
		if addr >= g.addr && addr-g.addr < uint64(len(g.mem)) || addr == g.addr {
			return g.addr, g.mem, true
		}
	}
	return 0, nil, false
}

func (m *Module) addModuleVar(v *varDecl) error {
	switch v.sp {
	case spGlobal, spConst:
		if _, dup := m.globals[v.name]; dup {
			return errf(v.line, "%s declared twice", v.name)
		}
		if v.size > maxGlobalBytes {
			return errf(v.line, "%s: %d bytes; module variables of more than %d bytes are not supported", v.name, v.size, maxGlobalBytes)
		}
		if v.extern && v.size == 0 {
			return errf(v.line, "extern variable %s is not supported", v.name)
		}
		// over-allocate to align the variable's address
		raw := make([]byte, v.size+v.align+1)
		a := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
		pad := (uintptr(v.align) - a%uintptr(v.align)) % uintptr(v.align)
		mem := raw[pad : pad+uintptr(v.size) : pad+uintptr(v.size)]
		copy(mem, v.init)
		g := &global{v: v, mem: mem, addr: uint64(a + pad)}
		m.globals[v.name] = g
		m.gorder = append(m.gorder, g)
	case spShared:
		m.shared = append(m.shared, v)
	default:
		return errf(v.line, "module-level .%s variable %s is not supported", v.sp, v.name)
	}
	return nil
}

func (m *Module) declareFunc(f *function) error {
	if old, ok := m.funcs[f.name]; ok {
		_ = old
		return nil
	}
	f.declOnly = true
	m.funcs[f.name] = f
	return nil
}

func (m *Module) addFunc(f *function) error {
	if old, ok := m.funcs[f.name]; ok && !old.declOnly {
		return errf(f.line, "%s defined twice", f.name)
	}
	m.funcs[f.name] = f
	m.order = append(m.order, f)
	return nil
}

package kernel

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Access says what a kernel does with an array argument.
type Access uint8

// The accesses, as Numba's cuda.In, cuda.Out and cuda.InOut.
const (
	// Read: the kernel only reads the array.
	Read Access = iota + 1
	// Write: the kernel writes the array and does not read what was there:
	// on sim and the emulated driver a read of bytes the launch has not
	// written first is an error.
	Write
	// ReadWrite: the kernel reads and writes the array.
	ReadWrite
)

// String names the access as the argument constructors do: "In", "Out", "InOut".
func (a Access) String() string {
	switch a {
	case Read:
		return "In"
	case Write:
		return "Out"
	case ReadWrite:
		return "InOut"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// Arg is one kernel argument: an array (In, Out, InOut), device memory
// (Memory) or a scalar (F32, F64, I8, I16, I32, I64, U8, U16, U32, U64,
// Struct), passed in order as the kernel's parameters are declared. Where
// the kernel's PTX is known, each argument is checked against its
// parameter before the launch (see Kernel.Launch). An Arg prints as the
// call that made it: "F32(2.5)", "In(DevArray(float32 [64] ...))".
type Arg struct {
	arr        *devarray.DevArray
	mem        driver.Range // Memory's
	isMemory   bool
	access     Access
	dtype      devarray.DType // wanted; Invalid: any
	contiguous bool
	isArray    bool
	kind       scalarKind
	bits       uint64 // a scalar's bits
	size       int    // a scalar's bytes
	raw        []byte // a struct's bytes
	align      int
}

// scalarKind is the constructor that made a scalar Arg, for printing.
type scalarKind uint8

const (
	noScalar scalarKind = iota
	kindF32
	kindF64
	kindI8
	kindI16
	kindI32
	kindI64
	kindU8
	kindU16
	kindU32
	kindU64
	kindStruct
)

// In is an array the kernel only reads: on sim and the emulated driver, a
// write into it stops the kernel with an error.
func In(a *devarray.DevArray) Arg { return Arg{arr: a, access: Read, isArray: true} }

// Out is an array the kernel writes without reading what was there: on
// sim and the emulated driver, a read of bytes the launch has not written
// first stops the kernel with an error (declare it InOut instead).
func Out(a *devarray.DevArray) Arg { return Arg{arr: a, access: Write, isArray: true} }

// InOut is an array the kernel reads and writes.
func InOut(a *devarray.DevArray) Arg { return Arg{arr: a, access: ReadWrite, isArray: true} }

// Memory is n bytes of device memory at p that no DevArray describes (a
// workspace's scratch memory), passed as a pointer and declared as an
// array is; the launch can neither check that it is live nor keep it
// allocated: the caller keeps it so until the kernel is done. It is the
// raw escape: on sim and the emulated driver the kernel is held to its
// allocation, not to the n bytes (a Read still refuses writes to them).
func Memory(p devarray.Ptr, n int64, access Access) Arg {
	return Arg{mem: driver.Range{Ptr: p, N: n, ReadOnly: access == Read}, access: access, isMemory: true}
}

// Range returns the device memory an array or Memory argument declares,
// the bytes from its lowest to one past its highest, named as the
// launch's reports name it (i is the argument's index, from 0); false for
// a scalar. Code that does a kernel's work another way (a Go reference)
// declares the same memory.
func (a Arg) Range(i int) (driver.Range, bool) {
	switch {
	case a.isMemory:
		r := a.mem
		r.Raw = true
		r.Name = argName(i, a.access)
		return r, true
	case a.isArray:
		lo, hi := a.arr.Extent()
		return driver.Range{Ptr: a.arr.Ptr() + devarray.Ptr(lo), N: hi - lo, ReadOnly: a.access == Read,
			WriteFirst: a.access == Write, Name: argName(i, a.access)}, true
	}
	return driver.Range{}, false
}

// Of requires the array argument to have dtype d (the kernel's T*).
func (a Arg) Of(d devarray.DType) Arg {
	a.dtype = d
	return a
}

// Contiguous requires the array argument to be C-contiguous, for a kernel
// that indexes it as a flat array.
func (a Arg) Contiguous() Arg {
	a.contiguous = true
	return a
}

// F32 is a float parameter (.f32).
func F32(v float32) Arg {
	return Arg{kind: kindF32, bits: uint64(math.Float32bits(v)), size: 4, align: 4}
}

// F64 is a double parameter (.f64).
func F64(v float64) Arg { return Arg{kind: kindF64, bits: math.Float64bits(v), size: 8, align: 8} }

// I8 is a signed char parameter (.s8).
func I8(v int8) Arg { return Arg{kind: kindI8, bits: uint64(uint8(v)), size: 1, align: 1} }

// I16 is a short parameter (.s16).
func I16(v int16) Arg { return Arg{kind: kindI16, bits: uint64(uint16(v)), size: 2, align: 2} }

// I32 is an int parameter (.s32, or .u32 as nvcc declares some).
func I32(v int32) Arg { return Arg{kind: kindI32, bits: uint64(uint32(v)), size: 4, align: 4} }

// I64 is a long long parameter (.s64, .u64).
func I64(v int64) Arg { return Arg{kind: kindI64, bits: uint64(v), size: 8, align: 8} }

// U8 is an unsigned char or bool parameter (.u8).
func U8(v uint8) Arg { return Arg{kind: kindU8, bits: uint64(v), size: 1, align: 1} }

// U16 is an unsigned short parameter (.u16).
func U16(v uint16) Arg { return Arg{kind: kindU16, bits: uint64(v), size: 2, align: 2} }

// U32 is an unsigned int parameter (.u32).
func U32(v uint32) Arg { return Arg{kind: kindU32, bits: uint64(v), size: 4, align: 4} }

// U64 is an unsigned long long parameter (.u64), or a raw device address
// that no DevArray describes: the launch can neither check nor keep it
// alive.
func U64(v uint64) Arg { return Arg{kind: kindU64, bits: v, size: 8, align: 8} }

// Struct is a struct passed by value, laid out in b as the kernel's C
// struct is, with its alignment (a power of two): nvcc declares it
// `.param .align A .b8 name[len(b)]`.
func Struct(b []byte, align int) Arg {
	return Arg{kind: kindStruct, raw: append([]byte(nil), b...), size: len(b), align: align}
}

// String writes the argument as the call that made it: "F32(2.5)",
// "U64(0x7f3a00000000)", "Struct([]byte{0x1, 0x2}, 4)", "Memory(0x7f3a00000000,
// 256, Read)", "In(DevArray(float32 [64] on sim:0 ...)).Of(float32)"; the
// zero Arg is "Arg{}".
func (a Arg) String() string { return a.format(false) }

// GoString is %#v's Go syntax: String with the package name, and an
// array as %#v writes a *devarray.DevArray.
func (a Arg) GoString() string { return a.format(true) }

// format writes String, or GoString where gosyntax.
func (a Arg) format(gosyntax bool) string {
	pkg, dt := "", "%v"
	if gosyntax {
		pkg, dt = "kernel.", "devarray.%s"
	}
	var s string
	switch {
	case a.isArray:
		if gosyntax {
			s = fmt.Sprintf("%s%v(%#v)", pkg, a.access, a.arr)
		} else {
			s = fmt.Sprintf("%v(%v)", a.access, a.arr)
		}
		if a.dtype != devarray.Invalid {
			s += ".Of(" + fmt.Sprintf(dt, dtypeName(a.dtype, gosyntax)) + ")"
		}
		if a.contiguous {
			s += ".Contiguous()"
		}
		return s
	case a.isMemory:
		return fmt.Sprintf("%sMemory(%#x, %d, %s%s)", pkg, uintptr(a.mem.Ptr), a.mem.N, pkg, accessConst(a.access))
	}
	switch a.kind {
	case kindF32:
		s = "F32(" + strconv.FormatFloat(float64(math.Float32frombits(uint32(a.bits))), 'g', -1, 32) + ")"
	case kindF64:
		s = "F64(" + strconv.FormatFloat(math.Float64frombits(a.bits), 'g', -1, 64) + ")"
	case kindI8:
		s = fmt.Sprintf("I8(%d)", int8(a.bits))
	case kindI16:
		s = fmt.Sprintf("I16(%d)", int16(a.bits))
	case kindI32:
		s = fmt.Sprintf("I32(%d)", int32(a.bits))
	case kindI64:
		s = fmt.Sprintf("I64(%d)", int64(a.bits))
	case kindU8:
		s = fmt.Sprintf("U8(%d)", uint8(a.bits))
	case kindU16:
		s = fmt.Sprintf("U16(%d)", uint16(a.bits))
	case kindU32:
		s = fmt.Sprintf("U32(%d)", uint32(a.bits))
	case kindU64:
		s = fmt.Sprintf("U64(%#x)", a.bits)
	case kindStruct:
		s = fmt.Sprintf("Struct(%#v, %d)", a.raw, a.align)
	default:
		return pkg + "Arg{}"
	}
	return pkg + s
}

// dtypeName names d as String does, or as its constant does.
func dtypeName(d devarray.DType, constant bool) string {
	name := d.String()
	switch {
	case !constant:
		return name
	case d == devarray.BFloat16:
		return "BFloat16"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// accessConst names an Access as its constant does.
func accessConst(a Access) string {
	switch a {
	case Read:
		return "Read"
	case Write:
		return "Write"
	case ReadWrite:
		return "ReadWrite"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// argNames are the names launches give their arrays in reports, made once.
var argNames = func() (n [16][4]string) {
	for i := range n {
		for a := Read; a <= ReadWrite; a++ {
			n[i][a] = fmt.Sprintf("argument %d (%s)", i+1, a)
		}
	}
	return n
}()

// argName names argument i (from 0) of access a.
func argName(i int, a Access) string {
	if i < len(argNames) {
		return argNames[i][a]
	}
	return fmt.Sprintf("argument %d (%s)", i+1, a)
}

// check checks array argument i for a launch of kernel name on dev, and
// returns the memory it declares.
func (a *Arg) check(name string, i int, dev devarray.DeviceID) (driver.Range, error) {
	x := a.arr
	if err := x.Err(); err != nil {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s: %w", name, argName(i, a.access), err)
	}
	if x.Device() != dev {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s is on %v, the module on %v: %w",
			name, argName(i, a.access), x.Device(), dev, devarray.ErrDevice)
	}
	if a.dtype != devarray.Invalid && x.DType() != a.dtype {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s is %v, the kernel takes %v: %w",
			name, argName(i, a.access), x.DType(), a.dtype, devarray.ErrDType)
	}
	if a.access != Read && x.ReadOnly() {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s is written by the kernel: %w",
			name, argName(i, a.access), devarray.ErrReadOnly)
	}
	if a.contiguous && !x.IsContiguous() {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s has strides %v, the kernel takes a C-contiguous array: %w",
			name, argName(i, a.access), x.Strides(), devarray.ErrShape)
	}
	if al := x.DType().Align(); al > 1 && int64(x.Ptr())%al != 0 {
		return driver.Range{}, fmt.Errorf("kernel: launch %s: %s at %#x is not aligned to its %v's %d bytes: %w",
			name, argName(i, a.access), uintptr(x.Ptr()), x.DType(), al, devarray.ErrMisaligned)
	}
	r, _ := a.Range(i)
	return r, nil
}

// pack appends the argument's parameter bytes to p.
func (a *Arg) pack(p *driver.KernelArgs) {
	switch {
	case a.isArray:
		p.Ptr(a.arr.Ptr())
	case a.isMemory:
		p.Ptr(a.mem.Ptr)
	case a.raw != nil || a.size == 0:
		p.Struct(a.raw, max(a.align, 1))
	case a.size == 4:
		p.U32(uint32(a.bits))
	case a.size == 8:
		p.U64(a.bits)
	default: // 1 or 2 bytes
		b := [2]byte{byte(a.bits), byte(a.bits >> 8)}
		p.Struct(b[:a.size], a.size)
	}
}

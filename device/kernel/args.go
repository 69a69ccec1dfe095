package kernel

import (
	"fmt"
	"math"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Access says what a kernel does with an array argument.
type Access uint8

// The accesses, as Numba's cuda.In, cuda.Out and cuda.InOut.
const (
	// Read: the kernel only reads the array.
	Read Access = iota + 1
	// Write: the kernel writes the array and does not read what was there.
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

// Arg is one kernel argument: an array (In, Out, InOut) or a scalar
// (F32, F64, I32, I64, U32, U64, Struct), passed in order as the kernel's
// parameters are declared.
type Arg struct {
	arr        *devarray.DevArray
	mem        driver.Range // Memory's
	isMemory   bool
	access     Access
	dtype      devarray.DType // wanted; Invalid: any
	contiguous bool
	isArray    bool
	bits       uint64 // a scalar's bits
	size       int    // a scalar's bytes
	raw        []byte // a struct's bytes
	align      int
}

// In is an array the kernel only reads: on sim and the emulated driver, a
// write into it stops the kernel with an error.
func In(a *devarray.DevArray) Arg { return Arg{arr: a, access: Read, isArray: true} }

// Out is an array the kernel writes without reading what was there.
func Out(a *devarray.DevArray) Arg { return Arg{arr: a, access: Write, isArray: true} }

// InOut is an array the kernel reads and writes.
func InOut(a *devarray.DevArray) Arg { return Arg{arr: a, access: ReadWrite, isArray: true} }

// Memory is n bytes of device memory at p that no DevArray describes (a
// workspace's scratch memory), passed as a pointer and declared as an
// array is; the launch can neither check that it is live nor keep it
// allocated: the caller keeps it so until the kernel is done.
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
		r.Name = argName(i, a.access)
		return r, true
	case a.isArray:
		lo, hi := a.arr.Extent()
		return driver.Range{Ptr: a.arr.Ptr() + devarray.Ptr(lo), N: hi - lo, ReadOnly: a.access == Read, Name: argName(i, a.access)}, true
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

// F32 is a float parameter.
func F32(v float32) Arg { return Arg{bits: uint64(math.Float32bits(v)), size: 4, align: 4} }

// F64 is a double parameter.
func F64(v float64) Arg { return Arg{bits: math.Float64bits(v), size: 8, align: 8} }

// I32 is an int parameter.
func I32(v int32) Arg { return Arg{bits: uint64(uint32(v)), size: 4, align: 4} }

// I64 is a long long parameter.
func I64(v int64) Arg { return Arg{bits: uint64(v), size: 8, align: 8} }

// U32 is an unsigned int parameter.
func U32(v uint32) Arg { return Arg{bits: uint64(v), size: 4, align: 4} }

// U64 is an unsigned long long parameter (or a raw device address that no
// DevArray describes: the launch can neither check nor keep it alive).
func U64(v uint64) Arg { return Arg{bits: v, size: 8, align: 8} }

// Struct is a struct passed by value, laid out in b as the kernel's C
// struct is, with its alignment (a power of two).
func Struct(b []byte, align int) Arg {
	return Arg{raw: append([]byte(nil), b...), size: len(b), align: align}
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
	default:
		p.U64(a.bits)
	}
}

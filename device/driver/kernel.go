package driver

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/cuarray/cuarray/devarray"
)

// KernelRunner is implemented by backends that run compiled GPU kernels
// (device/cuda, and sim through its PTX interpreter): they load PTX into a
// module and launch its functions. Package kernels uses it where
// RunsModules says so; elsewhere it runs Go references, through
// MemoryAccess.
type KernelRunner interface {
	// LoadModule loads a module image for the device: a fatbin (machine
	// code for the device's architecture is used as it is, else its PTX is
	// JIT-compiled) or PTX source. A failed load's error carries the
	// loader's and JIT's logs.
	LoadModule(image string) (Module, error)
}

// ReferencePreferrer is implemented by backends that can run package
// kernels' Go references as well as PTX (sim): PrefersReferences reports
// whether package kernels should run the references there (sim's default,
// for speed) rather than load its PTX. A module a program loads itself
// runs from its PTX either way.
type ReferencePreferrer interface {
	PrefersReferences() bool
}

// RunsModules reports whether package kernels should load its PTX on dev
// (a KernelRunner that does not prefer the Go references) rather than run
// the references through MemoryAccess.
func RunsModules(dev Device) bool {
	if _, ok := dev.(KernelRunner); !ok {
		return false
	}
	p, ok := dev.(ReferencePreferrer)
	return !ok || !p.PrefersReferences()
}

// Module is loaded GPU code.
type Module interface {
	// Function returns the kernel with the given (extern "C") name.
	Function(name string) (Function, error)
	// Close unloads the module.
	Close() error
}

// Function is one kernel of a module.
type Function interface {
	// Launch runs the kernel on a grid of blocks with the given arguments,
	// on stream s (nil: the default stream), and returns when it is queued,
	// not when it is done: an asynchronous call, whatever its name.
	Launch(grid, block [3]uint32, sharedBytes uint32, s Stream, args *KernelArgs) error
}

// DeclaredLauncher is implemented by the functions of every backend
// (sim, the cuda backend on a GPU and on the emulated driver): a launch
// that says which memory its array arguments are and whether the kernel
// writes them.
type DeclaredLauncher interface {
	// LaunchDeclared is Function.Launch with the arrays the arguments
	// point into. sim's stream race checker judges the launch by them; on
	// sim and the emulated driver, which interpret the kernel's PTX, a
	// write into a ReadOnly range, a read of a WriteFirst range's bytes
	// the launch has not written, and an access in a range's allocation
	// outside every range declared there (unless a Raw one lies there)
	// are errors naming the kernel, its PTX line and the range. The launch is counted in the device's ledger
	// under the kernel's name (accounting.Ledger.RecordLaunch), with the
	// bytes it read and wrote where the backend knows them (an
	// interpreted kernel), when the kernel has run.
	LaunchDeclared(grid, block [3]uint32, sharedBytes uint32, s Stream, args *KernelArgs, arrays []Range) error
}

// MemoryAccess is implemented by backends whose device memory the host can
// read and write in place (device/sim). Kernels run their Go reference
// versions through it.
type MemoryAccess interface {
	// Access calls f with the device memory of each range, after checking
	// that each lies inside one live allocation; no memory can be freed
	// while f runs. Ranges may overlap. It is synchronous: it runs after
	// the work queued on the default stream and returns when f has.
	Access(ranges []Range, f func(mem [][]byte) error) error
	// Launch queues f, with the same checks, on stream s (nil: the default
	// stream) as a kernel launch is queued on a GPU, and returns at once:
	// f may run after Launch returns, and its error is the stream's
	// (reported by the stream's Synchronize).
	Launch(s Stream, ranges []Range, f func(mem [][]byte) error) error
}

// Range is n bytes of device memory at Ptr that a kernel touches. A kernel
// declares each buffer it uses as a Range over the extent it may touch;
// ReadOnly says that it only reads those bytes (the zero value: it may
// read and write them). sim's stream race checker (check=streams) judges
// a launch by these declarations: two kernels that only read a buffer do
// not race, a writer and anything else unordered do.
type Range struct {
	Ptr      devarray.Ptr
	N        int64
	ReadOnly bool
	// WriteFirst says that the kernel writes the bytes before it reads
	// them (package kernel's Out): on sim and the emulated driver a read
	// of bytes the launch has not written is an error.
	WriteFirst bool
	// Raw says that the range is raw device memory no array describes
	// (package kernel's Memory): on sim and the emulated driver the kernel
	// is held to its allocation, not to the range; an array's range holds
	// the kernel to it within its allocation.
	Raw bool
	// Name says what the range is in reports ("argument 2 (x, In)"); it
	// may be empty.
	Name string
}

// KernelArgs packs kernel parameters the way the CUDA ABI lays them out:
// each at its natural alignment, in order. The zero value is empty.
type KernelArgs struct {
	buf     []byte
	offsets []int
}

func (a *KernelArgs) add(align int, b []byte) *KernelArgs {
	a.start(align)
	a.buf = append(a.buf, b...)
	return a
}

// start pads the buffer to align and begins an argument there.
func (a *KernelArgs) start(align int) {
	for len(a.buf)%align != 0 {
		a.buf = append(a.buf, 0)
	}
	a.offsets = append(a.offsets, len(a.buf))
}

// Grow makes room for n more bytes of parameters in args more arguments,
// so that appending them allocates nothing.
func (a *KernelArgs) Grow(n, args int) {
	a.buf = slices.Grow(a.buf, n)
	a.offsets = slices.Grow(a.offsets, args)
}

// Ptr appends a device pointer.
func (a *KernelArgs) Ptr(p devarray.Ptr) *KernelArgs { return a.U64(uint64(p)) }

// I32 appends an int.
func (a *KernelArgs) I32(v int32) *KernelArgs { return a.U32(uint32(v)) }

// U32 appends an unsigned int.
func (a *KernelArgs) U32(v uint32) *KernelArgs {
	a.start(4)
	a.buf = binary.LittleEndian.AppendUint32(a.buf, v)
	return a
}

// I64 appends a long long.
func (a *KernelArgs) I64(v int64) *KernelArgs { return a.U64(uint64(v)) }

// U64 appends an unsigned long long.
func (a *KernelArgs) U64(v uint64) *KernelArgs {
	a.start(8)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, v)
	return a
}

// F32 appends a float.
func (a *KernelArgs) F32(v float32) *KernelArgs {
	return a.add(4, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
}

// F64 appends a double.
func (a *KernelArgs) F64(v float64) *KernelArgs {
	return a.add(8, binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
}

// Struct appends a struct passed by value, already laid out in b, with the
// given alignment.
func (a *KernelArgs) Struct(b []byte, align int) *KernelArgs { return a.add(align, b) }

// Len returns the number of arguments.
func (a *KernelArgs) Len() int { return len(a.offsets) }

// Bytes returns the packed parameter bytes and the offset of each argument.
func (a *KernelArgs) Bytes() (buf []byte, offsets []int) { return a.buf, a.offsets }

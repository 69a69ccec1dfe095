package ptx

import (
	"fmt"
	"strings"
)

// FaultKind is the kind of error a kernel's run stops with.
type FaultKind int

const (
	// IllegalAddress is an access outside every live allocation, or outside
	// shared, local or parameter memory.
	IllegalAddress FaultKind = iota + 1
	// MisalignedAddress is an access whose address is not a multiple of its size.
	MisalignedAddress
	// SharedRace is two threads of different warps touching the same
	// shared-memory bytes between barriers, at least one writing.
	SharedRace
	// BarrierHang is a barrier that only part of a block reaches, or a
	// warp-synchronous instruction whose member lanes do not all execute it.
	BarrierHang
	// Trap is a trap instruction, or an instruction the interpreter cannot
	// run (recursion, a runaway kernel past Launch.MaxInstructions).
	Trap
	// LaunchOutOfResources is a launch asking for more threads or shared
	// memory than a GPU provides.
	LaunchOutOfResources
	// InvalidValue is a launch with bad dimensions or parameters.
	InvalidValue
	// ReadOnlyWrite is a write into memory the launch declared read-only
	// (Launch.Watches): a GPU would let it pass.
	ReadOnlyWrite
	// Watched is an access to a range the caller watches (Launch.Watches).
	Watched
	// OutsideExtent is an access inside the allocation of an array the
	// launch declares (Launch.Arrays) but outside every array declared
	// there: a GPU would let it pass.
	OutsideExtent
	// UnwrittenRead is a read of bytes of an array the launch declares
	// written before read (WriteArray, package kernel's Out) that the
	// launch has not written: compute-sanitizer's initcheck, per launch.
	UnwrittenRead
)

// String names the kind in words.
func (k FaultKind) String() string {
	switch k {
	case IllegalAddress:
		return "illegal address"
	case MisalignedAddress:
		return "misaligned address"
	case SharedRace:
		return "shared memory race"
	case BarrierHang:
		return "barrier hang"
	case Trap:
		return "trap"
	case LaunchOutOfResources:
		return "launch out of resources"
	case InvalidValue:
		return "invalid value"
	case ReadOnlyWrite:
		return "write to read-only memory"
	case Watched:
		return "access to watched memory"
	case OutsideExtent:
		return "access outside the declared array"
	case UnwrittenRead:
		return "read of an Out array's unwritten bytes"
	}
	return "fault"
}

// Thread names one thread of a launch.
type Thread struct {
	// Block and Thread are %ctaid and %tid.
	Block, Thread [3]uint32
}

// String writes the thread as "block (x,y,z) thread (x,y,z)".
func (t Thread) String() string {
	return fmt.Sprintf("block (%d,%d,%d) thread (%d,%d,%d)", t.Block[0], t.Block[1], t.Block[2], t.Thread[0], t.Thread[1], t.Thread[2])
}

// Fault is the error a kernel's run stops with: what happened, where in
// the PTX, which thread, and the memory involved.
type Fault struct {
	// Kind says what happened.
	Kind FaultKind
	// Kernel is the kernel's name.
	Kernel string
	// Thread is the faulting thread; Line its PTX line (0 for launch errors).
	Thread Thread
	Line   int
	// Space, Addr and Size are the access (state space, address, bytes).
	Space string
	Addr  uint64
	Size  int
	// Write says whether the access was a store.
	Write bool
	// AllocBase and AllocSize are the allocation nearest the address, when
	// one was found; Past is how far the access's end lies past it (or
	// before it, negative).
	AllocBase uint64
	AllocSize int
	HasAlloc  bool
	Past      int64
	// Array names the array the launch declares (Launch.Arrays) that
	// holds the access ("in argument 2 (Out)"), or the nearest, with how
	// far outside it the access lies; empty when the launch declares none.
	Array string
	// Other and OtherLine are the second thread of a race, and its line.
	Other     Thread
	OtherLine int
	// Detail says more, in words.
	Detail string
}

// Error reports the fault: kind, kernel, line, thread, access and the
// allocation nearest it.
func (f *Fault) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ptx: %s: %s", f.Kernel, f.Kind)
	if f.Line > 0 {
		fmt.Fprintf(&b, " at line %d, %v", f.Line, f.Thread)
	}
	if f.Size > 0 {
		op := "read"
		if f.Write {
			op = "write"
		}
		fmt.Fprintf(&b, ": %s of %d bytes at %s address %#x", op, f.Size, f.Space, f.Addr)
	}
	if f.HasAlloc {
		fmt.Fprintf(&b, "; nearest allocation %#x of %d bytes", f.AllocBase, f.AllocSize)
		if f.Past > 0 {
			fmt.Fprintf(&b, ", %d bytes past its end", f.Past)
		}
	}
	if f.Array != "" {
		fmt.Fprintf(&b, "; %s", f.Array)
	}
	if f.OtherLine > 0 {
		fmt.Fprintf(&b, "; conflicting access by %v at line %d", f.Other, f.OtherLine)
	}
	if f.Detail != "" {
		fmt.Fprintf(&b, ": %s", f.Detail)
	}
	return b.String()
}

// Package ptx is a PTX interpreter in pure Go: it parses a PTX module (as
// nvcc 11.8 and later writes it, .target sm_70 and up, 64-bit addressing)
// and runs its kernels on host memory, checking every access as
// compute-sanitizer does. It lets the emulated CUDA driver and sim run the
// same PTX a GPU runs.
//
//	m, err := ptx.Parse(src)            // errors: "ptx: line 123: ..."
//	k, _ := m.Kernel("axpy_f32")
//	st, err := k.Run(ptx.Launch{Grid: g, Block: b, Params: params, Global: mem})
//	var f *ptx.Fault
//	if errors.As(err, &f) { ... f.Kind, f.Line, f.Thread, f.AllocBase ... }
//
// # Loading
//
// Parse decodes every instruction once into a compact form (an operation
// with its lane function chosen for its types and modifiers, register
// indices; immediates, symbol addresses and special registers are held in
// registers filled at launch) and links each kernel with the .func
// functions it calls into one program. An instruction the interpreter
// does not support is refused here, with its line, never run wrongly.
// Refused: textures and surfaces (tex, tld4, suld, sust, ...), brx.idx,
// indirect calls and function pointers, set with a predicate operand, prmt's special modes, vector registers, f16/bf16 arithmetic
// (cvt to and from .f16 and .bf16 is supported), mad.f32 without a
// rounding mode, atomics on f16/bf16/128-bit values and float atomic
// min/max, matrix and asynchronous-copy instructions (mma, wmma, ldmatrix,
// cp.async), match/redux/elect, mbarrier, clusters, and 32-bit addressing.
//
// Module variables (.global and .const, initialized or not) live in
// memory the Module owns: their device address is that memory's host
// address (Module.Global gives it, Module.Lookup finds it, so a driver can
// serve cuModuleGetGlobal and copies to them).
//
// # Execution
//
// Blocks run one after the other; a block's warps of 32 lanes run in
// lockstep with an active mask and per-lane registers (uint64 each, laid
// out register by register). Divergent lanes keep their own program
// counters; the warp runs the lanes with the least program counter (lanes
// inside a call before lanes waiting after its call site), so divergent
// paths reconverge where they meet, as on a GPU with an IPDOM stack.
// shfl.sync, vote.sync and bar.warp.sync wait for the lanes of their
// member mask (lanes past the block's last thread excepted); member lanes
// that never arrive (exited, or waiting elsewhere forever) are a
// BarrierHang fault. A shuffle that reads a lane not executing it gets 0,
// where the ISA leaves the value undefined (GPUs run cuda-samples'
// reduce7, which does so, as if it were 0); a source lane outside the
// segment gives the lane's own value, as the ISA says. Warps run until they wait at
// a barrier (bar.sync, barrier.sync, bar.arrive, bar.red.popc/and/or,
// with ids and thread counts) or exit; a barrier completes when its expected count of threads
// has arrived. A barrier that part of a block never reaches (threads
// exited, or wait at another barrier) is a BarrierHang fault, never a
// pass. call/ret pass .param arguments by copy; recursion is refused at
// run time (a Trap fault). membar and fence are no-ops: memory is coherent
// and one thread of execution runs the block.
//
// Arithmetic is IEEE bit for bit: integer wrap-around, f32 and f64 add,
// sub, mul, fma, div, sqrt and rcp in .rn, .rz, .rm and .rp (computed in
// float64 with error-free transformations, math/big for f64 fma in directed
// modes), .ftz and .sat, canonical NaNs, PTX's min/max NaN rules, cvt in
// every rounding mode with saturation (NaN to 0). Integer division by zero
// gives what NVIDIA GPUs give: all ones for a quotient, the dividend for a
// remainder. Directed-rounding f64 mul and div results in the subnormal
// range are computed with math/big; f64 add is exact there too.
//
// The .approx operations are computed as the correctly rounded (or Go math
// library) value of the exact function, within the PTX ISA's bounds:
// rcp.approx, sqrt.approx, div.approx and div.full are correctly rounded
// (the ISA allows 1 ulp for rcp/sqrt, 2 ulp for div.full); rsqrt.approx,
// ex2.approx and lg2.approx are float32 of Go's float64 result (within 1
// ulp; the ISA allows 2 ulp for ex2, 2^-22.6 for lg2); sin.approx and
// cos.approx are float32(math.Sin/Cos) (absolute error below 2^-24, the ISA
// allows 2^-20.5 in -pi..pi); tanh.approx is float32(math.Tanh).
//
// # Checks
//
// Every global access is checked against Memory.Lookup (the allocation's
// size as requested), shared accesses against the block's static plus
// dynamic shared memory, local accesses against the thread's frame, and
// every address against its access size (a vector's whole size):
// IllegalAddress and MisalignedAddress faults name the kernel, block,
// thread, PTX line, address, and the nearest allocation with how far the
// access lies past its end. A launch that declares its array arguments
// (Launch.Arrays, as package kernel's In, Out, InOut and Memory) holds the
// kernel to them too: an access in an array's allocation outside every
// array declared there is an OutsideExtent fault (RawMemory opens its
// allocation), and a read of a WriteArray's bytes the launch has not
// written is an UnwrittenRead fault (compute-sanitizer's initcheck, per
// launch: a bitmap per WriteArray, set by stores, checked by loads and
// atomics); a fault at a global address names the declared array that
// holds it, or the nearest. Unless Launch.NoRaceCheck, two threads of
// different warps touching the same shared bytes between two barriers,
// one of them writing (atomics excepted), is a SharedRace fault naming both
// threads and lines; lanes of one warp run in lockstep and are not checked
// against each other. Launch limits (1024 threads a block, 227 KiB of
// shared memory, .maxntid, .reqntid) are LaunchOutOfResources or
// InvalidValue faults. Run recovers from a panic only as a last resort and
// reports it as a Trap fault.
//
// A Kernel is read-only once parsed: Run may be called from several
// goroutines at once (launches that share memory race as they would on a
// GPU). A kernel that never ends runs forever unless
// Launch.MaxInstructions bounds it.
//
// Stats count lane and warp instructions, blocks, warps, and the bytes
// read and written per global allocation, so a ledger can count them.
//
// The hot paths (a warp's instruction loop, memory accesses, the ALU and
// the shared-memory race check) are marked //go:norace: a launch's
// registers and shared memory are its own, and the device memory it
// touches is guarded by its backend (sim holds its memory lock while a
// kernel runs), so the race detector's instrumentation there found
// nothing and cost a factor of 3 (axpy_f32 under -race: 7 M
// lane-instructions/s instrumented, 21 M not; go test -race -bench
// Elementwise ./device/ptx/). The lane functions are closures, which the
// compiler instruments whatever the function that makes them is marked:
// make cuda-emu-test builds this package without the instrumentation
// (EMU_RACE in the Makefile), and make test with it. The bit conversions
// are //go:nocheckptr too, as -race turns checkptr on.
//
// A program keeps the warps (registers, local memory) of its finished
// launches for its next ones, reset as new: many small launches of one
// kernel (gorgonia.org/cu's TestLargeBatch launches a 1,000-thread block
// 104,729 times) allocate nothing per launch.
package ptx

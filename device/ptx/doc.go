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
// Refused: textures and surfaces (tex, tld4, suld, sust, ...), the SIMD
// video instructions (vadd2, vabsdiff4, ...), vmad, vshl, vshr and vset,
// and the scalar video instructions' secondary operation, data merge and
// operand selectors, brx.idx,
// indirect calls and function pointers, vector registers, half-precision
// ex2/tanh and the .oob modifier, cvt with .rs or .rna rounding and to
// fp8/fp6/fp4/tf32 formats, mad.f32 without a rounding mode, atomics on f16/bf16/128-bit values (atom.cas.b16 aside)
// and float atomic min/max, matrix and asynchronous-copy instructions (mma,
// wmma, ldmatrix, cp.async), lop3 with a predicate result (.BoolOp),
// redux.sync on .f32, elect, mbarrier, clusters, integer min/max .relu, and 32-bit addressing. Supported beyond the arithmetic:
// isspacep (.const, .global, .local, .shared{::cta, ::cluster},
// .param{::entry}; a kernel parameter's address is also .global, as the
// ISA says, and so is a .const variable's), match.{any,all}.sync.{b32,b64}
// (with the predicate), redux.sync.{add,min,max}.{u32,s32} and
// .{and,or,xor}.b32, lop3.b32, prmt in the generic form and its six modes,
// vadd, vsub, vabsdiff, vmin and vmax in their plain form
// (vop.dtype.atype.btype{.sat} d, a, b),
// fns.b32, set with a predicate operand, mad.hi.sat.s32 and
// mad24.hi.sat.s32, dp4a and dp2a (every .u32/.s32 combination),
// bmsk.b32 and szext.{u32,s32} (.clamp and .wrap), cvt.pack.sat to
// .u16 and .s16 and, with c, to .u2, .s2, .u4, .s4, .u8 and .s8, min/max
// .xorsign.abs.f32 and atom.cas.b16.
//
// Parse also refuses, naming the line, what ptxas refuses (validate.go):
// a modifier the PTX ISA does not give the instruction (add.rn.bogus.f32,
// .ftz or .sat on add.f64, .sat on add.u32, rounding on integer
// arithmetic), forms the ISA's syntax lacks (fma, div.f64, mad.f64 and
// sqrt/rcp without a rounding mode or .approx, sqrt.approx.f64, ex2 and
// the other .approx functions without .approx or on .f64, .NaN on f64
// min/max), integer rounding on cvt from an integer or between float types
// of different sizes and float rounding on cvt to an integer, ordered
// comparisons (lt, le, gt, ge, lo, ls, hi, hs) of bit-size types in setp
// and set; a barrier outside 0..15 or a thread count that is not a
// multiple of 32 (at most 1024) given as an immediate to bar, barrier and
// bar.red (in a register, the barrier traps when it runs); shfl.sync of another type than .b32, vote.sync.ballot
// of another than .b32 and its other modes of another than .pred;
// register operands of arithmetic, bit, mov, setp, selp, cvt, ld, st,
// atom, red and the warp and barrier instructions whose size is not their type's (a
// register of another type of the same size is accepted, as the ISA's type
// checking says; cvt, ld and st take wider ones; a predicate only where
// the operand is .pred); and forms that need a later .target or .version than the
// module's, from one table of the ISA's Target ISA Notes and PTX ISA Notes
// (min/max .NaN and .relu need sm_80, .xorsign sm_86, redux.sync sm_80
// and PTX 7.0, match.sync sm_70, activemask PTX 6.2, atom.cas.b16 PTX 6.3,
// tanh sm_75, ...). A module without .target or .version is not checked
// against them. Of the instructions that are no-ops here, membar, fence,
// prefetch and prefetchu are checked for the ISA's modifiers (a level for
// membar and prefetch); the others (nanosleep, pmevent, ...) are not.
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
// shfl.sync, vote.sync, match.sync, redux.sync and bar.warp.sync wait for the lanes of their
// member mask that have not exited (lanes past the block's last thread
// excepted: "all non-exited threads named in mask must execute the same
// intrinsic", the Programming Guide says); member lanes that never arrive
// (waiting elsewhere forever) are a BarrierHang fault. A shuffle's lane
// operand counts its low five bits (the ISA: bval[4:0] = b[4:0]). A shuffle that reads a lane not executing it gets 0,
// where the ISA leaves the value undefined (GPUs run cuda-samples'
// reduce7, which does so, as if it were 0); a source lane outside the
// segment gives the lane's own value, as the ISA says. Warps run until they wait at
// a barrier (bar.sync, barrier.sync, bar.arrive, bar.red.popc/and/or,
// with ids and thread counts) or exit; a barrier completes when its expected count of threads
// has arrived, and one that expects the whole block (bar.sync without a
// count, as __syncthreads() compiles) when every thread not exited has:
// the ISA's exit says "Barriers exclusively waiting on arrivals from exited
// threads are always released". A barrier with a thread count is not
// released by exits (the ISA does not say whose arrivals it waits for: the
// strict answer). A barrier that part of a block never reaches (threads
// wait at another barrier, or too few are left for its count) is a
// BarrierHang fault, never a pass. call/ret pass .param arguments by copy; recursion is refused at
// run time (a Trap fault). membar and fence are no-ops: memory is coherent
// and one thread of execution runs the block.
//
// Arithmetic is IEEE bit for bit: integer wrap-around, f32 and f64 add,
// sub, mul, fma, div, sqrt and rcp in .rn, .rz, .rm and .rp (computed in
// float64 with error-free transformations, math/big for f64 fma in directed
// modes), .ftz and .sat, canonical NaNs, PTX's min/max NaN rules, cvt in
// every rounding mode with saturation. Integer division by zero
// gives what NVIDIA GPUs give: all ones for a quotient, the dividend for a
// remainder. Directed-rounding f64 mul, div and sqrt are exact with tiny
// operands too: subnormal results, results by the underflow threshold, and
// remainders that would fall below the subnormal range are computed with
// math/big (the exponent range emulated, a sticky bit against double
// rounding) or by exact scaling; f64 add is exact there too. An f32 result
// just below the midpoint of MaxFloat32 and 2^128 rounds to MaxFloat32
// (fma.rn.f32). .ftz flushes the rounded result: one that rounds up to
// 2^-126 is kept.
//
// Half precision (.f16, .bf16, and .f16x2, .bf16x2 packed two to a
// register, element 0 in bits 0..15), as cuda_fp16.h and cuda_bf16.h
// emit it for sm_70 to sm_90: add, sub, mul and fma (.rn; .ftz and .sat
// for .f16; .relu for fma), neg, abs, min and max (.NaN, .ftz,
// .xorsign.abs), set and setp (p|q for the packed types: p from the low
// halves), mov, ld and st of 16-bit registers. Each result is computed
// exactly (float64 with the sign of its error) and rounded once to
// nearest even; the interpreter accepts the bf16 forms on any target
// (the ISA wants sm_80 for fma.bf16, sm_90 for add/sub/mul.bf16).
//
// cvt follows the ISA's cvt page: every rounding mode to and from .f16 and
// .bf16 (integers and f64 included) rounds once from the source's own
// value; .sat (range [0, 1], NaN to +0), .relu (negative to +0) and
// .satfinite (infinity to the largest finite value of its sign) on f16
// and bf16 destinations; cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32
// d, a, b puts a's conversion in the upper half; signed integer results
// are sign-extended to the destination register's width, others
// zero-extended; float-to-integer conversions saturate, and a NaN gives
// 0, or 1 << (width-1) when the source is .f64 or the destination 64 bits
// wide, as the ISA's table says.
//
// Where the ISA leaves the answer open the interpreter chose: a NaN result
// of half-precision arithmetic and conversion is the canonical 0x7fff
// ("Half-precision instructions return an unspecified NaN"; .relu's
// canonical NaN is 0x7fff on GPUs); neg and abs flip or clear the sign bit
// of a NaN too; .relu clamps -0.0 to +0.0; cvt.f32.bf16 of a NaN (an
// "unspecified NaN") gives the canonical f32 NaN.
//
// The .approx operations are computed as the correctly rounded (or Go math
// library) value of the exact function, within the PTX ISA's bounds:
// rcp.approx, sqrt.approx, div.approx and div.full are correctly rounded
// (the ISA allows 1 ulp for rcp/sqrt, 2 ulp for div.full); rsqrt.approx,
// ex2.approx and lg2.approx are float32 of Go's float64 result (within 1
// ulp; the ISA allows 2 ulp for ex2, 2^-22.6 for lg2); sin.approx and
// cos.approx are float32(math.Sin/Cos) (absolute error below 2^-24, the ISA
// allows 2^-20.5 in -pi..pi); tanh.approx is float32(math.Tanh). Their
// special inputs (±0, ±Inf, NaN, negatives) give what the ISA's tables say.
// div.approx.f32 with 2^126 < |b| < 2^128 is a * (1/b) with 1/b flushed, as
// the ISA says: a sign-preserving zero, NaN for an infinite a (and, the
// ISA not saying, for a NaN a). rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64
// compute from the upper word of a (1.11.20) into the upper word of d, the
// low word zero, subnormals flushed, NaNs 0x7fffffff00000000, as the ISA
// defines them; the ISA does not say how the upper word is rounded: the
// interpreter rounds the exact value to nearest even, and gives
// 0x7fffffff00000000 for rsqrt of a negative number too.
//
// Bits and classes: abs.f64 passes a NaN through unchanged (the ISA);
// abs.f32 and neg of a NaN, an unspecified NaN in the ISA, change the sign
// bit only (the IEEE 754 answer the ISA foresees). testp.normal is true for
// ±0 ("positive and negative zero are considered normal numbers").
// slct.ftz flushes a subnormal c to a zero of its sign, which selects a; a
// NaN c selects b. atom.add.f32 and red.add.f32 on global memory (generic
// addresses included) flush subnormal inputs and results to zeros of their
// sign, on shared memory not, as the ISA says of current implementations;
// atom.add.f64 never flushes. atom's d is the memory's old value as it
// was, unflushed (the ISA does not say).
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

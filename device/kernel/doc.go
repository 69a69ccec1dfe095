// Package kernel loads GPU modules and launches their kernels on DevArrays
// in place, on every backend: on a GPU the driver JIT-compiles the PTX (or
// runs a fatbin's machine code); on sim and the emulated CUDA driver the
// same PTX runs through cuarray's PTX interpreter (device/ptx), every
// access checked as compute-sanitizer checks it.
//
//	mod, err := kernel.Load(dev, saxpyPTX) // PTX text or a fatbin
//	if err != nil { ... }
//	defer mod.Close()
//	saxpy, err := mod.Kernel("saxpy")
//	err = saxpy.Launch(kernel.Grid1D(n, 256),
//		kernel.F32(2.5), kernel.In(x), kernel.InOut(y), kernel.I32(int32(n)))
//
// Each array argument says whether the kernel reads it (In), writes it
// before reading it (Out) or both (InOut), as Numba's cuda.In, Out and
// InOut do. The declaration is checked before the launch (a read-only
// array cannot be Out), sim's stream race checker judges the launch by
// it, and on sim and the emulated driver the interpreter holds the kernel
// to it. The kernel is stopped, with an error that names the kernel, its
// PTX line, the thread and the argument and wraps driver.ErrInvalidValue
// (not sticky: a GPU would let the access pass), when it
//   - writes an In array;
//   - reads bytes of an Out array that this launch has not written first
//     (compute-sanitizer's initcheck, per launch and per declaration): a
//     kernel that reads what was there (y[i] += ..., an atomic add) takes
//     InOut;
//   - touches an array's allocation outside the array: each array holds
//     the kernel to its extent, from its lowest byte to its highest, so a
//     kernel that runs past the end of a view into the rest of its
//     allocation is caught. Memory is the raw escape: the kernel is held
//     to its allocation, not to its range.
//
// Each array is checked to be live, on the module's device, aligned to its
// dtype, and of the dtype and contiguity the caller asks for
// (In(x).Of(devarray.Float32).Contiguous()). An array is passed as the
// device address of its element 0 (a T* in CUDA C). An access outside
// every allocation, or misaligned, faults the device as on a GPU (sticky,
// driver.ErrContextFailed); on sim and the emulated driver the error
// names the kernel, PTX line, thread, address and the argument the
// address is in or nearest to, on the emulated driver after the driver's
// result (CUDA_ERROR_ILLEGAL_ADDRESS); on a GPU it is the driver's alone.
//
// Before any driver call, on every backend alike, the arguments are
// checked against the kernel's parameters as its PTX declares them: the
// PTX loaded, or the PTX inside a fatbin (read from the .entry
// declarations by package entry, so PTX the interpreter cannot run is
// read too). The number of arguments must be the number of parameters;
// each scalar must be as wide as its parameter's type (.u32, .s32, .f32
// and .b32 take 4 bytes, .u64, .s64, .f64 and .b64 8, .u16 and .s16 2,
// .u8 and .s8 1, `.align 8 .b8 s[24]` a 24-byte Struct aligned to 8);
// an array or Memory, passed as an 8-byte device address, stands only
// where an 8-byte integer parameter (.u64, .s64, .b64) is. Widths are
// checked, not kinds: I32 for a .f32 is taken, as the driver takes it. A
// launch that does not fit returns an *ArgumentError, which names the
// kernel, the argument counting from 1, the parameter's PTX type and what
// was given; nothing runs and nothing is left allocated. A module without
// PTX (a cubin, a fatbin of machine code alone) launches unchecked: the
// driver reads as many arguments as the kernel takes, on a GPU past the
// end of a short list (cuFuncGetParamInfo, CUDA 12.4 on, could tell the
// sizes; cuarray builds against CUDA 11.8 and does not use it).
//
// A Dim3 is CUDA's dim3: a y or z left zero is 1 (Dim3{256} is 256×1×1).
//
// Launch and LaunchOn return when the kernel has run; LaunchAsync queues
// it and returns an Op that keeps the arrays allocated until the kernel
// is done, as an async copy keeps its buffers; Queue only queues it, and
// the caller keeps the arrays until the stream has done it. Every launch is counted in
// the device's ledger per kernel name (accounting.Ledger.RecordLaunch),
// with the bytes the kernel read and wrote on sim and the emulated driver.
//
// Package kernels launches cuarray's own kernels through this package.
package kernel

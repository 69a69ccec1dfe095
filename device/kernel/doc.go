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
// (Out) or both (InOut), as Numba's cuda.In, Out and InOut do. The
// declaration is checked before the launch (a read-only array cannot be
// Out), sim's stream race checker judges the launch by it, and on sim and
// the emulated driver the interpreter holds the kernel to it: a write into
// an In array stops the kernel with an error naming its PTX line. Each
// array is checked to be live, on the module's device, aligned to its
// dtype, and of the dtype and contiguity the caller asks for
// (In(x).Of(devarray.Float32).Contiguous()). An array is passed as the
// device address of its element 0 (a T* in CUDA C); the kernel is trusted
// to stay inside it, and on sim and the emulated driver it is checked to.
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

//go:build cuda && cudaemu && linux

// Package emulated is an emulated CUDA driver: the driver API calls that
// cuarray's cuda backend makes (and the patched gorgonia.org/cu under it),
// implemented on the CPU with the behaviour the CUDA Driver API documents,
// so that the unchanged backend runs, and is tested, on a machine without
// a GPU. It is built on the sim device's machinery: each active primary
// context is a sim device (memory, streams with latency, sticky faults,
// IPC through memory files), and kernels run from their PTX through the
// PTX interpreter (device/ptx), every access checked.
//
// It is linked only into a build with the tags cuda and cudaemu: importing
// the package (device/cuda does, under those tags) makes gorgonia.org/cu's
// Init take every driver function from here instead of libcuda.so.1, by the
// symbol name cuda.h gives it (cuMemAlloc_v2, never the unversioned
// cuMemAlloc). functions.md lists the functions gorgonia.org/cu calls
// through and whether the emulated driver runs each (a test holds it to
// the driver); one it does not run answers CUDA_ERROR_NOT_SUPPORTED and
// names itself: cu.TakeMissing, on the calling thread, returns its symbol.
// Built with the tag cudaemu_nobind the package leaves gorgonia.org/cu
// alone, and Resolve binds another copy of it (package upstream runs
// gorgonia.org/cu's own tests that way).
//
// It is not a GPU, and says so: every device's name begins "cuarray
// emulated GPU". What it emulates, where a program can go wrong:
//
//   - API synchronization as CUDA documents it and the H100 showed
//     (driver 580.159.04, 2026-11-27; pageable.go): cuMemcpyHtoD from
//     pageable memory synchronizes its stream, stages the source and
//     returns with the device write pending (an Async one waits for its
//     stream too, the strict reading of "may be synchronous"); from
//     page-locked memory it is synchronous; a copy into pageable memory
//     returns complete, Async, 2-D and 3-D too; cuMemcpyDtoD, the memsets
//     (but one into page-locked host memory, which is synchronous:
//     memset.go), cuMemcpyPeer, launches and every other Async call return
//     before their work is done; cuMemFree, cuMemFreeHost and cuMemHostUnregister
//     synchronize the context first. A host range partly page-locked is
//     CUDA_ERROR_INVALID_VALUE on every copy.
//   - Implicit synchronization (implicit.go): after cuMemAlloc or
//     cuMemHostAlloc, the work queued later on any stream of the context
//     waits for the work queued before on every other stream, as the
//     Programming Guide says; a program that needs the two to overlap
//     deadlocks. cuMemcpyPeer between two contexts is serialized with all
//     work of the current, source and destination contexts, and
//     cuMemcpyPeerAsync with its stream only (copy.go).
//   - Host functions (hostfn.go): one worker for the whole process runs
//     them in order (the strictest reading of "may be serialized"), so a
//     host function that holds a stream of one device holds those of the
//     others; a pageable copy waits while one runs, and so does Peek into
//     pageable memory (the backend's test observer); a CUDA call from
//     inside one is CUDA_ERROR_NOT_PERMITTED; after an error in the context
//     the function is not called.
//   - Undefined behaviour is loud (misuse.go): a destroyed stream's or
//     event's handle is reused by the next stream or event made, as the
//     driver reuses addresses, and a call given one before that is
//     recorded (Misuses; the tests fail on it) and answered as the H100 did
//     (709 for an event).
//   - Streams: the legacy default stream (0 or CU_STREAM_LEGACY) waits for,
//     and is waited for by, every blocking stream; CU_STREAM_NON_BLOCKING
//     streams do neither; CU_STREAM_PER_THREAD is a different stream on
//     each OS thread. Events record, query, synchronize, wait (a stream
//     may wait for another device's event) and time.
//   - Contexts: primary contexts retained, released and reset; contexts
//     made by cuCtxCreate (ctx_create.go), each with memory and streams of
//     its own, destroyed by cuCtxDestroy; each OS thread's stack of current
//     contexts (cuCtxPushCurrent, cuCtxPopCurrent; cuCtxSetCurrent replaces
//     its top); a call with none current is CUDA_ERROR_INVALID_CONTEXT, one
//     with a destroyed context current CUDA_ERROR_CONTEXT_IS_DESTROYED.
//     Limits, cache and shared memory configurations (ctx_config.go).
//   - Memory: 256-byte aligned device allocations of a fixed capacity,
//     page-locked and mapped host memory, registration, pointer
//     attributes, 2-D and 3-D copies with the driver's argument checks,
//     IPC handles that open in another process (a stale one too, as on
//     the H100); registration is by bytes, not pages. The memsets of 8, 16
//     and 32 bits, 1-D and 2-D, with their alignment checks. CUDA arrays
//     made, described and destroyed (array.go); copies to and from them
//     are not emulated.
//   - Stream-ordered memory (mempool.go): cuMemAllocAsync,
//     cuMemAllocFromPoolAsync and cuMemFreeAsync on the default pool of each
//     device (cuDeviceGetDefaultMemPool) or pools cuMemPoolCreate makes,
//     with the three reuse policies, the release threshold applied at a
//     stream, event or context synchronize, cuMemPoolTrimTo and the
//     reserved and used figures, on sim's pools. Pools shared between
//     processes (mempool_ipc.go): a pool made with
//     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exports a file descriptor
//     (cuMemPoolExportToShareableHandle) and its allocations export data
//     (cuMemPoolExportPointer), which another process imports
//     (cuMemPoolImportFromShareableHandle, cuMemPoolImportPointer) and
//     frees with cuMemFree; the other handle types answer
//     CUDA_ERROR_NOT_SUPPORTED.
//   - Virtual memory management (vmm.go): cuMemAddressReserve and
//     cuMemAddressFree, cuMemCreate and cuMemRelease of pinned device
//     memory, cuMemMap, cuMemUnmap, cuMemSetAccess (read-write or none)
//     and cuMemGetAllocationGranularity, on sim's virtual memory: the
//     granularity rules, no mapping over a mapping, no access before
//     cuMemSetAccess (a copy fails, a kernel faults), released memory kept
//     until unmapped; shareable handle types and read-only access answer
//     CUDA_ERROR_NOT_SUPPORTED.
//   - Managed memory (managed.go): cuMemAllocManaged (global or host
//     attachment), cuStreamAttachMemAsync, cuMemPrefetchAsync to the host or
//     the stream's device, cuMemAdvise's six advices and
//     cuMemRangeGetAttribute(s) on sim's managed allocations, which keep
//     each 4 KiB page's residency; every device reports
//     CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS 1, as an H100 on Linux,
//     or 0 with managed=exclusive.
//   - Pageable memory in place (pageable_access.go): every device reports
//     CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS and
//     ..._USES_HOST_PAGE_TABLES 0, as a GPU without HMM or ATS, or as
//     pageable-access=hmm (1, 0) or ats (1, 1) says; then kernels read and
//     write host memory the cuda backend declares (DeclarePageable, for
//     devarray.FromPageable) in place, and no other host address.
//   - Sticky errors: after CUDA_ERROR_ILLEGAL_ADDRESS, MISALIGNED_ADDRESS
//     or LAUNCH_FAILED "any further CUDA work will return the same error"
//     (cuda.h): every call with the device's context current,
//     cuStreamDestroy and cuPointerGetAttributes included, returns it, and
//     neither a reset nor the release of the last reference gives a fresh
//     context: a retain returns it too, for the rest of the process.
//   - Kernels (interpret.go, module.go, link.go): PTX text, a fatbin (its
//     PTX, decompressed from nvcc's LZ4 block, as a GPU without machine
//     code for its architecture JIT-compiles it), cuModuleLoad's file and
//     cuLink*'s PTX load as the interpreter's modules, which refuse at load
//     what they cannot run, naming the instruction and its line
//     (CUDA_ERROR_INVALID_PTX); a launch runs the kernel on its stream, in
//     order, its parameters from kernelParams or extra. Every global,
//     shared and local access is checked against what is live (device
//     allocations at the size asked for, mapped host memory): outside it is
//     CUDA_ERROR_ILLEGAL_ADDRESS, misaligned CUDA_ERROR_MISALIGNED_ADDRESS,
//     both sticky as on a GPU, with a report that names the kernel, block,
//     thread, address, nearest allocation and PTX line (KernelFaults); a
//     launch package kernel declares is held to its declarations too (a
//     write into an In array, a read of an Out array's bytes before the
//     launch writes them, an access outside a declared array inside its
//     allocation: CUDA_ERROR_INVALID_VALUE, recorded in Misuses). The
//     report goes with the result to the caller, which calls Detail (the
//     cuda backend puts it in its error); a shared-memory race between
//     warps is recorded as undefined behaviour (Misuses). kernels=go runs the project's kernels as their Go
//     references instead, for speed; an image of machine code alone runs
//     them so too.
//
// The environment variable CUARRAY_EMULATED_DRIVER configures it, as a
// query string: devices=N (default 1), mem=SIZE per device (default 80GiB, an H100's: reserved, not committed),
// latency=DURATION (each stream operation completes that long after it is
// queued), fail-fault=N (the Nth device operation of each context faults),
// and, to be a driver other than the one CI has: version=N (what
// cuDriverGetVersion reports, default 12080), map-host=false (cuCtxGetFlags
// reports CU_CTX_MAP_HOST only where cuDevicePrimaryCtxSetFlags set it),
// managed=exclusive (devices without concurrent managed access),
// pageable-access=hmm or ats (devices whose kernels use pageable host memory in place),
// lack=SYMBOL,... (driver symbols it does not export, so calls to them answer
// CUDA_ERROR_NOT_FOUND, as with an older libcuda) and refuse=SYMBOL,...
// (driver functions that answer CUDA_ERROR_INVALID_VALUE and do nothing).
// For comparison only: pageable=early (the old reading: a pageable HtoD
// returns once staged without waiting, an Async DtoH into pageable memory
// returns at once), pageable-waits-hostfn=false, and misuse=abort (a
// destroyed handle's use aborts the process, as on the H100; the default,
// misuse=record, records it).
package emulated

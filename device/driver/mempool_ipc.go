package driver

import "github.com/cuarray/cuarray/devarray"

// Sharing a stream-ordered pool between processes, as the CUDA Driver API
// does it: a pool made shareable (cuMemPoolCreate with
// CUmemPoolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
// is exported as a file descriptor (cuMemPoolExportToShareableHandle),
// which another process receives (over a Unix socket: interop.SendPoolFD)
// and imports (cuMemPoolImportFromShareableHandle); each allocation of the
// pool is then exported as 64 bytes of data (cuMemPoolExportPointer),
// which any channel may carry, and imported from the imported pool
// (cuMemPoolImportPointer). cuda.core's IPC-enabled memory resources and
// CuPy's and PyTorch's pool sharing use exactly these calls.

// PoolExportDataSize is the size of a CUmemPoolPtrExportData (its 64
// reserved bytes).
const PoolExportDataSize = 64

// PoolExportData names one allocation of a shared pool for another
// process (CUmemPoolPtrExportData): "The data is not a handle and may be
// shared through any IPC mechanism." (cuMemPoolExportPointer)
type PoolExportData [PoolExportDataSize]byte

// PoolSharing is a device whose stream-ordered pools other processes can
// import. sim (on Linux) and the cuda backend implement it.
type PoolSharing interface {
	// NewSharedMemPool makes a stream-ordered pool whose memory other
	// processes can map (cuMemPoolCreate with handleTypes
	// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), named "pool-N" as
	// NewMemPool names its pools.
	NewSharedMemPool() (SharedMemPool, error)
	// ImportMemPool imports the pool another process exported as fd
	// (cuMemPoolImportFromShareableHandle). The descriptor stays the
	// caller's to close; the imported pool does not need it. A descriptor
	// that is not an exported pool is an error wrapping ErrInvalidValue;
	// one whose pool was destroyed, or whose exporting process has exited,
	// ErrStaleIPCHandle; one this process exported ErrOwnIPCHandle.
	ImportMemPool(fd int) (ImportedMemPool, error)
}

// SharedMemPool is a MemPool made by PoolSharing.NewSharedMemPool: its
// allocations can be mapped by other processes.
type SharedMemPool interface {
	MemPool
	// ExportFD returns a new file descriptor of the pool for another
	// process (cuMemPoolExportToShareableHandle with
	// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR). The caller closes it once
	// it has been sent.
	ExportFD() (int, error)
	// ExportPointer returns the data that names the live allocation at p,
	// which this pool handed out, for another process that imported the
	// pool (cuMemPoolExportPointer). p must be the allocation's start.
	ExportPointer(p devarray.Ptr) (PoolExportData, error)
}

// ImportedMemPool is a pool another process exported, imported here. It
// hands out no memory ("Imported memory pools do not support creating new
// allocations", cuMemPoolImportFromShareableHandle): it maps the
// exporter's allocations.
type ImportedMemPool interface {
	// Name names the pool in errors: "imported-N".
	Name() string
	// Handle returns the number the driver knows the pool by, never 0.
	Handle() uintptr
	// ImportPointer maps the allocation data names (cuMemPoolImportPointer)
	// and returns its address here and its size, counted in the ledger as
	// kind ipc until FreePointer. Data of another pool, or not export data
	// at all, is an error wrapping ErrInvalidValue; data of an allocation
	// the exporter has freed, or of a pool destroyed or whose process has
	// exited, ErrStaleIPCHandle.
	ImportPointer(data PoolExportData) (devarray.Ptr, int64, error)
	// FreePointer unmaps memory ImportPointer mapped (cuMemFree of the
	// imported pointer): "The imported memory must be freed from all
	// importing processes before being freed in the exporting process."
	// (cuMemPoolImportPointer)
	FreePointer(p devarray.Ptr) error
	// Destroy releases the imported pool (cuMemPoolDestroy), and unmaps
	// what it still maps. A second Destroy is harmless.
	Destroy() error
}

// ErrNotShareable: a pool export asked of a pool made without a
// shareable handle type ("To create an IPC capable mempool, create a
// mempool with a CUmemAllocationHandleType other than
// CU_MEM_HANDLE_TYPE_NONE", cuMemPoolExportToShareableHandle), or a
// handle type the pool was not made with. It wraps ErrInvalidValue.
var ErrNotShareable error = &refinedError{"the pool was not made shareable with this handle type (make it with NewSharedMemPool)", ErrInvalidValue}

// PoolStream allocates from Pool on a stream: its MallocAsync is the
// stream's MallocFromPoolAsync, so devarray.EmptyAsync(dev,
// driver.PoolStream{s, pool}, ...) makes an array of the pool's memory,
// which FreeAsync and Free give back in the stream's order.
type PoolStream struct {
	AsyncAllocator
	Pool MemPool
}

// MallocAsync allocates nbytes from ps.Pool in the stream's order.
func (ps PoolStream) MallocAsync(nbytes int64) (devarray.Ptr, error) {
	return ps.AsyncAllocator.MallocFromPoolAsync(nbytes, ps.Pool)
}

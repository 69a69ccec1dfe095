//go:build cuda

package conformance

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// The observations of stream-ordered pools shared between processes,
// where the Driver API's pages do not say what the driver answers: an
// import in the exporting process, another process's import of export
// data whose allocation the exporter freed ("The imported memory must be
// freed from all importing processes before being freed in the exporting
// process.", cuMemPoolImportPointer, says what a program must do, not what
// the driver answers otherwise), of a destroyed pool's descriptor, and the
// export of a pool made without a handle type. The emulated driver's
// answers are guesses (device/sim/mempool_ipc.go): the strict ones.

const (
	childPoolIPC = "observe-pool-ipc"
	// poolIPCEnv passes the export data to the child, hex ("" imports the
	// pool alone); the pool's descriptor is the child's descriptor 3.
	poolIPCEnv = "CUARRAY_CONFORMANCE_POOL_IPC"
)

// observePoolIPC adds the rows.
func observePoolIPC(t *testing.T, add func(name, got string)) {
	plain, c := MemPoolCreate(false)
	ok(t, c, "cuMemPoolCreate")
	_, c = MemPoolExportFD(plain)
	add("cuMemPoolExportToShareableHandle of a pool made with CU_MEM_HANDLE_TYPE_NONE", ErrorName(c))
	ok(t, MemPoolDestroy(plain), "cuMemPoolDestroy")

	pool, c := MemPoolCreate(true)
	if c != Success {
		add("a pool made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", "not observed: cuMemPoolCreate answered "+ErrorName(c))
		return
	}
	defer MemPoolDestroy(pool)
	fd, c := MemPoolExportFD(pool)
	ok(t, c, "cuMemPoolExportToShareableHandle")
	defer syscall.Close(fd)
	own, c := MemPoolImportFD(fd)
	if c == Success {
		MemPoolDestroy(own)
	}
	add("cuMemPoolImportFromShareableHandle of a pool's descriptor in the process that exported it", ErrorName(c))

	s, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s)
	p, c := MemAllocFromPoolAsync(1<<12, pool, s)
	ok(t, c, "cuMemAllocFromPoolAsync")
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	data, c := MemPoolExportPointer(p)
	ok(t, c, "cuMemPoolExportPointer")
	ok(t, MemFreeAsync(p, s), "cuMemFreeAsync")
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	add("another process's cuMemPoolImportFromShareableHandle, then cuMemPoolImportPointer of export data whose allocation the exporter freed (cuMemFreeAsync, synchronized)",
		poolChild(t, fd, hex(data)))

	gone, c := MemPoolCreate(true)
	ok(t, c, "cuMemPoolCreate")
	goneFD, c := MemPoolExportFD(gone)
	ok(t, c, "cuMemPoolExportToShareableHandle")
	defer syscall.Close(goneFD)
	ok(t, MemPoolDestroy(gone), "cuMemPoolDestroy")
	add("another process's cuMemPoolImportFromShareableHandle of a descriptor whose pool the exporter destroyed", poolChild(t, goneFD, ""))
}

// poolChild runs the child with fd as its descriptor 3.
func poolChild(t *testing.T, fd int, data string) string {
	dup, err := syscall.Dup(fd)
	if err != nil {
		t.Fatalf("dup the pool's descriptor: %v", err)
	}
	f := os.NewFile(uintptr(dup), "pool")
	defer f.Close()
	return childOutcomeWith(t, childPoolIPC, []*os.File{f}, poolIPCEnv+"="+data)
}

// poolIPCChild imports the pool of descriptor 3 and, when given, the
// export data, and says what each answered.
func poolIPCChild(t *testing.T) string {
	pool, c := MemPoolImportFD(3)
	if c != Success {
		return ErrorName(c)
	}
	defer MemPoolDestroy(pool)
	arg := os.Getenv(poolIPCEnv)
	if arg == "" {
		return "CUDA_SUCCESS"
	}
	data := unhex(arg)
	if len(data) != PoolExportDataSize {
		t.Fatalf("%s=%q: want %d bytes in hex", poolIPCEnv, arg, PoolExportDataSize)
	}
	p, c := MemPoolImportPointer(pool, data)
	if c == Success {
		MemFree(p)
	}
	return fmt.Sprintf("the pool: CUDA_SUCCESS; the pointer: %s", ErrorName(c))
}

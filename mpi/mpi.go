//go:build mpi

package mpi

// #cgo pkg-config: ompi-c
// #include "binding.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Error is an error code returned by an MPI call.
type Error struct {
	Op   string // the MPI function
	Code int
}

// Error returns the call and MPI's text for the code.
func (e *Error) Error() string {
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING + 1))
	defer C.free(unsafe.Pointer(buf))
	C.cu_error_string(C.int(e.Code), buf)
	return fmt.Sprintf("mpi: %s: %s (error %d)", e.Op, C.GoString(buf), e.Code)
}

// check turns an MPI return code into an error.
func check(op string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(rc)}
}

// calls serializes the MPI calls of the process: Init asks for
// MPI_THREAD_SERIALIZED, under which goroutines on any OS thread may call
// MPI, one at a time. A blocking call holds the others up until it returns.
var calls sync.Mutex

var state struct {
	sync.Mutex
	initialized, finalized bool
	cudaAware              bool
	chunk                  int64
}

// Init initializes MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED), makes the
// world communicator return errors, and asks the library whether it is
// CUDA-aware. Call it once, from the goroutine that will call Finalize:
// Init locks that goroutine to its OS thread, as MPI wants MPI_Finalize
// called on the thread that initialized it.
func Init() error {
	state.Lock()
	defer state.Unlock()
	if state.initialized {
		return fmt.Errorf("mpi: init: already initialized: %w", ErrState)
	}
	runtime.LockOSThread()
	calls.Lock()
	defer calls.Unlock()
	var provided C.int
	if err := check("MPI_Init_thread", C.cu_init(&provided)); err != nil {
		return err
	}
	state.initialized = true
	if provided < C.MPI_THREAD_SERIALIZED {
		return fmt.Errorf("mpi: init: the library provides thread level %d, below MPI_THREAD_SERIALIZED: %w", int(provided), ErrState)
	}
	if err := check("MPI_Comm_set_errhandler", C.cu_errors_return(C.cu_world())); err != nil {
		return err
	}
	state.cudaAware = C.cu_cuda_aware() == 1
	if state.chunk == 0 {
		state.chunk = DefaultChunkBytes
	}
	return nil
}

// Finalize ends MPI (MPI_Finalize). Call it after every rank's last call.
func Finalize() error {
	state.Lock()
	defer state.Unlock()
	if !state.initialized || state.finalized {
		return fmt.Errorf("mpi: finalize: not initialized or finalized already: %w", ErrState)
	}
	calls.Lock()
	defer calls.Unlock()
	state.finalized = true
	return check("MPI_Finalize", C.MPI_Finalize())
}

// Abort ends every process of the job with the exit code (MPI_Abort on the
// world). It returns only if MPI could not abort.
func Abort(code int) error {
	// no lock: another goroutine may be blocked in MPI, and the job must end
	return check("MPI_Abort", C.cu_abort(C.cu_world(), C.int(code)))
}

// CUDAAware reports whether the MPI library takes CUDA device pointers
// (MPIX_Query_cuda_support); false before Init.
func CUDAAware() bool {
	state.Lock()
	defer state.Unlock()
	return state.cudaAware
}

// SetChunkBytes sets the bytes of a block of the derived datatypes that
// describe spans longer than that (DefaultChunkBytes unless set; 1 to
// MaxCount). A small chunk makes small buffers take the derived datatypes
// that buffers of more than 2^31 elements need, so that path can be tested.
func SetChunkBytes(n int64) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("mpi: chunk of %d bytes: want 1 to %d: %w", n, MaxCount, ErrInvalidSpan)
	}
	state.Lock()
	defer state.Unlock()
	state.chunk = n
	return nil
}

// ChunkBytes returns the chunk SetChunkBytes set.
func ChunkBytes() int64 {
	state.Lock()
	defer state.Unlock()
	if state.chunk == 0 {
		return DefaultChunkBytes
	}
	return state.chunk
}

// ready returns an error unless MPI is initialized and not finalized.
func ready(op string) error {
	state.Lock()
	defer state.Unlock()
	if !state.initialized || state.finalized {
		return fmt.Errorf("mpi: %s: MPI is not initialized, or finalized: %w", op, ErrState)
	}
	return nil
}

// Comm is an MPI communicator.
type Comm struct {
	c          C.MPI_Comm
	rank, size int
}

// World returns MPI_COMM_WORLD (after Init).
func World() (Comm, error) { return newComm("world", C.cu_world()) }

func newComm(op string, c C.MPI_Comm) (Comm, error) {
	if err := ready(op); err != nil {
		return Comm{}, err
	}
	calls.Lock()
	defer calls.Unlock()
	var r, s C.int
	if err := check("MPI_Comm_rank", C.MPI_Comm_rank(c, &r)); err != nil {
		return Comm{}, err
	}
	if err := check("MPI_Comm_size", C.MPI_Comm_size(c, &s)); err != nil {
		return Comm{}, err
	}
	return Comm{c: c, rank: int(r), size: int(s)}, nil
}

// Rank is this process's rank in the communicator.
func (c Comm) Rank() int { return c.rank }

// Size is the number of processes in the communicator.
func (c Comm) Size() int { return c.size }

// LocalRank is this process's rank among the communicator's processes on
// the same node (MPI_COMM_TYPE_SHARED), and how many they are: the
// number that picks this rank's GPU.
func (c Comm) LocalRank() (rank, size int, err error) {
	if err := ready("local rank"); err != nil {
		return 0, 0, err
	}
	var local C.MPI_Comm
	calls.Lock()
	err = check("MPI_Comm_split_type", C.cu_local_comm(c.c, &local))
	calls.Unlock()
	if err != nil {
		return 0, 0, err
	}
	lc, err := newComm("local rank", local)
	calls.Lock()
	ferr := check("MPI_Comm_free", C.MPI_Comm_free(&local))
	calls.Unlock()
	if err != nil {
		return 0, 0, err
	}
	return lc.rank, lc.size, ferr
}

// Barrier waits until every process of the communicator has called it.
func (c Comm) Barrier() error {
	if err := ready("barrier"); err != nil {
		return err
	}
	calls.Lock()
	defer calls.Unlock()
	return check("MPI_Barrier", C.cu_barrier(c.c))
}

// checkPeer returns an error for a rank outside the communicator.
func (c Comm) checkPeer(op string, r int) error {
	if r < 0 || r >= c.size {
		return fmt.Errorf("mpi: %s: rank %d of %d: %w", op, r, c.size, ErrInvalidSpan)
	}
	return nil
}

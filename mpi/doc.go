// Package mpi runs cuarray across processes with MPI: a small cgo binding
// of the MPI calls cuarray needs (Open MPI from Debian: make mpi-deps), and
// on top of it Send, Recv and Alltoallv of DevArrays whose bytes go to MPI
// as device pointers when the MPI library is CUDA-aware and the device is
// a GPU (recorded in the ledger on accounting.PathMPIDevice), and through
// page-locked buffers otherwise (accounting.PathMPIStaged).
//
// The binding is built only with the build tag mpi (go build -tags mpi),
// so the rest of cuarray keeps linking the standard library alone; the
// arithmetic that cuts a buffer into MPI datatypes (Split) is plain Go and
// builds everywhere. Counts above 2^31 elements go to MPI as derived
// datatypes: whole chunks of ChunkBytes, then the rest.
//
//	if err := mpi.Init(); err != nil { ... }
//	defer mpi.Finalize()
//	world, err := mpi.World()
//	t, err := mpi.NewTransport(world, dev)
//	err = t.Alltoallv(send, sendCounts, recv, recvCounts)
//
// MPI's errors are returned as Go errors (the world communicator and every
// file return errors instead of aborting: MPI_ERRORS_RETURN); Abort, which
// ends every rank of the job, is the caller's to call where the job must end.
// A collective call that one rank cannot make (its arguments, a staging
// buffer or copy that fails) returns that rank's error there and an error
// wrapping ErrPeerFailed on every other rank, so that no rank waits on it.
package mpi

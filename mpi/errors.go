package mpi

import "errors"

// ErrState is returned for a call before Init or after Finalize, a second
// Init, or an MPI library without the thread support cuarray needs.
var ErrState = errors.New("mpi: wrong state")

package mpi

import "errors"

// ErrState is returned for a call before Init or after Finalize, a second
// Init, or an MPI library without the thread support cuarray needs.
var ErrState = errors.New("wrong MPI state")

// ErrPeerFailed is returned on every other rank of a collective call
// that one rank could not make (its arguments, its device): they return
// with it instead of waiting on that rank.
var ErrPeerFailed = errors.New("another rank failed the call")

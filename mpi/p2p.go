//go:build mpi

package mpi

// #include "binding.h"
import "C"

import (
	"errors"
	"fmt"
)

// SendBytes sends the n bytes at address p (host memory, or device memory
// for a CUDA-aware library) to rank dest with tag (MPI_Send). Spans longer
// than ChunkBytes go as a derived datatype.
func (c Comm) SendBytes(p uintptr, n int64, dest, tag int) error {
	t, err := c.pointToPoint("send", dest, n)
	if err != nil {
		return err
	}
	calls.Lock()
	defer calls.Unlock()
	err = check("MPI_Send", C.cu_send(C.uintptr_t(p), C.int(t.count), t.t, C.int(dest), C.int(tag), c.c))
	return errors.Join(err, t.free())
}

// RecvBytes receives exactly n bytes into address p from rank src with
// tag (MPI_Recv); a message of another length is an error.
func (c Comm) RecvBytes(p uintptr, n int64, src, tag int) error {
	t, err := c.pointToPoint("recv", src, n)
	if err != nil {
		return err
	}
	calls.Lock()
	defer calls.Unlock()
	var got C.longlong
	err = check("MPI_Recv", C.cu_recv(C.uintptr_t(p), C.int(t.count), t.t, C.int(src), C.int(tag), c.c, &got))
	if err == nil && int64(got) != n {
		err = fmt.Errorf("mpi: recv from rank %d: a message of %d bytes, want %d: %w", src, int64(got), n, ErrInvalidSpan)
	}
	return errors.Join(err, t.free())
}

// pointToPoint checks that MPI is ready and that peer is a rank of c, and
// returns the datatype that carries n bytes (free it after the call).
func (c Comm) pointToPoint(op string, peer int, n int64) (datatype, error) {
	if err := ready(op); err != nil {
		return datatype{}, err
	}
	if err := c.checkPeer(op, peer); err != nil {
		return datatype{}, err
	}
	return typeOf(Span{Len: n}, ChunkBytes())
}

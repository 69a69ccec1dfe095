//go:build mpi

package mpi

// #include "binding.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// AlltoallvBytes sends span send[q] of the buffer at address s to rank q
// and receives from rank q into span recv[q] of the buffer at address r,
// for every rank q (MPI_Alltoallv of bytes). When every span fits one
// chunk (Simple) on every rank, it is MPI_Alltoallv with MPI_BYTE;
// otherwise each span is a derived datatype that holds its own 64-bit
// offset, passed to MPI_Alltoallw: counts above 2^31 work. The ranks agree
// on which with an MPI_Allreduce first (a call every rank must make alike),
// and on whether to go ahead at all: spans that are not one per rank, or
// at a negative offset, or of a negative length, or past the end of the
// address space, make this rank return an error and every other rank
// return one wrapping ErrPeerFailed, rather than wait on a collective
// this rank never makes.
func (c Comm) AlltoallvBytes(s uintptr, send []Span, r uintptr, recv []Span) error {
	if err := ready("alltoallv"); err != nil {
		return err
	}
	chunk := ChunkBytes()
	local := checkSpans(c.size, send, recv)
	derived := local == nil && (!Simple(send, chunk) || !Simple(recv, chunk))
	anyDerived, err := c.agree("alltoallv", local, derived)
	if err != nil {
		return err
	}
	if !anyDerived {
		sc, sd := cInts(send)
		rc, rd := cInts(recv)
		calls.Lock()
		defer calls.Unlock()
		return check("MPI_Alltoallv", C.cu_alltoallv(C.uintptr_t(s), &sc[0], &sd[0], C.uintptr_t(r), &rc[0], &rd[0], c.c))
	}
	var types []datatype
	defer func() { _ = freeAll(types) }()
	cTypes := func(spans []Span) ([]C.int, []C.int, []C.MPI_Datatype, error) {
		counts, disps, ts := make([]C.int, len(spans)), make([]C.int, len(spans)), make([]C.MPI_Datatype, len(spans))
		for i, sp := range spans {
			// a derived type of its own for every span, its offset inside it
			l, err := Split(sp, chunk)
			if err != nil {
				return nil, nil, nil, err
			}
			if !l.Derived() && sp.Off <= MaxCount {
				l.Chunks, l.Rest = 0, sp.Len // still a struct: Alltoallw's displacements are ints
			}
			var t C.MPI_Datatype
			if err := check("MPI_Type_create_struct", C.cu_type_span(C.longlong(l.Off), C.int(l.Chunk), C.int(l.Chunks), C.int(l.Rest), &t)); err != nil {
				return nil, nil, nil, err
			}
			types = append(types, datatype{t: t, count: 1, derived: true})
			counts[i], ts[i] = 1, t
		}
		return counts, disps, ts, nil
	}
	sc, sd, st, err := cTypes(send)
	if err != nil {
		return err
	}
	rc, rd, rt, err := cTypes(recv)
	if err != nil {
		return err
	}
	calls.Lock()
	err = check("MPI_Alltoallw", C.cu_alltoallw(C.uintptr_t(s), &sc[0], &sd[0], &st[0], C.uintptr_t(r), &rc[0], &rd[0], &rt[0], c.c))
	calls.Unlock()
	ferr := freeAll(types)
	types = nil
	return errors.Join(err, ferr)
}

// checkSpans returns an error unless send and recv hold one span per rank
// of ranks, each at a non-negative offset with a non-negative length that
// ends within an int64.
func checkSpans(ranks int, send, recv []Span) error {
	if len(send) != ranks || len(recv) != ranks {
		return fmt.Errorf("mpi: alltoallv: %d send and %d receive spans for %d ranks: %w", len(send), len(recv), ranks, ErrInvalidSpan)
	}
	for _, side := range [][]Span{send, recv} {
		for q, sp := range side {
			if sp.Off < 0 || sp.Len < 0 || sp.Off > math.MaxInt64-sp.Len {
				return fmt.Errorf("mpi: alltoallv: span for rank %d of %d bytes at %d: %w", q, sp.Len, sp.Off, ErrInvalidSpan)
			}
		}
	}
	return nil
}

// agree is the first step of a collective call whose ranks may fail
// before it: every rank says whether it failed (local) and whether it
// needs derived datatypes (MPI_Allreduce, the maximum of both). It
// returns local when this rank failed, an error wrapping ErrPeerFailed
// when another did, else whether any rank needs derived datatypes.
func (c Comm) agree(op string, local error, derived bool) (anyDerived bool, err error) {
	flags := []int64{0, 0}
	if local != nil {
		flags[0] = 1
	}
	if derived {
		flags[1] = 1
	}
	all, err := c.AllreduceInt64(flags, true)
	switch {
	case local != nil:
		return false, errors.Join(local, err)
	case err != nil:
		return false, err
	case all[0] != 0:
		return false, fmt.Errorf("mpi: %s: %w", op, ErrPeerFailed)
	}
	return all[1] != 0, nil
}

// cInts returns the lengths and offsets of spans that Simple accepted.
func cInts(spans []Span) (counts, disps []C.int) {
	counts, disps = make([]C.int, len(spans)), make([]C.int, len(spans))
	for i, s := range spans {
		counts[i], disps[i] = C.int(s.Len), C.int(s.Off)
	}
	return counts, disps
}

// AllreduceInt64 returns, on every rank, the element-wise sum (or, with
// max, the maximum) of xs over the ranks (MPI_Allreduce).
func (c Comm) AllreduceInt64(xs []int64, max bool) ([]int64, error) {
	if err := ready("allreduce"); err != nil {
		return nil, err
	}
	out := make([]int64, len(xs))
	if len(xs) == 0 {
		return out, nil
	}
	in := append([]int64(nil), xs...)
	m := C.int(0)
	if max {
		m = 1
	}
	calls.Lock()
	defer calls.Unlock()
	err := check("MPI_Allreduce", C.cu_allreduce_i64((*C.longlong)(unsafe.Pointer(&in[0])), (*C.longlong)(unsafe.Pointer(&out[0])), C.int(len(in)), m, c.c))
	return out, err
}

// maxGather is the most bytes Gather collects in all: what one
// MPI_Gatherv of bytes takes (a test lowers it).
var maxGather int64 = MaxCount

// Gather collects every rank's bytes on root, in rank order
// (MPI_Allgather of the lengths, then MPI_Gatherv); other ranks get nil.
// The parts must add up to less than 2 GiB: every rank sees every length,
// so that every rank refuses alike (ErrTooLarge) a gather past that.
func (c Comm) Gather(b []byte, root int) ([][]byte, error) {
	if err := ready("gather"); err != nil {
		return nil, err
	}
	if err := c.checkPeer("gather", root); err != nil {
		return nil, err
	}
	lens := make([]int64, c.size)
	calls.Lock()
	err := check("MPI_Allgather", C.cu_allgather_i64(C.longlong(len(b)), (*C.longlong)(unsafe.Pointer(&lens[0])), c.c))
	calls.Unlock()
	if err != nil {
		return nil, err
	}
	counts, disps := make([]C.int, c.size), make([]C.int, c.size)
	var total int64
	for i, n := range lens {
		if n > maxGather-total {
			return nil, fmt.Errorf("mpi: gather: rank %d's %d bytes after %d: more than %d bytes in all: %w", i, n, total, maxGather, ErrTooLarge)
		}
		counts[i], disps[i] = C.int(n), C.int(total)
		total += n
	}
	var all []byte
	if c.rank == root {
		all = make([]byte, total+1) // +1: never empty, so it has an address
	}
	sp, unpinS := goBytes(b)
	defer unpinS()
	rp, unpinR := goBytes(all)
	defer unpinR()
	calls.Lock()
	err = check("MPI_Gatherv", C.cu_gatherv(C.uintptr_t(sp), C.int(len(b)), C.uintptr_t(rp), &counts[0], &disps[0], C.int(root), c.c))
	calls.Unlock()
	if err != nil || c.rank != root {
		return nil, err
	}
	out := make([][]byte, c.size)
	for i := range out {
		out[i] = all[disps[i] : disps[i]+counts[i]]
	}
	return out, nil
}

// Bcast sends root's b to every rank's b, which must be as long (MPI_Bcast).
func (c Comm) Bcast(b []byte, root int) error {
	if err := ready("bcast"); err != nil {
		return err
	}
	if err := c.checkPeer("bcast", root); err != nil {
		return err
	}
	if int64(len(b)) > MaxCount {
		return fmt.Errorf("mpi: bcast: %d bytes, at most %d: %w", len(b), MaxCount, ErrTooLarge)
	}
	p, unpin := goBytes(b)
	defer unpin()
	calls.Lock()
	defer calls.Unlock()
	return check("MPI_Bcast", C.cu_bcast(C.uintptr_t(p), C.int(len(b)), C.int(root), c.c))
}

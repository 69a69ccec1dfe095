//go:build mpi

package mpi

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// Transport moves DevArrays of one device between the ranks of a
// communicator. When the MPI library is CUDA-aware and the device is a
// GPU, it hands MPI the arrays' device pointers (PathMPIDevice); otherwise
// it copies each array through a page-locked buffer of the device
// (PathMPIStaged: the copies are the device's own, recorded as HtoD and
// DtoH on accounting.PathPinned). Every MPI call is recorded in the
// device's ledger in direction accounting.Net on its path: one count, the
// bytes this rank sent to and received from other ranks, the call's time.
// A strided array is packed into a contiguous one on the device first
// (and a strided receive unpacked from one). A Transport is for one
// goroutine at a time.
type Transport struct {
	comm   Comm
	dev    driver.Device
	copier *transfer.Copier
	path   accounting.Path
}

// NewTransport returns a Transport for dev's arrays on comm.
func NewTransport(comm Comm, dev driver.Device) (*Transport, error) {
	if err := ready("transport"); err != nil {
		return nil, err
	}
	if dev == nil {
		return nil, fmt.Errorf("mpi: transport: no device: %w", driver.ErrInvalidValue)
	}
	c, err := transfer.New(dev)
	if err != nil {
		return nil, fmt.Errorf("mpi: transport: %w", err)
	}
	return &Transport{comm: comm, dev: dev, copier: c, path: PathFor(dev.Info(), CUDAAware())}, nil
}

// PathFor is the path a Transport takes for a device: PathMPIDevice for a
// GPU (a cuda device that is not the emulated driver) when the MPI library
// is CUDA-aware, else PathMPIStaged.
func PathFor(info driver.Info, cudaAware bool) accounting.Path {
	if cudaAware && info.Backend == "cuda" && !info.Emulated() {
		return accounting.PathMPIDevice
	}
	return accounting.PathMPIStaged
}

// Path is the path this Transport's calls take.
func (t *Transport) Path() accounting.Path { return t.path }

// Close releases the Transport's copier.
func (t *Transport) Close() error {
	if t == nil || t.copier == nil {
		return nil
	}
	err := t.copier.Close()
	t.copier = nil
	return err
}

// Send sends array a to rank dest with tag.
func (t *Transport) Send(a *devarray.DevArray, dest, tag int) error {
	if err := t.check("send", a); err != nil {
		return err
	}
	if err := t.comm.checkPeer("send", dest); err != nil {
		return err
	}
	var n int64
	if dest != t.comm.rank {
		n = a.NBytes()
	}
	return t.withHost("send", a, true, false, func(p uintptr) error {
		return t.timed(n, func() error { return t.comm.SendBytes(p, a.NBytes(), dest, tag) })
	})
}

// Recv receives from rank src with tag into a, which must be as large as
// the message.
func (t *Transport) Recv(a *devarray.DevArray, src, tag int) error {
	if err := t.check("recv", a); err != nil {
		return err
	}
	if err := t.comm.checkPeer("recv", src); err != nil {
		return err
	}
	if a.ReadOnly() {
		return fmt.Errorf("mpi: recv into a read-only array: %w", devarray.ErrReadOnly)
	}
	var n int64
	if src != t.comm.rank {
		n = a.NBytes()
	}
	return t.withHost("recv", a, false, true, func(p uintptr) error {
		return t.timed(n, func() error { return t.comm.RecvBytes(p, a.NBytes(), src, tag) })
	})
}

// Alltoallv sends to each rank q sendCounts[q] elements of send, the
// blocks one after the other in rank order from the array's start, and
// receives from each rank q recvCounts[q] elements into recv, likewise
// (MPI_Alltoallv; with more than ChunkBytes in a block, MPI_Alltoallw of
// derived datatypes). The arrays must have one dtype and hold at least
// the counts' sums. When this rank cannot make the call (bad counts or
// arrays, a staging buffer or copy that fails), it returns its error and
// the other ranks' Alltoallv return one wrapping ErrPeerFailed: no rank
// waits on the others.
func (t *Transport) Alltoallv(send *devarray.DevArray, sendCounts []int64, recv *devarray.DevArray, recvCounts []int64) error {
	if t == nil {
		return fmt.Errorf("mpi: alltoallv: no transport: %w", ErrState)
	}
	called := false // whether the ranks' agreement (in AlltoallvBytes) was reached
	err := t.alltoallv(send, sendCounts, recv, recvCounts, &called)
	if err != nil && !called {
		_, aerr := t.comm.agree("alltoallv", err, false) // the other ranks wait for this rank's word
		return aerr
	}
	return err
}

// alltoallv is Alltoallv; it sets *called when it reaches the MPI call.
func (t *Transport) alltoallv(send *devarray.DevArray, sendCounts []int64, recv *devarray.DevArray, recvCounts []int64, called *bool) error {
	if err := t.check("alltoallv send", send); err != nil {
		return err
	}
	if err := t.check("alltoallv recv", recv); err != nil {
		return err
	}
	if send.DType() != recv.DType() {
		return fmt.Errorf("mpi: alltoallv: send %v, receive %v: %w", send.DType(), recv.DType(), devarray.ErrDType)
	}
	if recv.ReadOnly() {
		return fmt.Errorf("mpi: alltoallv into a read-only array: %w", devarray.ErrReadOnly)
	}
	size := send.DType().Size()
	ss, err := Spans(sendCounts, size)
	if err != nil {
		return err
	}
	rs, err := Spans(recvCounts, size)
	if err != nil {
		return err
	}
	if len(ss) != t.comm.size || len(rs) != t.comm.size {
		return fmt.Errorf("mpi: alltoallv: %d send and %d receive counts for %d ranks: %w", len(ss), len(rs), t.comm.size, ErrInvalidSpan)
	}
	if End(ss) > send.NBytes() || End(rs) > recv.NBytes() {
		return fmt.Errorf("mpi: alltoallv: %d bytes to send from %d, %d to receive into %d: %w",
			End(ss), send.NBytes(), End(rs), recv.NBytes(), ErrInvalidSpan)
	}
	moved := End(ss) + End(rs) - ss[t.comm.rank].Len - rs[t.comm.rank].Len
	// only the elements the blocks cover go through MPI: the rest of recv is left as it was
	sendPart, _ := leading(send, End(ss)/size)
	recvPart, whole := leading(recv, End(rs)/size)
	return t.withHost("alltoallv", sendPart, true, false, func(sp uintptr) error {
		// a receive that covers part of an array no view can cut it to takes the array's
		// bytes in first, so that what goes back to it past the blocks is its own
		return t.withHost("alltoallv", recvPart, !whole, true, func(rp uintptr) error {
			*called = true
			return t.timed(moved, func() error { return t.comm.AlltoallvBytes(sp, ss, rp, rs) })
		})
	})
}

// leading returns a view of a's first n elements in C order, and whether
// it is exactly those: a itself when n is all of them, or a view of them
// when a can be read as one axis; otherwise a, and false.
func leading(a *devarray.DevArray, n int64) (*devarray.DevArray, bool) {
	if n == a.Size() {
		return a, true
	}
	flat, err := a.Reshape(-1)
	if err != nil { // strides that one axis cannot describe (a transposed view, say)
		return a, false
	}
	part, err := flat.Slice(0, 0, int(n))
	if err != nil {
		return a, false
	}
	return part, true
}

// check refuses a nil or freed array, or one of another device.
func (t *Transport) check(op string, a *devarray.DevArray) error {
	if t == nil || t.copier == nil {
		return fmt.Errorf("mpi: %s: transport closed: %w", op, ErrState)
	}
	if err := a.Err(); err != nil {
		return fmt.Errorf("mpi: %s: %w", op, err)
	}
	if a.Device() != t.dev.Info().ID {
		return fmt.Errorf("mpi: %s: array on %v, transport on %v: %w", op, a.Device(), t.dev.Info().ID, driver.ErrInvalidValue)
	}
	return nil
}

// timed runs an MPI call and records it in the ledger: Net, the
// transport's path, n bytes, its time.
func (t *Transport) timed(n int64, call func() error) error {
	start := time.Now()
	if err := call(); err != nil {
		return err
	}
	t.dev.Ledger().RecordCopy(accounting.Net, t.path, n, time.Since(start))
	return nil
}

// withHost calls f with the address MPI is to use for a's bytes: a's own
// device pointer on PathMPIDevice (a contiguous copy of a when a is
// strided), else a page-locked buffer that holds a's bytes (in: copied
// from a before f) and whose bytes go back to a after f (out).
func (t *Transport) withHost(op string, a *devarray.DevArray, in, out bool, f func(uintptr) error) (err error) {
	n := a.NBytes()
	if n == 0 {
		return f(0)
	}
	src := a
	if !a.IsContiguous() {
		// tmp, not tmp and a new err: the deferred calls below must see and set this
		// call's result (a failed call is not unpacked; a failed unpack is returned)
		tmp, terr := devarray.Empty(t.dev, a.DType(), a.Shape()...)
		if terr != nil {
			return fmt.Errorf("mpi: %s: pack: %w", op, terr)
		}
		defer func() { err = errors.Join(err, tmp.Free()) }()
		if in {
			if err := t.copier.Copy(transfer.Dev(tmp), transfer.Dev(a)); err != nil {
				return fmt.Errorf("mpi: %s: pack: %w", op, err)
			}
		}
		src = tmp
		if out {
			defer func() {
				if err == nil {
					if cerr := t.copier.Copy(transfer.Dev(a), transfer.Dev(tmp)); cerr != nil {
						err = fmt.Errorf("mpi: %s: unpack: %w", op, cerr)
					}
				}
			}()
		}
	}
	if t.path == accounting.PathMPIDevice {
		if err := t.dev.Synchronize(); err != nil { // work queued on the array is done before MPI reads or writes it
			return fmt.Errorf("mpi: %s: %w", op, err)
		}
		return f(uintptr(src.Ptr()))
	}
	buf, err := pinned.Alloc(t.dev, n, 0)
	if err != nil {
		return fmt.Errorf("mpi: %s: staging buffer: %w", op, err)
	}
	defer func() { err = errors.Join(err, buf.Free()) }()
	host := transfer.Pinned(buf, src.DType(), src.Shape()...)
	if in {
		if err := t.copier.Copy(host, transfer.Dev(src)); err != nil {
			return fmt.Errorf("mpi: %s: stage out: %w", op, err)
		}
	}
	if err := f(uintptr(buf.HostPtr())); err != nil {
		return err
	}
	if out {
		if err := t.copier.Copy(transfer.Dev(src), host); err != nil {
			return fmt.Errorf("mpi: %s: stage in: %w", op, err)
		}
	}
	return nil
}

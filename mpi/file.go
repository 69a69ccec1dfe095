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

// File is a file opened by every rank of a communicator (MPI-IO), each
// rank reading or writing its own part with collective calls. Its errors
// are returned (MPI-IO's default handler, MPI_ERRORS_RETURN).
type File struct {
	fh   C.MPI_File
	comm Comm
	path string
	open bool
}

// Create opens path for writing on every rank of c, creating it (a
// collective call: every rank passes the same path).
func Create(c Comm, path string) (*File, error) { return openFile(c, path, true) }

// Open opens path for reading on every rank of c (collective).
func Open(c Comm, path string) (*File, error) { return openFile(c, path, false) }

func openFile(c Comm, path string, write bool) (*File, error) {
	if err := ready("file open"); err != nil {
		return nil, err
	}
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	w := C.int(0)
	if write {
		w = 1
	}
	f := &File{comm: c, path: path}
	calls.Lock()
	defer calls.Unlock()
	if err := check("MPI_File_open", C.cu_file_open(c.c, cs, w, &f.fh)); err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	f.open = true
	return f, nil
}

// SetSize sets the file's size (collective: every rank passes the same n).
func (f *File) SetSize(n int64) error {
	if err := f.usable("set size"); err != nil {
		return err
	}
	calls.Lock()
	defer calls.Unlock()
	return check("MPI_File_set_size", C.cu_file_set_size(f.fh, C.longlong(n)))
}

// Size returns the file's size in bytes.
func (f *File) Size() (int64, error) {
	if err := f.usable("size"); err != nil {
		return 0, err
	}
	var n C.longlong
	calls.Lock()
	defer calls.Unlock()
	err := check("MPI_File_get_size", C.cu_file_size(f.fh, &n))
	return int64(n), err
}

// WriteAtAll writes b at byte offset off (MPI_File_write_at_all): a
// collective call, every rank its own part (an empty b is a part too).
// A rank that cannot make the call (a negative offset, a closed file)
// returns its error, and every other rank one wrapping ErrPeerFailed.
func (f *File) WriteAtAll(off int64, b []byte) error {
	t, err := f.agreeIO("write", off, b)
	if err != nil {
		return err
	}
	p, unpin := goBytes(b)
	defer unpin()
	calls.Lock()
	err = check("MPI_File_write_at_all", C.cu_file_write_at_all(f.fh, C.longlong(off), C.uintptr_t(p), C.int(t.count), t.t))
	calls.Unlock()
	return errors.Join(err, t.free())
}

// ReadAtAll fills b from byte offset off (MPI_File_read_at_all,
// collective); a file that ends before b is full is an error. A rank that
// cannot make the call returns its error, and every other rank one
// wrapping ErrPeerFailed.
func (f *File) ReadAtAll(off int64, b []byte) error {
	t, err := f.agreeIO("read", off, b)
	if err != nil {
		return err
	}
	p, unpin := goBytes(b)
	defer unpin()
	var got C.longlong
	calls.Lock()
	err = check("MPI_File_read_at_all", C.cu_file_read_at_all(f.fh, C.longlong(off), C.uintptr_t(p), C.int(t.count), t.t, &got))
	calls.Unlock()
	if err == nil && int64(got) != int64(len(b)) {
		err = fmt.Errorf("mpi: read %s: %d bytes at %d: %d read: %w", f.path, len(b), off, int64(got), ErrInvalidSpan)
	}
	err = errors.Join(err, t.free())
	if err != nil {
		return err
	}
	// Open MPI's collective read may count a short read as whole: the size says
	// (checked after the call, which every rank must make)
	size, err := f.Size()
	if err == nil && off+int64(len(b)) > size {
		err = fmt.Errorf("mpi: read %s: %d bytes at %d: the file ends at %d: %w", f.path, len(b), off, size, ErrInvalidSpan)
	}
	return err
}

// agreeIO checks this rank's part of a collective read or write of b at
// off and makes its datatype, and agrees with the other ranks of the
// file's communicator on going ahead: an error on every rank when any
// cannot (the caller frees the datatype only when there is none).
func (f *File) agreeIO(op string, off int64, b []byte) (datatype, error) {
	if f == nil {
		return datatype{}, fmt.Errorf("mpi: file %s: no file: %w", op, ErrState)
	}
	if err := ready("file " + op); err != nil {
		return datatype{}, err
	}
	local := f.usable(op)
	if local == nil && (off < 0 || off > math.MaxInt64-int64(len(b))) {
		local = fmt.Errorf("mpi: %s %s: %d bytes at %d: %w", op, f.path, len(b), off, ErrInvalidSpan)
	}
	var t datatype
	if local == nil {
		t, local = typeOf(Span{Len: int64(len(b))}, ChunkBytes())
	}
	if _, err := f.comm.agree("file "+op, local, false); err != nil {
		return datatype{}, errors.Join(err, t.free())
	}
	return t, nil
}

// Close closes the file (collective). A second Close is a no-op.
func (f *File) Close() error {
	if f == nil || !f.open {
		return nil
	}
	if err := ready("file close"); err != nil {
		return err
	}
	f.open = false
	calls.Lock()
	defer calls.Unlock()
	return check("MPI_File_close", C.cu_file_close(&f.fh))
}

func (f *File) usable(op string) error {
	if err := ready("file " + op); err != nil {
		return err
	}
	if f == nil || !f.open {
		return fmt.Errorf("mpi: file %s: not open: %w", op, ErrState)
	}
	return nil
}

package driver

import (
	"fmt"
	"sort"
	"unsafe"
)

// ErrPartlyLocked: host memory of a copy that is partly page-locked (some
// of its bytes registered or allocated page-locked, others pageable, or
// its bytes in two page-locked ranges). Every cuMemcpy reference page
// says: "Memory regions spanning over allocations that are both
// registered and not registered with CUDA are not supported and will
// return CUDA_ERROR_INVALID_VALUE". Backends refuse such a copy before the
// driver sees it, with a *PartlyLockedError that names the ranges. It
// wraps ErrInvalidValue.
var ErrPartlyLocked = &refinedError{"host memory partly page-locked (a copy takes host memory wholly inside one page-locked range, or sharing no byte with any)", ErrInvalidValue}

// PartlyLockedError is the error of a copy whose host memory [Addr,
// Addr+N) is partly page-locked: it shares bytes with the page-locked
// range [LockedAddr, LockedAddr+LockedN) but does not lie inside it.
// errors.Is(err, ErrPartlyLocked) and errors.Is(err, ErrInvalidValue) hold.
type PartlyLockedError struct {
	Op         string // the copy, as the backend names it ("cuda: copy HtoD")
	Addr       uintptr
	N          int64
	LockedAddr uintptr
	LockedN    int64
	Registered bool // the locked range was registered (cuMemHostRegister), not allocated page-locked
}

func (e *PartlyLockedError) Error() string {
	how := "allocated page-locked"
	if e.Registered {
		how = "registered"
	}
	return fmt.Sprintf("%s: host bytes [%#x, %#x) (%d bytes) are partly page-locked: they share bytes with [%#x, %#x) (%d bytes, %s) without lying inside it; "+
		"a copy takes host memory wholly inside one page-locked range or sharing no byte with any (the driver answers CUDA_ERROR_INVALID_VALUE): "+
		"copy the page-locked and the pageable parts apart, or release the registration first",
		e.Op, e.Addr, e.Addr+uintptr(e.N), e.N, e.LockedAddr, e.LockedAddr+uintptr(e.LockedN), e.LockedN, how)
}

// Unwrap returns ErrPartlyLocked.
func (e *PartlyLockedError) Unwrap() error { return ErrPartlyLocked }

// CheckCopy returns a *PartlyLockedError for op when host memory b of a
// copy is partly page-locked by the ranges: it shares a byte with one but
// does not lie inside one. Memory wholly inside one range, or sharing no
// byte with any, gives nil; so does empty memory.
func (r *HostRanges) CheckCopy(op string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	addr, n := uintptr(unsafe.Pointer(unsafe.SliceData(b))), int64(len(b))
	if _, ok := r.Containing(addr, n); ok {
		return nil
	}
	end := addr + uintptr(n)
	// The first range that ends after addr; it overlaps when it starts before end.
	i := sort.Search(len(r.list), func(i int) bool { return r.list[i].Addr+uintptr(len(r.list[i].Mem)) > addr })
	if i == len(r.list) || r.list[i].Addr >= end {
		return nil
	}
	h := r.list[i]
	return &PartlyLockedError{Op: op, Addr: addr, N: n, LockedAddr: h.Addr, LockedN: int64(len(h.Mem)), Registered: h.Registered}
}

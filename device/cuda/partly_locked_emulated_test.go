//go:build cuda && cudaemu && linux

package cuda

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// memcpyCalls returns how many cuMemcpy* driver calls the emulated driver
// has answered so far, and how many of them failed.
func memcpyCalls() (calls int64, failed int) {
	for name, c := range emulated.Calls() {
		if strings.HasPrefix(name, "cuMemcpy") {
			calls += c
		}
	}
	for _, f := range emulated.Failures() {
		if strings.HasPrefix(f.String(), "cuMemcpy") {
			failed++
		}
	}
	return calls, failed
}

// Every copy entry point that takes host memory refuses host memory partly
// page-locked by the device's own registrations with a
// *driver.PartlyLockedError naming both ranges, before any driver copy
// (the emulated driver counts none); memory wholly
// registered, or pageable and sharing a page but no byte with a
// registration, is copied by the driver, its bytes right. Offsets and
// lengths are drawn at random inside each case.
func TestPartlyLockedCopiesNeverReachTheDriver(t *testing.T) {
	d := open(t)
	page := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 8*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	// Two adjacent registrations, pages 2-3 and 4, and 100 bytes at the
	// start of page 6; pageable memory around them.
	regA, regB, regC := mem[2*page:4*page], mem[4*page:5*page], mem[6*page:6*page+100]
	for _, r := range [][]byte{regA, regB, regC} {
		h, err := d.Register(r, 0)
		require.NoError(t, err)
		defer func() { require.NoError(t, d.Unregister(h)) }()
	}
	const most = 3 * 4096 // the longest host range a case draws
	p, err := d.Malloc(most)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	in := func(lo, hi int) int { return lo + rand.IntN(hi-lo+1) } // [lo, hi]
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	for _, tc := range []struct {
		name   string
		span   func() []byte // 2 to `most` bytes; one that crosses a boundary ends 2 past it, so still crosses it cut to an even length
		locked []byte        // the registration the error names; nil: the copy goes through
	}{
		{"starting inside a registration", func() []byte { a := in(5*page-1024, 5*page-1); return mem[a:in(5*page+2, 6*page)] }, regB},
		{"ending inside a registration", func() []byte { a := in(page, 2*page-1); return mem[a:in(2*page+2, 3*page)] }, regA},
		{"around a registration", func() []byte { return mem[in(5*page, 6*page-1):in(6*page+101, 7*page)] }, regC},
		{"spanning two adjacent registrations", func() []byte { a := in(3*page, 4*page-1); return mem[a:in(4*page+2, 5*page)] }, regA},
		{"wholly registered", func() []byte { a := in(2*page, 3*page); return mem[a:in(a+2, 4*page)] }, nil},
		{"sharing a page but no byte with a registration", func() []byte { a := in(6*page+100, 6*page+page/2); return mem[a:in(a+2, 7*page)] }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 4 {
				b := tc.span()
				require.LessOrEqual(t, len(b), most)
				n := len(b) / 2 * 2
				b = b[:n]
				where := fmt.Sprintf("[%d, %d) of the mapping", addr(b)-addr(mem), addr(b)-addr(mem)+uintptr(n))
				rows := devarray.Memcpy2D{Width: int64(n / 2), Height: 2, SrcPitch: int64(n / 2), DstPitch: int64(n / 2)}
				up, down := rows, rows
				up.Src, up.Dst = devarray.Place{Host: b}, devarray.Place{Dev: p}
				down.Src, down.Dst = devarray.Place{Dev: p}, devarray.Place{Host: b}
				box := func(m devarray.Memcpy2D) devarray.Memcpy3D {
					return devarray.Memcpy3D{Dst: m.Dst, Src: m.Src, DstPitch: m.DstPitch, SrcPitch: m.SrcPitch,
						DstHeight: 1, SrcHeight: 1, Width: m.Width, Height: 1, Depth: 2}
				}
				for _, call := range []struct {
					name   string
					toHost bool
					run    func() error
				}{
					{"CopyHtoD", false, func() error { return d.CopyHtoD(p, b) }},
					{"CopyDtoH", true, func() error { return d.CopyDtoH(b, p) }},
					{"CopyHtoDAsync", false, func() error { return s.CopyHtoDAsync(p, b) }},
					{"CopyDtoHAsync", true, func() error { return s.CopyDtoHAsync(b, p) }},
					{"Memcpy2D to the device", false, func() error { return d.Memcpy2D(up) }},
					{"Memcpy2D to the host", true, func() error { return d.Memcpy2D(down) }},
					{"Memcpy2DAsync to the device", false, func() error { return s.Memcpy2DAsync(up) }},
					{"Memcpy2DAsync to the host", true, func() error { return s.Memcpy2DAsync(down) }},
					{"Memcpy3D to the device", false, func() error { return d.Memcpy3D(box(up)) }},
					{"Memcpy3D to the host", true, func() error { return d.Memcpy3D(box(down)) }},
					{"Memcpy3DAsync to the device", false, func() error { return s.Memcpy3DAsync(box(up)) }},
					{"Memcpy3DAsync to the host", true, func() error { return s.Memcpy3DAsync(box(down)) }},
				} {
					what := call.name + " of " + where
					want := randomBytes(n)
					if call.toHost {
						require.NoError(t, d.CopyHtoD(p, want), what)
						copy(b, randomBytes(n))
					} else {
						copy(b, want)
					}
					before := append([]byte(nil), b...)
					copies, failures := memcpyCalls()
					err := call.run()
					require.NoError(t, s.Synchronize(), what)
					copiesAfter, failuresAfter := memcpyCalls()
					assert.Equal(t, failures, failuresAfter, "%s: no driver copy failed", what)
					if tc.locked == nil {
						require.NoError(t, err, what)
						assert.Greater(t, copiesAfter, copies, "%s: the driver copied", what)
						got := make([]byte, n)
						require.NoError(t, d.CopyDtoH(got, p))
						assert.Equal(t, want, got, "%s: the device holds the bytes", what)
						assert.Equal(t, want, b, "%s: the host holds the bytes", what)
						continue
					}
					require.ErrorIs(t, err, driver.ErrPartlyLocked, what)
					assert.ErrorIs(t, err, driver.ErrInvalidValue, "%s: the driver's invalid value", what)
					var pe *driver.PartlyLockedError
					require.ErrorAs(t, err, &pe, what)
					assert.Equal(t, addr(b), pe.Addr, what)
					assert.Equal(t, int64(n), pe.N, what)
					assert.Equal(t, addr(tc.locked), pe.LockedAddr, "%s: names the registration", what)
					assert.Equal(t, int64(len(tc.locked)), pe.LockedN, what)
					assert.True(t, pe.Registered, what)
					assert.Contains(t, err.Error(), "cuda: ", what)
					assert.Equal(t, copies, copiesAfter, "%s: refused before the driver copied", what)
					assert.Equal(t, before, b, "%s: the host bytes are untouched", what)
				}
			}
		})
	}
}

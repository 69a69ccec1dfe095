package transfer_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// The copier keeps its registrations after a copy. A later copy of memory
// that only partly overlaps one must not hand the driver a range partly
// page-locked (CUDA_ERROR_INVALID_VALUE on a GPU, ErrInvalidValue on sim):
// the direct path releases the registration first, or, when another copy
// still uses it, the planner's copy takes the staged ring and one that
// asked for the direct path fails with pinned.ErrBusy.
func TestCopiesOfPartlyRegisteredMemory(t *testing.T) {
	dev := testdev.Open(t)
	page := os.Getpagesize()
	c, err := transfer.New(dev, transfer.WithRegisterCache(1<<30))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	a, err := devarray.Empty(dev, devarray.Uint8, 2*page)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	for _, over := range []struct {
		name       string
		registered func(mem []byte) []byte // what an earlier copy registered
		copied     func(mem []byte) []byte // what the next copy moves
	}{
		{"starting inside a registration", func(m []byte) []byte { return m[page : 3*page] }, func(m []byte) []byte { return m[2*page : 4*page] }},
		{"ending inside a registration", func(m []byte) []byte { return m[3*page : 5*page] }, func(m []byte) []byte { return m[2*page : 4*page] }},
		{"around a registration", func(m []byte) []byte { return m[3*page+100 : 3*page+900] }, func(m []byte) []byte { return m[2*page : 4*page] }},
	} {
		for _, path := range []transfer.Path{transfer.PathAuto, transfer.PathDirect, transfer.PathStaged, transfer.PathRegistered} {
			for _, toDevice := range []bool{true, false} {
				mem := testdev.RandomBytes(8 * page)
				reg := over.registered(mem)
				scratch, err := devarray.Empty(dev, devarray.Uint8, len(reg))
				require.NoError(t, err)
				require.NoError(t, c.Copy(transfer.Dev(scratch), transfer.HostBytes(reg, devarray.Uint8), transfer.Via(transfer.PathRegistered)))
				require.NoError(t, scratch.Free())
				b := over.copied(mem)
				want := append([]byte(nil), b...)
				if toDevice {
					require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8), transfer.Via(path)), "%s, %v path, to the device", over.name, path)
				} else {
					require.NoError(t, a.CopyFrom(want))
					clear(b)
					require.NoError(t, c.Copy(transfer.HostBytes(b, devarray.Uint8), transfer.Dev(a), transfer.Via(path)), "%s, %v path, to the host", over.name, path)
					assert.Equal(t, want, b, "%s, %v path: the bytes came down", over.name, path)
				}
				got, err := devarray.ToHost[uint8](a)
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s, %v path", over.name, path)
				require.NoError(t, c.Unregister(reg))
			}
		}
	}

	// A registration another copy is using cannot be released.
	mem := testdev.RandomBytes(8 * page)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	held, err := devarray.Empty(dev, devarray.Uint8, 2*page)
	require.NoError(t, err)
	defer func() { require.NoError(t, held.Free()) }()
	resume := testdev.Hold(t, s)
	op, err := c.CopyAsync(s, transfer.Dev(held), transfer.HostBytes(mem[page:3*page], devarray.Uint8), transfer.Via(transfer.PathRegistered))
	require.NoError(t, err)
	b := mem[2*page : 4*page]
	err = c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8), transfer.Via(transfer.PathDirect))
	assert.ErrorIs(t, err, pinned.ErrBusy, "the direct path asked for, with the memory partly page-locked by a copy running")
	before := dev.Ledger().Snapshot()
	require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8)), "the planner's copy")
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(len(b)), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes, "through the staged ring")
	resume() // before reading: a copy into pageable memory waits while a host function holds a stream
	require.NoError(t, op.Wait())
	got, err := devarray.ToHost[uint8](a)
	require.NoError(t, err)
	assert.Equal(t, b, got)
	require.NoError(t, c.Unregister(mem[page:3*page]))
}

// Every path that takes host memory, both ways, synchronous and async, on
// Go memory that registrations outside the copier (pinned.Register) partly
// page-lock — starting inside one, ending inside one, around one, spanning
// two adjacent ones — or that shares a page but no byte with one: no path
// hands the driver a range partly page-locked. A copy either succeeds with
// the bytes right (fresh random ones each time) or fails with a typed
// error: transfer.ErrPath for the paths that need a pinned buffer, and on
// memory partly page-locked, for a path asked for by name, the backend's
// *driver.PartlyLockedError (direct: refused before the driver sees the
// range) or driver.ErrAlreadyLocked (registered: the copier cannot
// register bytes registered already). The planner's copy always succeeds.
// On the emulated CUDA driver no cuMemcpy or cuMemHostRegister call fails
// (driverRefusals), and testdev.Open's check finds no undefined behaviour.
// Offsets and lengths are drawn at random inside each case.
func TestPathsOnPartlyPageLockedMemory(t *testing.T) {
	dev := testdev.Open(t)
	page := os.Getpagesize()
	raw := testdev.RandomBytes(9 * page)
	mem := raw[page-int(uintptr(unsafe.Pointer(&raw[0]))%uintptr(page)):][:8*page] // page-aligned
	// Two adjacent registrations, pages 2-3 and 4, and 100 bytes at the start of page 6.
	regA, regB, regC := mem[2*page:4*page], mem[4*page:5*page], mem[6*page:6*page+100]
	for _, r := range [][]byte{regA, regB, regC} {
		b, err := pinned.Register(dev, r, 0)
		require.NoError(t, err)
		defer func() { require.NoError(t, b.Unregister()) }()
	}
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	in := func(lo, hi int) int { return lo + rand.IntN(hi-lo+1) } // [lo, hi]
	cases := []struct {
		name   string
		span   func() []byte
		partly bool
	}{
		{"starting inside a registration", func() []byte { return mem[in(5*page-1024, 5*page-1):in(5*page+1, 6*page)] }, true},
		{"ending inside a registration", func() []byte { return mem[in(page, 2*page-1):in(2*page+1, 3*page)] }, true},
		{"around a registration", func() []byte { return mem[in(5*page, 6*page-1):in(6*page+101, 7*page)] }, true},
		{"spanning two registrations", func() []byte { return mem[in(3*page, 4*page-1):in(4*page+1, 5*page)] }, true},
		{"sharing a page but no byte with a registration", func() []byte { a := in(6*page+100, 6*page+page/2); return mem[a:in(a+1, 7*page)] }, false},
	}
	paths := []transfer.Path{transfer.PathAuto, transfer.PathDirect, transfer.PathPinned, transfer.PathStaged, transfer.PathMapped, transfer.PathRegistered}
	refusals := len(driverRefusals())
	for _, tc := range cases {
		for _, path := range paths {
			for _, toDevice := range []bool{true, false} {
				for _, async := range []bool{false, true} {
					b := tc.span()
					what := fmt.Sprintf("%s [%d, %d), %v path, to the %s, async %v", tc.name,
						uintptr(unsafe.Pointer(&b[0]))-uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&b[0]))-uintptr(unsafe.Pointer(&mem[0]))+uintptr(len(b)),
						path, map[bool]string{true: "device", false: "host"}[toDevice], async)
					a, err := devarray.Empty(dev, devarray.Uint8, len(b))
					require.NoError(t, err, what)
					want := testdev.RandomBytes(len(b))
					host := transfer.HostBytes(b, devarray.Uint8)
					dst, src := transfer.Dev(a), host
					if toDevice {
						copy(b, want)
					} else {
						require.NoError(t, a.CopyFrom(want), what)
						copy(b, testdev.RandomBytes(len(b)))
						dst, src = host, transfer.Dev(a)
					}
					before := append([]byte(nil), b...)
					if async {
						var op *transfer.Op
						if op, err = c.CopyAsync(s, dst, src, transfer.Via(path)); err == nil {
							err = op.Wait()
						}
					} else {
						err = c.Copy(dst, src, transfer.Via(path))
					}
					switch {
					case err == nil:
						got, gerr := devarray.ToHost[uint8](a)
						require.NoError(t, gerr, what)
						assert.Equal(t, want, got, "%s: the device's bytes", what)
						assert.Equal(t, want, b, "%s: the host's bytes", what)
					case path == transfer.PathPinned || path == transfer.PathMapped:
						assert.ErrorIs(t, err, transfer.ErrPath, "%s: Go memory is no pinned buffer", what)
					case tc.partly && path == transfer.PathRegistered:
						assert.ErrorIs(t, err, driver.ErrAlreadyLocked, "%s: the copier cannot register it", what)
						assert.Equal(t, before, b, "%s: nothing written", what)
					case tc.partly && path == transfer.PathDirect:
						assert.ErrorIs(t, err, driver.ErrPartlyLocked, "%s: refused before the driver", what)
						var pe *driver.PartlyLockedError
						if assert.ErrorAs(t, err, &pe, what) {
							assert.Equal(t, uintptr(unsafe.Pointer(&b[0])), pe.Addr, "%s: names the copy's range", what)
							assert.True(t, pe.Registered, what)
						}
						assert.Equal(t, before, b, "%s: nothing written", what)
					default:
						t.Errorf("%s: %v", what, err)
					}
					require.NoError(t, a.Free(), what)
				}
			}
		}
	}
	assert.Empty(t, driverRefusals()[refusals:], "no driver copy or registration refused a range")
}

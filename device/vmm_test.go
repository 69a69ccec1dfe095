package device_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Virtual memory management's rules, on the test device: sim, or the cuda
// backend on the emulated CUDA driver, whose virtual memory is sim's. Each
// quotes the sentence of the CUDA Driver API ("Virtual Memory Management")
// it checks. Sizes are the device's granularity (2 MiB on sim).

// granule returns the device's minimum granularity; it skips the test
// where the device has no virtual memory (sim without Linux's memfd).
func granule(t *testing.T, dev device.Device) int64 {
	t.Helper()
	return granularity(t, dev).Minimum
}

func granularity(t *testing.T, dev device.Device) device.Granularity {
	t.Helper()
	g, err := dev.MemGranularity()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
	require.NoError(t, err)
	return g
}

// reserve reserves n bytes, freed when the test ends.
func reserve(t *testing.T, dev device.Device, n int64) devarray.Ptr {
	t.Helper()
	p, err := dev.ReserveAddress(n, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, dev.FreeAddress(p, n)) })
	return p
}

// physical creates n bytes of physical memory, released when the test
// ends unless release is false (the test releases it).
func physical(t *testing.T, dev device.Device, n int64, release bool) device.PhysicalHandle {
	t.Helper()
	h, err := dev.CreatePhysical(n)
	require.NoError(t, err)
	if release {
		t.Cleanup(func() { assert.NoError(t, dev.ReleasePhysical(h)) })
	}
	return h
}

// mapAt maps all n bytes of h at p, unmapped when the test ends; with rw
// its access is set.
func mapAt(t *testing.T, dev device.Device, p devarray.Ptr, n int64, h device.PhysicalHandle, rw bool) {
	t.Helper()
	require.NoError(t, dev.MapMemory(p, n, 0, h))
	t.Cleanup(func() { assert.NoError(t, dev.UnmapMemory(p, n)) })
	if rw {
		require.NoError(t, dev.SetAccess(p, n, true))
	}
}

// writeRead writes fresh random bytes to [p, p+n) and reads them back.
func writeRead(t *testing.T, dev device.Device, p devarray.Ptr, n int) {
	t.Helper()
	want := testdev.RandomBytes(n)
	require.NoError(t, dev.CopyHtoD(p, want))
	got := make([]byte, n)
	require.NoError(t, dev.CopyDtoH(got, p))
	require.Equal(t, want, got, "mapped memory holds what was written")
}

// requireSimVMM skips a test of what only sim and the emulated driver make
// safe to try: on a GPU a copy that touches memory without access may
// fault the context, and every later test's with it.
func requireSimVMM(t *testing.T, dev device.Device) {
	t.Helper()
	if !exactPools(dev) {
		t.Skipf("%s: touching memory without access may fault a GPU's context; the conformance rows observe it", dev.Info().Name)
	}
}

// "Calculates either the minimal or recommended granularity for a given
// allocation specification and returns it in granularity. This granularity
// can be used as a multiple for alignment, size, or address mapping."
// (cuMemGetAllocationGranularity)
func TestVMMGranularity(t *testing.T) {
	dev := testdev.Open(t)
	g := granularity(t, dev)
	t.Logf("%s: minimum granularity %d bytes, recommended %d", dev.Info().Name, g.Minimum, g.Recommended)
	require.Positive(t, g.Minimum)
	assert.Zero(t, g.Recommended%g.Minimum, "the recommended granularity is a multiple of the minimum")
	if exactPools(dev) {
		assert.Equal(t, device.Granularity{Minimum: 2 << 20, Recommended: 2 << 20}, g, "sim's guess at an H200's")
	}
}

// Each rule that refuses a call with CUDA_ERROR_INVALID_VALUE, with the
// sentence it follows: a reservation of 4 granules, two physical chunks
// of 1 and 2 granules, the first granule mapped (with access) before each
// call.
func TestVMMRefusals(t *testing.T) {
	dev := testdev.Open(t)
	g := granule(t, dev)
	r := rand.For(t)
	odd := g + 256*(1+r.Int64N(g/256-1)) // between one and two granules, not a multiple
	cases := []struct {
		name, rule string
		simOnly    bool // a GPU's driver may accept it (sim is stricter)
		call       func(p devarray.Ptr, one, two device.PhysicalHandle) error
	}{
		{"create a size off the granularity",
			"The size of this allocation must be a multiple of the the value given via cuMemGetAllocationGranularity with the CU_MEM_ALLOC_GRANULARITY_MINIMUM flag. (cuMemCreate)", false,
			func(devarray.Ptr, device.PhysicalHandle, device.PhysicalHandle) error {
				h, err := dev.CreatePhysical(odd)
				if err == nil {
					dev.ReleasePhysical(h)
				}
				return err
			}},
		{"reserve a size off the granularity",
			"The size and address parameters must be a multiple of the host page size (cuMemAddressReserve; sim asks for the granularity)", true,
			func(devarray.Ptr, device.PhysicalHandle, device.PhysicalHandle) error {
				p, err := dev.ReserveAddress(odd, 0)
				if err == nil {
					dev.FreeAddress(p, odd)
				}
				return err
			}},
		{"reserve with an alignment not a power of two",
			"the alignment must be a power of two or zero for default alignment (cuMemAddressReserve)", false,
			func(devarray.Ptr, device.PhysicalHandle, device.PhysicalHandle) error {
				p, err := dev.ReserveAddress(g, 3*g)
				if err == nil {
					dev.FreeAddress(p, g)
				}
				return err
			}},
		{"map at an address off the granularity",
			"Both ptr, size, and offset must be a multiple of the value given via cuMemGetAllocationGranularity (cuMemMap)", false,
			func(p devarray.Ptr, one, _ device.PhysicalHandle) error {
				return dev.MapMemory(p+devarray.Ptr(g)+256, g, 0, one)
			}},
		{"map from an offset off the granularity",
			"Both ptr, size, and offset must be a multiple of the value given via cuMemGetAllocationGranularity (cuMemMap)", false,
			func(p devarray.Ptr, _, two device.PhysicalHandle) error {
				return dev.MapMemory(p+devarray.Ptr(2*g), g, 4096, two)
			}},
		{"map past the physical memory's end",
			"offset + size must be less than the size of the memory allocation (cuMemMap)", false,
			func(p devarray.Ptr, _, two device.PhysicalHandle) error {
				return dev.MapMemory(p+devarray.Ptr(g), 2*g, g, two)
			}},
		{"map over a mapped range",
			"This range must be an address reservation previously reserved with cuMemAddressReserve (cuMemMap); an unmapped range \"is converted to an address reservation\" (cuMemUnmap)", false,
			func(p devarray.Ptr, _, two device.PhysicalHandle) error {
				return dev.MapMemory(p, g, 0, two)
			}},
		{"unmap a sub-range",
			"cuMemUnmap cannot unmap a sub-range of an address range mapped by cuMemCreate / cuMemMap. (cuMemUnmap)", false,
			func(p devarray.Ptr, _, two device.PhysicalHandle) error {
				if err := dev.MapMemory(p+devarray.Ptr(2*g), 2*g, 0, two); err != nil {
					return err
				}
				defer dev.UnmapMemory(p+devarray.Ptr(2*g), 2*g)
				return dev.UnmapMemory(p+devarray.Ptr(2*g), g)
			}},
		{"set access where nothing is mapped",
			"The range must be a fully mapped address range containing all allocations created by cuMemMap / cuMemCreate. (cuMemSetAccess)", false,
			func(p devarray.Ptr, _, _ device.PhysicalHandle) error {
				return dev.SetAccess(p, 2*g, true)
			}},
		{"free a reservation with another size",
			"The size must match what was given to memAddressReserve (cuMemAddressFree)", false,
			func(p devarray.Ptr, _, _ device.PhysicalHandle) error {
				return dev.FreeAddress(p, 2*g)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.simOnly && !exactPools(dev) {
				t.Skipf("%s: the driver's rule is looser than sim's", dev.Info().Name)
			}
			before := dev.Ledger().Snapshot()
			p := reserve(t, dev, 4*g)
			one := physical(t, dev, g, true)
			two := physical(t, dev, 2*g, true)
			mapAt(t, dev, p, g, one, true)
			err := c.call(p, one, two)
			require.ErrorIs(t, err, driver.ErrInvalidValue, "%s", c.rule)
			writeRead(t, dev, p, int(g)) // the refusal changed nothing
			d := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds
			assert.Equal(t, 4*g, d[accounting.VirtualAddress].Current, "the reservation, no other")
			assert.Equal(t, 3*g, d[accounting.Physical].Current, "the two chunks, no other")
		})
	}
}

// "Please note calling cuMemMap does not make the address accessible, the
// caller needs to update accessibility of a contiguous mapped VA range by
// calling cuMemSetAccess." (cuMemMap) and "Any new mapping to this virtual
// address will need to have access granted through cuMemSetAccess, as all
// mappings start with no accessibility setup." (cuMemUnmap): a copy into
// reserved memory, into mapped memory before its access is set or after
// it is taken away, fails as one into unallocated memory does.
func TestVMMAccessBeforeSetAccess(t *testing.T) {
	dev := testdev.Open(t)
	requireSimVMM(t, dev)
	g := granule(t, dev)
	p := reserve(t, dev, 2*g)
	h := physical(t, dev, g, true)
	data := testdev.RandomBytes(4096)
	steps := []struct {
		name   string
		before func() error
		ok     bool
	}{
		{"reserved, not mapped", nil, false},
		{"mapped, access not set", func() error { return dev.MapMemory(p, g, 0, h) }, false},
		{"access set", func() error { return dev.SetAccess(p, g, true) }, true},
		{"access taken away", func() error { return dev.SetAccess(p, g, false) }, false},
		{"access set again", func() error { return dev.SetAccess(p, g, true) }, true},
	}
	for _, s := range steps {
		if s.before != nil {
			require.NoError(t, s.before(), s.name)
		}
		err := dev.CopyHtoD(p, data)
		got := make([]byte, len(data))
		rerr := dev.CopyDtoH(got, p)
		if s.ok {
			require.NoError(t, err, s.name)
			require.NoError(t, rerr, s.name)
			assert.Equal(t, data, got, s.name)
		} else {
			assert.Error(t, err, "%s: a copy into it fails", s.name)
			assert.Error(t, rerr, "%s: a copy from it fails", s.name)
		}
	}
	// The second granule stays reserved but unmapped: a copy that runs
	// into it fails, though it starts in accessible memory.
	assert.Error(t, dev.CopyHtoD(p+devarray.Ptr(g)-4, data), "a copy past the mapped memory fails")
	require.NoError(t, dev.UnmapMemory(p, g))
	require.NoError(t, dev.Synchronize(), "no fault was left behind")
}

// "The memory allocation will be freed when all outstanding mappings to
// the memory are unmapped and when all outstanding references to the
// handle (including it's shareable counterparts) are also released. The
// generic memory handle can be freed when there are still outstanding
// mappings made with this handle." (cuMemRelease): released while
// mapped, the memory keeps its bytes and stays counted until unmapped.
func TestVMMReleaseWhileMapped(t *testing.T) {
	dev := testdev.Open(t)
	g := granule(t, dev)
	led := dev.Ledger()
	p := reserve(t, dev, g)
	h := physical(t, dev, g, false)
	require.NoError(t, dev.MapMemory(p, g, 0, h))
	require.NoError(t, dev.SetAccess(p, g, true))
	want := testdev.RandomBytes(int(g))
	require.NoError(t, dev.CopyHtoD(p, want))

	require.NoError(t, dev.ReleasePhysical(h))
	assert.Equal(t, g, led.Current(accounting.Physical), "released but mapped: still counted")
	got := make([]byte, g)
	require.NoError(t, dev.CopyDtoH(got, p))
	assert.Equal(t, want, got, "released but mapped: the bytes stay")
	require.ErrorIs(t, dev.ReleasePhysical(h), driver.ErrInvalidValue, "a handle is released once")

	require.NoError(t, dev.UnmapMemory(p, g))
	assert.Zero(t, led.Current(accounting.Physical), "released and unmapped: freed")
	assert.Equal(t, g, led.Current(accounting.VirtualAddress), "the reservation stays")
}

// The ledger counts reserved address space and physical memory apart:
// reserving counts no memory, creating counts memory with no address.
func TestVMMLedger(t *testing.T) {
	dev := testdev.Open(t)
	g := granule(t, dev)
	r := rand.For(t)
	chunks := 2 + r.IntN(2) // at least two: the copy below crosses a boundary
	before := dev.Ledger().Snapshot()
	p := reserve(t, dev, int64(chunks+1)*g)
	d := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds
	assert.Equal(t, int64(chunks+1)*g, d[accounting.VirtualAddress].Current)
	assert.Zero(t, d[accounting.Physical].Current, "reserving takes no memory")
	assert.Zero(t, d[accounting.Device].Current)
	for i := range chunks {
		h := physical(t, dev, g, true)
		mapAt(t, dev, p+devarray.Ptr(int64(i)*g), g, h, true)
	}
	d = accounting.Diff(before, dev.Ledger().Snapshot()).Kinds
	assert.Equal(t, int64(chunks)*g, d[accounting.Physical].Current, "one chunk each")
	assert.Equal(t, int64(chunks), d[accounting.Physical].Allocs)
	assert.Equal(t, int64(1), d[accounting.VirtualAddress].Allocs)
	writeRead(t, dev, p, chunks*int(g)) // one copy across every chunk: the range is contiguous
	assert.Contains(t, dev.Ledger().Report(), "virtual-address")
}

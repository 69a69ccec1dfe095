package growable_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/growable"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

const mib = 1 << 20

// copiesDtoD returns the device-to-device copies between two snapshots,
// on every path.
func copiesDtoD(before, after accounting.Snapshot) (count, bytes int64) {
	d := accounting.Diff(before, after)
	for _, c := range d.Copies[accounting.DtoD] {
		count, bytes = count+c.Count, bytes+c.Bytes
	}
	return count, bytes
}

// stripe is random bytes written at an offset of the array.
type stripe struct {
	off  int64
	data []byte
}

// checkStripes reads every stripe back from p.
func checkStripes(t *testing.T, dev device.Device, p devarray.Ptr, stripes []stripe, step int) {
	t.Helper()
	for i, s := range stripes {
		got := make([]byte, len(s.data))
		require.NoError(t, dev.CopyDtoH(got, p+devarray.Ptr(s.off)))
		require.Equal(t, s.data, got, "step %d: the stripe written at step %d was kept", step, i)
	}
}

// The goal: a 1 GiB array grown by virtual memory in 64 MiB steps copies
// nothing (the ledger shows no device-to-device copy), never moves, and
// keeps its contents: random bytes written at each step read back at
// every later one. It runs on a sim device of 2 GiB whose memory is
// reserved, not committed: only the bytes written (a 64 KiB stripe at a
// random place of each new chunk) cost host memory, so the 1 GiB takes
// what a MiB does.
// needVMM skips a test on a device without virtual memory (sim without
// memfd, as on macOS).
func needVMM(t *testing.T, dev device.Device) {
	t.Helper()
	if _, err := dev.MemGranularity(); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
}

func TestGrowOneGiBInPlace(t *testing.T) {
	const total, step, stripeBytes = 1 << 30, 64 * mib, 64 << 10
	dev, err := device.Open("sim:0?mem=2GiB")
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	needVMM(t, dev)
	r := rand.For(t)
	led := dev.Ledger()
	before := led.Snapshot()

	a, err := growable.New(dev, devarray.Uint8, total, growable.ChunkBytes(step))
	require.NoError(t, err)
	base := a.Ptr()
	assert.Equal(t, total, a.Cap())
	assert.Zero(t, a.Mapped(), "nothing mapped before the first growth")
	var stripes []stripe
	for n := step; n <= total; n += step {
		require.NoError(t, a.Grow(n))
		require.Equal(t, base, a.Ptr(), "growing to %d bytes keeps the address", n)
		v, err := a.DevArray()
		require.NoError(t, err)
		require.Equal(t, base, v.Ptr(), "the view starts where the array always did")
		require.Equal(t, []int{n}, v.Shape())
		s := stripe{off: int64(n-step) + r.Int64N(step-stripeBytes+1), data: make([]byte, stripeBytes)}
		for i := range s.data {
			s.data[i] = byte(r.Uint32())
		}
		require.NoError(t, dev.CopyHtoD(base+devarray.Ptr(s.off), s.data))
		stripes = append(stripes, s)
		checkStripes(t, dev, base, stripes, len(stripes)-1)
	}
	assert.Equal(t, int64(total), a.Mapped())
	count, bytes := copiesDtoD(before, led.Snapshot())
	assert.Zero(t, count, "no device-to-device copy")
	assert.Zero(t, bytes, "no byte copied on the device")
	d := accounting.Diff(before, led.Snapshot()).Kinds
	assert.Equal(t, int64(total), d[accounting.VirtualAddress].Current, "1 GiB of addresses reserved once")
	assert.Equal(t, int64(1), d[accounting.VirtualAddress].Allocs)
	assert.Equal(t, int64(total), d[accounting.Physical].Current, "1 GiB of memory behind it")
	assert.Equal(t, int64(total/step), d[accounting.Physical].Allocs, "one chunk per step")
	assert.Zero(t, d[accounting.Device].Allocs, "no ordinary allocation")

	require.NoError(t, a.Free())
	assert.Zero(t, led.Current(accounting.VirtualAddress))
	assert.Zero(t, led.Current(accounting.Physical))
	require.NoError(t, a.Free(), "a second Free does nothing")
}

// Growing in steps of random size on the test device (sim, or the
// emulated CUDA driver): every byte written, not a stripe, is read back
// through the array's view after each step, and a view taken before a
// growth still reads the same bytes.
func TestGrowKeepsEveryByte(t *testing.T) {
	dev := testdev.Open(t)
	needVMM(t, dev)
	r := rand.For(t)
	g, err := dev.MemGranularity()
	require.NoError(t, err)
	chunk := int(g.Minimum)
	a, err := growable.New(dev, devarray.Uint8, 4*chunk, growable.ChunkBytes(int64(chunk)))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Free()) })
	var want []byte
	var first *devarray.DevArray
	for len(want) < 4*chunk {
		n := min(len(want)+1+r.IntN(chunk+chunk/2), 4*chunk)
		require.NoError(t, a.Grow(n))
		assert.Equal(t, int64((n+chunk-1)/chunk*chunk), a.Mapped(), "whole chunks, no more")
		fresh := testdev.RandomBytes(n - len(want))
		require.NoError(t, dev.CopyHtoD(a.Ptr()+devarray.Ptr(len(want)), fresh))
		want = append(want, fresh...)
		v, err := a.DevArray()
		require.NoError(t, err)
		got := make([]byte, n)
		require.NoError(t, dev.CopyDtoH(got, v.Ptr()))
		require.Equal(t, want, got, "grown to %d bytes", n)
		if first == nil {
			first = v
		}
	}
	got := make([]byte, first.NBytes())
	require.NoError(t, dev.CopyDtoH(got, first.Ptr()))
	assert.Equal(t, want[:len(got)], got, "the first view reads what it did")
}

// Grow refuses to pass the capacity, Free makes later calls fail, and
// bad arguments are refused, each with nothing left counted.
func TestGrowRefusals(t *testing.T) {
	dev := testdev.Open(t)
	needVMM(t, dev)
	g, err := dev.MemGranularity()
	require.NoError(t, err)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"past the capacity", func() error {
			a, err := growable.New(dev, devarray.Float32, int(g.Minimum/4))
			require.NoError(t, err)
			defer a.Free()
			return a.Grow(a.Cap() + 1)
		}, growable.ErrCapacity},
		{"negative length", func() error {
			a, err := growable.New(dev, devarray.Float32, int(g.Minimum/4))
			require.NoError(t, err)
			defer a.Free()
			return a.Grow(-1)
		}, growable.ErrCapacity},
		{"after Free", func() error {
			a, err := growable.New(dev, devarray.Float32, int(g.Minimum/4))
			require.NoError(t, err)
			require.NoError(t, a.Free())
			return a.Grow(1)
		}, growable.ErrFreed},
		{"no capacity", func() error { _, err := growable.New(dev, devarray.Float32, 0); return err }, device.ErrInvalidValue},
		{"invalid dtype", func() error { _, err := growable.New(dev, devarray.Invalid, 16); return err }, device.ErrInvalidValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.call(), c.want)
			assert.Zero(t, dev.Ledger().Current(accounting.VirtualAddress))
			assert.Zero(t, dev.Ledger().Current(accounting.Physical))
		})
	}
}

// A growth that fails half-way (sim's Nth allocation fails) gives back
// the chunks it mapped: the array keeps its length and memory.
func TestGrowFailureGivesBack(t *testing.T) {
	dev, err := device.Open("sim:0?mem=64MiB")
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	needVMM(t, dev)
	s, ok := dev.(interface{ FailAlloc(n int64) })
	require.True(t, ok, "a sim device")
	r := rand.For(t)
	const chunk = 2 * mib
	a, err := growable.New(dev, devarray.Uint8, 8*chunk, growable.ChunkBytes(chunk))
	require.NoError(t, err)
	defer a.Free()
	require.NoError(t, a.Grow(chunk))
	fails := 2 + r.IntN(3) // the chunk that fails, after 1 to 3 that do not
	s.FailAlloc(int64(fails))
	require.ErrorIs(t, a.Grow(8*chunk), device.ErrInjected)
	assert.Equal(t, chunk, a.Len(), "the length stays")
	assert.Equal(t, int64(chunk), a.Mapped(), "the chunks mapped by the failed growth are gone")
	assert.Equal(t, int64(chunk), dev.Ledger().Current(accounting.Physical))
	require.NoError(t, a.Grow(3*chunk), "growing works again")
}

package device_test

// The copy contract (driver.Device): a call not named Async returns with
// its work complete. Each test reads the destination the instant the call
// returns, waiting for no stream (testdev.Peek): on sim with latency
// (CUARRAY_TEST_DEVICE='sim:0?latency=1ms', as CI runs it) and on a GPU,
// a call that returns when its work is only queued fails here.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// completeSize is large enough that a GPU is still busy with a copy of it
// a few microseconds after queueing.
const completeSize = 8 << 20

func TestSynchronousCallsAreCompleteOnReturn(t *testing.T) {
	dev := testdev.Open(t)
	n := int64(completeSize)
	alloc := func() devarray.Ptr {
		p, err := dev.Malloc(n)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
		require.NoError(t, dev.CopyHtoD(p, testdev.RandomBytes(int(n))))
		return p
	}
	src, dst := alloc(), alloc()
	pitch := int64(4096)
	for _, tc := range []struct {
		name string
		call func() error
		// written is what the call writes: device memory at p, or host memory.
		p    devarray.Ptr
		host []byte
	}{
		{name: "CopyHtoD from pageable memory", p: dst, call: func() error { return dev.CopyHtoD(dst, testdev.RandomBytes(int(n))) }},
		{name: "CopyDtoD", p: dst, call: func() error { return dev.CopyDtoD(dst, src, n) }},
		{name: "Memset", p: dst, call: func() error { return dev.Memset(dst, 0x5a, n) }},
		{name: "Memcpy2D device to device", p: dst, call: func() error {
			return dev.Memcpy2D(devarray.Memcpy2D{Dst: devarray.Place{Dev: dst}, Src: devarray.Place{Dev: src},
				DstPitch: pitch, SrcPitch: pitch, Width: pitch - 64, Height: n / pitch})
		}},
		{name: "Memcpy3D device to device", p: dst, call: func() error {
			return dev.Memcpy3D(devarray.Memcpy3D{Dst: devarray.Place{Dev: dst}, Src: devarray.Place{Dev: src},
				DstPitch: pitch, SrcPitch: pitch, DstHeight: 64, SrcHeight: 64, Width: pitch - 64, Height: 60, Depth: n / pitch / 64})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, dev.CopyHtoD(src, testdev.RandomBytes(int(n))))
			require.NoError(t, tc.call())
			testdev.RequireComplete(t, dev, tc.p, n, tc.name)
		})
	}
	t.Run("CopyDtoH", func(t *testing.T) {
		out := testdev.RandomBytes(int(n))
		require.NoError(t, dev.CopyDtoH(out, src))
		testdev.RequireHostComplete(t, dev, out, "CopyDtoH")
	})
}

func TestCopyPeerIsCompleteOnReturn(t *testing.T) {
	dev := testdev.Open(t)
	other := testdev.OpenPeer(t, dev, "32MiB")
	n := int64(completeSize)
	src, err := dev.Malloc(n)
	require.NoError(t, err)
	defer dev.Free(src)
	dst, err := other.Malloc(n)
	require.NoError(t, err)
	defer other.Free(dst)
	require.NoError(t, dev.CopyHtoD(src, testdev.RandomBytes(int(n))))
	require.NoError(t, other.CopyHtoD(dst, testdev.RandomBytes(int(n))))
	require.NoError(t, dev.CopyPeer(dst, other, src, n))
	testdev.RequireComplete(t, other, dst, n, "CopyPeer")
}

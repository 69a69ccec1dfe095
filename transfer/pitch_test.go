package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// A view whose rows lie more than 2^31 bytes apart cannot be moved by a
// pitched copy (a GPU refuses it, and so does sim): Copy packs it on the
// device instead, and the data still arrives. sim reserves its memory
// without committing it, so the 2 GiB gap costs nothing.
func TestPitchBeyondTheDriverLimit(t *testing.T) {
	dev := testdev.Open(t)
	if dev.Info().TotalMemory < 5<<30 {
		if !testdev.IsSim(dev) {
			t.Skip("needs over 4 GiB of device memory; the sim case covers the logic")
		}
		var err error
		dev, err = device.Open("sim:2?mem=5GiB&latency=" + testdev.SimLatency(dev).String())
		require.NoError(t, err)
		defer dev.Close()
	}
	const rowBytes = driver.MaxPitch + 1025 // each row of the parent is over MaxPitch
	parent, err := devarray.Empty(dev, devarray.Uint8, 2, rowBytes)
	require.NoError(t, err)
	defer parent.Free()
	view, err := parent.Slice(1, 0, 512, 1) // 2 rows of 512 bytes, 2^31+1025 bytes apart
	require.NoError(t, err)

	p := devarray.Memcpy2D{Dst: devarray.Place{Host: make([]byte, rowBytes+512)}, Src: devarray.Place{Dev: view.Ptr()},
		DstPitch: rowBytes, SrcPitch: rowBytes, Width: 512, Height: 2}
	assert.ErrorIs(t, dev.Memcpy2D(p), driver.ErrInvalidValue, "the driver's pitch limit")

	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer c.Close()
	want := testdev.RandomBytes(1024)
	before := dev.Ledger().Snapshot()
	require.NoError(t, c.Copy(transfer.Dev(view), transfer.Host(want, 2, 512)))
	got := make([]byte, 1024)
	require.NoError(t, c.Copy(transfer.Host(got, 2, 512), transfer.Dev(view)))
	assert.Equal(t, want, got)
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Positive(t, diff.Copies[accounting.DtoD][accounting.PathKernel].Bytes, "packed on the device")
}

package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// An array of pageable memory used in place (devarray.FromPageable) is
// its Go slice: a copy between it and host memory that shares bytes with
// it is refused, on every path, with the slice left as it was, rather
// than copied in chunks that read what earlier chunks wrote (the staged
// path's ring). Host memory next to it, sharing no byte, copies.
func TestCopyPageableInPlaceSharingHostMemory(t *testing.T) {
	r := rand.For(t)
	dev, err := device.Open("sim:0?mem=64MiB&pageable-access=hmm")
	require.NoError(t, err)
	defer dev.Close()
	n := 1<<18 + r.IntN(1<<16)
	mem := make([]float32, 2*n)
	for i := range mem {
		mem[i] = r.Float32()
	}
	whole, err := devarray.FromPageable(dev, mem[:n])
	require.NoError(t, err)
	defer whole.Free()
	shift := 1 + r.IntN(n/2)
	head, err := whole.Slice(0, 0, n-shift)
	require.NoError(t, err)
	tail, err := whole.Slice(0, shift, n)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		ok       bool
	}{
		{"into itself", transfer.Dev(whole), transfer.Host(mem[:n]), false},
		{"into its tail from its head", transfer.Dev(tail), transfer.Host(mem[:n-shift]), false},
		{"into its head from its tail", transfer.Dev(head), transfer.Host(mem[shift:n]), false},
		{"from its head into its tail", transfer.Host(mem[shift:n]), transfer.Dev(head), false},
		{"from itself into the memory after it", transfer.Host(mem[n:]), transfer.Dev(whole), true},
		{"into itself from the memory after it", transfer.Dev(whole), transfer.Host(mem[n:]), true},
	} {
		for _, path := range []transfer.Path{transfer.PathAuto, transfer.PathDirect, transfer.PathStaged, transfer.PathRegistered} {
			t.Run(tc.name+" "+path.String(), func(t *testing.T) {
				before := append([]float32(nil), mem...)
				err := transfer.Copy(tc.dst, tc.src, transfer.WithOptions(transfer.Options{Path: path}))
				if tc.ok {
					require.NoError(t, err)
					copy(mem, before) // the next case starts from the same bytes
					return
				}
				assert.ErrorIs(t, err, driver.ErrInvalidValue)
				assert.ErrorIs(t, err, devarray.ErrSharesMemory)
				assert.Equal(t, before, mem, "the slice is left as it was")
			})
		}
	}
}

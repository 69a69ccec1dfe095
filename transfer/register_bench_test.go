package transfer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// BenchmarkRegistered moves one Go buffer to the device along the
// registered path, kept registered ("registered") and registered afresh
// for every copy ("registered-fresh": the registration's cost), beside its
// peers in the same run: direct and staged from the same Go buffer, and
// pinned from a pinned buffer. Compare the MB/s as ratios; on sim every
// path is a memory copy in this process, so only the registration's
// overhead means anything there, and the GPU figures are a GPU run's.
func BenchmarkRegistered(b *testing.B) {
	dev := testdev.Open(b)
	c, err := transfer.New(dev)
	require.NoError(b, err)
	defer c.Close()
	for _, size := range []int{1 << 20, 16 << 20} {
		host := testdev.RandomBytes(size)
		d, err := devarray.Empty(dev, devarray.Uint8, size)
		require.NoError(b, err)
		buf, err := pinned.Alloc(dev, int64(size), 0)
		require.NoError(b, err)
		copy(buf.Bytes(), host)
		for _, bc := range []struct {
			name  string
			src   transfer.Endpoint
			path  transfer.Path
			after func() error
		}{
			{"direct", transfer.HostBytes(host, devarray.Uint8), transfer.PathDirect, nil},
			{"staged", transfer.HostBytes(host, devarray.Uint8), transfer.PathStaged, nil},
			{"pinned", transfer.Pinned(buf, devarray.Uint8), transfer.PathPinned, nil},
			{"registered", transfer.HostBytes(host, devarray.Uint8), transfer.PathRegistered, nil},
			{"registered-fresh", transfer.HostBytes(host, devarray.Uint8), transfer.PathRegistered, func() error { return c.Unregister(host) }},
		} {
			b.Run(fmt.Sprintf("%s/%dMiB", bc.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if err := c.Copy(transfer.Dev(d), bc.src, transfer.Via(bc.path)); err != nil {
						b.Fatal(err)
					}
					if bc.after != nil {
						if err := bc.after(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
		require.NoError(b, c.Unregister(host))
		require.NoError(b, buf.Free())
		require.NoError(b, d.Free())
	}
}

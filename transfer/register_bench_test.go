package transfer_test

import (
	"fmt"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"

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

// BenchmarkRegisteredSubPagePieces moves a Go buffer to the device in
// pieces of 256 B, each page cut into 16, queued round-robin on 3 streams
// so that pieces of one page are in flight at once, as the FBP pipeline's
// chunks are: along the registered path, kept registered between rounds
// ("registered", every piece its own registration once) and registered
// afresh every round ("registered-fresh": each piece's registration is
// paid each time), beside the staged path from the same buffer. Compare
// the ns per round as ratios within one run; the GPU figures are a GPU
// run's, where registering costs far more than on sim.
func BenchmarkRegisteredSubPagePieces(b *testing.B) {
	dev := testdev.Open(b)
	c, err := transfer.New(dev)
	require.NoError(b, err)
	defer c.Close()
	const piece, pieces, nstreams = 256, 64, 3
	host := testdev.RandomBytes(piece * pieces)
	d, err := devarray.Empty(dev, devarray.Uint8, len(host))
	require.NoError(b, err)
	defer d.Free()
	var streams []driver.Stream
	for range nstreams {
		s, err := dev.NewStream()
		require.NoError(b, err)
		defer s.Close()
		streams = append(streams, s)
	}
	for _, bc := range []struct {
		name  string
		path  transfer.Path
		fresh bool
	}{
		{"staged", transfer.PathStaged, false},
		{"registered", transfer.PathRegistered, false},
		{"registered-fresh", transfer.PathRegistered, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(host)))
			ops := make([]*transfer.Op, pieces)
			before := dev.Ledger().Snapshot()
			for b.Loop() {
				for i := range pieces {
					dst, err := d.Slice(0, i*piece, (i+1)*piece)
					if err != nil {
						b.Fatal(err)
					}
					src := transfer.HostBytes(host[i*piece:(i+1)*piece], devarray.Uint8)
					if ops[i], err = c.CopyAsync(streams[i%nstreams], transfer.Dev(dst), src, transfer.Via(bc.path)); err != nil {
						b.Fatal(err)
					}
				}
				for _, op := range ops {
					if err := op.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				if bc.fresh {
					if err := c.Unregister(host); err != nil {
						b.Fatal(err)
					}
				}
			}
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			b.ReportMetric(float64(diff.Copies[accounting.HtoD][accounting.PathStaged].Count)/float64(b.N), "staged/round")
			b.ReportMetric(float64(diff.Kinds[accounting.Registered].Allocs)/float64(b.N), "registrations/round")
		})
	}
	require.NoError(b, c.Unregister(host))
}

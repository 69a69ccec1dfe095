package transfer_test

import (
	"bytes"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

func randomFloats(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = rand.Float32()*2 - 1
	}
	return xs
}

// side is one end of a test copy: it can be filled with logical values
// before and read back after, whatever its layout.
type side struct {
	ep    transfer.Endpoint
	write func(t *testing.T, vals []float32)
	read  func(t *testing.T) []float32
	free  func()
	// complete checks, right after a synchronous copy into the side has
	// returned, that no byte of it changes once the device is idle.
	complete func(t *testing.T, call string)
}

// hostPaths are the paths between host and device, each with the host
// memory it needs.
var hostPaths = []struct {
	path transfer.Path
	host string
}{
	{transfer.PathDirect, "pageable"},
	{transfer.PathPinned, "pinned"},
	{transfer.PathStaged, "pageable"},
	{transfer.PathMapped, "mapped"},
}

const rows, cols = 37, 53 // odd sizes: rows are not multiples of anything

// deviceSide is a device array, C-contiguous or every other column of a
// wider one (8-byte-strided rows the driver cannot copy in one piece).
func deviceSide(t *testing.T, dev device.Device, strided bool) side {
	w := cols
	if strided {
		w = 2 * cols
	}
	parent, err := devarray.FromHost(dev, randomFloats(rows*w), rows, w)
	require.NoError(t, err)
	view := parent
	if strided {
		view, err = parent.Slice(1, 1, 2*cols, 2)
		require.NoError(t, err)
	}
	return side{
		ep: transfer.Dev(view),
		write: func(t *testing.T, vals []float32) {
			require.NoError(t, view.CopyFrom(devarray.AsBytes(vals)))
		},
		read: func(t *testing.T) []float32 {
			out := make([]float32, rows*cols)
			require.NoError(t, view.CopyTo(devarray.AsBytes(out)))
			return out
		},
		free:     func() { require.NoError(t, parent.Free()) },
		complete: func(t *testing.T, call string) { testdev.RequireArrayComplete(t, parent, call) },
	}
}

// hostSide is Go memory or a pinned buffer, C-contiguous or transposed
// inside a padded block (column-major with a pitch of rows+3 elements).
func hostSide(t *testing.T, dev device.Device, kind string, strided bool) side {
	n := rows * cols
	if strided {
		n = cols * (rows + 3)
	}
	var mem []float32
	var ep transfer.Endpoint
	s := side{free: func() {}}
	switch kind {
	case "pageable":
		mem = randomFloats(n)
		ep = transfer.Host(mem, rows, cols)
	default:
		flags := pinned.Flags(0)
		if kind == "mapped" {
			flags = pinned.Mapped
		}
		b, err := pinned.Alloc(dev, int64(4*n), flags)
		require.NoError(t, err)
		mem = b.Float32()
		copy(mem, randomFloats(n))
		ep = transfer.Pinned(b, devarray.Float32, rows, cols)
		s.free = func() { require.NoError(t, b.Free()) }
	}
	s.complete = func(t *testing.T, call string) {
		if dev != nil {
			testdev.RequireHostComplete(t, dev, devarray.AsBytes(mem), call)
		}
	}
	at := func(i, j int) *float32 { return &mem[i*cols+j] }
	if strided {
		ep = ep.Strided(0, 4, 4*(rows+3))
		at = func(i, j int) *float32 { return &mem[j*(rows+3)+i] }
	}
	s.ep = ep
	s.write = func(t *testing.T, vals []float32) {
		for i := range rows {
			for j := range cols {
				*at(i, j) = vals[i*cols+j]
			}
		}
	}
	s.read = func(t *testing.T) []float32 {
		out := make([]float32, rows*cols)
		for i := range rows {
			for j := range cols {
				out[i*cols+j] = *at(i, j)
			}
		}
		return out
	}
	return s
}

// Every host path, both directions, contiguous and strided on either side:
// the data is there the instant Copy returns (on sim with latency, as on
// a GPU, a copy that returns early fails here), and the ledger shows
// exactly the bytes asked for on the path asked for.
func TestHostDevicePaths(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(4096, 3, 2)) // small chunks: many trips round the ring
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	n := int64(4 * rows * cols)
	for _, path := range hostPaths {
		for _, toDevice := range []bool{true, false} {
			for _, layout := range []struct{ devStrided, hostStrided bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				name := path.path.String() + map[bool]string{true: "/HtoD", false: "/DtoH"}[toDevice] +
					map[bool]string{true: "/dev-strided", false: "/dev-contig"}[layout.devStrided] +
					map[bool]string{true: "/host-strided", false: "/host-contig"}[layout.hostStrided]
				t.Run(name, func(t *testing.T) {
					d := deviceSide(t, dev, layout.devStrided)
					defer d.free()
					h := hostSide(t, dev, path.host, layout.hostStrided)
					defer h.free()
					src, dst, dir := h, d, accounting.HtoD
					if !toDevice {
						src, dst, dir = d, h, accounting.DtoH
					}
					want := randomFloats(rows * cols)
					src.write(t, want)

					before := dev.Ledger().Snapshot()
					require.NoError(t, c.Copy(dst.ep, src.ep, transfer.Via(path.path)))
					dst.complete(t, "Copy "+name)
					diff := accounting.Diff(before, dev.Ledger().Snapshot())

					assert.Equal(t, want, dst.read(t))
					assert.Equal(t, n, diff.Copies[dir][path.path.Ledger()].Bytes, "the bytes asked for, on the path asked for")
					assert.Equal(t, n, diff.CopyTotal(dir).Bytes, "no other %v copies", dir)
					wantHtoH := int64(0)
					if path.path == transfer.PathStaged {
						wantHtoH = n // the host side of staging, shown, not hidden
					}
					assert.Equal(t, wantHtoH, diff.CopyTotal(accounting.HtoH).Bytes)
					if !layout.devStrided {
						assert.Zero(t, diff.CopyTotal(accounting.DtoD).Bytes, "no pack kernel for a contiguous device side")
					}
				})
			}
		}
	}
}

func TestDeviceToDevice(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer c.Close()
	for _, layout := range []struct{ dst, src bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		a, b := deviceSide(t, dev, layout.src), deviceSide(t, dev, layout.dst)
		want := randomFloats(rows * cols)
		a.write(t, want)
		before := dev.Ledger().Snapshot()
		choice, err := c.Plan(b.ep, a.ep)
		require.NoError(t, err)
		assert.Equal(t, transfer.PathD2D, choice.Path)
		require.NoError(t, c.Copy(b.ep, a.ep))
		b.complete(t, "Copy d2d")
		diff := accounting.Diff(before, dev.Ledger().Snapshot())
		assert.Equal(t, want, b.read(t))
		assert.Zero(t, diff.CopyTotal(accounting.HtoD).Bytes+diff.CopyTotal(accounting.DtoH).Bytes, "nothing crossed to the host")
		if !layout.dst && !layout.src {
			assert.Equal(t, int64(4*rows*cols), diff.Copies[accounting.DtoD][accounting.PathD2D].Bytes)
		} else {
			assert.Positive(t, diff.Copies[accounting.DtoD][accounting.PathKernel].Bytes, "strided sides take the pack kernel")
		}
		a.free()
		b.free()
	}
}

// A copy to another device, either side strided: the data arrives, the
// source's ledger has the peer copy, and a strided side's pack or unpack
// kernel is in the ledger of the device it runs on.
func TestPeer(t *testing.T) {
	dev := testdev.Open(t)
	other := testdev.OpenPeer(t, dev, "16MiB")
	const n = 4 * rows * cols
	for _, layout := range []struct{ dst, src bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		a := deviceSide(t, dev, layout.src)
		b := deviceSide(t, other, layout.dst)
		want := randomFloats(rows * cols)
		a.write(t, want)
		before, otherBefore := dev.Ledger().Snapshot(), other.Ledger().Snapshot()
		require.NoError(t, transfer.Copy(b.ep, a.ep))
		b.complete(t, "Copy peer")
		diff := accounting.Diff(before, dev.Ledger().Snapshot())
		otherDiff := accounting.Diff(otherBefore, other.Ledger().Snapshot())
		assert.Equal(t, want, b.read(t))
		assert.Equal(t, int64(n), diff.Copies[accounting.Peer][accounting.PathPeer].Bytes)
		packed, unpacked := int64(0), int64(0)
		if layout.src {
			packed = n
		}
		if layout.dst {
			unpacked = n
		}
		assert.Equal(t, packed, diff.Copies[accounting.DtoD][accounting.PathKernel].Bytes, "strided source %v: packed on its device", layout.src)
		assert.Equal(t, unpacked, otherDiff.Copies[accounting.DtoD][accounting.PathKernel].Bytes, "strided destination %v: unpacked on its device", layout.dst)
		a.free()
		b.free()
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Device)+other.Ledger().Current(accounting.Device)-0,
		"temporaries of the strided peer copy are freed")
}

func TestHostToHost(t *testing.T) {
	for _, layout := range []struct{ dst, src bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		a, b := hostSide(t, nil, "pageable", layout.src), hostSide(t, nil, "pageable", layout.dst)
		want := randomFloats(rows * cols)
		a.write(t, want)
		require.NoError(t, transfer.Copy(b.ep, a.ep), "two Go slices need no device")
		assert.Equal(t, want, b.read(t))
	}
}

// An async copy to another device follows its stream: work queued on the
// stream before it (here a memset of the source) is in what it copies.
func TestPeerAsyncFollowsItsStream(t *testing.T) {
	dev := testdev.Open(t)
	other := testdev.OpenPeer(t, dev, "16MiB")
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer c.Close()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 64 << 10
	a, err := devarray.FromBytes(dev, testdev.RandomBytes(n), devarray.Uint8, n)
	require.NoError(t, err)
	defer a.Free()
	b, err := devarray.FromBytes(other, testdev.RandomBytes(n), devarray.Uint8, n)
	require.NoError(t, err)
	defer b.Free()
	v := byte(1 + rand.IntN(255))
	require.NoError(t, s.MemsetAsync(a.Ptr(), v, n))
	before := dev.Ledger().Snapshot()
	op, err := c.CopyAsync(s, transfer.Dev(b), transfer.Dev(a))
	require.NoError(t, err)
	require.NoError(t, op.Wait())
	got, err := devarray.ToHost[uint8](b)
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{v}, n), got, "the peer copy saw the memset queued before it")
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(n), diff.Copies[accounting.Peer][accounting.PathPeer].Bytes)
}

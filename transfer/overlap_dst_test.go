package transfer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// overlapDst is a writable host destination for a rows × cols float32
// array: element (r, c) at byte offset + r*strides[0] + c*strides[1] of
// mem bytes.
type overlapDst struct {
	name    string
	offset  int64
	strides [2]int64
}

// memBytes returns the bytes of memory that hold every element of d, and
// at least the packed array (HostBytes describes it before Strided).
func (d overlapDst) memBytes(rows, cols int) int64 {
	hi := d.offset + 4
	for ax, n := range []int{rows, cols} {
		if reach := int64(n-1) * d.strides[ax]; reach > 0 {
			hi += reach
		}
	}
	return max(hi, int64(rows*cols*4))
}

// cOrderCopy is the reference: each element's 4 bytes written to mem one
// after another in C order, so where elements share memory the last wins.
func cOrderCopy(mem []byte, d overlapDst, vals []float32, rows, cols int) {
	src := devarray.AsBytes(vals)
	for r := range rows {
		for c := range cols {
			at := d.offset + int64(r)*d.strides[0] + int64(c)*d.strides[1]
			e := (r*cols + c) * 4
			copy(mem[at:at+4], src[e:e+4])
		}
	}
}

// A staged copy from the device into a host destination whose elements
// share memory (a zero stride, strides smaller than the element or the
// row) leaves what a C-order loop does: the last element written wins,
// though the ring's goroutines bring the chunks back at once. The chunk
// (4098 bytes) splits elements, so partial elements at the chunks' ends
// are ordered too. A destination whose elements do not overlap is copied
// as before. Every byte is counted once on the staged path, as DMA and as
// a host copy.
func TestStagedCopyIntoOverlappingHostLastWins(t *testing.T) {
	const rows, cols = 64, 1001
	const chunk = 4098
	row := int64(cols * 4)
	dsts := []overlapDst{
		{"zero stride, outer axis", 0, [2]int64{0, 4}},
		{"zero stride, inner axis", 0, [2]int64{4, 0}},
		{"every element on one", 8, [2]int64{0, 0}},
		{"stride below the element", 0, [2]int64{cols * 2, 2}},
		{"rows closer than their width", 4, [2]int64{1000, 4}},
		{"strided, disjoint", 4, [2]int64{2 * row, 8}},
		{"rows flipped, disjoint", (rows - 1) * row, [2]int64{-row, 4}},
	}
	dev := testdev.Open(t)
	vals := randomFloats(rows * cols)
	a, err := devarray.FromHost(dev, vals, rows, cols)
	require.NoError(t, err)
	defer a.Free()
	c, err := transfer.New(dev, transfer.WithRing(chunk, 3, 2))
	require.NoError(t, err)
	defer c.Close()
	n := int64(rows * cols * 4)
	for _, d := range dsts {
		t.Run(d.name, func(t *testing.T) {
			for try := range 4 {
				mem := testdev.RandomBytes(int(d.memBytes(rows, cols)))
				want := append([]byte(nil), mem...)
				cOrderCopy(want, d, vals, rows, cols)
				before := dev.Ledger().Snapshot()
				dst := transfer.HostBytes(mem, devarray.Float32, rows, cols).Strided(d.offset, d.strides[0], d.strides[1])
				require.NoError(t, dst.Err())
				require.NoError(t, c.Copy(dst, transfer.Dev(a), transfer.Via(transfer.PathStaged)))
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, n, diff.Copies[accounting.DtoH][accounting.PathStaged].Bytes, "try %d: DMA of every byte", try)
				host := diff.Copies[accounting.HtoH][accounting.PathStaged]
				assert.Equal(t, n, host.Bytes, "try %d: every byte scattered once", try)
				assert.Equal(t, (n+chunk-1)/chunk, host.Count, "try %d: one scatter per chunk", try)
				for b := range want {
					if mem[b] != want[b] {
						require.Failf(t, "not what the C-order loop leaves", "try %d: byte %d of %d: got %#x, want %#x",
							try, b, len(want), mem[b], want[b])
					}
				}
			}
		})
	}
}

// A staged copy into a zero-stride host destination, whose chunks wait
// for each other's scatters, neither hangs nor succeeds wrongly when the
// DMA of one of its chunks faults: every fault position from the first
// DMA to past the last, with sim latency 0 and 1 ms.
func TestStagedCopyIntoOverlappingHostFaults(t *testing.T) {
	const rows, cols = 8, 1001
	const chunk = 4098
	d := overlapDst{"zero stride, outer axis", 0, [2]int64{0, 4}}
	nchunks := int64((rows*cols*4 + chunk - 1) / chunk)
	for _, latency := range faultLatencies {
		for n := int64(1); n <= nchunks+2; n++ {
			t.Run(fmt.Sprintf("latency %v, fault at %d", latency, n), func(t *testing.T) {
				dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency})
				require.NoError(t, err)
				defer dev.Close()
				vals := randomFloats(rows * cols)
				a, err := devarray.FromHost(dev, vals, rows, cols)
				require.NoError(t, err)
				defer a.Free()
				c, err := transfer.New(dev, transfer.WithRing(chunk, 3, 2))
				require.NoError(t, err)
				defer c.Close()
				mem := testdev.RandomBytes(int(d.memBytes(rows, cols)))
				want := append([]byte(nil), mem...)
				cOrderCopy(want, d, vals, rows, cols)
				dst := transfer.HostBytes(mem, devarray.Float32, rows, cols).Strided(d.offset, d.strides[0], d.strides[1])
				dev.FailFault(n)
				err = within(t, fmt.Sprintf("fault at %d", n), func() error {
					return c.Copy(dst, transfer.Dev(a), transfer.Via(transfer.PathStaged))
				})
				if err != nil {
					require.ErrorIs(t, err, device.ErrContextFailed)
					return
				}
				require.NoError(t, dev.Fault(), "the copy returned nil although its work faulted")
				require.Equal(t, want, mem, "a copy that returned nil left what the C-order loop does")
			})
		}
	}
}

package bench_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

func TestRunCountsMatchRequests(t *testing.T) {
	dev := testdev.Open(t)
	var progress bytes.Buffer
	r, err := bench.Run(dev, bench.Config{Sizes: []int64{4 << 10, 300 << 10}, Budget: 1 << 20, Progress: &progress, PCIe: 1000,
		Copier: []transfer.Option{transfer.WithRing(64<<10, 3, 2)}})
	require.NoError(t, err)
	require.True(t, r.CountsOK(), r.Table())
	// go-copy plus 9 path-directions per size.
	assert.Len(t, r.Results, 2*(1+2*4+1))
	for _, q := range r.Results {
		assert.Positive(t, q.GBps, "%s %s", q.Path, q.Direction)
		assert.LessOrEqual(t, q.MinGBps, q.GBps)
		assert.GreaterOrEqual(t, q.MaxGBps, q.GBps)
		if q.Path == bench.GoCopy {
			assert.Nil(t, q.Ledger)
			continue
		}
		require.NotNil(t, q.Ledger)
		assert.Equal(t, q.Size*int64(q.Repeats), q.Ledger.Requested)
		assert.Equal(t, q.Ledger.Requested, q.Ledger.Bytes)
		assert.NotNil(t, q.VsCopy)
		if q.Direction == "HtoD" || q.Direction == "DtoH" {
			require.NotNil(t, q.VsPinned)
			require.NotNil(t, q.VsPCIe, "the link bandwidth was given")
			if q.Path == "pinned" {
				assert.InDelta(t, 1.0, *q.VsPinned, 1e-9)
			}
		}
	}
	assert.Equal(t, 50, r.Results[0].Repeats, "repeats: budget/size, at most 50")
	assert.Equal(t, 3, r.Results[len(r.Results)-1].Repeats, "repeats: budget/size, at least 3")
	assert.Contains(t, progress.String(), "staged")
	assert.Contains(t, r.Table(), "vs pinned")

	var doc struct {
		XMLName  xml.Name `xml:"svg"`
		Polyline []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	}
	require.NoError(t, xml.Unmarshal(r.SVG(), &doc), "the chart is well-formed SVG")
	assert.Len(t, doc.Polyline, 1+4+4+1, "one line per path in each direction panel")
	js, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"ratio_to_pinned"`)
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "the bench frees what it allocated")
}

func TestPCIeFor(t *testing.T) {
	for model, want := range map[string]float64{"NVIDIA H200": 64, "NVIDIA A100-SXM4-80GB": 32, "Tesla V100-SXM2-16GB": 16, "cuarray simulated device": 0} {
		assert.Equal(t, want, bench.PCIeFor(model), model)
	}
	dev := testdev.Open(t)
	_, err := bench.Run(dev, bench.Config{Sizes: []int64{-1}})
	assert.Error(t, err)
	_, err = bench.Run(dev, bench.Config{Sizes: []int64{4096}, Paths: []transfer.Path{transfer.PathPeer}})
	assert.Error(t, err, "peer needs a second device")
}

// The same measurements as Go benchmarks: go test -bench . ./bench
func BenchmarkTransfer(b *testing.B) {
	dev := testdev.Open(b)
	c, err := transfer.New(dev)
	require.NoError(b, err)
	defer c.Close()
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		src, dst := testdev.RandomBytes(size), make([]byte, size)
		b.Run(fmt.Sprintf("go-copy/HtoH/%s", accounting.FormatBytes(int64(size))), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				copy(dst, src)
			}
		})
		a, err := devarray.FromBytes(dev, src, devarray.Uint8, size)
		require.NoError(b, err)
		d2, err := devarray.Empty(dev, devarray.Uint8, size)
		require.NoError(b, err)
		buf, err := pinned.Alloc(dev, int64(size), pinned.Mapped)
		require.NoError(b, err)
		for _, tc := range []struct {
			path transfer.Path
			host transfer.Endpoint
		}{
			{transfer.PathDirect, transfer.HostBytes(dst, devarray.Uint8)},
			{transfer.PathPinned, transfer.Pinned(buf, devarray.Uint8)},
			{transfer.PathStaged, transfer.HostBytes(dst, devarray.Uint8)},
			{transfer.PathMapped, transfer.Pinned(buf, devarray.Uint8)},
			{transfer.PathD2D, transfer.Dev(d2)},
		} {
			dirs := []struct {
				name     string
				dst, src transfer.Endpoint
			}{{"HtoD", transfer.Dev(a), tc.host}, {"DtoH", tc.host, transfer.Dev(a)}}
			if tc.path == transfer.PathD2D {
				dirs = dirs[1:2]
				dirs[0].name = "DtoD"
			}
			for _, d := range dirs {
				b.Run(fmt.Sprintf("%v/%s/%s", tc.path, d.name, accounting.FormatBytes(int64(size))), func(b *testing.B) {
					b.SetBytes(int64(size))
					for b.Loop() {
						if err := c.Copy(d.dst, d.src, transfer.Via(tc.path)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		require.NoError(b, buf.Free())
		require.NoError(b, a.Free())
		require.NoError(b, d2.Free())
	}
}

// The registered path is measured like the others: its copies counted on
// the pinned path (the DMA from page-locked memory), one registration per
// buffer for all the repeats, and nothing left registered afterwards.
func TestRunRegisteredPath(t *testing.T) {
	dev := testdev.Open(t)
	r, err := bench.Run(dev, bench.Config{Sizes: []int64{64 << 10, 1 << 20}, Budget: 4 << 20,
		Paths: []transfer.Path{transfer.PathPinned, transfer.PathRegistered}})
	require.NoError(t, err)
	require.True(t, r.CountsOK(), r.Table())
	rows := 0
	for _, q := range r.Results {
		if q.Path != "registered" {
			continue
		}
		rows++
		require.NotNil(t, q.Ledger)
		assert.Equal(t, q.Size*int64(q.Repeats), q.Ledger.Bytes, "%s %s", q.Direction, accounting.FormatBytes(q.Size))
		assert.Zero(t, q.Ledger.HostStaging, "no staging through the host")
	}
	assert.Equal(t, 4, rows, "two sizes, both directions")
	assert.Zero(t, dev.Ledger().Current(accounting.Registered), "the bench leaves nothing registered")
}

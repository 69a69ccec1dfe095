package transfer

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

// The ring a Copier sizes itself has as many goroutines as the host's
// memory copy needs to feed the link (at most GOMAXPROCS) plus two chunks,
// at most 64 MiB of chunks; a calibrated ring or one the caller gives is
// kept as it is.
func TestSizeRing(t *testing.T) {
	h100 := DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"})
	one := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"}) // one figure, 8 GB/s on 1; link 25 GB/s
	simP := DefaultProfile(driver.Info{Backend: "sim", Model: "sim"})
	calibrated := h100.clone()
	calibrated.Ring = &RingShape{ChunkBytes: 3 << 20, Chunks: 7, Streams: 3}
	noFigures := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	noFigures.HostCopy = nil
	// withHostCopy is the generic GPU's profile (the pinned path's link at
	// 25 GB/s) with these host copy figures, and the link at link GB/s
	// (0: no pinned figure at all).
	withHostCopy := func(link float64, hc ...HostCopy) *Profile {
		p := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
		p.HostCopy = hc
		var costs []PathCost
		for _, c := range p.Costs {
			if c.Path != PathPinned.String() || link > 0 {
				costs = append(costs, c)
			}
		}
		p.Costs = costs
		if link > 0 {
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				require.NoError(t, p.SetCost(PathPinned, dir, Cost{Latency: 10 * time.Microsecond, GBps: link}, 0))
			}
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		o     Options
		sim   bool
		procs int
		want  RingShape
		adapt bool
	}{
		{"H100, 16 cores: 16 goroutines reach 45 GB/s", Options{Profile: h100}, false, 16, RingShape{2 << 20, 18, 2}, true},
		{"H100, 4 cores", Options{Profile: h100}, false, 4, RingShape{4 << 20, 6, 2}, true},
		{"H100, 6 cores: 4 copy faster than 6", Options{Profile: h100}, false, 6, RingShape{4 << 20, 6, 2}, true},
		{"one figure scales: 4 × 8 GB/s ≥ 25", Options{Profile: one}, false, 16, RingShape{4 << 20, 6, 2}, true},
		{"one figure, 2 cores", Options{Profile: one}, false, 2, RingShape{4 << 20, 4, 2}, true},
		{"sim without figures: every core", Options{Profile: simP}, true, 2, RingShape{SimChunkBytes, 4, 2}, true},
		{"calibrated", Options{Profile: calibrated}, false, 16, RingShape{3 << 20, 7, 3}, true},
		{"given", Options{Profile: h100, ChunkBytes: 64 << 10, Chunks: 3}, false, 16, RingShape{64 << 10, 3, 2}, false},
		{"given, not mixed with a calibrated ring", Options{Profile: calibrated, ChunkBytes: 64 << 10, Chunks: 3}, false, 16, RingShape{64 << 10, 3, 2}, false},
		{"chunk size given, H100, 16 cores", Options{Profile: h100, ChunkBytes: 64 << 10}, false, 16, RingShape{64 << 10, 18, 2}, false},
		{"chunks given, H100, 16 cores", Options{Profile: h100, Chunks: 5}, false, 16, RingShape{2 << 20, 5, 2}, true},
		{"no figures, 100 cores: 66 chunks cut to 1 MiB, no less", Options{Profile: noFigures}, false, 100, RingShape{1 << 20, 66, 2}, true},
		{"no figures, 14 cores: 16 chunks of 4 MiB are 64 MiB, not cut", Options{Profile: noFigures}, false, 14, RingShape{4 << 20, 16, 2}, true},
		{"one figure on 2 goroutines scales: 5 × 5 GB/s reach 25", Options{Profile: withHostCopy(25, HostCopy{2, 10})}, false, 16, RingShape{4 << 20, 7, 2}, true},
		{"a rate equal to the link is enough", Options{Profile: withHostCopy(25, HostCopy{1, 10}, HostCopy{2, 25}, HostCopy{4, 40})}, false, 16, RingShape{4 << 20, 4, 2}, true},
		{"no pinned figure: the fastest count", Options{Profile: withHostCopy(0, HostCopy{1, 10}, HostCopy{2, 20}, HostCopy{4, 30}, HostCopy{8, 28})}, false, 16, RingShape{4 << 20, 6, 2}, true},
		{"2 % faster is not worth a goroutine", Options{Profile: withHostCopy(100, HostCopy{1, 50}, HostCopy{2, 51})}, false, 16, RingShape{4 << 20, 3, 2}, true},
		{"figures in any order", Options{Profile: withHostCopy(25, HostCopy{8, 28}, HostCopy{1, 10}, HostCopy{4, 30}, HostCopy{2, 20})}, false, 16, RingShape{4 << 20, 5, 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sizeRing(tc.o, tc.sim, tc.procs).withDefaults()
			assert.Equal(t, tc.want, RingShape{o.ChunkBytes, o.Chunks, o.Streams})
			assert.Equal(t, tc.adapt, o.adapt)
		})
	}
	for _, tc := range []struct {
		n, chunk int64
		adapt    bool
		want     int64
	}{
		{64 << 20, 2 << 20, true, 2 << 20},      // 32 chunks
		{64 << 20, 4 << 20, true, 2 << 20},      // 32 chunks, each filled in half
		{1 << 30, 2 << 20, true, 2 << 20},       // more chunks than wanted: whole
		{1 << 20, 4 << 20, true, minPiece},      // 4 chunks: no less than minPiece
		{20 << 20, 4 << 20, true, 640 << 10},    // a multiple of the alignment already: as it is
		{20<<20 + 32, 4 << 20, true, 704 << 10}, // a byte more each: the next multiple
		{1 << 20, 64 << 10, true, 64 << 10},     // the ring's chunk, when smaller
		{64 << 20, 4 << 20, false, 4 << 20},     // a ring the caller gave: whole chunks
	} {
		assert.Equal(t, tc.want, piece(tc.n, tc.chunk, tc.adapt), "%+v", tc)
	}
}

// A staged copy through a ring the Copier sized fills its chunks in part
// and moves every byte, with a copy per chunk in the ledger.
func TestStagedPieces(t *testing.T) {
	dev := testdev.Open(t)
	c, err := New(dev)
	require.NoError(t, err)
	defer c.Close()
	require.True(t, c.opt.adapt)
	n := 3<<20 + 12345
	src := testdev.RandomBytes(n)
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer a.Free()
	back := make([]byte, n)
	size := piece(int64(n), c.opt.ChunkBytes, true)
	want := (int64(n) + size - 1) / size
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		dst, s := Dev(a), HostBytes(src, devarray.Uint8)
		if dir == accounting.DtoH {
			dst, s = HostBytes(back, devarray.Uint8), Dev(a)
		}
		before := dev.Ledger().Snapshot()
		require.NoError(t, c.Copy(dst, s, Via(PathStaged)))
		got := accounting.Diff(before, dev.Ledger().Snapshot()).Copies[dir][accounting.PathStaged]
		assert.Equal(t, int64(n), got.Bytes, "%v", dir)
		assert.Equal(t, want, got.Count, "%v: a copy per chunk of %d bytes", dir, size)
	}
	assert.Equal(t, src, back)
}

// A Copier on sim sizes its ring with SimChunkBytes chunks, which stay in
// the CPU's cache, and a chunk per goroutine plus two: the first staged
// copy allocates that many bytes of staging memory, and Close frees them.
func TestCopierRingOnSim(t *testing.T) {
	dev, err := device.Open("sim:3?mem=64MiB")
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	c, err := New(dev, WithProfile(DefaultProfile(dev.Info())))
	require.NoError(t, err)
	procs := runtime.GOMAXPROCS(0)
	want := RingShape{ChunkBytes: SimChunkBytes, Chunks: min(procs, maxWorkers) + 2, Streams: DefaultStreams}
	assert.Equal(t, want, c.Ring())
	n := int(want.ChunkBytes)*want.Chunks + 12345
	src := testdev.RandomBytes(n)
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	require.NoError(t, c.Copy(Dev(a), HostBytes(src, devarray.Uint8), Via(PathStaged)))
	got, err := devarray.ToHost[uint8](a)
	require.NoError(t, err)
	assert.Equal(t, src, got)
	ring := dev.Ledger().Snapshot().Kinds[accounting.Pinned]
	assert.Equal(t, want.ChunkBytes*int64(want.Chunks), ring.Current, "the ring's chunks are allocated")
	assert.Equal(t, int64(want.Chunks), ring.Allocs, "a chunk at a time")
	require.NoError(t, c.Close())
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "Close frees the ring")
}

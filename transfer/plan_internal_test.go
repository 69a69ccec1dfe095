package transfer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// The planner picks, of the paths that fit the sides, the quickest in the
// profile's cost model, and says why in one line.
func TestChoose(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.Empty(dev, devarray.Uint8, 64<<20)
	require.NoError(t, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, 8<<20, 0)
	require.NoError(t, err)
	defer buf.Free()
	mbuf, err := pinned.Alloc(dev, 8<<20, pinned.Mapped)
	require.NoError(t, err)
	defer mbuf.Free()
	pageable := func(n int) Endpoint { return HostBytes(testdev.RandomBytes(n), devarray.Uint8) }
	h100 := DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100 80GB HBM3"})
	generic := DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA RTX A4000"})
	sim := DefaultProfile(driver.Info{Backend: "sim", Model: "cuarray simulated device (host memory)"})
	withMapped := h100.clone()
	require.NoError(t, withMapped.SetCost(PathMapped, accounting.HtoD, Cost{2 * time.Microsecond, 20}, 0))
	o := func(p *Profile) Options { return Options{Profile: p}.withDefaults() }
	for _, tc := range []struct {
		name     string
		dst, src Endpoint
		opt      Options
		want     Path
		reason   string
	}{
		{"device to device", Dev(a), Dev(a), o(h100), PathD2D, "inside device memory"},
		{"pinned to device", Dev(slice(t, a, 8<<20)), Pinned(buf, devarray.Uint8), o(h100), PathPinned, "page-locked"},
		{"device to pinned", Pinned(buf, devarray.Uint8), Dev(slice(t, a, 8<<20)), o(sim), PathPinned, "DMA engine"},
		{"mapped, no mapped figure", Dev(slice(t, a, 8<<20)), Pinned(mbuf, devarray.Uint8), o(h100), PathPinned, "DMA engine"},
		{"small mapped, a mapped figure", Dev(slice(t, a, 4096)), Pinned(mbuf, devarray.Uint8, 4096), o(withMapped), PathMapped, "of mapped page-locked memory: pinned ≈"},
		{"large mapped, a mapped figure", Dev(slice(t, a, 8<<20)), Pinned(mbuf, devarray.Uint8), o(withMapped), PathPinned, "of mapped page-locked memory: pinned ≈"},
		// On the H100, direct was 30 % faster than staged at 1 MiB.
		{"1 MiB pageable on an H100", Dev(slice(t, a, 1<<20)), pageable(1 << 20), o(h100), PathDirect, "of pageable memory: direct ≈ 77"},
		{"1 MiB pageable from an H100", pageable(1 << 20), Dev(slice(t, a, 1<<20)), o(h100), PathDirect, "staged ≈"},
		{"4 MiB pageable on an H100", Dev(slice(t, a, 4<<20)), pageable(4 << 20), o(h100), PathStaged, "pinned chunks"},
		{"64 MiB pageable on an H100", Dev(a), pageable(64 << 20), o(h100), PathStaged, "H100"},
		{"4 KiB pageable on a GPU", Dev(slice(t, a, 4096)), pageable(4096), o(generic), PathDirect, "assumed"},
		{"64 MiB pageable on a GPU", Dev(a), pageable(64 << 20), o(generic), PathStaged, "staged ≈"},
		{"64 MiB pageable under StagedMin", Dev(a), pageable(64 << 20), Options{Profile: h100, StagedMin: 128 << 20}.withDefaults(), PathDirect, "StagedMin"},
		{"64 MiB pageable, StagedMin 64 MiB", Dev(a), pageable(64 << 20), Options{Profile: h100, StagedMin: 64 << 20}.withDefaults(), PathStaged, "staged ≈"},
		{"64 MiB pageable, StagedMin a byte more", Dev(a), pageable(64 << 20), Options{Profile: h100, StagedMin: 64<<20 + 1}.withDefaults(), PathDirect, "StagedMin"},
		{"64 MiB pageable on sim", Dev(a), pageable(64 << 20), o(sim), PathDirect, "no DMA engine"},
		{"host to host", HostBytes(make([]byte, 8<<20), devarray.Uint8), Pinned(buf, devarray.Uint8), o(h100), PathDirect, "no device involved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := choose(tc.dst, tc.src, tc.src.nbytes(), tc.opt, true)
			assert.Equal(t, c.Path, choose(tc.dst, tc.src, tc.src.nbytes(), tc.opt, false).Path, "the same path without the reason")
			assert.Equal(t, tc.want, c.Path, c.Reason)
			assert.Contains(t, c.Reason, tc.reason)
			assert.NotContains(t, c.String(), "\n", "one line")
			assert.NoError(t, fits(c.Path, tc.dst, tc.src), "the planner only picks paths that fit")
		})
	}
}

// A strided host side costs the direct path a driver copy per block: a
// layout of many small blocks is staged (gathered by the host) even where
// a contiguous one of the same size goes direct.
func TestChooseStridedHost(t *testing.T) {
	dev := testdev.Open(t)
	const rows, cols = 1024, 256
	a, err := devarray.Empty(dev, devarray.Float32, cols, rows)
	require.NoError(t, err)
	defer a.Free()
	host := Host(make([]float32, rows*cols), rows, cols)
	h100 := DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100"})
	o := Options{Profile: h100}.withDefaults()
	transposed := host.Strided(0, 4, cols*4)
	require.NoError(t, transposed.Err())
	// 1 MiB: contiguous goes direct, a transposed view (a block per element) is staged.
	var contiguous Endpoint = Host(make([]float32, rows*cols), cols, rows)
	assert.Equal(t, PathDirect, choose(Dev(a), contiguous, 1<<20, o, false).Path)
	assert.Equal(t, PathStaged, choose(Dev(a), transposed, 1<<20, o, false).Path)
}

func slice(t *testing.T, a *devarray.DevArray, n int) *devarray.DevArray {
	v, err := a.Slice(0, 0, n)
	require.NoError(t, err)
	return v
}

// BenchmarkChoose: the planner's cost on every auto copy (the path only)
// against Plan's (the path and its reason).
func BenchmarkChoose(b *testing.B) {
	dev := testdev.Open(b)
	a, err := devarray.Empty(dev, devarray.Uint8, 4096)
	require.NoError(b, err)
	defer a.Free()
	dst, src := Dev(a), HostBytes(testdev.RandomBytes(4096), devarray.Uint8)
	o := Options{Profile: DefaultProfile(driver.Info{Backend: "cuda", Model: "NVIDIA H100"})}.withDefaults()
	for _, explain := range []bool{false, true} {
		b.Run(map[bool]string{false: "copy", true: "plan"}[explain], func(b *testing.B) {
			for b.Loop() {
				_ = choose(dst, src, 4096, o, explain)
			}
		})
	}
}

// A strided host side that takes B driver copies costs the direct path B
// latencies, at most 4096 (a layout of more blocks is gathered on the
// host): with the direct and staged paths the same but for their latency
// L and S, the direct path wins when S is half an L more than B·L, and
// the staged one when it is half an L less.
func TestChooseChargesEachBlock(t *testing.T) {
	dev := testdev.Open(t)
	const L = 10 * time.Microsecond
	for _, tc := range []struct{ rows, cols int }{{16, 3}, {5, 40}, {5000, 2}} {
		a, err := devarray.Empty(dev, devarray.Float32, tc.rows, tc.cols)
		require.NoError(t, err)
		host := Host(make([]float32, tc.rows*tc.cols), tc.rows, tc.cols).Strided(0, 4, int64(4*tc.rows)) // transposed
		require.NoError(t, host.Err())
		blocks := 0
		require.NoError(t, devarray.Blocks(host.arr.Shape(), host.arr.Strides(), 4, func(devarray.Block) error { blocks++; return nil }))
		require.Greater(t, blocks, 1)
		blocks = min(blocks, 1<<12)
		n := int64(4 * tc.rows * tc.cols)
		for _, staged := range []struct {
			latency time.Duration
			want    Path
		}{
			{time.Duration(blocks)*L + L/2, PathDirect},
			{time.Duration(blocks)*L - L/2, PathStaged},
		} {
			p := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				require.NoError(t, p.SetCost(PathDirect, dir, Cost{Latency: L, GBps: 1e5}, 0))
				require.NoError(t, p.SetCost(PathStaged, dir, Cost{Latency: staged.latency, GBps: 1e5}, 0))
			}
			o := Options{Profile: p}.withDefaults()
			in := choose(Dev(a), host, n, o, true)
			assert.Equal(t, staged.want, in.Path, "%d blocks, staged latency %v: %s", blocks, staged.latency, in.Reason)
			assert.Equal(t, staged.want, choose(host, Dev(a), n, o, false).Path, "%d blocks, staged latency %v, DtoH", blocks, staged.latency)
		}
		require.NoError(t, a.Free())
	}
}

// Where two paths cost the same, the planner takes the earlier one of
// the order it tries them in: direct before staged for pageable memory,
// pinned before mapped for a mapped buffer.
func TestChooseTiesGoToTheEarlierPath(t *testing.T) {
	dev := testdev.Open(t)
	const n = 1 << 20
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer a.Free()
	mbuf, err := pinned.Alloc(dev, n, pinned.Mapped)
	require.NoError(t, err)
	defer mbuf.Free()
	same := Cost{Latency: 7 * time.Microsecond, GBps: 9}
	p := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		for _, path := range []Path{PathDirect, PathStaged, PathPinned, PathMapped} {
			require.NoError(t, p.SetCost(path, dir, same, 0))
		}
	}
	require.NoError(t, p.SetRegistrationCost(Cost{Latency: time.Second, GBps: 1e-3})) // registering never pays
	o := Options{Profile: p}.withDefaults()
	for _, tc := range []struct {
		name     string
		dst, src Endpoint
		want     Path
	}{
		{"pageable HtoD", Dev(a), HostBytes(testdev.RandomBytes(n), devarray.Uint8), PathDirect},
		{"pageable DtoH", HostBytes(testdev.RandomBytes(n), devarray.Uint8), Dev(a), PathDirect},
		{"mapped HtoD", Dev(a), Pinned(mbuf, devarray.Uint8), PathPinned},
		{"mapped DtoH", Pinned(mbuf, devarray.Uint8), Dev(a), PathPinned},
	} {
		c := choose(tc.dst, tc.src, n, o, true)
		assert.Equal(t, tc.want, c.Path, "%s: %s", tc.name, c.Reason)
		assert.Equal(t, tc.want, choose(tc.dst, tc.src, n, o, false).Path, tc.name)
	}
}

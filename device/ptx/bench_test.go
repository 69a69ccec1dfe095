package ptx

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// benchRun runs a launch b.N times and reports lane instructions per second.
func benchRun(b *testing.B, k *Kernel, l Launch) {
	b.Helper()
	var lanes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := k.Run(l)
		if err != nil {
			b.Fatal(err)
		}
		lanes += st.LaneInstructions
	}
	b.ReportMetric(float64(lanes)/b.Elapsed().Seconds(), "lane-instr/s")
}

// BenchmarkElementwise is axpy_f32 on 64 Ki contiguous elements.
func BenchmarkElementwise(b *testing.B) {
	m := loadKernels(b)
	k, _ := m.Kernel("axpy_f32")
	rng := rand.New(rand.NewPCG(1, 2))
	h := &hostMem{}
	const n = 1 << 16
	y, x := h.alloc(4*n, rng), h.alloc(4*n, rng)
	fillFloats(y, 4, rng)
	fillFloats(x, 4, rng)
	l := layoutBytes([]int64{n}, []int64{4})
	args := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(y))).Struct(l, 8).Ptr(devarray.Ptr(addr(x))).Struct(l, 8).F32(2)
	params, _ := args.Bytes()
	benchRun(b, k, Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h})
	runtime.KeepAlive(h)
}

// BenchmarkBackprojectTiled is backproject_tiled_f32 of a 128 x 128 image from 64 angles.
func BenchmarkBackprojectTiled(b *testing.B) {
	m := loadKernels(b)
	k, _ := m.Kernel("backproject_tiled_f32")
	rng := rand.New(rand.NewPCG(3, 4))
	h := &hostMem{}
	const n, na, d = 128, 64, 128
	img, sino := h.alloc(4*n*n, rng), h.alloc(4*na*d, rng)
	fillFloats(sino, 4, rng)
	trig := trigTable(h, rng, na, 4)
	args := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(img))).Ptr(devarray.Ptr(addr(sino))).Ptr(trig).I64(1).I32(na).I32(d).I32(n).F32(float32(math.Pi / na))
	params, _ := args.Bytes()
	tiles := uint32((n + 127) / 128 * ((n + 15) / 16))
	benchRun(b, k, Launch{Grid: [3]uint32{tiles, 1, 1}, Block: [3]uint32{32, 8, 1}, Params: params, Global: h})
	runtime.KeepAlive(h)
}

// BenchmarkReduction is sum_f64 (grid-stride sums, warp shuffles, atomicAdd) on 64 Ki elements.
func BenchmarkReduction(b *testing.B) {
	m := loadKernels(b)
	k, _ := m.Kernel("sum_f64")
	rng := rand.New(rand.NewPCG(5, 6))
	h := &hostMem{}
	const n = 1 << 16
	a, out := h.alloc(8*n, rng), h.alloc(8, rng)
	fillFloats(a, 8, rng)
	binary.LittleEndian.PutUint64(out, 0)
	args := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(a))).Struct(layoutBytes([]int64{n}, []int64{8}), 8).Ptr(devarray.Ptr(addr(out)))
	params, _ := args.Bytes()
	benchRun(b, k, Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h})
	runtime.KeepAlive(h)
}

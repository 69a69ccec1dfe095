package ptx

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// benchRun runs a launch b.N times and reports lane instructions per
// second, and the time of one run as a multiple of the kernel's Go
// reference's (kernels.Emulate) on the same input, timed in the same run.
func benchRun(b *testing.B, setup func(*testing.B) (*Kernel, Launch, *hostMem)) {
	b.Helper()
	k, l, h := setup(b)
	em, err := kernels.Emulate(k.Name, l.Params)
	if err != nil {
		b.Fatal(err)
	}
	mems := make([][]byte, len(em.Ranges))
	for i, r := range em.Ranges {
		base, mem, ok := h.Lookup(uint64(r.Ptr))
		if !ok {
			b.Fatalf("range %d of %s is no allocation", i, k.Name)
		}
		off := uint64(r.Ptr) - base
		mems[i] = mem[off : off+uint64(r.N)]
	}
	var lanes int64
	var interp, ref time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		st, err := k.Run(l)
		if err != nil {
			b.Fatal(err)
		}
		interp += time.Since(start)
		lanes += st.LaneInstructions
		start = time.Now()
		if err := em.Run(mems); err != nil {
			b.Fatal(err)
		}
		ref += time.Since(start)
	}
	b.ReportMetric(float64(lanes)/interp.Seconds(), "lane-instr/s")
	b.ReportMetric(interp.Seconds()/ref.Seconds(), "x-Go-reference")
	runtime.KeepAlive(h)
}

// BenchmarkElementwise is axpy_f32 on 64 Ki contiguous elements.
func BenchmarkElementwise(b *testing.B) { benchRun(b, elementwiseLaunch) }

// elementwiseLaunch sets up BenchmarkElementwise's launch.
func elementwiseLaunch(b *testing.B) (*Kernel, Launch, *hostMem) {
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
	return k, Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h}, h
}

// BenchmarkBackprojectTiled is backproject_tiled_f32 of a 128 x 128 image from 64 angles.
func BenchmarkBackprojectTiled(b *testing.B) { benchRun(b, backprojectLaunch) }

// backprojectLaunch sets up BenchmarkBackprojectTiled's launch.
func backprojectLaunch(b *testing.B) (*Kernel, Launch, *hostMem) {
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
	return k, Launch{Grid: [3]uint32{tiles, 1, 1}, Block: [3]uint32{32, 8, 1}, Params: params, Global: h}, h
}

// BenchmarkReduction is sum_f64 (grid-stride sums, warp shuffles, atomicAdd) on 64 Ki elements.
func BenchmarkReduction(b *testing.B) { benchRun(b, reductionLaunch) }

// reductionLaunch sets up BenchmarkReduction's launch.
func reductionLaunch(b *testing.B) (*Kernel, Launch, *hostMem) {
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
	return k, Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h}, h
}

// BenchmarkElementwiseDeclared is BenchmarkElementwise with its arrays
// declared as package kernel declares them (Launch.Arrays: y InOut, x
// In), so each access is held to its array's extent too.
func BenchmarkElementwiseDeclared(b *testing.B) { benchRun(b, elementwiseDeclaredLaunch) }

// elementwiseDeclaredLaunch sets up BenchmarkElementwiseDeclared's launch.
func elementwiseDeclaredLaunch(b *testing.B) (*Kernel, Launch, *hostMem) {
	k, l, h := elementwiseLaunch(b)
	y, x := h.bufs[0], h.bufs[1]
	l.Arrays = []Array{{Addr: addr(y), N: uint64(len(y)), Access: ReadWriteArray, Name: "y"}, {Addr: addr(x), N: uint64(len(x)), Access: ReadArray, Name: "x"}}
	return k, l, h
}

// BenchmarkFillOut is fill_f32 on 64 Ki contiguous elements declared Out:
// each store marks its bytes written.
func BenchmarkFillOut(b *testing.B) { benchRun(b, fillOutLaunch) }

// fillOutLaunch sets up BenchmarkFillOut's launch.
func fillOutLaunch(b *testing.B) (*Kernel, Launch, *hostMem) {
	m := loadKernels(b)
	k, _ := m.Kernel("fill_f32")
	rng := rand.New(rand.NewPCG(7, 8))
	h := &hostMem{}
	const n = 1 << 16
	a := h.alloc(4*n, rng)
	args := new(driver.KernelArgs).Ptr(devarray.Ptr(addr(a))).Struct(layoutBytes([]int64{n}, []int64{4}), 8).F32(2.5)
	params, _ := args.Bytes()
	return k, Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h,
		Arrays: []Array{{Addr: addr(a), N: 4 * n, Access: WriteArray, Name: "a"}}}, h
}

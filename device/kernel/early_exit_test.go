package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Kernels written as CUDA C writes them (testdata/early_exit.cu, nvcc's
// PTX beside it): threads return early, then the rest of the block meets
// __syncthreads(), or the rest of a warp full-mask shuffles and a ballot.
// The PTX ISA's exit: "Barriers exclusively waiting on arrivals from exited
// threads are always released"; the Programming Guide's warp functions:
// "all non-exited threads named in mask must execute the same intrinsic".
// They run on a GPU, and give the Go reference's bits on sim and the
// emulated driver.
func TestEarlyReturnThenSynchronize(t *testing.T) {
	dev := testdev.Open(t)
	r := rand.For(t)

	t.Run("__syncthreads()", func(t *testing.T) {
		k := loadKernel(t, dev, "testdata/early_exit.ptx", "block_sum_early_return")
		blocks, n := 1+r.IntN(4), 1+r.IntN(255) // 256 threads a block, 256-n of them return
		host := randomFloats(blocks * n)
		x, err := devarray.FromHost(dev, host)
		require.NoError(t, err)
		defer x.Free()
		out, err := devarray.Empty(dev, devarray.Float32, blocks)
		require.NoError(t, err)
		defer out.Free()
		require.NoError(t, k.Launch(kernel.Config{Grid: kernel.Dim3{uint32(blocks)}, Block: kernel.Dim3{256}},
			kernel.In(x), kernel.Out(out), kernel.I32(int32(n))))
		got, err := devarray.ToHost[float32](out)
		require.NoError(t, err)
		want := make([]float32, blocks)
		for b := range want {
			for j := range n {
				want[b] += host[b*n+j]
			}
		}
		assert.Equal(t, want, got, "%d blocks of %d elements", blocks, n)
	})

	t.Run("full-mask shuffles and ballot", func(t *testing.T) {
		k := loadKernel(t, dev, "testdata/early_exit.ptx", "warp_sum_early_return")
		n := 1 + r.IntN(1000)
		for n%32 == 0 { // a warp cut short: some of its lanes return
			n = 1 + r.IntN(1000)
		}
		host := randomFloats(n)
		warps := (n + 31) / 32
		x, err := devarray.FromHost(dev, host)
		require.NoError(t, err)
		defer x.Free()
		out, err := devarray.Empty(dev, devarray.Float32, 2*warps)
		require.NoError(t, err)
		defer out.Free()
		require.NoError(t, k.Launch(kernel.Grid1D(int64(n), 128), kernel.In(x), kernel.Out(out), kernel.I32(int32(n))))
		got, err := devarray.ToHost[float32](out)
		require.NoError(t, err)
		want := make([]float32, 2*warps)
		for w := range warps {
			active := min(32, n-32*w)
			v := make([]float32, 32)
			var positive int
			for l := range active {
				v[l] = host[32*w+l]
				if v[l] > 0 {
					positive++
				}
			}
			for off := 16; off > 0; off /= 2 { // the shuffle tree, each round from the last
				prev := append([]float32(nil), v...)
				for l := range active {
					if l+off < active {
						v[l] = prev[l] + prev[l+off]
					}
				}
			}
			want[2*w], want[2*w+1] = v[0], float32(positive)
		}
		assert.Equal(t, want, got, "%d elements, the last warp %d lanes", n, n%32)
	})
}

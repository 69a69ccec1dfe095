package kernel

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/ptx/entry"
	"github.com/cuarray/cuarray/device/sim"
)

// TestKernelParamsComeFromTheImagesPTX: PTX text and a fatbin's PTX give
// the kernels' parameters; a cubin, a fatbin without PTX and text that
// is not PTX give none (their kernels launch unchecked); a second load of
// an image finds its parameters kept.
func TestKernelParamsComeFromTheImagesPTX(t *testing.T) {
	saxpy, err := os.ReadFile("../../examples/ownkernels/saxpy.ptx")
	require.NoError(t, err)
	fat, err := os.ReadFile("../../kernels/kernels.fatbin")
	require.NoError(t, err)
	ps := kernelParams(string(saxpy))
	require.Len(t, ps["saxpy"], 4)
	decls := make([]string, 0, 4)
	for _, p := range ps["saxpy"] {
		decls = append(decls, p.Decl())
	}
	assert.Equal(t, []string{".f32", ".u64", ".u64", ".u32"}, decls)
	assert.Len(t, kernelParams(string(fat))["axpy_f32"], 5, "the fatbin's PTX")
	assert.Nil(t, readParams("\x7fELF\x02\x01\x01"+string(make([]byte, 64))), "a cubin")
	assert.Nil(t, readParams(string(fat[:16])), "a fatbin cut short: no PTX to read")
	assert.Nil(t, readParams(".entry k(.param .u32"), "PTX that does not read")
	img := string(saxpy)
	first := kernelParams(img)
	again := kernelParams(img)
	assert.Equal(t, first, again)
	paramCache.mu.Lock()
	assert.Equal(t, img, paramCache.images[0].image, "the image loaded last is kept first")
	paramCache.mu.Unlock()
}

// BenchmarkPrepare3ArraysChecked is BenchmarkPrepare3Arrays with the
// arguments checked against the kernel's parameters, as a kernel whose
// PTX is known is.
func BenchmarkPrepare3ArraysChecked(b *testing.B) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(b, err)
	defer dev.Close()
	var arrays [3]*devarray.DevArray
	for i := range arrays {
		arrays[i], err = devarray.Empty(dev, devarray.Float32, 64, 64)
		require.NoError(b, err)
		defer arrays[i].Free()
	}
	ptr := entry.Param{Size: 8, Align: 8, Type: "u64", Vector: 1}
	params := []entry.Param{ptr, ptr, ptr}
	for i := range params {
		params[i].Offset = 8 * i
	}
	k := &Kernel{m: &Module{dev: dev, id: dev.DeviceID()}, name: "empty", params: params, checked: true}
	cfg := Grid1D(4096, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l, err := k.prepare(cfg, []Arg{In(arrays[0]).Of(devarray.Float32), In(arrays[1]).Contiguous(), InOut(arrays[2])})
		if err != nil || len(l.ranges) != 3 {
			b.Fatal(err)
		}
	}
}

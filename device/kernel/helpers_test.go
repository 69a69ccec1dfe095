package kernel_test

import (
	"bufio"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
)

// readPTX returns a committed PTX file of the repository (make example-ptx).
func readPTX(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// The modules the tests load: the guide's two examples and the faulty kernels.
const (
	saxpyPTX   = "../../examples/ownkernels/saxpy.ptx"
	stencilPTX = "../../examples/ownkernels/stencil.ptx"
	faultsPTX  = "testdata/faults.ptx"
)

// loadKernel loads the module in the PTX file path on dev, unloaded by the
// test's cleanup, and returns its kernel name.
func loadKernel(t testing.TB, dev driver.Device, path, name string) *kernel.Kernel {
	t.Helper()
	mod, err := kernel.Load(dev, readPTX(t, path))
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close() })
	k, err := mod.Kernel(name)
	require.NoError(t, err)
	return k
}

// randomFloats returns n fresh random floats in [-8, 8).
func randomFloats(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rand.Float32()*16 - 8
	}
	return out
}

// fma32 is fma.rn.f32: a*x+y rounded once to float32, as nvcc's saxpy
// computes it (the product of two float32s is exact in big.Float).
func fma32(a, x, y float32) float32 {
	var p, s big.Float
	p.SetPrec(256).SetFloat64(float64(a))
	p.Mul(&p, new(big.Float).SetFloat64(float64(x)))
	s.SetPrec(256).Add(&p, new(big.Float).SetFloat64(float64(y)))
	f, _ := s.Float32()
	return f
}

// ptxLine returns the line number of the first line of kernel name's body
// in the PTX text that contains instr.
func ptxLine(t testing.TB, text, name, instr string) int {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	in := false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.Contains(l, ".entry "+name+"(") {
			in = true
		}
		if in && strings.Contains(l, instr) {
			return n
		}
	}
	t.Fatalf("no %q in kernel %s", instr, name)
	return 0
}

package ptx

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func loadKernels(t testing.TB) *Module {
	t.Helper()
	src, err := os.ReadFile("../../kernels/kernels.ptx")
	require.NoError(t, err, "read kernels.ptx")
	m, err := Parse(string(src))
	require.NoError(t, err, "parse kernels.ptx")
	return m
}

func TestParseKernelsPTX(t *testing.T) {
	m := loadKernels(t)
	require.Len(t, m.Kernels(), 34, "kernels.ptx has 34 entries")
	k, ok := m.Kernel("axpy_f32")
	require.True(t, ok)
	require.Equal(t, []Param{
		{Name: "axpy_f32_param_0", Offset: 0, Size: 8, Align: 8, Type: "u64", Vector: 1},
		{Name: "axpy_f32_param_1", Offset: 8, Size: 144, Align: 8, Type: "b8", Vector: 1, Elems: 144},
		{Name: "axpy_f32_param_2", Offset: 152, Size: 8, Align: 8, Type: "u64", Vector: 1},
		{Name: "axpy_f32_param_3", Offset: 160, Size: 144, Align: 8, Type: "b8", Vector: 1, Elems: 144},
		{Name: "axpy_f32_param_4", Offset: 304, Size: 4, Align: 4, Type: "f32", Vector: 1},
	}, k.Params)
	bt, ok := m.Kernel("backproject_tiled_f32")
	require.True(t, ok)
	require.Equal(t, [3]int{256, 1, 1}, bt.MaxNTID)
	require.Equal(t, 19456+128+64+64, bt.StaticShared)
	for _, name := range m.Kernels() {
		k, _ := m.Kernel(name)
		require.NotEmpty(t, k.Params, "%s has parameters", name)
		end := 0
		for i, p := range k.Params {
			require.Equal(t, fmt.Sprintf("%s_param_%d", name, i), p.Name)
			require.Zero(t, p.Offset%p.Align, "%s: %s at its natural alignment", name, p.Name)
			require.GreaterOrEqual(t, p.Offset, end, "%s: %s after the one before", name, p.Name)
			require.Less(t, p.Offset-end, p.Align, "%s: %s without a gap past its alignment", name, p.Name)
			end = p.Offset + p.Size
		}
		require.Equal(t, end, k.ParamBytes, name)
	}
	g, ok := m.Global("__cudart_sin_cos_coeffs")
	require.True(t, ok)
	require.Equal(t, 128, g.Size)
	require.Equal(t, byte(186), g.Mem[0])
}

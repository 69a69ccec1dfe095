//go:build cuda && cudaemu && linux

package emulated

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/kernels"
)

// The project's fatbin: its compute_70 PTX, decompressed, names every
// kernel with the parameter layout its sm_90 cubin has, which is the layout
// driver.KernelArgs packs; with kernels=go the cubin's layout serves.
func TestParseProjectFatbin(t *testing.T) {
	was := drv.cfg.goKernels // kernels=go may be the configuration this test runs under
	drv.cfg.goKernels = false
	defer func() { drv.cfg.goKernels = was }()
	img, ierr := parseImage([]byte(kernels.Image()))
	require.Nil(t, ierr)
	require.NotNil(t, img.ptx, "the fatbin's PTX is interpreted")
	ks := img.kernels
	assert.Len(t, ks, 34)
	for name, want := range map[string][]param{
		"copy_wide":       {{0, 8}, {8, 8}, {16, 8}},
		"fill_f32":        {{0, 8}, {8, 144}, {152, 4}},
		"axpy_f64":        {{0, 8}, {8, 144}, {152, 8}, {160, 144}, {304, 8}},
		"checksum":        {{0, 8}, {8, 8}, {16, 8}},
		"backproject_f32": {{0, 8}, {8, 8}, {16, 8}, {24, 8}, {32, 4}, {36, 4}, {40, 4}, {44, 4}},
	} {
		require.Contains(t, ks, name)
		assert.Equal(t, want, ks[name].params, name)
		assert.NotNil(t, ks[name].prog, name)
	}
	drv.cfg.goKernels = true
	cubin, ierr := parseImage([]byte(kernels.Image()))
	require.Nil(t, ierr)
	require.Len(t, cubin.kernels, 34)
	for name, k := range cubin.kernels {
		assert.Nil(t, k.prog, "kernels=go: %s runs its Go reference", name)
		assert.Equal(t, ks[name].params, k.params, "%s: the PTX's layout is the cubin's", name)
	}
}

// Images the driver refuses, with the result it gives and a log.
func TestParseImageRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		image string
		want  cuResult
	}{
		{"bytes that are no image", "not an image at all", errInvalidImage},
		{"PTX with an unknown instruction", ".version 6.0\n.target sm_70\n.visible .entry k()\n{\n\tfrobnicate %r1;\n}\n", errInvalidPTX},
		{"PTX without entries", ".version 6.0\n.target sm_70\n", errInvalidPTX},
		{"a truncated fatbin", kernels.Image()[:4096], errInvalidImage},
		{"an ELF that is no cubin", "\x7fELF\x02\x01\x01" + string(make([]byte, 80)), errInvalidImage},
	} {
		_, ierr := parseImage([]byte(tc.image))
		require.NotNil(t, ierr, tc.name)
		assert.Equal(t, tc.want, ierr.result, "%s: %s", tc.name, ierr.log)
	}
	_, ierr := parseImage([]byte(".version 6.0\n.target sm_70\n.visible .entry k()\n{\n\tfrobnicate %r1;\n}\n"))
	assert.Contains(t, ierr.log, "line 5", "the JIT log names the line")
}

// PTX text loads as the interpreter's kernels, each with its parameters
// laid out as the CUDA ABI lays them out.
func TestPTXKernels(t *testing.T) {
	img, ierr := parseImage([]byte(".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry store()\n{\n" +
		"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\tmov.u64 %rd1, 4096;\n\tmov.u32 %r1, 7;\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n" +
		".visible .entry loop(.param .u64 p, .param .u32 n, .param .align 8 .b8 s[12])\n{\n$L:\n\tbra $L;\n}\n"))
	require.Nil(t, ierr)
	require.Contains(t, img.kernels, "store")
	assert.NotNil(t, img.kernels["store"].prog)
	assert.Empty(t, img.kernels["store"].params)
	assert.Equal(t, []param{{0, 8}, {8, 4}, {16, 12}}, img.kernels["loop"].params)
}

func FuzzParseImage(f *testing.F) {
	f.Add([]byte(kernels.Image()[:2048]))
	f.Add([]byte(".version 6.0\n.visible .entry k(.param .align 8 .b8 x[16])\n{\n\tret;\n}\n"))
	f.Add([]byte("\x7fELF\x02\x01"))
	f.Fuzz(func(t *testing.T, image []byte) {
		img, ierr := parseImage(image)
		if ierr != nil {
			return
		}
		for name, k := range img.kernels {
			for _, p := range k.params {
				if p.offset < 0 || p.size < 0 {
					t.Fatalf("%s: parameter %+v", name, p)
				}
			}
		}
	})
}

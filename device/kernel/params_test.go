package kernel_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// countingFloats returns n floats 0.5, 1.5, 2.5, ...: data no launch
// leaves as it is, and no random draws.
func countingFloats(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i) + 0.5
	}
	return out
}

// TestLaunchChecksArgumentsAgainstParameters: on every backend, each
// argument is checked against the kernel's parameter as its PTX declares
// it (saxpy: .f32, .u64, .u64, .u32) before any driver call; a launch
// that does not fit is a typed error that names the kernel, the argument
// counting from 1, the parameter's type and what was given; the kernel
// does not run and nothing is left allocated.
func TestLaunchChecksArgumentsAgainstParameters(t *testing.T) {
	dev := testdev.Open(t)
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	const n = 1961
	ys := countingFloats(n)
	x, err := devarray.FromHost(dev, countingFloats(n))
	require.NoError(t, err)
	defer x.Free()
	y, err := devarray.FromHost(dev, ys)
	require.NoError(t, err)
	defer y.Free()
	require.NoError(t, saxpy.Launch(kernel.Grid1D(n, 256), kernel.F32(0), kernel.In(x), kernel.InOut(y), kernel.I32(n)),
		"the arguments the parameters take")
	before := dev.Ledger().Current(accounting.Device)
	launches := saxpyLaunches(dev.Ledger())
	for _, tc := range []struct {
		name     string
		args     []kernel.Arg
		position int
		param    string // the parameter's PTX type; "" for none
		given    string // what was given; "" for nothing
		says     string
	}{
		{"missing scalar", []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(y)},
			4, ".u32", "", "argument 4 (counting from 1) is missing: the kernel's parameter 4 is .u32 (saxpy takes 4 arguments, the launch gives 3)"},
		{"extra argument", []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(y), kernel.I32(n), kernel.U32(7)},
			5, "", "U32(7)", "argument 5 (counting from 1), U32(7), has no parameter (saxpy takes 4 arguments, the launch gives 5)"},
		{"wrong-width scalar", []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(y), kernel.I64(n)},
			4, ".u32", "I64(1961)", "argument 4 (counting from 1) is I64(1961) where the kernel's parameter is .u32: 8 bytes for a 4-byte parameter"},
		{"wrong-width float", []kernel.Arg{kernel.F64(2), kernel.In(x), kernel.InOut(y), kernel.I32(n)},
			1, ".f32", "F64(2)", "argument 1 (counting from 1) is F64(2) where the kernel's parameter is .f32: 8 bytes"},
		{"array where a 4-byte scalar stands", []kernel.Arg{kernel.F32(2), kernel.In(x), kernel.InOut(y), kernel.In(x)},
			4, ".u32", "In(DevArray(float32 [1961]", "argument 4 (counting from 1) is In(DevArray(float32 [1961]"},
		{"Memory where a float stands", []kernel.Arg{kernel.Memory(y.Ptr(), 4*n, kernel.ReadWrite), kernel.In(x), kernel.InOut(y), kernel.I32(n)},
			1, ".f32", "Memory(0x", "stands only where a .u64, .s64 or .b64 parameter is"},
		{"narrow scalar where an address stands", []kernel.Arg{kernel.F32(2), kernel.U32(0), kernel.InOut(y), kernel.I32(n)},
			2, ".u64", "U32(0)", "4 bytes for a 8-byte parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := saxpy.Launch(kernel.Grid1D(n, 256), tc.args...)
			require.Error(t, err)
			var ae *kernel.ArgumentError
			require.True(t, errors.As(err, &ae), "a *kernel.ArgumentError: %v", err)
			assert.ErrorIs(t, err, driver.ErrInvalidValue)
			assert.Equal(t, "saxpy", ae.Kernel)
			assert.Equal(t, tc.position, ae.Position, "the argument, counting from 1")
			assert.Equal(t, tc.param, ae.Param)
			assert.Contains(t, ae.Given, tc.given)
			if tc.given == "" {
				assert.Empty(t, ae.Given, "nothing was given")
			}
			assert.Equal(t, len(tc.args), ae.Args)
			assert.Equal(t, 4, ae.Params)
			assert.Contains(t, err.Error(), "kernel: launch saxpy: ")
			assert.Contains(t, err.Error(), fmt.Sprintf("argument %d (counting from 1)", tc.position))
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, before, dev.Ledger().Current(accounting.Device), "device bytes after a refused launch")
			assert.Equal(t, launches, saxpyLaunches(dev.Ledger()), "the refused launch is not counted")
			got, err := devarray.ToHost[float32](y)
			require.NoError(t, err)
			require.Equal(t, ys, got, "the kernel did not run")
		})
	}
	for _, launch := range []func(...kernel.Arg) error{
		func(args ...kernel.Arg) error {
			_, err := saxpy.LaunchAsync(nil, kernel.Grid1D(n, 256), args...)
			return err
		},
		func(args ...kernel.Arg) error { return saxpy.Queue(nil, kernel.Grid1D(n, 256), args...) },
		func(args ...kernel.Arg) error { return saxpy.Launch(kernel.Grid1D(0, 256), args...) },
	} {
		err := launch(kernel.F32(2), kernel.In(x), kernel.InOut(y))
		var ae *kernel.ArgumentError
		require.True(t, errors.As(err, &ae), "LaunchAsync, Queue and an empty grid are checked too: %v", err)
	}
	assert.Equal(t, before, dev.Ledger().Current(accounting.Device))
}

// saxpyLaunches returns how many launches of saxpy the ledger counts.
func saxpyLaunches(led *accounting.Ledger) int64 {
	for _, k := range led.Snapshot().Kernels {
		if k.Name == "saxpy" {
			return k.Launches
		}
	}
	return 0
}

// narrowPTX is a kernel with 1-, 2-byte and struct parameters, which
// writes them to out: c at byte 0, h at byte 2, the struct's second
// 8 bytes at byte 8.
const narrowPTX = `.version 7.8
.target sm_70
.address_size 64

.visible .entry narrow(
	.param .u8 narrow_c,
	.param .u16 narrow_h,
	.param .align 8 .b8 narrow_s[16],
	.param .u64 narrow_out
)
{
	.reg .b16 	%rs<3>;
	.reg .b64 	%rd<4>;

	ld.param.u8 	%rs1, [narrow_c];
	ld.param.u16 	%rs2, [narrow_h];
	ld.param.u64 	%rd1, [narrow_s+8];
	ld.param.u64 	%rd2, [narrow_out];
	cvta.to.global.u64 	%rd3, %rd2;
	st.global.u8 	[%rd3], %rs1;
	st.global.u16 	[%rd3+2], %rs2;
	st.global.u64 	[%rd3+8], %rd1;
	ret;
}
`

// TestNarrowAndStructArguments: U8, U16 and a Struct fill .u8, .u16 and
// `.align 8 .b8[16]` parameters; a Struct aligned to less than its
// parameter would start before the kernel reads it, and is refused.
func TestNarrowAndStructArguments(t *testing.T) {
	dev := testdev.Open(t)
	mod, err := kernel.Load(dev, narrowPTX)
	require.NoError(t, err)
	defer mod.Close()
	k, err := mod.Kernel("narrow")
	require.NoError(t, err)
	out, err := devarray.Empty(dev, devarray.Uint8, 16)
	require.NoError(t, err)
	defer out.Free()
	s := make([]byte, 16)
	binary.LittleEndian.PutUint64(s[8:], 0x0123456789abcdef)
	one := kernel.Grid1D(1, 1)
	require.NoError(t, k.Launch(one, kernel.U8(0xa5), kernel.U16(0xbeef), kernel.Struct(s, 8), kernel.Out(out)))
	got, err := devarray.ToHost[uint8](out)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xa5}, got[:1])
	assert.Equal(t, uint16(0xbeef), binary.LittleEndian.Uint16(got[2:]))
	assert.Equal(t, uint64(0x0123456789abcdef), binary.LittleEndian.Uint64(got[8:]))

	before := dev.Ledger().Current(accounting.Device)
	for _, tc := range []struct {
		name string
		args []kernel.Arg
		says string
	}{
		{"struct aligned to 4", []kernel.Arg{kernel.U8(1), kernel.U16(2), kernel.Struct(s, 4), kernel.Out(out)},
			"argument 3 (counting from 1) is Struct([]byte{"},
		{"struct of another size", []kernel.Arg{kernel.U8(1), kernel.U16(2), kernel.Struct(s[:12], 8), kernel.Out(out)},
			"where the kernel's parameter is .align 8 .b8[16]: 12 bytes for a 16-byte parameter"},
		{"I32 for a .u8", []kernel.Arg{kernel.I32(1), kernel.U16(2), kernel.Struct(s, 8), kernel.Out(out)},
			"argument 1 (counting from 1) is I32(1) where the kernel's parameter is .u8: 4 bytes for a 1-byte parameter"},
		{"an array for a struct", []kernel.Arg{kernel.U8(1), kernel.U16(2), kernel.In(out), kernel.Out(out)},
			"argument 3 (counting from 1) is In(DevArray(uint8 [16]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k.Launch(one, tc.args...)
			var ae *kernel.ArgumentError
			require.True(t, errors.As(err, &ae), "a *kernel.ArgumentError: %v", err)
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, before, dev.Ledger().Current(accounting.Device))
		})
	}
	err = k.Launch(one, kernel.U8(1), kernel.U16(2), kernel.Struct(s, 4), kernel.Out(out))
	assert.Contains(t, err.Error(), "its alignment, 4, places it at byte 4 of the parameters, and the kernel reads the parameter at byte 8")
}

// TestFatbinKernelsAreChecked: a fatbin's kernels are checked against the
// parameters of its PTX (package kernels' embedded module: axpy_f32 takes
// .u64, .align 8 .b8[144], .u64, .align 8 .b8[144], .f32).
func TestFatbinKernelsAreChecked(t *testing.T) {
	dev := testdev.Open(t)
	mod, err := kernel.Load(dev, kernels.Image())
	require.NoError(t, err)
	defer mod.Close()
	axpy, err := mod.Kernel("axpy_f32")
	require.NoError(t, err)
	x, err := devarray.FromHost(dev, countingFloats(64))
	require.NoError(t, err)
	defer x.Free()
	err = axpy.Launch(kernel.Grid1D(64, 64), kernel.InOut(x), kernel.In(x), kernel.In(x), kernel.In(x), kernel.F32(1))
	var ae *kernel.ArgumentError
	require.True(t, errors.As(err, &ae), "a *kernel.ArgumentError: %v", err)
	assert.Equal(t, 2, ae.Position)
	assert.Equal(t, ".align 8 .b8[144]", ae.Param)
	assert.Contains(t, err.Error(), "kernel: launch axpy_f32: argument 2 (counting from 1) is In(DevArray(float32 [64]")
}

// dimsPTX counts its threads into out[0] and writes %ntid and %nctaid
// to out[1..6].
const dimsPTX = `.version 7.8
.target sm_70
.address_size 64

.visible .entry dims(
	.param .u64 dims_out
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [dims_out];
	cvta.to.global.u64 	%rd2, %rd1;
	atom.global.add.u32 	%r1, [%rd2], 1;
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ctaid.x;
	or.b32 	%r4, %r2, %r3;
	setp.ne.s32 	%p1, %r4, 0;
	@%p1 bra 	$L__done;
	mov.u32 	%r5, %ntid.x;
	st.global.u32 	[%rd2+4], %r5;
	mov.u32 	%r6, %ntid.y;
	st.global.u32 	[%rd2+8], %r6;
	mov.u32 	%r7, %ntid.z;
	st.global.u32 	[%rd2+12], %r7;
	mov.u32 	%r8, %nctaid.x;
	st.global.u32 	[%rd2+16], %r8;
	mov.u32 	%r9, %nctaid.y;
	st.global.u32 	[%rd2+20], %r9;
	mov.u32 	%r9, %nctaid.z;
	st.global.u32 	[%rd2+24], %r9;
$L__done:
	ret;
}
`

// TestDim3LeftOutDimensionsAreOne: Dim3{256} is 256×1×1, as CUDA's dim3:
// a launch of Grid Dim3{3}, Block Dim3{256} runs 768 threads in blocks of
// 256×1×1 on a grid of 3×1×1; a grid whose x is 0 runs none.
func TestDim3LeftOutDimensionsAreOne(t *testing.T) {
	dev := testdev.Open(t)
	mod, err := kernel.Load(dev, dimsPTX)
	require.NoError(t, err)
	defer mod.Close()
	k, err := mod.Kernel("dims")
	require.NoError(t, err)
	out, err := devarray.FromHost(dev, make([]uint32, 7))
	require.NoError(t, err)
	defer out.Free()
	for _, tc := range []struct {
		cfg  kernel.Config
		want []uint32
	}{
		{kernel.Config{Grid: kernel.Dim3{1}, Block: kernel.Dim3{256}}, []uint32{256, 256, 1, 1, 1, 1, 1}},
		{kernel.Config{Grid: kernel.Dim3{3}, Block: kernel.Dim3{256}}, []uint32{768, 256, 1, 1, 3, 1, 1}},
		{kernel.Config{Grid: kernel.Dim3{2, 2}, Block: kernel.Dim3{16, 4}}, []uint32{256, 16, 4, 1, 2, 2, 1}},
		{kernel.Config{Grid: kernel.Dim3{0}, Block: kernel.Dim3{256}}, []uint32{0, 0, 0, 0, 0, 0, 0}},
		{kernel.Tiles2D(0, 5, 16, 16), []uint32{0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(fmt.Sprintf("grid %v block %v", tc.cfg.Grid, tc.cfg.Block), func(t *testing.T) {
			require.NoError(t, devarray.CopyFromHost(out, make([]uint32, 7)))
			require.NoError(t, k.Launch(tc.cfg, kernel.InOut(out)), "the kernel counts its threads with an atomic add into out: it reads it")
			got, err := devarray.ToHost[uint32](out)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "threads, ntid x y z, nctaid x y z")
		})
	}
	assert.Equal(t, "256×1×1", kernel.Dim3{256}.String())
	assert.Equal(t, [3]uint32{16, 16, 1}, kernel.Dim3{16, 16}.Dims())
	err = k.Launch(kernel.Config{Grid: kernel.Dim3{1}}, kernel.Out(out))
	assert.ErrorContains(t, err, "block 0×1×1 has no threads", "a block whose x is 0")
	err = k.Launch(kernel.Tiles2D(64, 64, 16, 0), kernel.Out(out))
	assert.ErrorContains(t, err, "has no threads", "a tile of no rows")
}

// TestArgPrintsAsItsCall: an Arg prints as the call that made it, and
// %#v as Go syntax.
func TestArgPrintsAsItsCall(t *testing.T) {
	for _, tc := range []struct {
		arg        kernel.Arg
		str, gostr string
	}{
		{kernel.F32(2.5), "F32(2.5)", "kernel.F32(2.5)"},
		{kernel.F64(-1e-300), "F64(-1e-300)", "kernel.F64(-1e-300)"},
		{kernel.F32(float32(math.Inf(1))), "F32(+Inf)", "kernel.F32(+Inf)"},
		{kernel.I8(-3), "I8(-3)", "kernel.I8(-3)"},
		{kernel.I16(-300), "I16(-300)", "kernel.I16(-300)"},
		{kernel.I32(-1961), "I32(-1961)", "kernel.I32(-1961)"},
		{kernel.I64(-1 << 40), "I64(-1099511627776)", "kernel.I64(-1099511627776)"},
		{kernel.U8(255), "U8(255)", "kernel.U8(255)"},
		{kernel.U16(65535), "U16(65535)", "kernel.U16(65535)"},
		{kernel.U32(1961), "U32(1961)", "kernel.U32(1961)"},
		{kernel.U64(0x7f3a00000000), "U64(0x7f3a00000000)", "kernel.U64(0x7f3a00000000)"},
		{kernel.Struct([]byte{1, 2, 3}, 4), "Struct([]byte{0x1, 0x2, 0x3}, 4)", "kernel.Struct([]byte{0x1, 0x2, 0x3}, 4)"},
		{kernel.Memory(0x7f3a00001000, 256, kernel.Read), "Memory(0x7f3a00001000, 256, Read)", "kernel.Memory(0x7f3a00001000, 256, kernel.Read)"},
		{kernel.Arg{}, "Arg{}", "kernel.Arg{}"},
	} {
		assert.Equal(t, tc.str, tc.arg.String())
		assert.Equal(t, tc.str, fmt.Sprint(tc.arg))
		assert.Equal(t, tc.gostr, fmt.Sprintf("%#v", tc.arg))
	}
	dev := testdev.Open(t)
	x, err := devarray.Empty(dev, devarray.BFloat16, 4)
	require.NoError(t, err)
	defer x.Free()
	a := kernel.InOut(x).Of(devarray.BFloat16).Contiguous()
	assert.Equal(t, "InOut("+x.String()+").Of(bfloat16).Contiguous()", a.String())
	assert.Equal(t, "kernel.InOut("+x.GoString()+").Of(devarray.BFloat16).Contiguous()", fmt.Sprintf("%#v", a))
}

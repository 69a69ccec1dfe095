package kernel_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// faultCase is a launch of one of testdata/faults.ptx's kernels that
// faults, or breaks its declarations, on sim and on the emulated driver:
// the error the launch returns names the kernel, the PTX line and the
// argument.
type faultCase struct {
	name   string
	kernel string
	instr  string // the PTX instruction, first of its kind in the kernel, whose line the error names
	sticky bool   // a fault (driver.ErrContextFailed), else a refusal (driver.ErrInvalidValue)
	code   string // the emulated driver's result
	want   []string
	launch func(t *testing.T, dev driver.Device, k *kernel.Kernel) error
}

// faultCases are the fault classes: an access past its allocation, a
// write to an In array, a read of an Out array before the launch wrote
// it, an access outside a declared view inside its allocation, a
// misaligned access and a barrier part of a block never reaches (which
// has no argument to name).
func faultCases() []faultCase {
	return []faultCase{
		{name: "out of bounds", kernel: "scale_past_end", instr: "ld.global.f32", sticky: true, code: "CUDA_ERROR_ILLEGAL_ADDRESS",
			want: []string{"illegal address", "nearest declared array argument 1 (InOut)", "4 bytes past its end"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 64 * (1 + rand.IntN(8))
				x := fromHost(t, dev, n)
				return k.Launch(kernel.Grid1D(int64(n)+1, 32), kernel.InOut(x), kernel.F32(2), kernel.I32(int32(n)))
			}},
		{name: "write to an In array", kernel: "add_into_input", instr: "st.global.u32", code: "CUDA_ERROR_INVALID_VALUE",
			want: []string{"write to read-only memory", "in argument 1 (In): the array is declared read-only"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				x, y := fromHost(t, dev, n), fromHost(t, dev, n)
				return k.Launch(kernel.Grid1D(int64(n), 32), kernel.In(x), kernel.InOut(y), kernel.I32(int32(n)))
			}},
		{name: "write to an In array on a stream", kernel: "add_into_input", instr: "st.global.u32", code: "CUDA_ERROR_INVALID_VALUE",
			want: []string{"write to read-only memory", "in argument 1 (In): the array is declared read-only"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				x, y := fromHost(t, dev, n), fromHost(t, dev, n)
				s, err := dev.NewStream()
				require.NoError(t, err)
				defer s.Close()
				op, err := k.LaunchAsync(s, kernel.Grid1D(int64(n), 32), kernel.In(x), kernel.InOut(y), kernel.I32(int32(n)))
				if err != nil {
					return err
				}
				return op.Wait()
			}},
		{name: "read of an Out array before the launch wrote it", kernel: "scale_past_end", instr: "ld.global.f32", code: "CUDA_ERROR_INVALID_VALUE",
			want: []string{"read of an Out array's unwritten bytes", "in argument 1 (Out)", "declared Out (written before it is read)"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				x := fromHost(t, dev, n+1)
				return k.Launch(kernel.Grid1D(int64(n), 32), kernel.Out(x), kernel.F32(2), kernel.I32(int32(n)))
			}},
		{name: "outside the declared extent", kernel: "scale_past_end", instr: "ld.global.f32", code: "CUDA_ERROR_INVALID_VALUE",
			want: []string{"access outside the declared array", "nearest declared array argument 1 (InOut)", "4 bytes past its end"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				whole := fromHost(t, dev, n+1+rand.IntN(8))
				x, err := whole.Slice(0, 0, n)
				require.NoError(t, err)
				return k.Launch(kernel.Grid1D(int64(n)+1, 32), kernel.InOut(x), kernel.F32(2), kernel.I32(int32(n)))
			}},
		{name: "misaligned", kernel: "load_misaligned", instr: "ld.global.f32", sticky: true, code: "CUDA_ERROR_MISALIGNED_ADDRESS",
			want: []string{"misaligned address", "in argument 1 (In)"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				x, y := fromHost(t, dev, n+1), fromHost(t, dev, n)
				return k.Launch(kernel.Grid1D(int64(n), 32), kernel.In(x), kernel.Out(y), kernel.I32(int32(n)))
			}},
		{name: "barrier hang", kernel: "hang_at_barrier", instr: "bar.sync 1", sticky: true, code: "CUDA_ERROR_LAUNCH_TIMEOUT",
			want: []string{"barrier hang", "threads have exited without reaching it"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 1 + rand.IntN(300)
				x := fromHost(t, dev, n)
				return k.Launch(kernel.Grid1D(int64(n), 64), kernel.Out(x), kernel.I32(int32(n)))
			}},
		// A kernel that runs from mapped memory into the rest of its
		// reservation, where nothing is mapped: an illegal address.
		{name: "reserved, not mapped", kernel: "fill", instr: "st.global.f32", sticky: true, code: "CUDA_ERROR_ILLEGAL_ADDRESS",
			want: []string{"illegal address"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 64 * (1 + rand.IntN(4))
				x := virtualFloats(t, dev, n, true)
				return k.Launch(kernel.Grid1D(int64(2*n), 32), kernel.Out(x), kernel.F32(2), kernel.I32(int32(2*n)))
			}},
		// "Please note calling cuMemMap does not make the address
		// accessible, the caller needs to update accessibility of a
		// contiguous mapped VA range by calling cuMemSetAccess." (cuMemMap)
		{name: "mapped, access not set", kernel: "fill", instr: "st.global.f32", sticky: true, code: "CUDA_ERROR_ILLEGAL_ADDRESS",
			want: []string{"illegal address"},
			launch: func(t *testing.T, dev driver.Device, k *kernel.Kernel) error {
				n := 64 * (1 + rand.IntN(4))
				x := virtualFloats(t, dev, n, false)
				return k.Launch(kernel.Grid1D(int64(2*n), 32), kernel.Out(x), kernel.F32(2), kernel.I32(int32(2*n)))
			}},
	}
}

// virtualFloats returns an array of 2n floats in a reservation of two
// granules whose first one is mapped: the array's first n floats are the
// last of the mapped granule, readable and writable when access is true;
// the other n lie in the second granule, where nothing is mapped. The
// test's cleanup gives everything back (which fails, and is let go, once
// the device has faulted).
func virtualFloats(t *testing.T, dev driver.Device, n int, access bool) *devarray.DevArray {
	t.Helper()
	g, err := dev.MemGranularity()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
	require.NoError(t, err)
	p, err := dev.ReserveAddress(2*g.Minimum, 0)
	require.NoError(t, err)
	t.Cleanup(func() { dev.FreeAddress(p, 2*g.Minimum) })
	h, err := dev.CreatePhysical(g.Minimum)
	require.NoError(t, err)
	require.NoError(t, dev.MapMemory(p, g.Minimum, 0, h))
	t.Cleanup(func() { dev.UnmapMemory(p, g.Minimum) })
	require.NoError(t, dev.ReleasePhysical(h)) // freed at the unmap
	if access {
		require.NoError(t, dev.SetAccess(p, g.Minimum, true))
	}
	at := p + devarray.Ptr(g.Minimum) - devarray.Ptr(4*n)
	x, err := devarray.Wrap(dev, devarray.Descriptor{Ptr: at, Shape: []int{2 * n}, DType: devarray.Float32, Device: dev.DeviceID()},
		devarray.WithBounds(p, 2*g.Minimum))
	require.NoError(t, err)
	return x
}

// fromHost copies n fresh random floats to dev, freed by the test's
// cleanup (which fails once the device has faulted, as on a GPU).
func fromHost(t *testing.T, dev driver.Device, n int) *devarray.DevArray {
	t.Helper()
	a, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	return a
}

// check runs the case on dev and checks the error it returns; onGPU says
// the device is the cuda backend (on the emulated driver), whose errors
// carry the driver's result too.
func (tc faultCase) check(t *testing.T, dev driver.Device, onGPU bool) {
	t.Helper()
	k, text := faultyKernel(t, dev, tc.kernel)
	err := tc.launch(t, dev, k)
	require.Error(t, err)
	t.Logf("the error: %v", err)
	if tc.sticky {
		assert.ErrorIs(t, err, driver.ErrContextFailed)
	} else {
		assert.ErrorIs(t, err, driver.ErrInvalidValue)
		assert.False(t, errors.Is(err, driver.ErrContextFailed), "a refusal is not sticky")
	}
	want := append([]string{fmt.Sprintf("ptx: %s: ", tc.kernel), fmt.Sprintf(" at line %d, block ", ptxLine(t, text, tc.kernel, tc.instr))}, tc.want...)
	if onGPU {
		want = append(want, tc.code)
	}
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
}

package kernel_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// openSim opens a sim device of its own, closed by the test's cleanup,
// which checks that the test freed what it allocated, unless the device
// faults: then, as on a GPU, nothing can be freed until it closes.
func openSim(t *testing.T, cfg sim.Config) *sim.Device {
	t.Helper()
	cfg.Memory = 16 << 20
	dev, err := sim.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if !t.Failed() && !faulted(dev) {
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "device bytes left allocated")
		}
		dev.Close()
	})
	return dev
}

// faulted reports whether dev's context has failed (a sticky fault).
func faulted(dev *sim.Device) bool {
	_, _, err := dev.MemInfo()
	return errors.Is(err, driver.ErrContextFailed)
}

// faultyKernel loads testdata/faults.ptx on dev and returns its kernel
// name, and the module's PTX text.
func faultyKernel(t *testing.T, dev driver.Device, name string) (*kernel.Kernel, string) {
	t.Helper()
	return loadKernel(t, dev, faultsPTX, name), readPTX(t, faultsPTX)
}

// TestOutOfBoundsWriteNamesKernelAndLine: a kernel that writes one
// element past its array faults sim as an illegal address faults a GPU
// (sticky), and the error names the kernel, its PTX line and the thread.
func TestOutOfBoundsWriteNamesKernelAndLine(t *testing.T) {
	for _, n := range []int{63, 64, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dev := openSim(t, sim.Config{})
			k, text := faultyKernel(t, dev, "scale_past_end")
			x, err := devarray.FromHost(dev, randomFloats(n))
			require.NoError(t, err)
			defer x.Free()
			err = k.Launch(kernel.Grid1D(int64(n)+1, 32), kernel.InOut(x), kernel.F32(2), kernel.I32(int32(n)))
			require.ErrorIs(t, err, driver.ErrContextFailed)
			line := ptxLine(t, text, "scale_past_end", "ld.global.f32")
			assert.Contains(t, err.Error(), fmt.Sprintf("scale_past_end: illegal address at line %d", line))
			assert.Contains(t, err.Error(), fmt.Sprintf("thread (%d,0,0)", n%32))
		})
	}
}

// TestWriteToInArrayNamesKernelAndLine: a kernel that writes an array its
// launch declared In is stopped on sim, with an error naming the kernel,
// the PTX line of the store and the argument; declared InOut, it runs.
func TestWriteToInArrayNamesKernelAndLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared func(*devarray.DevArray) kernel.Arg
		fails    bool
	}{
		{"In", kernel.In, true},
		{"InOut", kernel.InOut, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := openSim(t, sim.Config{})
			k, text := faultyKernel(t, dev, "add_into_input")
			const n = 96
			x, err := devarray.FromHost(dev, randomFloats(n))
			require.NoError(t, err)
			defer x.Free()
			y, err := devarray.FromHost(dev, randomFloats(n))
			require.NoError(t, err)
			defer y.Free()
			err = k.Launch(kernel.Grid1D(n, 32), tc.declared(x), kernel.InOut(y), kernel.I32(n))
			if !tc.fails {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, driver.ErrInvalidValue)
			line := ptxLine(t, text, "add_into_input", "st.global.u32")
			assert.Contains(t, err.Error(), fmt.Sprintf("add_into_input: write to read-only memory at line %d", line))
			assert.Contains(t, err.Error(), "in argument 1 (In): the array is declared read-only")
			// Not sticky: a GPU would have let the write pass.
			require.NoError(t, k.Launch(kernel.Grid1D(n, 32), kernel.InOut(x), kernel.InOut(y), kernel.I32(n)))
		})
	}
}

// TestRaceWithCopyOnAnotherStreamNamesKernelAndLine: a kernel that writes
// an array while a copy on another stream reads it, with nothing ordering
// the two, is refused by sim's stream race checker, which names the
// kernel and the PTX line that touches the racing bytes.
func TestRaceWithCopyOnAnotherStreamNamesKernelAndLine(t *testing.T) {
	dev := openSim(t, sim.Config{CheckStreams: true, Latency: 20 * time.Millisecond})
	k, text := faultyKernel(t, dev, "fill")
	const n = 256
	x, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	defer x.Free()
	y, err := devarray.Empty(dev, devarray.Float32, n)
	require.NoError(t, err)
	defer y.Free()
	copying, err := dev.NewStream()
	require.NoError(t, err)
	defer copying.Close()
	filling, err := dev.NewStream()
	require.NoError(t, err)
	defer filling.Close()
	require.NoError(t, copying.CopyDtoDAsync(y.Ptr(), x.Ptr(), x.NBytes()))
	_, err = k.LaunchAsync(filling, kernel.Grid1D(n, 64), kernel.Out(x), kernel.F32(1.5), kernel.I32(n))
	require.ErrorIs(t, err, driver.ErrStreamRace)
	var race *sim.StreamRaceError
	require.True(t, errors.As(err, &race))
	assert.Equal(t, "kernel fill", race.Op.Kind)
	line := ptxLine(t, text, "fill", "st.global.f32")
	assert.Contains(t, err.Error(), fmt.Sprintf("kernel fill first writes them at PTX line %d", line))
	require.NoError(t, copying.Synchronize())
	// Ordered by an event, the same launch is no race.
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, copying.CopyDtoDAsync(y.Ptr(), x.Ptr(), x.NBytes()))
	require.NoError(t, copying.Record(ev))
	require.NoError(t, filling.WaitEvent(ev))
	op, err := k.LaunchAsync(filling, kernel.Grid1D(n, 64), kernel.Out(x), kernel.F32(1.5), kernel.I32(n))
	require.NoError(t, err)
	require.NoError(t, op.Wait())
}

// TestUseAfterAsyncFreeNamesKernelAndLine: a kernel queued on another
// stream after the stream-ordered free of the memory it writes is refused
// by sim's stream race checker as a use after free ("The allocation must
// not be accessed after stream execution reaches the free.",
// cuMemFreeAsync); the report names the kernel, its PTX line, and the
// free. Queued before the free, and ordered before it by an event, the
// same launch is no race.
func TestUseAfterAsyncFreeNamesKernelAndLine(t *testing.T) {
	const n = 256
	for _, tc := range []struct {
		name     string
		afterUse bool // the free is queued after the kernel, and waits for it
	}{{"after the free", false}, {"before the free", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dev := openSim(t, sim.Config{CheckStreams: true, Latency: time.Millisecond})
			k, text := faultyKernel(t, dev, "fill")
			var streams [2]driver.Stream
			for i := range streams {
				s, err := dev.NewStream()
				require.NoError(t, err)
				defer s.Close()
				streams[i] = s
			}
			freeing, filling := streams[0], streams[1]
			allocated, used := newEvent(t, dev), newEvent(t, dev)
			p, err := freeing.MallocAsync(n * 4)
			require.NoError(t, err)
			require.NoError(t, freeing.Record(allocated))
			require.NoError(t, filling.WaitEvent(allocated))
			launch := func() error {
				_, err := k.LaunchAsync(filling, kernel.Grid1D(n, 64), kernel.Memory(p, n*4, kernel.Write), kernel.F32(2.5), kernel.I32(n))
				return err
			}
			if tc.afterUse {
				require.NoError(t, launch())
				require.NoError(t, filling.Record(used))
				require.NoError(t, freeing.WaitEvent(used))
				require.NoError(t, freeing.FreeAsync(p))
				require.NoError(t, dev.Synchronize())
				return
			}
			require.NoError(t, freeing.FreeAsync(p))
			err = launch()
			require.ErrorIs(t, err, driver.ErrStreamRace)
			var race *sim.StreamRaceError
			require.True(t, errors.As(err, &race))
			assert.Equal(t, sim.UseAfterFree, race.Rule)
			assert.Equal(t, "kernel fill", race.Op.Kind)
			assert.Equal(t, fmt.Sprintf("stream %#x", filling.Handle()), race.Op.Stream)
			assert.Equal(t, "free async", race.Prev.Kind)
			assert.Equal(t, fmt.Sprintf("stream %#x", freeing.Handle()), race.Prev.Stream)
			line := ptxLine(t, text, "fill", "st.global.f32")
			assert.Contains(t, err.Error(), fmt.Sprintf("kernel fill first writes them at PTX line %d", line))
			assert.Contains(t, err.Error(), "use after free")
			require.NoError(t, dev.Synchronize())
		})
	}
}

// newEvent returns an event of dev, closed by the test's cleanup.
func newEvent(t *testing.T, dev driver.Device) driver.Event {
	t.Helper()
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	t.Cleanup(func() { ev.Close() })
	return ev
}

// TestLedgerCountsLaunchesPerKernel: the ledger counts each kernel's
// launches and, on sim, the bytes it read and wrote.
func TestLedgerCountsLaunchesPerKernel(t *testing.T) {
	dev := openSim(t, sim.Config{})
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	for _, tc := range []struct{ n, launches int }{{100, 1}, {1000, 3}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			x, err := devarray.FromHost(dev, randomFloats(tc.n))
			require.NoError(t, err)
			defer x.Free()
			y, err := devarray.FromHost(dev, randomFloats(tc.n))
			require.NoError(t, err)
			defer y.Free()
			before := dev.Ledger().Snapshot()
			for range tc.launches {
				require.NoError(t, saxpy.Launch(kernel.Grid1D(int64(tc.n), 128), kernel.F32(0.5), kernel.In(x), kernel.InOut(y), kernel.I32(int32(tc.n))))
			}
			d := accounting.Diff(before, dev.Ledger().Snapshot())
			require.Len(t, d.Kernels, 1)
			want := accounting.KernelStats{Name: "saxpy", Launches: int64(tc.launches), Measured: int64(tc.launches),
				Read: int64(tc.launches * tc.n * 8), Written: int64(tc.launches * tc.n * 4)}
			assert.Equal(t, want, d.Kernels[0])
		})
	}
	assert.Contains(t, dev.Ledger().Report(), "saxpy")
}

// TestLaunchAsyncKeepsArraysUntilDone: the arrays of a queued launch stay
// allocated until it is done, though their owner frees them at once.
func TestLaunchAsyncKeepsArraysUntilDone(t *testing.T) {
	dev := openSim(t, sim.Config{Latency: 50 * time.Millisecond})
	saxpy := loadKernel(t, dev, saxpyPTX, "saxpy")
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 512
	x, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	y, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	op, err := saxpy.LaunchAsync(s, kernel.Grid1D(n, 128), kernel.F32(3), kernel.In(x), kernel.InOut(y), kernel.I32(n))
	require.NoError(t, err)
	require.NoError(t, x.Free())
	require.NoError(t, y.Free())
	done, err := op.Done()
	require.NoError(t, err)
	if !done {
		assert.Equal(t, int64(2*accounting.AllocBytes(n*4)), dev.Ledger().Current(accounting.Device), "freed while queued")
	}
	require.NoError(t, op.Wait())
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

// TestKernelHandedTheHostPointerOfRegisteredMemoryFaults: registered
// memory has a device address of its own on sim (unified addressing's
// exception); a kernel writing it through its DevPtr reaches the bytes,
// and one handed the host pointer faults, as it may on a GPU.
func TestKernelHandedTheHostPointerOfRegisteredMemoryFaults(t *testing.T) {
	const n = 256
	for _, tc := range []struct {
		name   string
		ptr    func(h *driver.HostMem) devarray.Ptr
		faults bool
	}{
		{"DevPtr", func(h *driver.HostMem) devarray.Ptr { return h.DevPtr }, false},
		{"host pointer", func(h *driver.HostMem) devarray.Ptr {
			return devarray.Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(h.Bytes))))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := openSim(t, sim.Config{})
			k, _ := faultyKernel(t, dev, "fill")
			buf := make([]byte, 4*n)
			copy(buf, testdev.RandomBytes(len(buf)))
			h, err := dev.Register(buf, driver.Mapped)
			require.NoError(t, err)
			err = k.Launch(kernel.Grid1D(n, 64), kernel.Memory(tc.ptr(h), 4*n, kernel.Write), kernel.F32(2.5), kernel.I32(n))
			if tc.faults {
				require.ErrorIs(t, err, driver.ErrContextFailed)
				assert.Contains(t, err.Error(), "fill: illegal address")
				return
			}
			require.NoError(t, err)
			require.NoError(t, dev.Unregister(h))
			for i := 0; i < n; i++ {
				require.Equal(t, float32(2.5), math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
			}
		})
	}
}

// TestFaultsNameKernelLineAndArgument: on sim, the error of a launch that
// faults or breaks its declarations names the kernel, the PTX line, the
// thread and the argument (see faultCases), with one prefix per layer.
func TestFaultsNameKernelLineAndArgument(t *testing.T) {
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			dev := openSim(t, sim.Config{})
			tc.check(t, dev, false)
		})
	}
}

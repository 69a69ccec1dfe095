package plan_test

import (
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// TestFaultVerify sweeps a sticky device fault (sim's FailFault: an
// illegal address on a GPU) over every device operation of Verify for
// each built-in method, with latency 0 and 1 ms: Verify returns within the
// deadline, fails with ErrContextFailed (not an estimate out of bounds or
// an out of memory) when the device faulted, and frees what it can; the
// device's Close then leaves the ledger at zero. After the fault,
// ForDevice says the device failed rather than planning on a broken one.
func TestFaultVerify(t *testing.T) {
	for _, c := range []plan.Case{
		{Method: plan.Identity, Shape: [3]int{5, 7, 9}, DType: devarray.Float32},
		{Method: kernels.ScaleMethod, Shape: [3]int{4, 6, 8}, SliceDim: 1, DType: devarray.Float64, Params: plan.Params{"factor": 3}},
		{Method: kernels.TransposeMethod, Shape: [3]int{3, 5, 7}, DType: devarray.Float32},
		{Method: kernels.FilterMethod, Shape: [3]int{3, 10, 16}, DType: devarray.Float32},
		{Method: kernels.BackprojectMethod, Shape: [3]int{2, 10, 12}, DType: devarray.Float32, Params: plan.Params{"size": 12}},
		{Method: kernels.ReconstructMethod, Shape: [3]int{2, 10, 12}, DType: devarray.Float32, Params: plan.Params{"size": 12}},
		{Method: kernels.ProjectMethod, Shape: [3]int{2, 12, 12}, DType: devarray.Float32, Params: plan.Params{"angles": 10}},
	} {
		for _, latency := range []time.Duration{0, time.Millisecond} {
			t.Run(fmt.Sprintf("%s/%v", c.Method.Name(), latency), func(t *testing.T) {
				for n := int64(1); ; n++ {
					require.Less(t, n, int64(200), "Verify never ran without a fault")
					if !verifyFault(t, c, latency, n) {
						t.Logf("%d device operations, the fault at each", n-1)
						return
					}
				}
			})
		}
	}
}

// verifyFault runs Verify with the nth device operation faulting; it
// reports whether the device faulted.
func verifyFault(t *testing.T, c plan.Case, latency time.Duration, n int64) bool {
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: 64 << 20, Latency: latency, FailFault: n})
	require.NoError(t, err)
	var res plan.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = plan.Verify(dev, c)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("fault=%d: Verify did not return within 10 s\n%s", n, b.String())
	}
	faulted := dev.Fault() != nil
	if faulted {
		assert.ErrorIs(t, err, device.ErrContextFailed, "fault=%d: Verify says the device failed", n)
		assert.NotErrorIs(t, err, plan.ErrEstimate, "fault=%d: not an estimate out of bounds", n)
		_, perr := plan.ForDevice(dev, c.Method, c.Shape, c.SliceDim, c.DType, c.Params)
		assert.ErrorIs(t, perr, device.ErrContextFailed, "fault=%d: ForDevice on a faulted device", n)
	} else {
		assert.NoError(t, err, "fault=%d: no fault: %v", n, res)
	}
	require.NoError(t, dev.Close())
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.Registered} {
		assert.Zero(t, snap.Kinds[k].Current, "fault=%d: %v bytes after Close", n, k)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fault=%d: goroutines left running", n)
	return faulted
}

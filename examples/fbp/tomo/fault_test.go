package tomo_test

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/faultsweep"
	"github.com/cuarray/cuarray/transfer"
)

// faultedDevice is a sim device whose nth copy, memset or kernel faults.
type faultedDevice interface {
	device.Device
	Fault() error
}

// TestFaultReconstruct sweeps a sticky fault (sim's fail-fault, CUDA's
// illegal address) over every device operation of a reconstruction:
// pipelined (resident, 2 and 3 chunks in flight; the copier's paths, the
// staged, registered and direct ones; in managed memory), unpipelined
// resident, staged, with
// latency 0 and 1 ms. Every run returns within the deadline; a run that
// hit the fault returns an error wrapping ErrContextFailed and no result;
// a run that returns a result has the fault-free run's bits; Progress is
// told only of chunks that were done, in order; after the device's Close
// its ledger is back to zero and no goroutine is left.
func TestFaultReconstruct(t *testing.T) {
	g := tomo.Geometry{Size: 12, Angles: 10, Slices: 7}
	sino := randomSinograms(g)
	both := []string{"", "&latency=1ms"}
	for _, tc := range []struct {
		mode      tomo.Mode
		opt       tomo.Options
		latencies []string
	}{
		{tomo.Resident, tomo.Options{Streams: 2}, both},
		{tomo.Resident, tomo.Options{Streams: 3, Path: transfer.PathStaged}, both},
		{tomo.Resident, tomo.Options{Streams: 2, Path: transfer.PathRegistered}, []string{"&latency=1ms"}},
		{tomo.Resident, tomo.Options{Streams: 2, Path: transfer.PathDirect}, []string{"&latency=1ms"}},
		{tomo.Resident, tomo.Options{Streams: 1}, both},
		{tomo.Resident, tomo.Options{Streams: 2, Memory: tomo.ManagedMemory}, both},
		{tomo.Staged, tomo.Options{Path: transfer.PathStaged}, both},
	} {
		for _, latency := range tc.latencies {
			name := fmt.Sprintf("%s/%d/%v/%s/%s", tc.mode, tc.opt.Streams, tc.opt.Path, cmp.Or(tc.opt.Memory, tomo.DeviceMemory), strings.TrimPrefix(latency, "&"))
			t.Run(name, func(t *testing.T) {
				base := openSim(t, latency, g, 2, max(tc.opt.Streams, 1))
				want, err := tomo.ReconstructWith(base, g, sino, tc.mode, tc.opt)
				require.NoError(t, err)
				require.Greater(t, len(want.Plan.Chunks), 2, "several chunks")
				for n := 1; ; n++ {
					require.Less(t, n, 2000, "the run never ran without a fault")
					if !reconstructFault(t, g, sino, tc.mode, tc.opt, latency, n, want.Volume) {
						t.Logf("%d device operations, the fault at each", n-1)
						break
					}
				}
			})
		}
	}
}

// reconstructFault runs one reconstruction with the nth device operation
// faulting; it reports whether the device faulted.
func reconstructFault(t *testing.T, g tomo.Geometry, sino []float32, mode tomo.Mode, opt tomo.Options, latency string, n int, want []float32) bool {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	d, err := device.Open(fmt.Sprintf("sim:0?mem=64MiB&fail-fault=%d%s", n, latency))
	require.NoError(t, err)
	dev := d.(faultedDevice)
	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, limitForChunks(t, dev, g, 2, max(opt.Streams, 1))))
	var reported []int
	opt.Progress = func(_ string, done, total int) {
		assert.Equal(t, g.Slices, total)
		reported = append(reported, done)
	}
	var res *tomo.Result
	faultsweep.Within(t, fmt.Sprintf("fail-fault=%d: the run", n), func() {
		res, err = tomo.ReconstructWith(dev, g, sino, mode, opt)
	})
	faulted := dev.Fault() != nil
	if faulted {
		require.Error(t, err, "fail-fault=%d: the run hit the fault and returned a result", n)
		assert.ErrorIs(t, err, device.ErrContextFailed, "fail-fault=%d: the error says the context failed", n)
		assert.Nil(t, res, "fail-fault=%d: no result from a failed run", n)
	} else if assert.NoError(t, err, "fail-fault=%d: no fault, no error", n) {
		assert.Equal(t, want, res.Volume, "fail-fault=%d: the fault-free bits", n)
		assert.Equal(t, g.Slices, reported[len(reported)-1])
	}
	for i := 1; i < len(reported); i++ {
		assert.Greater(t, reported[i], reported[i-1], "fail-fault=%d: progress in order", n)
	}
	faultsweep.Within(t, fmt.Sprintf("fail-fault=%d: Close", n), func() {
		assert.NoError(t, dev.Close(), "fail-fault=%d: Close", n)
	})
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Managed, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
		assert.Zero(t, snap.Kinds[k].Current, "fail-fault=%d: %v bytes after Close", n, k)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fail-fault=%d: goroutines left running", n) {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Log(b.String())
	}
	return faulted
}

// TestFaultAcquire sweeps the fault over an acquisition (projection on the
// device): every run returns, fails with ErrContextFailed or gives the
// fault-free scan, and Close frees everything.
func TestFaultAcquire(t *testing.T) {
	g := tomo.Geometry{Size: 12, Angles: 10, Slices: 5}
	for _, latency := range []string{"", "&latency=1ms"} {
		t.Run(strings.TrimPrefix(latency, "&"), func(t *testing.T) {
			base, err := device.Open("sim:0?mem=64MiB" + latency)
			require.NoError(t, err)
			want, err := tomo.Acquire(base, g, nil)
			require.NoError(t, err)
			require.NoError(t, base.Close())
			for n := 1; ; n++ {
				require.Less(t, n, 2000, "the run never ran without a fault")
				d, err := device.Open(fmt.Sprintf("sim:0?mem=64MiB&fail-fault=%d%s", n, latency))
				require.NoError(t, err)
				dev := d.(faultedDevice)
				var scan *tomo.Scan
				faultsweep.Within(t, fmt.Sprintf("fail-fault=%d: Acquire", n), func() { scan, err = tomo.Acquire(dev, g, nil) })
				faulted := dev.Fault() != nil
				if faulted {
					assert.ErrorIs(t, err, device.ErrContextFailed, "fail-fault=%d", n)
					assert.Nil(t, scan, "fail-fault=%d", n)
				} else if assert.NoError(t, err) {
					assert.Equal(t, want.Sinograms, scan.Sinograms)
				}
				assert.NoError(t, dev.Close())
				assert.Zero(t, dev.Ledger().Current(accounting.Device), "fail-fault=%d: device bytes after Close", n)
				if !faulted {
					break
				}
			}
		})
	}
}

package main

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
)

// TestFaultRun sweeps a sticky device fault (fail-fault=N: CUDA's illegal
// address) over every device operation of the main job (make run's fbp:
// acquire, then a resident and a staged reconstruction in several chunks),
// with latency 0 and 1 ms: every run exits within 30 s; a run whose device
// faulted exits 1 with one line on stderr that says so and prints no
// report; one that exits 0 did not fault; the device ends closed with its
// ledger at zero.
func TestFaultRun(t *testing.T) {
	args := []string{"-mode", "both", "-size", "16", "-angles", "12", "-slices", "6", "-mem", "64KiB", "-q"}
	for _, latency := range []string{"", "&latency=1ms"} {
		t.Run(strings.TrimPrefix(latency, "&"), func(t *testing.T) {
			for n := 1; ; n++ {
				require.Less(t, n, 1000, "the run never ran without a fault")
				var dev device.Device
				saved := opened
				opened = func(d device.Device) { dev = d }
				var out, errb bytes.Buffer
				done := make(chan int, 1)
				go func() {
					done <- run(append(args, "-device", fmt.Sprintf("sim:0?fail-fault=%d%s", n, latency)), &out, &errb)
				}()
				var code int
				select {
				case code = <-done:
				case <-time.After(30 * time.Second):
					var b strings.Builder
					_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
					t.Fatalf("fail-fault=%d: fbp did not exit within 30 s\n%s", n, b.String())
				}
				opened = saved
				require.NotNil(t, dev, "fail-fault=%d: the run opened its device", n)
				snap := dev.Ledger().Snapshot()
				for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
					assert.Zero(t, snap.Kinds[k].Current, "fail-fault=%d: %v bytes after the run", n, k)
				}
				if dev.(interface{ Fault() error }).Fault() == nil {
					assert.Equal(t, 0, code, "fail-fault=%d: no fault: %s", n, errb.String())
					t.Logf("%d device operations, the fault at each", n-1)
					return
				}
				assert.Equal(t, 1, code, "fail-fault=%d: the device faulted: exit 1", n)
				assert.Empty(t, out.String(), "fail-fault=%d: no report from a run that faulted", n)
				lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
				assert.Len(t, lines, 1, "fail-fault=%d: one line on stderr: %q", n, errb.String())
				assert.Contains(t, lines[0], "unrecoverable fault", "fail-fault=%d", n)
			}
		})
	}
}

package accounting_test

import (
	"bytes"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
)

// Ledgers, scopes, workspaces, recordings, snapshots and logs print in a
// line on the default sim device (4 GiB), however many events they
// counted, while open and once closed.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	led := dev.Ledger()
	require.NoError(t, led.SetLimit(accounting.Pinned, 1<<30))
	var logBuf bytes.Buffer
	rec, err := led.Record(&logBuf)
	require.NoError(t, err)
	scope := led.Push("format")
	ws := accounting.NewWorkspace(dev)
	_, release, err := ws.Borrow(1 << 20)
	require.NoError(t, err)

	// Many allocations and copies: a log of thousands of events.
	data := make([]float32, 1024)
	for i := range data {
		data[i] = rand.Float32()
	}
	var arrays []*devarray.DevArray
	for range 2000 {
		a, err := devarray.FromHost(dev, data)
		require.NoError(t, err)
		arrays = append(arrays, a)
	}
	before := led.Snapshot()
	for _, a := range arrays {
		require.NoError(t, a.Free())
	}
	snap := led.Snapshot()
	_, err = devarray.Empty(dev, devarray.Float32, 1<<40)
	var oom *accounting.OutOfMemoryError
	require.ErrorAs(t, err, &oom)

	type value struct {
		name string
		v    any
		want []string // in %v
	}
	check := func(t *testing.T, values []value) {
		for _, tc := range values {
			t.Run(tc.name, func(t *testing.T) {
				out := fmtcheck.Bounded(t, tc.v)
				for _, w := range tc.want {
					assert.Contains(t, out["%v"], w)
				}
			})
		}
	}
	t.Run("open", func(t *testing.T) {
		check(t, []value{
			{"device ledger", led, []string{"ledger sim:0", "device 1.00 MiB", "limit 1.00 GiB"}},
			{"new ledger", accounting.NewLedger("x"), []string{"ledger x: nothing allocated"}},
			{"zero ledger", &accounting.Ledger{}, []string{"nothing allocated"}},
			{"nil ledger", (*accounting.Ledger)(nil), []string{"<nil>"}},
			{"snapshot", snap, []string{"sim:0: device 1.00 MiB", "HtoD 7.81 MiB in 2000 copies"}},
			{"diff", accounting.Diff(before, snap), []string{"sim:0"}},
			{"zero snapshot", accounting.Snapshot{}, []string{"nothing counted"}},
			{"scope", scope, []string{`scope "format" of sim:0 (open`}},
			{"workspace", ws, []string{"workspace 1.00 MiB at 0x", "borrowed"}},
			{"zero workspace", &accounting.Workspace{}, []string{"workspace empty on no device"}},
			{"recording", rec, []string{"recording of sim:0"}},
			{"zero recording", &accounting.Recording{}, []string{"<nil>"}},
			{"out of memory", oom, []string{"out of memory"}},
			{"size query", accounting.SizeIncreased, nil},
		})
	})

	release()
	require.NoError(t, ws.Free())
	_, err = scope.Pop()
	require.NoError(t, err)
	require.NoError(t, rec.Close())
	log, err := accounting.ReadLog(bytes.NewReader(logBuf.Bytes()))
	require.NoError(t, err)
	require.Greater(t, len(log.Events), 4000, "an allocation and a free for each array")
	t.Run("closed", func(t *testing.T) {
		check(t, []value{
			{"scope", scope, []string{"popped"}},
			{"workspace", ws, []string{"workspace empty on sim:0"}},
			{"recording", rec, []string{"(closed)", "events"}},
			{"log", log, []string{"log of sim:0", "events"}},
		})
	})
	require.NoError(t, dev.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{
			{"ledger", led, []string{"ledger sim:0"}},
			{"workspace", ws, []string{"sim:0"}},
		})
	})
}

// A snapshot's GoString is Go syntax that leaves out the zero counters.
func TestSnapshotGoString(t *testing.T) {
	led := accounting.NewLedger("sim:0")
	require.NoError(t, led.Alloc(accounting.Device, 0x1000, 4096))
	led.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, 0)
	s := led.Snapshot()
	g := s.GoString()
	assert.Contains(t, g, `accounting.Snapshot{Name:"sim:0", Taken:time.Date(`)
	assert.Contains(t, g, "Kinds:[11]accounting.KindStats{0:accounting.KindStats{Current:4096, Peak:4096, Allocs:1,")
	assert.Contains(t, g, "Copies:[6][13]accounting.CopyStats{0:{1:accounting.CopyStats{Count:1, Bytes:4096, Seconds:0}}}")
	assert.NotContains(t, g, "1:accounting.KindStats", "zero kinds are left out")
	led.Free(accounting.Device, 0x1000, 4096)
}

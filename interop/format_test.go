package interop_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/interop"
)

// The interop values a user holds print in a line on the default sim
// device (4 GiB), open and after its Close.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	data := make([]float32, 64*64)
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, data, 64, 64)
	require.NoError(t, err)
	defer a.Free()
	ipc, ipcErr := interop.ExportIPC(dev, a)
	if !errors.Is(ipcErr, errors.ErrUnsupported) {
		require.NoError(t, ipcErr)
	}
	cai, err := interop.ExportCAI(a, 0)
	require.NoError(t, err)
	var pending interop.Pending

	tests := []struct {
		name string
		v    any
		want []string // in %v
	}{
		{"pending", &pending, []string{"pending device work: 0 queued"}},
		{"array interface", cai, []string{"shape"}},
	}
	if ipcErr == nil {
		tests = append(tests, struct {
			name string
			v    any
			want []string
		}{"ipc descriptor", ipc, []string{"sim"}})
	} else {
		t.Logf("no IPC descriptor to print: %v", ipcErr) // sim without memfd (macOS)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := fmtcheck.Bounded(t, tc.v)
			for _, w := range tc.want {
				assert.Contains(t, out["%v"], w)
			}
		})
	}
	require.NoError(t, a.Free())
	require.NoError(t, dev.Close())
	out := fmtcheck.Bounded(t, &pending)
	assert.Contains(t, out["%v"], "pending device work: 0 queued")
}

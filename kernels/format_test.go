package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/kernels"
)

// Kernels print their device and stream, not the device's fields (its
// 4 GiB of memory on the default sim device), open and closed.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	k, err := kernels.New(dev)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()

	tests := []struct {
		name string
		v    any
		want []string // in %v
	}{
		{"kernels", k, []string{"kernels on sim:0 (Go references, default stream)"}},
		{"on a stream", k.WithStream(s), []string{"kernels on sim:0 (Go references, on stream 0x"}},
		{"async", k.Async(s), []string{"(Go references, async on stream 0x"}},
		{"nil", (*kernels.Kernels)(nil), []string{"kernels <nil>"}},
		{"zero", &kernels.Kernels{}, []string{"kernels <nil>"}},
		{"ellipsoid", kernels.SheppLogan3D[0], nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := fmtcheck.Bounded(t, tc.v)
			for _, w := range tc.want {
				assert.Contains(t, out["%v"], w)
			}
		})
	}
	require.NoError(t, dev.Close())
	out := fmtcheck.Bounded(t, k)
	assert.Contains(t, out["%v"], "kernels on sim:0")
}

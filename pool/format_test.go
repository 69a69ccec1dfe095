package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/pool"
)

// A pool prints in a line on the default sim device (4 GiB), with arrays
// in its memory, after Release and after the device's Close.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	p := pool.New(dev)
	data := make([]float32, 1<<16)
	for i := range data {
		data[i] = rand.Float32()
	}
	a, err := devarray.FromHost(p, data, 256, 256)
	require.NoError(t, err)
	require.NoError(t, p.SetLimit(1<<20))
	_, err = p.Alloc(2 << 20)
	var oom *pool.OutOfMemoryError
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
	t.Run("in use", func(t *testing.T) {
		check(t, []value{
			{"pool", p, []string{"pool on sim:0: 256.00 KiB in use in 1 block,", "reserved in 1 segment, limit 1.00 MiB"}},
			{"array in the pool", a, []string{"float32 [256 256] on sim:0"}},
			{"stats", p.Stats(), nil},
			{"out of memory", oom, []string{"limit"}},
			{"nil pool", (*pool.Pool)(nil), []string{"pool <nil>"}},
			{"zero pool", &pool.Pool{}, []string{"pool <nil>"}},
		})
	})
	require.NoError(t, a.Free())
	require.NoError(t, p.Release())
	t.Run("released", func(t *testing.T) {
		check(t, []value{{"pool", p, []string{"0 B in use in 0 blocks, 0 B reserved in 0 segments"}}})
	})
	require.NoError(t, dev.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{{"pool", p, []string{"pool on sim:0 (device closed)"}}})
	})
}

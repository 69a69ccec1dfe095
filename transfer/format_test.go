package transfer_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// Copiers, copies and endpoints print in a line on the default sim device
// (4 GiB), never the bytes of their host memory: while a copy is in
// flight, once it is done, and after Close.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	host := make([]float32, 512*512)
	for i := range host {
		host[i] = rand.Float32()
	}
	a, err := devarray.FromHost(dev, host, 512, 512)
	require.NoError(t, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, 1<<20, pinned.Mapped)
	require.NoError(t, err)
	defer buf.Free()
	c, err := transfer.New(dev)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	out := make([]float32, 512*512)
	resume, err := sim.Pause(s)
	require.NoError(t, err)
	op, err := c.CopyAsync(s, transfer.Host(out, 512, 512), transfer.Dev(a))
	require.NoError(t, err)
	choice, err := c.Plan(transfer.Host(out, 512, 512), transfer.Dev(a))
	require.NoError(t, err)
	profile, err := c.Profile()
	require.NoError(t, err)

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
	t.Run("in flight", func(t *testing.T) {
		check(t, []value{
			{"copier", c, []string{"copier on sim:0 (staging ring", "1 copy in flight"}},
			{"op", op, []string{"copy on stream 0x", "of sim:0: device DevArray(float32 [512 512]", "to pageable float32 [512 512] in 1.00 MiB at 0x", "(in flight)"}},
			{"device endpoint", transfer.Dev(a), []string{"device DevArray(float32 [512 512] on sim:0"}},
			{"host endpoint", transfer.Host(host, 512, 512), []string{"pageable float32 [512 512] in 1.00 MiB at 0x"}},
			{"strided host endpoint", transfer.Host(host, 512, 256).Strided(0, 2048, 8), []string{"pageable float32 [512 256] strides [2048 8]"}},
			{"pinned endpoint", transfer.Pinned(buf, devarray.Float32), []string{"pinned float32 [262144] in pinned 1048576 bytes (mapped)"}},
			{"invalid endpoint", transfer.Dev(nil), []string{"invalid endpoint: transfer: nil array"}},
			{"zero endpoint", transfer.Endpoint{}, []string{"endpoint <nil>"}},
			{"nil copier", (*transfer.Copier)(nil), []string{"copier <nil>"}},
			{"zero op", &transfer.Op{}, []string{"copy <nil>"}},
			{"choice", choice, nil},
			{"profile", profile, nil},
			{"options", transfer.Options{Profile: profile}, nil},
		})
	})
	resume()
	require.NoError(t, op.Wait())
	require.Equal(t, host, out)
	require.NoError(t, c.Close())
	t.Run("done", func(t *testing.T) {
		check(t, []value{
			{"op", op, []string{"(done)"}},
			{"copier", c, []string{"closed"}},
		})
	})
}

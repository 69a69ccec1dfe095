package pinned_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/pinned"
)

// Buffers and pools print in a line on the default sim device (4 GiB),
// never their bytes, while in use, freed, and after the device's Close.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	mapped, err := pinned.Alloc(dev, 1<<20, pinned.Mapped|pinned.WriteCombined)
	require.NoError(t, err)
	for i, b := range mapped.Bytes() {
		mapped.Bytes()[i] = b ^ byte(rand.Uint32())
	}
	mem := make([]byte, 1<<20)
	for i := range mem {
		mem[i] = byte(rand.Uint32())
	}
	registered, err := pinned.Register(dev, mem, 0)
	require.NoError(t, err)
	pool, err := pinned.NewPool(dev, pinned.Mapped)
	require.NoError(t, err)
	fromPool, err := pool.Alloc(100 << 10)
	require.NoError(t, err)
	plainPool, err := pinned.NewPool(dev, 0)
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
	t.Run("in use", func(t *testing.T) {
		check(t, []value{
			{"alloc", mapped, []string{"pinned 1048576 bytes (mapped|write-combined) at 0x", "on sim:0"}},
			{"registered", registered, []string{"registered 1048576 bytes at 0x"}},
			{"from a pool", fromPool, []string{"pinned 102400 bytes (mapped)", "from a pool"}},
			{"nil buffer", (*pinned.Buffer)(nil), []string{"pinned <nil>"}},
			{"zero buffer", &pinned.Buffer{}, []string{"pinned <nil>"}},
			{"pool", pool, []string{"pinned pool (mapped) on sim:0: 104.00 KiB in 1 buffer handed out, 0 B cached"}},
			{"empty pool", plainPool, []string{"pinned pool on sim:0: 0 B in 0 buffers"}},
			{"zero pool", &pinned.Pool{}, []string{"pinned pool <nil>"}},
			{"pool stats", pool.Stats(), nil},
		})
	})

	require.NoError(t, mapped.Free())
	require.NoError(t, registered.Free())
	require.NoError(t, fromPool.Free())
	require.NoError(t, plainPool.Close())
	t.Run("freed", func(t *testing.T) {
		check(t, []value{
			{"alloc", mapped, []string{"pinned 1048576 bytes", "(freed)"}},
			{"registered", registered, []string{"(freed)"}},
			{"from a pool", fromPool, []string{"from a pool, freed"}},
			{"pool", pool, []string{"0 B in 0 buffers handed out, 104.00 KiB cached"}},
			{"closed pool", plainPool, []string{"(closed)"}},
		})
	})

	live, err := pool.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{
			{"buffer", live, []string{"device closed"}},
			{"freed buffer", mapped, []string{"device closed"}},
			{"pool", pool, []string{"(closed)"}},
		})
	})
}

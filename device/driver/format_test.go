package driver_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
)

// Page-locked memory prints as its size and address, not byte by byte,
// before and after it is freed.
func TestFormatBounded(t *testing.T) {
	dev, err := sim.New(sim.Config{}) // the default: 4 GiB
	require.NoError(t, err)
	defer dev.Close()
	mapped, err := dev.HostAlloc(1<<20, driver.Mapped)
	require.NoError(t, err)
	plain, err := dev.HostAlloc(1<<16, 0)
	require.NoError(t, err)
	for i := range mapped.Bytes {
		mapped.Bytes[i] = byte(rand.Uint32())
	}
	mem := make([]byte, 1<<20)
	for i := range mem {
		mem[i] = byte(rand.Uint32())
	}
	tests := []struct {
		name string
		v    any
		want []string // in %v
	}{
		{"mapped", mapped, []string{"page-locked 1.00 MiB (mapped) at 0x", "device 0x"}},
		{"plain", *plain, []string{"page-locked 64.00 KiB at 0x"}},
		{"range", driver.HostRange{Addr: 0x1000, Mem: mem, Flags: driver.Portable, Registered: true}, []string{"registered 1.00 MiB (portable) at 0x1000"}},
		{"info", dev.Info(), []string{"sim:0"}},
		{"flags", driver.Mapped | driver.WriteCombined, []string{"mapped|write-combined"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := fmtcheck.Bounded(t, tc.v)
			for _, w := range tc.want {
				assert.Contains(t, out["%v"], w)
			}
		})
	}

	require.NoError(t, dev.HostFree(mapped))
	out := fmtcheck.Bounded(t, mapped)
	assert.Equal(t, "page-locked memory (freed)", out["%v"])
	assert.Equal(t, "driver.HostMem{Bytes:[]byte(nil), DevPtr:0x0, Flags:0x2}", out["%#v"])
	require.NoError(t, dev.Close())
	fmtcheck.Bounded(t, plain)
}

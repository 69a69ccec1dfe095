package sim_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/sim"
)

// %+v of a device adds its ledger's totals to what %v prints, before and
// after Close; %v, %s and %#v print as String and GoString do.
func TestDeviceFormatPlusV(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 64 << 20})
	require.NoError(t, err)
	n := 1 + rand.IntN(4096)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	p, err := dev.Malloc(int64(n))
	require.NoError(t, err)
	require.NoError(t, dev.CopyHtoD(p, data))
	plus := fmt.Sprintf("%+v", dev)
	assert.Contains(t, plus, dev.String())
	assert.Contains(t, plus, "allocations 1, frees 0")
	assert.Contains(t, plus, fmt.Sprintf("copies HtoD %s in 1", accounting.FormatBytes(int64(n))))
	assert.Contains(t, plus, "DtoH 0 B in 0")
	assert.Equal(t, dev.String(), fmt.Sprintf("%v", dev))
	assert.Equal(t, dev.String(), fmt.Sprintf("%s", dev))
	assert.Equal(t, dev.GoString(), fmt.Sprintf("%#v", dev))
	require.NoError(t, dev.Close())
	assert.Contains(t, fmt.Sprintf("%+v", dev), "(closed)")
	var nilDev *sim.Device
	assert.Equal(t, "sim.Device(nil)", fmt.Sprintf("%+v", nilDev))
}

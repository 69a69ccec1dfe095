package kernels

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// moduleRunner is a sim device that also loads modules, as a GPU backend
// does: enough for shared to keep its kernels.
type moduleRunner struct {
	*sim.Device
	loads int
}

// PrefersReferences is false: the runner stands for a GPU, whose kernels
// come from the module.
func (r *moduleRunner) PrefersReferences() bool { return false }

func (r *moduleRunner) LoadModule(string) (driver.Module, error) {
	r.loads++
	return noModule{}, nil
}

type noModule struct{}

func (noModule) Function(name string) (driver.Function, error) {
	return nil, driver.ErrInvalidValue
}
func (noModule) Close() error { return nil }

// TestSharedForgetsClosedDevices: shared loads a GPU device's module once
// while it is open, and forgets the kernels of devices that have closed.
func TestSharedForgetsClosedDevices(t *testing.T) {
	var runners []*moduleRunner
	for i := range 3 {
		dev, err := sim.New(sim.Config{Ordinal: i, Memory: 1 << 20})
		require.NoError(t, err)
		r := &moduleRunner{Device: dev}
		runners = append(runners, r)
		k1, err := shared(r)
		require.NoError(t, err)
		k2, err := shared(r)
		require.NoError(t, err)
		assert.Same(t, k1, k2, "one Kernels per open device")
		assert.Equal(t, 1, r.loads, "the module is loaded once")
		require.NoError(t, dev.Close())
	}
	_, err := shared(runners[0])
	assert.Error(t, err, "a closed device gets no new kernels")
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for _, r := range runners {
		_, kept := sharedKernels[r]
		assert.False(t, kept, "the kernels of closed device %v are forgotten", r.DeviceID())
	}
}

package testdev_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

// HostOnly runs a test in the plain build on the default device and skips
// it, saying why, where CUARRAY_TEST_DEVICE names a device.
func TestHostOnly(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		skipped bool
	}{
		{"", device.CUDABuilt},
		{"sim:0?mem=256MiB&latency=1ms&check=streams", true},
		{"cuda:0", true},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			t.Setenv(testdev.EnvVar, tc.spec)
			ran := false
			t.Run("host", func(t *testing.T) {
				testdev.HostOnly(t)
				ran = true
			})
			assert.Equal(t, tc.skipped, !ran, "skipped with CUARRAY_TEST_DEVICE=%q", tc.spec)
		})
	}
}

//go:build cuda && cudaemu && linux

package conformance

import "github.com/cuarray/cuarray/device/cuda/emulated"

// emulatedDriver reports whether the tests run on the emulated driver.
func emulatedDriver() bool { return true }

// declarePageable tells the emulated driver that kernels of the current
// context may touch the pageable host memory b (its interpreter reaches
// only host memory so declared), and returns what ends it.
func declarePageable(b []byte) (release func(), err error) {
	if err := emulated.DeclarePageable(b); err != nil {
		return nil, err
	}
	return func() { emulated.ReleasePageable(b) }, nil
}

package device

import "fmt"

// openCUDA fails: the CUDA backend (device/cuda, built with -tags cuda) is
// not part of this build.
func openCUDA(s Spec) (Device, error) {
	return nil, fmt.Errorf("device: %v: the CUDA backend is not part of this build (it needs device/cuda and -tags cuda): %w", s, ErrNoDevice)
}

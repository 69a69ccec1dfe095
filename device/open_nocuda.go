//go:build !cuda

package device

import "fmt"

// openCUDA fails: the CUDA backend (device/cuda, built with -tags cuda) is
// not part of this build.
func openCUDA(s Spec) (Device, error) {
	return nil, fmt.Errorf("device: %v: the CUDA backend is not part of this build (rebuild with -tags cuda on a machine with the CUDA driver): %w", s, ErrNoDevice)
}

// CUDABuilt reports whether this build includes the CUDA backend.
const CUDABuilt = false

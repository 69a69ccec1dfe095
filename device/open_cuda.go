//go:build cuda

package device

import "github.com/cuarray/cuarray/device/cuda"

// openCUDA opens GPU s.Ordinal.
func openCUDA(s Spec) (Device, error) {
	d, err := cuda.Open(s.Ordinal)
	if err != nil {
		return nil, err // not a nil *cuda.Device in a non-nil interface
	}
	return d, nil
}

// CUDABuilt reports whether this build includes the CUDA backend.
const CUDABuilt = true

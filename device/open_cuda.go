//go:build cuda

package device

import (
	"fmt"

	"github.com/cuarray/cuarray/device/cuda"
)

// openCUDA opens GPU s.Ordinal. The cuda backend takes no options.
func openCUDA(s Spec) (Device, error) {
	if len(s.Options) > 0 {
		return nil, fmt.Errorf("device: %v: the cuda backend takes no options: %w", s, ErrBadSpec)
	}
	return cuda.Open(s.Ordinal)
}

// CUDABuilt reports whether this build includes the CUDA backend.
const CUDABuilt = true

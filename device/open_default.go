package device

import (
	"errors"
	"fmt"
)

// OpenDefault opens the default device, the one Open("") opens, and says why
// it is that one. It opens cuda:0 when the build has the CUDA backend (-tags
// cuda) and a GPU answers; then fallback is nil. When no GPU answers (the
// backend is not part of this build, the driver finds no GPU, or the driver
// has none to give: an error wrapping ErrNoDevice) it opens sim:0, and
// fallback is that reason, e.g. "cuda:0: no CUDA GPU answered (cuInit:
// CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected)".
//
// OpenDefault writes nothing: it is the way to open the default device and
// report the reason yourself (or not at all). Open("") is OpenDefault plus,
// in a cuda build that falls back, one line on stderr once per process.
//
// A GPU that answers but cannot be opened (its context cannot be made, say)
// is err, not a fallback: a program that asked for the default device on a
// GPU machine does not silently run on the emulation.
func OpenDefault() (dev Device, fallback, err error) {
	dev, err = openCUDA(Spec{Kind: "cuda"})
	if err == nil {
		return dev, nil, nil
	}
	if !errors.Is(err, ErrNoDevice) {
		return nil, nil, fmt.Errorf("device: the default device cuda:0 answered but did not open: %w", err)
	}
	fallback = err
	dev, err = Open("sim:0")
	if err != nil {
		return nil, fallback, err
	}
	return dev, fallback, nil
}

//go:build cuda && !(cudaemu && linux)

package conformance

// emulatedDriver reports whether the tests run on the emulated driver.
func emulatedDriver() bool { return false }

// declarePageable does nothing on a GPU: a device with pageable memory
// access reaches every valid host address.
func declarePageable([]byte) (release func(), err error) { return func() {}, nil }

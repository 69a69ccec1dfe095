//go:build cuda && cudaemu && linux

package conformance

// emulatedDriver reports whether the tests run on the emulated driver.
func emulatedDriver() bool { return true }

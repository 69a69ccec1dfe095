//go:build !(cuda && cudaemu && linux)

package kernel_test

// emulatedDriver says whether the test binary runs the cuda backend on
// the emulated driver (package kernel's tests in make cuda-emu-test).
const emulatedDriver = false

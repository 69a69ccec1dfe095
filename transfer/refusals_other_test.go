//go:build !(cuda && cudaemu && linux)

package transfer_test

// driverRefusals returns nothing off the emulated CUDA driver: sim refuses
// a range partly page-locked with an error its caller sees, and a GPU's
// driver keeps no list (compute-sanitizer reports its refusals).
func driverRefusals() []string { return nil }

//go:build !linux

package cu

// cuarray's patch, not upstream's: outside Linux the package links libcuda as upstream does.

// loadDriver has nothing to do: the driver was linked at start.
func loadDriver() error { return nil }

// TakeMissing returns "": linked with libcuda, a program that needs a function the driver lacks
// does not start.
func TakeMissing() string { return "" }

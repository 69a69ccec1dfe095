//go:build !linux

package sim

// hostMemory returns false: the host's memory is read on Linux only, and
// elsewhere a managed allocation is bounded by the mapping the OS gives.
func hostMemory() (int64, bool) { return 0, false }

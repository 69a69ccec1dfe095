package tomo

import "fmt"

// Memory is where a Resident run keeps the sinograms and the volume.
type Memory string

const (
	// DeviceMemory: the sinograms and the volume stay on the host, and each
	// chunk is copied up into device buffers and its images down (the
	// default).
	DeviceMemory Memory = "device"
	// ManagedMemory: the whole sinogram stack and the whole volume live in
	// managed (unified) memory, and the kernels process each chunk in
	// place, on views of them: no copy call moves them; the driver moves
	// their pages (reconstructManaged). They may be larger than the
	// device's memory where it has concurrent managed access.
	ManagedMemory Memory = "managed"
)

// Memories are the memories, the default first.
var Memories = []Memory{DeviceMemory, ManagedMemory}

// ParseMemory parses "device" or "managed".
func ParseMemory(s string) (Memory, error) {
	for _, m := range Memories {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("tomo: memory %q: want device or managed", s)
}

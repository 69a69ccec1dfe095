package sim

import "syscall"

// hostMemory returns the bytes of the host's memory and swap together,
// the most a managed allocation's mapping can be backed with, and false
// where they cannot be read.
func hostMemory() (int64, bool) {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0, false
	}
	return (int64(si.Totalram) + int64(si.Totalswap)) * int64(si.Unit), true
}

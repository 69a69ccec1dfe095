//go:build cuda && !(cudaemu && linux)

package cuda

import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// resultDetail is the emulated driver's hook (emulated_driver.go): a GPU's
// driver says no more than the result code.
func resultDetail(int) string { return "" }

// declareLaunch is the emulated driver's hook (emulated_driver.go); a GPU
// does not see what a launch declares, and the launch is counted without
// its bytes: it reports false.
func declareLaunch([]driver.Range, *accounting.Ledger) bool { return false }

// hostTouch does nothing on a GPU: the driver moves managed pages on the
// host's own faults.
func hostTouch(devarray.Ptr, int64, bool) error { return nil }

// declarePageable and releasePageable do nothing on a GPU: a device with
// pageable memory access reaches every valid host address.
func declarePageable([]byte) error { return nil }
func releasePageable([]byte) error { return nil }

//go:build cuda && cudaemu && linux

package emulated

/*
#include <cuda.h>
*/
import "C"

import (
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

// The device attributes of pageable memory access, as the Driver API
// describes them (cuda.h): CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
// "Device supports coherently accessing pageable memory without calling
// cudaHostRegister on it", and
// CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
// "Device accesses pageable memory via the host's page tables".
const (
	attrPageableAccess     = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
	attrPageableHostTables = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
)

// pageableAttribute answers the two attributes from the option
// pageable-access (none, the default: both 0, as on most GPUs; hmm: 1 and
// 0; ats: 1 and 1). That an H100 without HMM answers 0 to both is what the
// conformance row TestPageableMemoryAccess logs; until a GPU run shows it,
// the default is a guess, the strict one (a program that needs the
// access must look for it).
func pageableAttribute(attr int) (int, bool) {
	access, tables := drv.cfg.pageableAccess.Attributes()
	switch attr {
	case attrPageableAccess:
		return access, true
	case attrPageableHostTables:
		return tables, true
	}
	return 0, false
}

// DeclarePageable makes the pageable host memory b reachable by the
// kernels of the calling thread's current context, at its host address,
// until ReleasePageable: the cuda backend's UsePageable says so, as no
// driver call carries it. On a GPU with pageable memory access every
// valid host address is reachable; the interpreter reaches only declared
// memory, so a kernel that runs past its slice faults here (a guess, the
// strict one). The context's sim device refuses where the driver is
// configured without pageable access.
func DeclarePageable(b []byte) error {
	_, dev, r := current()
	if r != success {
		return fmt.Errorf("emulated: declare pageable memory: %s: %w", r.name(), driver.ErrInvalidValue)
	}
	_, err := dev.UsePageable(b)
	return err
}

// ReleasePageable ends a DeclarePageable of b.
func ReleasePageable(b []byte) error {
	_, dev, r := current()
	if r != success {
		return fmt.Errorf("emulated: release pageable memory: %s: %w", r.name(), driver.ErrInvalidValue)
	}
	return dev.ReleasePageable(b)
}

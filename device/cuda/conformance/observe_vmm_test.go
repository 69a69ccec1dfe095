//go:build cuda

package conformance

import (
	"fmt"
	"testing"
)

// observeVirtualMemory: what sim's virtual memory guesses (device/sim/vmm.go,
// vmm_rules.go): the granularity of pinned memory (sim says 2 MiB for
// both, an H200's guessed), where a reservation with default alignment
// starts, whether one cuMemUnmap takes two adjacent mappings at once,
// whether a reservation of one host page is taken (sim asks for a
// granule), and whether cuMemAddressFree takes a range with memory still
// mapped (sim refuses it).
func observeVirtualMemory(t *testing.T, add func(name, got string)) {
	min, c := MemGranularity(false)
	ok(t, c, "cuMemGetAllocationGranularity")
	rec, c := MemGranularity(true)
	ok(t, c, "cuMemGetAllocationGranularity")
	add("cuMemGetAllocationGranularity of pinned device memory, minimum and recommended", fmt.Sprintf("%d and %d bytes", min, rec))

	p, c := MemAddressReserve(4*min, 0)
	ok(t, c, "cuMemAddressReserve")
	add("cuMemAddressReserve of 4 granules with default alignment: the address modulo the granularity", fmt.Sprint(int64(p)%min))
	var hs [2]uint64
	for i := range hs {
		hs[i], c = MemCreate(min)
		ok(t, c, "cuMemCreate")
		ok(t, MemMap(p+uintptr(int64(i)*min), min, 0, hs[i]), "cuMemMap")
	}
	ok(t, MemSetAccess(p, 2*min), "cuMemSetAccess")
	c = MemUnmap(p, 2*min)
	add("cuMemUnmap of two adjacent mappings in one call", ErrorName(c))
	if c != Success {
		ok(t, MemUnmap(p, min), "cuMemUnmap")
		ok(t, MemUnmap(p+uintptr(min), min), "cuMemUnmap")
	}

	ok(t, MemMap(p, min, 0, hs[0]), "cuMemMap")
	c = MemAddressFree(p, 4*min)
	add("cuMemAddressFree of a reservation with memory still mapped", ErrorName(c))
	if c != Success {
		ok(t, MemUnmap(p, min), "cuMemUnmap")
		ok(t, MemAddressFree(p, 4*min), "cuMemAddressFree")
	}
	for _, h := range hs {
		ok(t, MemRelease(h), "cuMemRelease")
	}

	q, c := MemAddressReserve(4096, 0)
	add("cuMemAddressReserve of one host page (4096 bytes)", ErrorName(c))
	if c == Success {
		ok(t, MemAddressFree(q, 4096), "cuMemAddressFree")
	}
}

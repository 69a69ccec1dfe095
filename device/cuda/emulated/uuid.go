//go:build cuda && cudaemu && linux

package emulated

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"crypto/sha256"
	"strconv"
	"unsafe"
)

// deviceUUID is the 16 bytes that identify device ordinal: the first 16 of
// the SHA-256 of its name, with the version and variant bits of an RFC 9562
// name-based UUID, so the same device has the same UUID in every process
// (as a GPU's does) and no two emulated devices share one.
func deviceUUID(ordinal int) [16]byte {
	sum := sha256.Sum256([]byte("cuarray emulated GPU " + strconv.Itoa(ordinal)))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80 // version 8: custom, name-based
	u[8] = u[8]&0x3f | 0x80 // variant: RFC 9562
	return u
}

// deviceGetUUID is cuDeviceGetUuid and cuDeviceGetUuid_v2 ("Returns
// 16-octets identifing the device dev", cuda.h; the emulated driver has no
// MIG mode, so both give the same).
func deviceGetUUID(call string, uuid *C.CUuuid, dev C.CUdevice) C.CUresult {
	d, r := deviceOf(int(dev))
	if r == success && uuid == nil {
		r = errInvalidValue
	}
	if r == success {
		u := deviceUUID(d.ordinal)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&uuid.bytes[0])), 16), u[:])
	}
	return result(call, r)
}

//export cuemu_cuDeviceGetUuid
func cuemu_cuDeviceGetUuid(uuid *C.CUuuid, dev C.CUdevice) C.CUresult {
	return deviceGetUUID("cuDeviceGetUuid", uuid, dev)
}

//export cuemu_cuDeviceGetUuid_v2
func cuemu_cuDeviceGetUuid_v2(uuid *C.CUuuid, dev C.CUdevice) C.CUresult {
	return deviceGetUUID("cuDeviceGetUuid_v2", uuid, dev)
}

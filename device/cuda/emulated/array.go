//go:build cuda && cudaemu && linux

package emulated

// CUDA arrays: cuArrayCreate, cuArray3DCreate, their descriptors and
// cuArrayDestroy. An array's memory is an allocation of its context's sim
// device, so it counts against the device's memory and goes with the
// context. Copies to and from arrays, textures and surfaces are not
// emulated (cuMemcpy2D and cuMemcpy3D refuse an array side).

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// The emulated H100's array extents, in elements (device.go's
// MAXIMUM_TEXTURE* attributes; layered and cubemap arrays take the
// layered limits).
const (
	maxArrayWidth   = 131072
	maxArrayHeight  = 65536
	maxArray3D      = 16384
	maxLayeredWidth = 32768
	maxArrayLayers  = 2048
)

// Flags of cuArray3DCreate (cuda.h's CUDA_ARRAY3D_*).
const (
	arrayLayered         = 0x01
	arraySurfaceLDST     = 0x02
	arrayCubemap         = 0x04
	arrayTextureGather   = 0x08
	arrayDepthTexture    = 0x10
	arrayColorAttachment = 0x20
	arraySparse          = 0x40
	arrayDeferredMapping = 0x80
)

// arrayDesc is a CUDA_ARRAY3D_DESCRIPTOR.
type arrayDesc struct {
	width, height, depth uint64
	format               uint32
	channels             uint32
	flags                uint32
}

// cudaArray is a CUarray.
type cudaArray struct {
	handle uintptr
	ctx    *context
	desc   arrayDesc
	mem    uintptr // its memory in the context's sim device
}

// formatSize returns the bytes of one component of format: the formats
// cuArray3DCreate's page lists. Another format cuda.h names (NV12, the
// normalized and block-compressed ones) is not emulated.
func formatSize(format uint32) (uint64, cuResult) {
	switch format {
	case C.CU_AD_FORMAT_UNSIGNED_INT8, C.CU_AD_FORMAT_SIGNED_INT8:
		return 1, success
	case C.CU_AD_FORMAT_UNSIGNED_INT16, C.CU_AD_FORMAT_SIGNED_INT16, C.CU_AD_FORMAT_HALF:
		return 2, success
	case C.CU_AD_FORMAT_UNSIGNED_INT32, C.CU_AD_FORMAT_SIGNED_INT32, C.CU_AD_FORMAT_FLOAT:
		return 4, success
	case C.CU_AD_FORMAT_NV12, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e,
		0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb:
		return 0, errNotSupported
	}
	return 0, errInvalidValue
}

// bytes checks d as cuArray3DCreate's page does and returns the bytes its
// elements take:
//
//   - "A 1D array is allocated if Height and Depth extents are both zero. A
//     2D array is allocated if only Depth extent is zero. A 3D array is
//     allocated if all three extents are non-zero." A 1D layered array has
//     only Height zero; cubemaps have "Width ... equal to Height, and Depth
//     ... six" (a multiple of six, layered).
//   - "NumChannels ... may be 1, 2, or 4".
//   - Each extent within the device's limits for its kind of array.
//   - "Texture gather can only be performed on 2D CUDA arrays."
//
// Anything else is CUDA_ERROR_INVALID_VALUE. Sparse, deferred-mapping, depth
// texture and color attachment arrays are not emulated:
// CUDA_ERROR_NOT_SUPPORTED.
func (d arrayDesc) bytes() (uint64, cuResult) {
	elem, r := formatSize(d.format)
	if r != success {
		return 0, r
	}
	if d.channels != 1 && d.channels != 2 && d.channels != 4 {
		return 0, errInvalidValue
	}
	if d.flags&^0xff != 0 {
		return 0, errInvalidValue
	}
	if d.flags&(arraySparse|arrayDeferredMapping|arrayDepthTexture|arrayColorAttachment) != 0 {
		return 0, errNotSupported
	}
	layered, cubemap := d.flags&arrayLayered != 0, d.flags&arrayCubemap != 0
	w, h, z := d.width, d.height, d.depth
	var ok bool
	switch {
	case w == 0:
	case cubemap:
		ok = h == w && w <= maxLayeredWidth && z > 0 && z%6 == 0 && (layered || z == 6) && z <= maxArrayLayers
	case layered:
		ok = w <= maxLayeredWidth && h <= maxLayeredWidth && z > 0 && z <= maxArrayLayers
	case h == 0 && z == 0:
		ok = w <= maxArrayWidth
	case z == 0:
		ok = h > 0 && w <= maxArrayWidth && h <= maxArrayHeight
	default:
		ok = h > 0 && w <= maxArray3D && h <= maxArray3D && z <= maxArray3D
	}
	if ok && d.flags&arrayTextureGather != 0 {
		ok = h > 0 && z == 0
	}
	if !ok {
		return 0, errInvalidValue
	}
	return w * max(h, 1) * max(z, 1) * uint64(d.channels) * elem, success
}

// arrayCreate is cuArrayCreate and cuArray3DCreate: an array in the
// current context.
func arrayCreate(d arrayDesc) (uintptr, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	n, r := d.bytes()
	if r != success {
		return 0, r
	}
	if n > uint64(drv.cfg.memory) {
		return 0, errOutOfMemory
	}
	p, err := dev.Malloc(int64(n))
	if err != nil {
		return 0, c.codeOf(err)
	}
	a := &cudaArray{ctx: c, desc: d, mem: uintptr(p)}
	a.handle = drv.newHandle(a)
	c.own(a.handle)
	return a.handle, success
}

// arrayOf returns the array of handle h, once a context is current and the
// array's context is usable: a handle that is no array (one destroyed, say)
// is CUDA_ERROR_INVALID_HANDLE.
func arrayOf(h uintptr) (*cudaArray, cuResult) {
	if _, _, r := current(); r != success {
		return nil, r
	}
	a, ok := lookup[*cudaArray](h)
	if !ok {
		return nil, errInvalidHandle
	}
	if r := a.ctx.usable(); r != success {
		return nil, r
	}
	return a, success
}

// arrayDestroy is cuArrayDestroy. It waits for the array's context first,
// as cuMemFree does (a guess: cuda.h does not say, and work queued there may
// still use the array).
func arrayDestroy(h uintptr) cuResult {
	a, r := arrayOf(h)
	if r != success {
		return r
	}
	dev := a.ctx.active()
	if dev == nil {
		return a.ctx.destroyedResult()
	}
	if r := a.ctx.synchronize(dev); r != success {
		return r
	}
	drv.mu.Lock()
	delete(drv.handles, h)
	drv.mu.Unlock()
	return a.ctx.codeOf(dev.Free(devarray.Ptr(a.mem)))
}

// arrayGetDescriptor is cuArrayGetDescriptor: the descriptor of a 1-D or
// 2-D array. One with a depth (a 3-D or layered array), which a
// CUDA_ARRAY_DESCRIPTOR cannot describe, is CUDA_ERROR_INVALID_VALUE (a
// guess).
func arrayGetDescriptor(h uintptr) (arrayDesc, cuResult) {
	a, r := arrayOf(h)
	if r != success {
		return arrayDesc{}, r
	}
	if a.desc.depth != 0 {
		return arrayDesc{}, errInvalidValue
	}
	return a.desc, success
}

//export cuemu_cuArrayCreate_v2
func cuemu_cuArrayCreate_v2(p *C.CUarray, d *C.CUDA_ARRAY_DESCRIPTOR) C.CUresult {
	if p == nil || d == nil {
		return result("cuArrayCreate_v2", errInvalidValue)
	}
	desc := arrayDesc{width: uint64(d.Width), height: uint64(d.Height), format: uint32(d.Format), channels: uint32(d.NumChannels)}
	h, r := arrayCreate(desc)
	if r == success {
		*p = C.CUarray(cPointer(h))
	}
	return result("cuArrayCreate_v2", r)
}

//export cuemu_cuArray3DCreate_v2
func cuemu_cuArray3DCreate_v2(p *C.CUarray, d *C.CUDA_ARRAY3D_DESCRIPTOR) C.CUresult {
	if p == nil || d == nil {
		return result("cuArray3DCreate_v2", errInvalidValue)
	}
	desc := arrayDesc{width: uint64(d.Width), height: uint64(d.Height), depth: uint64(d.Depth), format: uint32(d.Format), channels: uint32(d.NumChannels), flags: uint32(d.Flags)}
	h, r := arrayCreate(desc)
	if r == success {
		*p = C.CUarray(cPointer(h))
	}
	return result("cuArray3DCreate_v2", r)
}

//export cuemu_cuArrayGetDescriptor_v2
func cuemu_cuArrayGetDescriptor_v2(d *C.CUDA_ARRAY_DESCRIPTOR, a C.CUarray) C.CUresult {
	if d == nil {
		return result("cuArrayGetDescriptor_v2", errInvalidValue)
	}
	desc, r := arrayGetDescriptor(uintptr(unsafe.Pointer(a)))
	if r == success {
		*d = C.CUDA_ARRAY_DESCRIPTOR{Width: C.size_t(desc.width), Height: C.size_t(desc.height), Format: C.CUarray_format(desc.format), NumChannels: C.uint(desc.channels)}
	}
	return result("cuArrayGetDescriptor_v2", r)
}

//export cuemu_cuArray3DGetDescriptor_v2
func cuemu_cuArray3DGetDescriptor_v2(d *C.CUDA_ARRAY3D_DESCRIPTOR, a C.CUarray) C.CUresult {
	if d == nil {
		return result("cuArray3DGetDescriptor_v2", errInvalidValue)
	}
	arr, r := arrayOf(uintptr(unsafe.Pointer(a)))
	if r == success {
		desc := arr.desc
		*d = C.CUDA_ARRAY3D_DESCRIPTOR{Width: C.size_t(desc.width), Height: C.size_t(desc.height), Depth: C.size_t(desc.depth),
			Format: C.CUarray_format(desc.format), NumChannels: C.uint(desc.channels), Flags: C.uint(desc.flags)}
	}
	return result("cuArray3DGetDescriptor_v2", r)
}

//export cuemu_cuArrayDestroy
func cuemu_cuArrayDestroy(a C.CUarray) C.CUresult {
	return result("cuArrayDestroy", arrayDestroy(uintptr(unsafe.Pointer(a))))
}

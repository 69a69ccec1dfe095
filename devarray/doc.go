// Package devarray is cuarray's n-dimensional device array: a pointer, a
// shape, byte strides, an element type and a device — what the CUDA Array
// Interface and DLPack describe — so that kernels and other libraries work
// on buffers in place.
//
// Views (Slice, Index, Flip, Permute, Transpose, Reshape, Squeeze,
// ExpandDims, Broadcast) share the memory of the array they come from and
// never allocate or copy; an operation that would need a copy (flattening a
// transposed array, say) returns ErrNotViewable instead. Shapes and strides
// are checked when a view is made, so offset arithmetic cannot overflow
// silently, and after the memory is freed every data operation returns
// ErrFreed.
//
// The package is pure Go. It moves data through a Backend — a device from
// package device — which counts every allocation and copy in its ledger.
//
//	dev, _ := device.Open("")
//	a, _ := devarray.FromHost(dev, data, 512, 512) // one allocation, one copy
//	defer a.Free()
//	v, _ := a.Slice(0, 0, 256)                      // a view: nothing allocated, nothing copied
//	t, _ := v.Transpose()
//	out, _ := devarray.ToHost[float32](t)           // only t's elements come back
package devarray

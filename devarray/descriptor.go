package devarray

import "fmt"

// Descriptor is the plain description of an array that other libraries
// exchange (the CUDA Array Interface's data, shape, strides and typestr;
// DLPack's DLTensor): where element 0 is, the shape, byte strides, element
// type, device and whether writes are allowed.
type Descriptor struct {
	Ptr      Ptr
	Shape    []int
	Strides  []int64 // bytes; nil means C-contiguous
	DType    DType
	Device   DeviceID
	ReadOnly bool
}

// Descriptor returns the array's descriptor. Strides are always filled in.
// It returns ErrFreed after the memory was freed.
func (a *DevArray) Descriptor() (Descriptor, error) {
	if err := a.Err(); err != nil {
		return Descriptor{}, fmt.Errorf("devarray: descriptor: %w", err)
	}
	return Descriptor{
		Ptr:      a.Ptr(),
		Shape:    a.Shape(),
		Strides:  a.Strides(),
		DType:    a.dtype,
		Device:   a.buf.device,
		ReadOnly: a.readonly,
	}, nil
}

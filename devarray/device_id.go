package devarray

import (
	"fmt"
	"strconv"
)

// DeviceKind says where memory lives.
type DeviceKind uint8

// The device kinds. Sim is cuarray's emulated device: its memory is host memory.
const (
	UnknownKind DeviceKind = iota
	CPU                    // pageable host memory
	CUDA                   // device memory of a CUDA GPU
	CUDAHost               // page-locked host memory, possibly mapped into the device
	CUDAManaged            // unified (managed) memory
	Sim                    // memory of the emulated device in device/sim
	numKinds
)

var kindNames = [numKinds]string{"unknown", "cpu", "cuda", "cuda_host", "cuda_managed", "sim"}

// DLPack device types (DLDeviceType in dlpack.h).
const (
	DLCPU         int32 = 1
	DLCUDA        int32 = 2
	DLCUDAHost    int32 = 3
	DLCUDAManaged int32 = 13
)

// String returns the kind's name as used in device specs ("cuda", "sim", ...).
func (k DeviceKind) String() string {
	if k >= numKinds {
		return "DeviceKind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// HostAccessible reports whether the CPU can read memory of this kind directly.
func (k DeviceKind) HostAccessible() bool {
	return k == CPU || k == CUDAHost || k == CUDAManaged || k == Sim
}

// DLPack returns the DLPack device type of k. Sim memory is host memory, so
// it is exported as kDLCPU.
func (k DeviceKind) DLPack() (int32, error) {
	switch k {
	case CPU, Sim:
		return DLCPU, nil
	case CUDA:
		return DLCUDA, nil
	case CUDAHost:
		return DLCUDAHost, nil
	case CUDAManaged:
		return DLCUDAManaged, nil
	}
	return 0, fmt.Errorf("devarray: device kind %v has no DLPack device type: %w", k, ErrDevice)
}

// KindFromDLPack returns the DeviceKind of a DLPack device type.
func KindFromDLPack(t int32) (DeviceKind, error) {
	switch t {
	case DLCPU:
		return CPU, nil
	case DLCUDA:
		return CUDA, nil
	case DLCUDAHost:
		return CUDAHost, nil
	case DLCUDAManaged:
		return CUDAManaged, nil
	}
	return UnknownKind, fmt.Errorf("devarray: DLPack device type %d is not supported: %w", t, ErrDevice)
}

// DeviceID names one device: its kind and ordinal ("cuda:0", "sim:1").
type DeviceID struct {
	Kind    DeviceKind
	Ordinal int
}

// String returns "kind:ordinal".
func (id DeviceID) String() string { return id.Kind.String() + ":" + strconv.Itoa(id.Ordinal) }

// Ptr is an address in a device's address space (for host-accessible kinds,
// also a host address). It prints in hex.
type Ptr uintptr

// String returns the address in hex, like "0x7f3a00000000".
func (p Ptr) String() string { return "0x" + strconv.FormatUint(uint64(p), 16) }

package device

// Package kernels registers its pack kernels with package devarray
// (devarray.RegisterPacker): every program that opens a device through
// this package can copy any strided view to and from the host in one
// pack kernel and one contiguous copy (devarray.StridedCopy).
import _ "github.com/cuarray/cuarray/kernels"

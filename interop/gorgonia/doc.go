// Package gorgonia hands cuarray arrays to gorgonia.org/tensor and takes
// its tensors, without copying. It is a package of its own so that a
// program that needs only the descriptor protocols of package interop (the
// CUDA Array Interface, DLPack, CUDA IPC) links none of the modules
// gorgonia.org/tensor brings in (arrow, protobuf, gonum).
//
// A DevArray is a tensor.Memory; FromDense and ToDense go between
// *tensor.Dense and DevArray both ways. Device memory becomes a tensor
// whose engine is a DeviceEngine, which gorgonia treats as not accessible
// from Go; host memory becomes an ordinary tensor. The hand-overs copy
// nothing and allocate nothing, which the tests check in the ledger.
//
//	d, err := gorgonia.ToDense(a)   // *tensor.Dense over a's memory
//	b, err := gorgonia.FromDense(d) // the same memory as a DevArray again
//	e := gorgonia.NewDeviceEngine(dev)
//
// Errors wrap interop.ErrInterface (a layout gorgonia cannot express),
// devarray.ErrDType (an element type the other side lacks),
// devarray.ErrDevice and devarray.ErrFreed.
package gorgonia

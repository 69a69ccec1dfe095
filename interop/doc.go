// Package interop hands cuarray arrays to other libraries and takes
// theirs, without copying: the CUDA Array Interface (CuPy, Numba,
// PyTorch) and, for host memory, NumPy's array interface. A hand-over
// moves no bytes and allocates nothing, which the tests check in the
// ledger.
//
//	m, err := interop.ExportCAI(a, 0)            // map[string]any, as __cuda_array_interface__
//	js, err := interop.MarshalCAI(a, 0)          // the same as JSON
//	b, stream, err := interop.ImportCAI(dev, m)  // a borrowed DevArray over the same memory
//
// DLPack, gorgonia tensors, CUDA IPC and the C library with its Python
// module are still to come (issue 6).
package interop

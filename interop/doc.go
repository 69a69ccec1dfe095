// Package interop hands cuarray arrays to other libraries and takes
// theirs, without copying. A hand-over moves no bytes and allocates
// nothing on the device, which the tests check in the ledger.
//
//   - The CUDA Array Interface v3 (CuPy, Numba, PyTorch) and, for host
//     memory, NumPy's __array_interface__: ExportCAI, MarshalCAI, ImportCAI,
//     and ImportCAIOn / WaitStream, which apply the interface's stream rule
//     (the consumer waits on the producer's stream).
//
//   - DLPack 1.x, versioned and legacy: ExportDLPack builds a managed tensor
//     in C memory whose deleter releases the array (the memory outlives its
//     owner's Free until the consumer deletes the tensor); ImportDLPack
//     borrows one and calls its deleter on Free. Element strides are
//     converted to byte strides and back; READ_ONLY and IS_COPIED are honoured.
//
//   - Exports without synchronizing the device: calls not named Async
//     return with their work complete, so an array written only by them is
//     handed over as it is. Pending remembers async work by the memory it
//     touches; for an array it touches, ExportStream names the stream a CAI
//     consumer waits on, WaitOn makes a DLPack consumer's stream wait on an
//     event, and Wait has the host wait for that work and nothing else.
//
//   - gorgonia.org/tensor: in package interop/gorgonia (FromDense, ToDense,
//     DeviceEngine), so that this package links nothing but the standard
//     library and cuarray's own packages.
//
//   - CUDA IPC: ExportIPC describes an array for another process (JSON),
//     OpenIPC maps it there; opening and closing are counted in the ledger
//     (kind ipc). A foreign handle (of this process, of another backend, or
//     garbage) is an error; a stale one (its exporter freed the memory or
//     exited) is an error on sim, but a GPU's driver may open it (an H100
//     with driver 580.159.04 did), mapping memory that is no longer the
//     exporter's: the exporter must tell the others when a handle is gone.
//
//     m, err := interop.ExportCAI(a, 0)            // map[string]any, as __cuda_array_interface__
//     b, err := interop.ImportCAIOn(dev, s, m)     // borrowed; stream s waits for the producer's
//     t, err := interop.ExportDLPack(a)            // *DLManagedTensorVersioned in C memory
//     c, err := interop.ImportDLPack(dev, t)       // borrowed; c.Free() calls the deleter
//     desc, err := interop.ExportIPC(dev, a)       // for another process: interop.OpenIPC(dev, desc)
//     err = pending.Queued(dev, s, nil, a)          // after queueing async work on a's memory on s
//     sid, err := pending.ExportStream(a)          // the CAI "stream": s while that work is pending, else 0
//
// The C library (libcuarray, `make libcuarray`) and the Python module
// (python/cuarray.py) are built on these.
package interop

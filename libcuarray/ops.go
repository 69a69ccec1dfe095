//go:build cgo

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/transfer"
)

// arrayInfo is what the Python module reads of an array.
type arrayInfo struct {
	Shape    []int           `json:"shape"`
	Strides  []int64         `json:"strides"`
	DType    string          `json:"dtype"`
	Typestr  string          `json:"typestr"`
	ItemSize int64           `json:"itemsize"`
	Ptr      uint64          `json:"ptr"`
	ReadOnly bool            `json:"readonly"`
	Device   string          `json:"device"`
	Kind     string          `json:"kind"`
	DLDevice [2]int32        `json:"dl_device"`
	HostOK   bool            `json:"host_accessible"`
	Owned    bool            `json:"owned"`
	View     bool            `json:"view"`
	Extent   [2]int64        `json:"extent"`
	Contig   map[string]bool `json:"contiguous"`
}

func info(h uint64) ([]byte, error) {
	e, err := arrayOf(h)
	if err != nil {
		return nil, err
	}
	a := e.arr
	dl, err := a.Device().Kind.DLPack()
	if err != nil {
		dl = -1
	}
	lo, hi := a.Extent()
	return json.Marshal(arrayInfo{
		Shape: a.Shape(), Strides: a.Strides(), DType: a.DType().String(), Typestr: a.DType().Typestr(),
		ItemSize: a.DType().Size(), Ptr: uint64(a.Ptr()), ReadOnly: a.ReadOnly(),
		Device: a.Device().String(), Kind: a.Device().Kind.String(),
		DLDevice: [2]int32{dl, int32(a.Device().Ordinal)}, HostOK: a.Device().Kind.HostAccessible(),
		Owned: a.Owned(), View: a.IsView(), Extent: [2]int64{lo, hi},
		Contig: map[string]bool{"C": a.IsContiguous(), "F": a.IsFContiguous()},
	})
}

func empty(dev uint64, dtype string, shape []int, zero bool) (uint64, error) {
	_ = reapKeeps() // memory DLPack consumers let go of is free again; an error there is not this allocation's
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	if d == nil {
		return 0, fmt.Errorf("empty: no device: %w", errHandle)
	}
	dt, err := devarray.ParseDType(dtype)
	if err != nil {
		return 0, err
	}
	alloc := devarray.Empty
	if zero {
		alloc = devarray.Zeros
	}
	a, err := alloc(d, dt, shape...)
	if err != nil {
		return 0, err
	}
	return newArray(a, d), nil
}

// viewOp is one view operation, as JSON from Python.
type viewOp struct {
	Op    string `json:"op"` // slice, index, flip, permute, transpose, reshape, readonly
	Axis  int    `json:"axis"`
	Start int    `json:"start"`
	Stop  int    `json:"stop"`
	Step  int    `json:"step"`
	Axes  []int  `json:"axes"`
	Shape []int  `json:"shape"`
}

func view(h uint64, op []byte) (uint64, error) {
	e, err := arrayOf(h)
	if err != nil {
		return 0, err
	}
	var o viewOp
	if err := json.Unmarshal(op, &o); err != nil {
		return 0, fmt.Errorf("view: %v: %w", err, devarray.ErrShape)
	}
	a := e.arr
	var v *devarray.DevArray
	switch o.Op {
	case "slice":
		v, err = a.Slice(o.Axis, o.Start, o.Stop, max(o.Step, 1))
	case "index":
		v, err = a.Index(o.Axis, o.Start)
	case "flip":
		v, err = a.Flip(o.Axis)
	case "permute":
		v, err = a.Permute(o.Axes...)
	case "transpose":
		v, err = a.Transpose()
	case "reshape":
		v, err = a.Reshape(o.Shape...)
	case "readonly":
		v, err = a.AsReadOnly()
	default:
		return 0, fmt.Errorf("view: unknown operation %q: %w", o.Op, devarray.ErrShape)
	}
	if err != nil {
		return 0, err
	}
	return newView(v, e), nil
}

// copyArrays copies src into dst through the device's Copier, which
// records the path, and returns with the copy complete (transfer's
// synchronous Copy), after the pending async work on both arrays.
func copyArrays(dst, src uint64) error {
	d, err := arrayOf(dst)
	if err != nil {
		return err
	}
	s, err := arrayOf(src)
	if err != nil {
		return err
	}
	if err := settle(d.arr, s.arr); err != nil {
		return err
	}
	dev := s.dev
	if dev == nil {
		dev = d.dev
	}
	if dev == nil {
		return transfer.Copy(transfer.Dev(d.arr), transfer.Dev(s.arr))
	}
	c, err := copierOf(dev)
	if err != nil {
		return err
	}
	return c.Copy(transfer.Dev(d.arr), transfer.Dev(s.arr))
}

// copyHost moves the array's elements, packed in C order, to or from host
// memory at p, after the pending async work on the array, and returns with
// the copy complete. Arrays with a backend move through it (devarray's
// synchronous CopyTo/CopyFrom, counted in the ledger: devarray.StridedCopy,
// the code path transfer's copies take, one pitched copy or one pack
// kernel and one contiguous copy); host memory imported without one
// (NumPy's) is read or written in place by Go through
// devarray.HostStrided's loops, and a fault there (memory another library
// unmapped or protected since the import) is an error, not a crash.
func copyHost(h uint64, p unsafe.Pointer, n int64, toDevice bool) error {
	e, err := arrayOf(h)
	if err != nil {
		return err
	}
	a := e.arr
	if err := settle(a); err != nil {
		return err
	}
	if n != a.NBytes() {
		return fmt.Errorf("copy: %d bytes of host memory for an array of %d: %w", n, a.NBytes(), devarray.ErrShape)
	}
	if p == nil && n > 0 {
		return fmt.Errorf("copy: the host buffer is NULL: %w", device.ErrInvalidValue)
	}
	host := unsafe.Slice((*byte)(p), n)
	if a.Backend() != nil {
		if toDevice {
			return a.CopyFrom(host)
		}
		return a.CopyTo(host)
	}
	if !a.Device().Kind.HostAccessible() {
		return fmt.Errorf("copy: %v has no device to move it: %w", a, devarray.ErrNoBackend)
	}
	if toDevice && a.ReadOnly() {
		return fmt.Errorf("copy: %v is read-only: %w", a, devarray.ErrReadOnly)
	}
	return devarray.Use(func() (err error) {
		defer faultGuard()()
		defer faultRecover(&err, "copy", a)
		lo, hi := a.Extent()
		mem := unsafe.Slice((*byte)(unsafe.Add(hostPointer(a.Ptr()), lo)), hi-lo)
		elems, err := devarray.NewHostStrided(mem, -lo, a.Shape(), a.Strides(), a.DType().Size())
		if err != nil {
			return err
		}
		if toDevice {
			return elems.Scatter(host, 0)
		}
		return elems.Gather(host, 0)
	}, a)
}

// importCAI borrows what a CUDA Array Interface (with a device: the host
// waits on its stream) or a NumPy array interface (device 0) describes,
// once it has checked that the descriptor lies inside the allocation it
// claims (bounds.go).
func importCAI(dev uint64, js []byte) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	m, err := interop.ParseJSON(js)
	if err != nil {
		return 0, err
	}
	var a *devarray.DevArray
	if d == nil {
		a, err = interop.ImportArrayInterface(m)
	} else {
		a, err = interop.ImportCAIOn(d, nil, m)
	}
	if err != nil {
		return 0, err
	}
	if err := insideAllocation(d, a, "import interface"); err != nil {
		return 0, errors.Join(err, a.Free())
	}
	return newArray(a, d), nil
}

// fromDLPack borrows a DLPack tensor, bounded to the allocation holding its
// element 0 (bounds.go). On error the caller still owns the tensor.
func fromDLPack(dev uint64, t unsafe.Pointer, versioned bool) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	var b devarray.Backend
	if d != nil {
		b = d
	}
	for fresh := false; ; fresh = true {
		bounds, write, cached := dlpackBounds(d, t, versioned, fresh)
		var a *devarray.DevArray
		if versioned {
			a, err = interop.ImportDLPack(b, t, bounds)
		} else {
			a, err = interop.ImportDLPackLegacy(b, t, bounds)
		}
		switch {
		case err == nil:
			return newArray(a, d), nil
		case bounds == nil || !errors.Is(err, devarray.ErrBounds):
			return 0, err
		case !cached:
			return 0, fmt.Errorf("import DLPack: the tensor is not inside %s: %w", where(d, write), err)
		}
	}
}

func ledgerJSON(dev uint64) ([]byte, error) {
	// Count the memory DLPack consumers let go of as free. As a tensor's
	// deleter did, this ignores a failure to free it: the ledger reads
	// what is there.
	_ = reapKeeps()
	d, err := deviceOf(dev)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("ledger: no device: %w", errHandle)
	}
	return d.Ledger().JSON()
}

// ledgerReport is the device's ledger as Go's Ledger.Report() writes it:
// a text table.
func ledgerReport(dev uint64) ([]byte, error) {
	_ = reapKeeps() // as ledgerJSON
	d, err := deviceOf(dev)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("ledger report: no device: %w", errHandle)
	}
	return []byte(d.Ledger().Report()), nil
}

// deviceInfo is what `cuarray info` prints of the device before its
// ledger (device.Describe).
func deviceInfo(dev uint64) ([]byte, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("device info: no device: %w", errHandle)
	}
	text, err := device.Describe(d)
	return []byte(text), err
}

func deleteDLPack(t unsafe.Pointer)       { interop.DeleteDLPack(t) }
func deleteDLPackLegacy(t unsafe.Pointer) { interop.DeleteDLPackLegacy(t) }

// hostPointer turns the address of host memory another library owns (not
// Go memory) into a pointer.
func hostPointer(p devarray.Ptr) unsafe.Pointer {
	var ptr unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&ptr)) = uintptr(p)
	return ptr
}

// ipcExport describes an array for another process, as JSON, once the
// pending async work on it is done (the other process has no stream to
// wait on).
func ipcExport(h uint64) ([]byte, error) {
	e, err := exportWait(h, consumerHost)
	if err != nil {
		return nil, err
	}
	if e.dev == nil {
		return nil, fmt.Errorf("IPC export: host memory with no device has no IPC handle: %w", devarray.ErrDevice)
	}
	d, err := interop.ExportIPC(e.dev, e.arr)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

// ipcOpen opens another process's array on dev.
func ipcOpen(dev uint64, js []byte) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	if d == nil {
		return 0, fmt.Errorf("IPC open: no device: %w", errHandle)
	}
	desc, err := interop.ParseIPC(js)
	if err != nil {
		return 0, err
	}
	a, err := interop.OpenIPC(d, desc)
	if err != nil {
		return 0, err
	}
	return newArray(a, d), nil
}

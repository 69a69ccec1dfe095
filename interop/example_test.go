package interop_test

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/interop"
)

// A view handed out as a CUDA Array Interface and taken back: the same
// memory, and the ledger shows that nothing moved.
func ExampleExportCAI() {
	dev, err := device.Open("sim:0?mem=64MiB")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()
	col, _ := a.Index(1, 2) // the last column: a strided view
	before := dev.Ledger().Snapshot()

	js, _ := interop.MarshalCAI(col, 0) // what __cuda_array_interface__ returns, as JSON
	m, _ := interop.ParseJSON(js)
	fmt.Println(m["shape"], m["strides"], m["typestr"], m["version"], m["stream"])
	b, _, err := interop.ImportCAI(dev, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	vals, _ := devarray.ToHost[float32](b)
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println(b.Ptr() == col.Ptr(), b.Shape(), b.Strides(), vals)
	fmt.Println("allocations:", diff.Allocations(), "device-to-host copies:", diff.CopyTotal(accounting.DtoH).Count)
	// Output:
	// [2] [12] <f4 3 <nil>
	// true [2] [12] [3 6]
	// allocations: 0 device-to-host copies: 1
}

// DLPack in C memory: the consumer's deleter keeps the memory alive after
// the owner's Free, and frees it.
func ExampleExportDLPack() {
	dev, _ := device.Open("sim:0?mem=64MiB")
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []float64{0.5, 1.5, 2.5, 3.5}, 2, 2)
	tr, _ := a.Transpose()

	t, err := interop.ExportDLPack(tr) // a *DLManagedTensorVersioned for a "dltensor_versioned" capsule
	if err != nil {
		fmt.Println(err)
		return
	}
	a.Free() // the owner lets go; the tensor still holds the memory
	fmt.Println("device bytes in use:", dev.Ledger().Current(accounting.Device))

	b, _ := interop.ImportDLPack(dev, t) // what a consumer does with the tensor
	vals, _ := devarray.ToHost[float64](b)
	fmt.Println(b.Strides(), vals)
	b.Free() // calls the deleter
	fmt.Println("device bytes in use:", dev.Ledger().Current(accounting.Device))
	// Output:
	// device bytes in use: 256
	// [8 16] [0.5 2.5 1.5 3.5]
	// device bytes in use: 0
}

// Async work on an array makes its CAI export name the stream to wait on,
// instead of synchronizing the device; once the work is done there is
// nothing to wait for.
func ExamplePending() {
	dev, err := device.Open("sim:0?mem=64MiB")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4}, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()
	s, err := dev.NewStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	var pending interop.Pending
	before, _ := pending.ExportStream(a)
	_ = s.MemsetAsync(a.Ptr(), 0, a.NBytes()) // async work on a's memory ...
	_ = pending.Queued(dev, s, nil, a)        // ... remembered
	m, _ := interop.ExportCAI(a, 0)
	if sid, _ := pending.ExportStream(a); sid != 0 { // still pending: name its stream
		m, _ = interop.ExportCAI(a, sid)
	}
	_ = s.Synchronize()
	after, _ := pending.ExportStream(a)
	fmt.Println(before, m["stream"] == nil || m["stream"] == uint64(s.Handle()), after, pending.Len())
	// Output:
	// 0 true 0 0
}

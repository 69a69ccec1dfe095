package kernels_test

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/kernels"
)

// Pack gathers a strided view into a contiguous array on the device, so one
// plain copy can then move it; nothing crosses the bus while packing.
func ExampleKernels_Pack() {
	dev, _ := device.Open("sim:0?mem=1MiB")
	defer dev.Close()
	k, _ := kernels.New(dev)
	defer k.Close()

	a, _ := devarray.FromHost(dev, []float32{0, 1, 2, 3, 4, 5}, 2, 3)
	defer a.Free()
	col, _ := a.Transpose() // strides [4 12]: not contiguous
	packed, _ := devarray.Empty(dev, devarray.Float32, col.Shape()...)
	defer packed.Free()

	before := dev.Ledger().Snapshot()
	_ = k.Pack(packed, col)
	moved := accounting.Diff(before, dev.Ledger().Snapshot()).CopyTotal(accounting.DtoH).Count

	out, _ := devarray.ToHost[float32](packed)
	sum, _ := k.Sum(packed)
	fmt.Println(out, "copies while packing:", moved, "sum:", sum)
	// Output: [0 3 1 4 2 5] copies while packing: 0 sum: 15
}

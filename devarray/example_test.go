package devarray_test

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
)

// Views share memory: a transposed slice reads the original elements,
// and making it allocated and copied nothing.
func ExampleDevArray_Slice() {
	dev, _ := sim.New(sim.Config{Memory: 1 << 20})
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)
	defer a.Free()

	before := dev.Ledger().Snapshot()
	v, _ := a.Slice(1, 1, 4, 2) // columns 1 and 3
	t, _ := v.Transpose()
	made := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println(t.Shape(), t.Strides(), "contiguous:", t.IsContiguous())
	fmt.Println("allocations:", made.Allocations(), "bytes copied:", made.Copied().Bytes)

	out, _ := devarray.ToHost[int32](t)
	fmt.Println(out)
	// Output:
	// [2 3] [8 16] contiguous: false
	// allocations: 0 bytes copied: 0
	// [1 5 9 3 7 11]
}

// Reshape is a view when the strides allow it and an error when it would
// need a copy.
func ExampleDevArray_Reshape() {
	dev, _ := sim.New(sim.Config{Memory: 1 << 20})
	defer dev.Close()
	a, _ := devarray.Zeros(dev, devarray.Float32, 4, 6)
	defer a.Free()

	r, err := a.Reshape(2, -1, 3)
	fmt.Println(r.Shape(), err)
	t, _ := a.Transpose()
	_, err = t.Reshape(24)
	fmt.Println(errors.Is(err, devarray.ErrNotViewable))
	// Output:
	// [2 4 3] <nil>
	// true
}

// A view stays safe after its owner is freed: it reports ErrFreed instead of
// touching released memory.
func ExampleDevArray_Free() {
	dev, _ := sim.New(sim.Config{Memory: 1 << 20})
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []float64{1, 2, 3})
	v, _ := a.Slice(0, 1, 3)
	fmt.Println(a.Free(), a.Free()) // idempotent
	_, err := devarray.ToHost[float64](v)
	fmt.Println(err)
	fmt.Println(dev.Ledger().Current(accounting.Device))
	// Output:
	// <nil> <nil>
	// devarray: copy to host: memory was freed
	// 0
}

func ExampleParseTypestr() {
	for _, s := range []string{"<f4", "|b1", "<c16", ">f8"} {
		d, err := devarray.ParseTypestr(s)
		fmt.Println(s, d, err != nil)
	}
	// Output:
	// <f4 float32 false
	// |b1 bool false
	// <c16 complex128 false
	// >f8 invalid true
}

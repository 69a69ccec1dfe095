package gorgonia_test

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/interop/gorgonia"
)

// A device array as a gorgonia tensor: gorgonia sees the memory as not
// accessible from Go, and the tensor goes back to the same array.
func ExampleToDense() {
	dev, _ := device.Open("sim:0?mem=64MiB")
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	defer a.Free()

	t, err := gorgonia.ToDense(a)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Shape(), t.Dtype(), "host-accessible:", t.IsNativelyAccessible())
	b, _ := gorgonia.FromDense(t)
	fmt.Println(b.Ptr() == a.Ptr(), b.Device())
	// Output:
	// (3, 2) float32 host-accessible: false
	// true sim:0
}

package plan_test

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

// httomo's worked example: a method that needs its input and its output,
// 10×20 float32 per slice, in 14450 bytes. Raw mode counts the bytes as
// httomo does; the device's own count rounds each slab up to 256 bytes.
func ExampleChunksRaw() {
	p, err := plan.ChunksRaw(plan.Identity, [3]int{1000, 10, 20}, 0, devarray.Float32, nil, 14450)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Arithmetic())
	device, _, err := plan.Estimate(plan.Identity, plan.Device, 0, [2]int{10, 20}, devarray.Float32, 14450, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("as the device rounds them:", device, "slices")
	// Output:
	// input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices
	// as the device rounds them: 8 slices
}

package accounting_test

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/kernels"
)

// A size query finds the scratch memory a sequence of calls needs; the
// workspace is then allocated once and never grows inside the loop.
func ExampleWorkspace() {
	dev, err := device.Open("sim:0?mem=64MiB")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	k, err := kernels.New(dev)
	if err != nil {
		panic(err)
	}
	sino, err := devarray.Zeros(dev, devarray.Float32, 4, 180, 256)
	if err != nil {
		panic(err)
	}
	defer sino.Free()

	ws := accounting.NewWorkspace(dev)
	defer ws.Free()
	ws.StartQuery()
	fmt.Println(k.RampFilter(sino, ws)) // reports its size, runs nothing
	size, _ := ws.Preallocate()
	fmt.Println("preallocated", accounting.FormatBytes(size))

	for range 3 {
		if err := k.RampFilter(sino, ws); err != nil && !errors.Is(err, accounting.ErrPerfDegraded) {
			panic(err)
		}
	}
	fmt.Println("grows:", ws.Grows())
	// Output:
	// workspace size query: size increased
	// preallocated 722.00 KiB
	// grows: 0
}

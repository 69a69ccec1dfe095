package pinned_test

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/pinned"
)

// A mapped buffer is host memory the device reaches in place; the ledger
// counts it under its kind.
func ExampleAlloc() {
	dev, _ := device.Open("sim:0?mem=16MiB")
	defer dev.Close()
	buf, err := pinned.Alloc(dev, 1<<20, pinned.Mapped)
	if err != nil {
		fmt.Println(err)
		return
	}
	xs := buf.Float32()
	xs[0] = 1.5
	_, err = buf.DevPtr()
	fmt.Println(len(xs), err, dev.Ledger().Current(accounting.Mapped))
	_ = buf.Free()
	fmt.Println(dev.Ledger().Current(accounting.Mapped))
	// Output:
	// 262144 <nil> 1048576
	// 0
}

// A pool rounds requests to size classes that waste at most an eighth,
// and hands freed buffers out again.
func ExamplePool() {
	dev, _ := device.Open("sim:0?mem=16MiB")
	defer dev.Close()
	p, _ := pinned.NewPool(dev, 0)
	a, _ := p.Alloc(300 << 10)
	_ = a.Free()
	b, _ := p.Alloc(290 << 10)
	st := p.Stats()
	fmt.Println(pinned.SizeClass(300<<10), st.FromCache, st.FromDriver)
	_ = b.Free()
	_ = p.Close()
	// Output:
	// 327680 1 1
}

package pool_test

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/pool"
)

// A loop that allocates and frees an array each time goes to the device
// once; every later array comes from the cache.
func ExamplePool() {
	dev, err := device.Open("sim:0?mem=64MiB")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	p := pool.New(dev)
	for range 100 {
		a, err := devarray.Empty(p, devarray.Float32, 512, 512) // 1 MiB
		if err != nil {
			panic(err)
		}
		// ... kernels on a ...
		a.Free() // back to the cache, not the device
	}
	st := p.Stats()
	fmt.Printf("allocs %d: %d from the cache, %d from the device\n", st.Allocs, st.FromCache, st.FromDevice)
	fmt.Printf("device memory held: %s, in use: %s\n", accounting.FormatBytes(dev.Ledger().Current(accounting.Device)), accounting.FormatBytes(st.InUse))
	if err := p.Release(); err != nil {
		panic(err)
	}
	fmt.Printf("after Release: %s\n", accounting.FormatBytes(dev.Ledger().Current(accounting.Device)))
	// Output:
	// allocs 100: 99 from the cache, 1 from the device
	// device memory held: 2.00 MiB, in use: 0 B
	// after Release: 0 B
}

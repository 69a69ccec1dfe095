package transfer_test

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/transfer"
)

// The planner picks a path and says why; the ledger shows the path the
// bytes took.
func ExampleCopier_Copy() {
	dev, _ := device.Open("sim:0?mem=64MiB")
	defer dev.Close()
	c, _ := transfer.New(dev)
	defer c.Close()
	a, _ := devarray.Empty(dev, devarray.Float32, 512, 512)
	defer a.Free()
	xs := make([]float32, 512*512)
	for i := range xs {
		xs[i] = float32(i)
	}

	choice, _ := c.Plan(transfer.Dev(a), transfer.Host(xs, 512, 512))
	fmt.Println(choice)
	_ = c.Copy(transfer.Dev(a), transfer.Host(xs, 512, 512))
	_ = c.Copy(transfer.Host(xs, 512, 512), transfer.Dev(a), transfer.Via(transfer.PathStaged))
	snap := dev.Ledger().Snapshot()
	fmt.Println("HtoD direct:", snap.Copies[accounting.HtoD][accounting.PathDirect].Bytes)
	fmt.Println("DtoH staged:", snap.Copies[accounting.DtoH][accounting.PathStaged].Bytes)
	// Output:
	// direct: 1.00 MiB of pageable memory on sim, which has no DMA engine: staging would only add a copy
	// HtoD direct: 1048576
	// DtoH staged: 1048576
}

package accounting_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// A scope counts a block of code, including its peak above where it began.
func ExampleLedger_Push() {
	var led accounting.Ledger
	_ = led.Alloc(accounting.Device, 0x100, 1024) // before the scope

	scope := led.Push("step")
	_ = led.Alloc(accounting.Device, 0x200, 4096)
	led.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Millisecond)
	led.Free(accounting.Device, 0x200, 4096)
	snap, _ := scope.Pop()

	d := snap.Kinds[accounting.Device]
	fmt.Println("base", d.Base, "peak above base", d.Peak, "net", d.Current)
	fmt.Println("HtoD bytes", snap.CopyTotal(accounting.HtoD).Bytes)
	// Output:
	// base 1024 peak above base 4096 net 0
	// HtoD bytes 4096
}

// A limit turns an allocation that would pass it into a typed error.
func ExampleLedger_SetLimit() {
	led := accounting.NewLedger("sim:0")
	_ = led.SetLimit(accounting.Device, 1<<20)
	err := led.Alloc(accounting.Device, 0x100, 2<<20)
	var oom *accounting.OutOfMemoryError
	fmt.Println(errors.Is(err, accounting.ErrOutOfMemory), errors.As(err, &oom), oom.Requested, oom.Limit)
	fmt.Println(err)
	// Output:
	// true true 2097152 1048576
	// out of memory: 2.00 MiB of device requested with 0 B in use: the ledger's device limit is 1.00 MiB
}

func ExampleSnapshot_Report() {
	led := accounting.NewLedger("sim:0")
	_ = led.Alloc(accounting.Device, 0x100, 3<<20)
	led.RecordCopy(accounting.HtoD, accounting.PathDirect, 1<<20, 0)
	fmt.Print(led.Snapshot().Report())
	// Output:
	// ledger sim:0
	//   memory   current  cached      peak  allocs  frees  allocated  failed  limit
	//   device  3.00 MiB     0 B  3.00 MiB       1      0   3.00 MiB       0   none
	//   (bytes as the device allocated them: whole 256-byte granules on sim and CUDA, so a 48-byte array takes 256 B)
	//
	//   copy    path  count     bytes  time  GB/s
	//   HtoD  direct      1  1.00 MiB     -     -
}

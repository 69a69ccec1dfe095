package accounting_test

import (
	"bytes"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
)

// Record a ledger's allocations and frees, then read the log back: what
// `cuarray replay` replays on another device.
func ExampleLedger_Record() {
	led := accounting.NewLedger("sim:0")
	var log bytes.Buffer // a file, in a real run
	rec, err := led.Record(&log)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := led.Push("reconstruct")
	_ = led.Alloc(accounting.Device, 0x7000_0000, 4<<20)
	_ = led.Alloc(accounting.Device, 0x7040_0000, 1<<20)
	led.Free(accounting.Device, 0x7000_0000, 4<<20)
	led.Free(accounting.Device, 0x7040_0000, 1<<20)
	_, _ = s.Pop()
	if err := rec.Close(); err != nil { // flushes
		fmt.Println(err)
		return
	}

	g, err := accounting.ReadLog(&log)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range g.Events {
		fmt.Println(e.Op, e.ID, accounting.FormatBytes(e.Bytes), g.ScopeName(e.Scope))
	}
	fmt.Println("peak", accounting.FormatBytes(g.Peak(accounting.Device)))
	// Output:
	// alloc 1 4.00 MiB reconstruct
	// alloc 2 1.00 MiB reconstruct
	// free 1 4.00 MiB reconstruct
	// free 2 1.00 MiB reconstruct
	// peak 5.00 MiB
}

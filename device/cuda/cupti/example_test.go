package cupti_test

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/device/cuda/cupti"
)

// Counting the driver's own migrations of managed memory where CUPTI can, and saying why not
// where it cannot.
func ExampleOpen() {
	lib, err := cupti.Open()
	if errors.Is(err, cupti.ErrUnavailable) {
		fmt.Println("migrations not counted:", err)
		return
	}
	c, err := lib.Start()
	if err != nil {
		fmt.Println("migrations not counted:", err)
		return
	}
	// ... kernels and the host touch managed memory; the work is synchronized ...
	t, err := c.Stop()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("the driver moved %d bytes to the GPU and %d back; %d GPU page faults\n",
		t.BytesHtoD, t.BytesDtoH, t.GPUPageFaults)
}

package plan_test

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// How many slices of a 2048-slice FBP reconstruction (720 angles, 1024
// detectors, 1024² images) fit in 16 GiB, and the chunks to run it in.
func ExampleChunks() {
	p, err := plan.Chunks(kernels.ReconstructMethod, [3]int{2048, 720, 1024}, 0, devarray.Float32, nil, 16<<30, 1.1)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Explain())
	fmt.Println("first chunk:", p.Chunks[0], "last chunk:", p.Chunks[len(p.Chunks)-1])
	// Output:
	// fbp.reconstruct on [2048 720 1024] float32 along axis 0: 2 chunks of at most 1024 slices (16.00 GiB available / overhead 1.10 fits 1547 slices)
	// first chunk: {0 1024} last chunk: {1024 1024}
}

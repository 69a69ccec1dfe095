package entry_test

import (
	"fmt"

	"github.com/cuarray/cuarray/device/ptx/entry"
)

// Params reads each kernel's parameters from its declaration; the body,
// which may hold instructions package ptx does not run, is skipped.
func ExampleParams() {
	params, err := entry.Params(`.version 7.8
.target sm_70
.address_size 64

.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3,
	.param .align 8 .b8 saxpy_param_4[24]
)
{
	tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [t, {%f5, %f6}];
	ret;
}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range params["saxpy"] {
		fmt.Printf("%-17s at byte %d\n", p.Decl(), p.Offset)
	}
	// Output:
	// .f32              at byte 0
	// .u64              at byte 8
	// .u64              at byte 16
	// .u32              at byte 24
	// .align 8 .b8[24]  at byte 32
}

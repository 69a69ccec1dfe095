package ptx_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cuarray/cuarray/device/ptx"
)

// oneBuffer is device memory of one Go slice: its address is its device pointer.
type oneBuffer []byte

func (b oneBuffer) Lookup(a uint64) (uint64, []byte, bool) {
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	if a-base < uint64(len(b)) {
		return base, b, true
	}
	return 0, nil, false
}

func ExampleParse() {
	src := `
.version 7.8
.target sm_70
.address_size 64
.visible .entry iota(.param .u64 out)
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	mul.lo.u32 %r2, %r1, %r1;
	st.global.u32 [%rd3], %r2;
	ret;
}`
	m, err := ptx.Parse(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	k, _ := m.Kernel("iota")
	out := make(oneBuffer, 4*8)
	params := binary.LittleEndian.AppendUint64(nil, uint64(uintptr(unsafe.Pointer(&out[0]))))
	st, err := k.Run(ptx.Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{8, 1, 1}, Params: params, Global: out})
	runtime.KeepAlive(out)
	fmt.Println(err, st.LaneInstructions)
	sq := make([]uint32, 8)
	for i := range sq {
		sq[i] = binary.LittleEndian.Uint32(out[4*i:])
	}
	fmt.Println(sq)
	// One more thread than the buffer holds: an illegal address, reported.
	_, err = k.Run(ptx.Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{9, 1, 1}, Params: params, Global: out})
	fmt.Println(err != nil)
	// Output:
	// <nil> 56
	// [0 1 4 9 16 25 36 49]
	// true
}

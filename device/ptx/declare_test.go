package ptx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// movePTX is dst[i+wshift] = src[i+rshift] + dst[i+wshift] (mode 2, the
// read of dst first), dst[i+wshift] = src[i+rshift] (mode 0), or that and
// a read of what it wrote (mode 1), for i < n.
const movePTX = `.version 7.8
.target sm_70
.address_size 64
.visible .entry move(.param .u64 dst, .param .u64 src, .param .u32 n, .param .s32 rshift, .param .s32 wshift, .param .u32 mode)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [dst];
	ld.param.u64 %rd2, [src];
	ld.param.u32 %r1, [n];
	ld.param.s32 %r2, [rshift];
	ld.param.s32 %r3, [wshift];
	ld.param.u32 %r4, [mode];
	mov.u32 %r5, %ctaid.x;
	mov.u32 %r6, %ntid.x;
	mov.u32 %r7, %tid.x;
	mad.lo.s32 %r8, %r5, %r6, %r7;
	setp.ge.u32 %p1, %r8, %r1;
	@%p1 bra $L_end;
	add.s32 %r9, %r8, %r2;
	mul.wide.s32 %rd3, %r9, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.u32 %r10, [%rd4];
	add.s32 %r11, %r8, %r3;
	mul.wide.s32 %rd5, %r11, 4;
	add.s64 %rd6, %rd1, %rd5;
	setp.eq.u32 %p2, %r4, 2;
	mov.u32 %r12, 0;
	@%p2 ld.global.u32 %r12, [%rd6];
	add.s32 %r13, %r10, %r12;
	st.global.u32 [%rd6], %r13;
	setp.eq.u32 %p3, %r4, 1;
	@%p3 ld.global.u32 %r14, [%rd6];
$L_end:
	ret;
}
`

// The PTX lines of movePTX's loads and its store.
const (
	moveReadSrc   = 24
	moveReadFirst = 30
	moveStore     = 32
)

// TestDeclaredArraysAreHeldTo: a launch's declared arrays hold the kernel
// to them: an access in an array's allocation outside every array
// declared there is OutsideExtent, naming the nearest, unless RawMemory
// lies there too; a read of an Out array's bytes before the launch writes
// them is UnwrittenRead, and a read of what it wrote is not.
func TestDeclaredArraysAreHeldTo(t *testing.T) {
	m, err := Parse(movePTX)
	require.NoError(t, err)
	k, ok := m.Kernel("move")
	require.True(t, ok)
	for _, tc := range []struct {
		name           string
		dst            ArrayAccess
		rshift, wshift int32
		mode           uint32
		raw            bool // the destination's allocation is declared RawMemory too
		kind           FaultKind
		line           int
		detail         []string
	}{
		{name: "Out written", dst: WriteArray},
		{name: "Out read back", dst: WriteArray, mode: 1},
		{name: "Out read first", dst: WriteArray, mode: 2, kind: UnwrittenRead, line: moveReadFirst,
			detail: []string{"; in argument 1 (Out): the array is declared Out", "byte 0 has not been written"}},
		{name: "InOut read first", dst: ReadWriteArray, mode: 2},
		{name: "write one past the view", dst: WriteArray, wshift: 1, kind: OutsideExtent, line: moveStore,
			detail: []string{"nearest declared array argument 1 (Out)", "4 bytes past its end", "holds the launch's declared arrays"}},
		{name: "read one before the view", dst: WriteArray, rshift: -1, kind: OutsideExtent, line: moveReadSrc,
			detail: []string{"nearest declared array argument 2 (In)", "4 bytes before its start"}},
		{name: "write past the view into Memory", dst: WriteArray, wshift: 1, raw: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.For(t)
			h := &hostMem{}
			n := 32 + rng.IntN(200)
			pad := 1 + rng.IntN(8) // elements on each side of each view
			dbuf, sbuf := h.alloc(4*(n+2*pad), rng), h.alloc(4*(n+2*pad), rng)
			dst, src := addr(dbuf)+uint64(4*pad), addr(sbuf)+uint64(4*pad)
			arrays := []Array{
				{Addr: dst, N: uint64(4 * n), Access: tc.dst, Name: "argument 1 (" + map[ArrayAccess]string{WriteArray: "Out", ReadWriteArray: "InOut"}[tc.dst] + ")"},
				{Addr: src, N: uint64(4 * n), Access: ReadArray, Name: "argument 2 (In)"},
			}
			if tc.raw {
				arrays = append(arrays, Array{Addr: addr(dbuf), N: uint64(len(dbuf)), Access: RawMemory, Name: "argument 7 (Memory)"})
			}
			before := append([]byte(nil), dbuf...)
			args := new(driver.KernelArgs).Ptr(devarray.Ptr(dst)).Ptr(devarray.Ptr(src)).U32(uint32(n)).I32(tc.rshift).I32(tc.wshift).U32(tc.mode)
			params, _ := args.Bytes()
			_, err := k.Run(Launch{Grid: [3]uint32{uint32(n+63) / 64, 1, 1}, Block: [3]uint32{64, 1, 1}, Params: params, Global: h, Arrays: arrays})
			if tc.kind == 0 {
				require.NoError(t, err)
				for i := 0; i < n; i++ {
					want := binary.LittleEndian.Uint32(sbuf[4*(pad+i+int(tc.rshift)):])
					if tc.mode == 2 {
						want += binary.LittleEndian.Uint32(before[4*(pad+i+int(tc.wshift)):])
					}
					require.Equal(t, want, binary.LittleEndian.Uint32(dbuf[4*(pad+i+int(tc.wshift)):]), "element %d", i)
				}
				return
			}
			var f *Fault
			require.True(t, errors.As(err, &f), "a fault: %v", err)
			assert.Equal(t, tc.kind, f.Kind, "%v", f)
			assert.Equal(t, tc.line, f.Line, "%v", f)
			for _, want := range tc.detail {
				assert.Contains(t, f.Error(), want)
			}
			assert.True(t, strings.HasPrefix(f.Error(), fmt.Sprintf("ptx: move: %s at line %d", tc.kind, tc.line)), f.Error())
		})
	}
}

// TestWrittenBitmap: mark and unset agree with a byte-per-bit model at
// random offsets and sizes, across word boundaries.
func TestWrittenBitmap(t *testing.T) {
	rng := rand.For(t)
	for _, bytes := range []int{1, 63, 64, 65, 500} {
		t.Run(fmt.Sprint(bytes), func(t *testing.T) {
			m := make([]uint64, (bytes+63)/64)
			model := make([]bool, bytes)
			for range 200 {
				n := 1 + rng.IntN(min(bytes, 32))
				off := rng.IntN(bytes - n + 1)
				first, all := -1, true
				for i := off; i < off+n; i++ {
					if !model[i] {
						first, all = i-off, false
						break
					}
				}
				got, ok := unset(m, uint64(off), n)
				require.Equal(t, all, ok, "unset(%d, %d)", off, n)
				if !all {
					require.Equal(t, uint64(first), got, "unset(%d, %d)", off, n)
				}
				if rng.IntN(2) == 0 {
					mark(m, uint64(off), n)
					for i := off; i < off+n; i++ {
						model[i] = true
					}
				}
			}
		})
	}
}

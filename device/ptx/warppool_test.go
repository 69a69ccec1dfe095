package ptx

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// leftoverPTX stores, per thread, a register and a word of local memory
// that it writes only when flag is set: a launch with flag 0 reads what its
// warps start with.
const leftoverPTX = `
.visible .entry leftover(.param .u64 out, .param .u32 flag, .param .u32 v)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.local .align 4 .b8 buf[4];
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [flag];
	ld.param.u32 %r2, [v];
	mov.u32 %r3, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra SKIP;
	add.u32 %r5, %r2, %r3;
	st.local.u32 [buf], %r5;
SKIP:
	ld.local.u32 %r6, [buf];
	mul.wide.u32 %rd2, %r3, 8;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	st.global.u32 [%rd3+4], %r6;
	ret;
}
`

// TestKeptWarpsStartAsNew: a program keeps its warps between launches, and
// a launch still starts with zero registers and local memory, not the
// values of the launch before it.
func TestKeptWarpsStartAsNew(t *testing.T) {
	m, err := Parse(ptxHeader + leftoverPTX)
	require.NoError(t, err)
	k, ok := m.Kernel("leftover")
	require.True(t, ok)
	const threads = 80 // three warps, the last one partial
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, c := range []struct {
		name string
		flag uint32
	}{{"writes", 1}, {"reads what it starts with", 0}, {"writes again", 1}, {"reads again", 0}} {
		out := make([]byte, 8*threads)
		for i := range out {
			out[i] = byte(rng.Uint32())
		}
		v := rng.Uint32() | 1
		params := binary.LittleEndian.AppendUint64(nil, addr(out))
		params = binary.LittleEndian.AppendUint32(params, c.flag)
		params = binary.LittleEndian.AppendUint32(params, v)
		_, err := k.Run(Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{threads, 1, 1}, Params: params, Global: &hostMem{bufs: [][]byte{out}}})
		require.NoError(t, err, c.name)
		runtime.KeepAlive(out)
		for tid := range threads {
			want := uint32(0)
			if c.flag != 0 {
				want = v + uint32(tid)
			}
			require.Equal(t, want, binary.LittleEndian.Uint32(out[8*tid:]), "%s: thread %d's register", c.name, tid)
			require.Equal(t, want, binary.LittleEndian.Uint32(out[8*tid+4:]), "%s: thread %d's local memory", c.name, tid)
		}
	}
}

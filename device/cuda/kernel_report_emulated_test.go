//go:build cuda && cudaemu && linux

package cuda

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// oobPTX is what nvcc makes of a kernel that writes one element past its
// array: a[i] = i for i <= n, in a 1-D grid (line 16 is the store).
const oobPTX = `.version 7.8
.target sm_70
.address_size 64
.visible .entry write_one_past(.param .u64 a, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [a];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.gt.u32 %p1, %r5, %r1;
	@%p1 bra $L_end;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r5;
$L_end:
	ret;
}
`

// An interpreted kernel's write past its allocation is an illegal address,
// sticky as on a GPU, and the emulated driver's report names the kernel,
// the thread, the PTX line, the address and how far past the allocation
// it lies. It runs in a child process: the fault spoils the device for
// the rest of the process.
func TestKernelOutOfBoundsReport(t *testing.T) {
	if !inChild(t, "devices=2") {
		return
	}
	d, err := Open(0)
	require.NoError(t, err)
	n := 64 * (1 + rand.IntN(16)) // a multiple of 256 bytes: the write past it is past the allocation's padding too
	p, err := d.Malloc(int64(4 * n))
	require.NoError(t, err)
	m, err := d.LoadModule(oobPTX)
	require.NoError(t, err)
	f, err := m.Function("write_one_past")
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	args := new(driver.KernelArgs).Ptr(p).I32(int32(n))
	require.NoError(t, f.Launch([3]uint32{uint32(n/64 + 1), 1, 1}, [3]uint32{64, 1, 1}, 0, s, args), "a launch returns when queued")
	err = s.Synchronize()
	require.ErrorIs(t, err, driver.ErrContextFailed)
	assert.Contains(t, err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS")
	_, err = d.Malloc(256)
	require.ErrorIs(t, err, driver.ErrContextFailed, "the fault is sticky")

	reports := emulated.KernelFaults()
	require.NotEmpty(t, reports)
	r := reports[len(reports)-1]
	t.Logf("report: %s", r)
	for _, want := range []string{
		"write_one_past", "illegal address", "line 20",
		fmt.Sprintf("thread (%d,0,0)", n%64), fmt.Sprintf("block (%d,0,0)", n/64),
		fmt.Sprintf("write of 4 bytes at global address %#x", uint64(p)+uint64(4*n)),
		fmt.Sprintf("nearest allocation %#x of %d bytes, 4 bytes past its end", uint64(p), 4*n),
	} {
		assert.True(t, strings.Contains(r, want), "the report names %q: %s", want, r)
	}
	t.Logf("Close: %v", d.Close())
}

// racePTX has thread 0 write a shared word that thread 32, of the other
// warp, reads with no barrier between: a data race in shared memory.
const racePTX = `.version 7.8
.target sm_70
.address_size 64
.visible .entry shared_race(.param .u64 out)
{
	.shared .align 4 .b32 s[1];
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $L_read;
	st.shared.u32 [s], %r1;
	bra $L_end;
$L_read:
	setp.ne.u32 %p1, %r1, 32;
	@%p1 bra $L_end;
	ld.shared.u32 %r2, [s];
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r2;
$L_end:
	ret;
}
`

// A race in shared memory between two warps is undefined behaviour, not a
// fault: the kernel's context goes on, as on a GPU, and the emulated
// driver records the race where tests fail on it (Misuses, which
// internal/testdev checks at every test's end), naming both threads and
// their PTX lines.
func TestKernelSharedRaceIsReported(t *testing.T) {
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	p, err := d.Malloc(4)
	require.NoError(t, err)
	defer d.Free(p)
	m, err := d.LoadModule(racePTX)
	require.NoError(t, err)
	f, err := m.Function("shared_race")
	require.NoError(t, err)
	before := len(emulated.Misuses())
	require.NoError(t, f.Launch([3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, 0, nil, new(driver.KernelArgs).Ptr(p)))
	require.NoError(t, d.Synchronize(), "a race is no fault")
	_, err = d.Malloc(256)
	require.NoError(t, err, "the context goes on")
	uses := emulated.Misuses()
	require.Len(t, uses, before+1)
	race := uses[before]
	t.Logf("report: %s", race)
	for _, want := range []string{"shared_race", "shared memory race", "line 13", "line 18", "thread (0,0,0)", "thread (32,0,0)"} {
		assert.Contains(t, race, want)
	}
}

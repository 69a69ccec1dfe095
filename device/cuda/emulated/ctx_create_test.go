//go:build cuda && cudaemu && linux

package emulated

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/device/sim"
)

// lockedDriver locks the test to its OS thread (the current context is
// per thread) and initializes the driver.
// The thread's context stack starts and ends empty: a thread keeps its
// stack from one test to the next, as on a GPU.
func lockedDriver(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	require.NoError(t, cu.Init())
	emptyStack()
	t.Cleanup(emptyStack)
}

// emptyStack pops every context of the calling thread's stack.
func emptyStack() {
	for {
		if _, err := cu.PopCurrentCtx(); err != nil {
			return
		}
	}
}

// Contexts are compared by String, their handle: testify's Equal would
// find any two equal (reflect.DeepEqual follows the C pointers to empty
// structs).

// makeContext makes a context on device 0 with flags, current on the
// test's thread, destroyed when the test ends.
func makeContext(t *testing.T, flags cu.ContextFlags) cu.CUContext {
	t.Helper()
	ctx, err := cu.Device(0).MakeContext(flags)
	require.NoError(t, err, "cuCtxCreate with flags %#x", flags)
	c := ctx
	t.Cleanup(func() { c.Destroy() })
	return ctx
}

// onOtherThread runs f on another OS thread and returns what it returns.
func onOtherThread[T any](f func() T) T {
	ch := make(chan T)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ch <- f()
	}()
	return <-ch
}

// TestContextStack follows cuda.h's context stack: cuCtxCreate pushes,
// cuCtxPopCurrent pops back to what was current before, cuCtxSetCurrent
// replaces the top (NULL pops), and cuCtxDestroy pops the calling
// thread's current context while other threads keep it current, destroyed.
func TestContextStack(t *testing.T) {
	lockedDriver(t)
	require.NoError(t, cu.SetCurrentContext(cu.CUContext{}))
	_, err := cu.PopCurrentCtx()
	assert.Equal(t, cu.InvalidContext, err, "pop with no context current")

	a := makeContext(t, cu.SchedAuto)
	b := makeContext(t, cu.SchedAuto)
	assert.NotEqual(t, a.String(), b.String(), "two contexts, two handles")
	cur, err := cu.CurrentContext()
	require.NoError(t, err)
	assert.Equal(t, b.String(), cur.String(), "the context made last is current")

	popped, err := cu.PopCurrentCtx()
	require.NoError(t, err)
	assert.Equal(t, b.String(), popped.String())
	cur, err = cu.CurrentContext()
	require.NoError(t, err)
	assert.Equal(t, a.String(), cur.String(), "popping b makes a current again")

	require.NoError(t, cu.PushCurrentCtx(b))
	require.NoError(t, cu.SetCurrentContext(cu.CUContext{}))
	cur, err = cu.CurrentContext()
	require.NoError(t, err)
	assert.Equal(t, a.String(), cur.String(), "cuCtxSetCurrent(NULL) pops the top")

	require.NoError(t, cu.PushCurrentCtx(b))
	primary, err := cu.Device(0).RetainPrimaryCtx()
	require.NoError(t, err)
	defer cu.Device(0).ReleasePrimaryCtx()
	require.NoError(t, cu.SetCurrentContext(primary))
	popped, err = cu.PopCurrentCtx()
	require.NoError(t, err)
	assert.Equal(t, primary.String(), popped.String(), "cuCtxSetCurrent replaced b at the top")
	cur, err = cu.CurrentContext()
	require.NoError(t, err)
	assert.Equal(t, a.String(), cur.String(), "what was under b is under the primary context")
	assert.Equal(t, cu.InvalidContext, primary.Destroy(), "a primary context is not destroyed by cuCtxDestroy")

	// b current on another thread, destroyed from this one.
	require.NoError(t, cu.PushCurrentCtx(b))
	other := make(chan cu.CUContext)
	result := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		result <- cu.SetCurrentContext(<-other)
		<-other
		_, err := cu.MemAlloc(256)
		result <- err
	}()
	other <- b
	require.NoError(t, <-result)
	bb := b
	require.NoError(t, bb.Destroy())
	cur, err = cu.CurrentContext()
	require.NoError(t, err)
	assert.Equal(t, a.String(), cur.String(), "cuCtxDestroy popped b from the calling thread")
	other <- cu.CUContext{}
	assert.Equal(t, cu.ContextIsDestroyed, <-result, "b stays current on the other thread, destroyed")
	assert.Equal(t, cu.InvalidContext, cu.PushCurrentCtx(b), "a destroyed context's handle")

	version, err := a.APIVersion()
	require.NoError(t, err)
	assert.Equal(t, uint(3020), version)
	version, err = cu.CUContext{}.APIVersion()
	require.NoError(t, err)
	assert.Equal(t, uint(3020), version, "the current context's API version")
}

// TestContextFlags: a made context keeps its flags (with CU_CTX_MAP_HOST,
// as every context reports it unless configured map-host=false), and
// flags that name two scheduling policies, or none cuda.h names, are
// refused.
func TestContextFlags(t *testing.T) {
	lockedDriver(t)
	for _, tc := range []struct {
		flags cu.ContextFlags
		err   error
	}{
		{cu.SchedAuto, nil},
		{cu.SchedSpin, nil},
		{cu.SchedYield, nil},
		{cu.SchedBlockingSync, nil},
		{cu.SchedBlockingSync | cu.MapHost, nil},
		{cu.LMemResizeToMax, nil},
		{cu.SchedSpin | cu.SchedYield, cu.InvalidValue},
		{cu.SchedBlockingSync | cu.SchedSpin, cu.InvalidValue},
		{0x20, cu.InvalidValue}, // no flag of cuda.h 11.8
	} {
		ctx, err := cu.Device(0).MakeContext(tc.flags)
		if tc.err != nil {
			assert.Equal(t, tc.err, err, "flags %#x", tc.flags)
			continue
		}
		require.NoError(t, err, "flags %#x", tc.flags)
		got, err := cu.CurrentFlags()
		require.NoError(t, err)
		assert.Equal(t, tc.flags, got, "flags %#x: a made context reports the flags it was made with", tc.flags)
		require.NoError(t, ctx.Destroy())
	}
	_, err := cu.Device(99).MakeContext(cu.SchedAuto)
	assert.Equal(t, cu.InvalidDevice, err)
}

// TestContextMemory: a made context's memory is its own, and the driver
// knows each allocation's context and the size asked for.
func TestContextMemory(t *testing.T) {
	lockedDriver(t)
	a := makeContext(t, cu.SchedAuto)
	b := makeContext(t, cu.SchedAuto)
	n := int64(1 + rand.IntN(100000))
	pb, err := cu.MemAlloc(n)
	require.NoError(t, err)
	size, base, err := pb.AddressRange()
	require.NoError(t, err)
	assert.Equal(t, pb, base)
	assert.Equal(t, n, size, "the range is what cuMemAlloc was asked for")
	info := pointerOf(uintptr(pb))
	assert.Equal(t, memTypeDevice, info.memType)
	require.NotNil(t, info.ctx)
	assert.Equal(t, drv.currentContext(), info.ctx, "the allocation is b's")

	host := make([]byte, n)
	require.NoError(t, cu.SetCurrentContext(a))
	assert.Equal(t, cu.InvalidValue, cu.MemcpyDtoH(ptrOf(host), pb, n), "b's memory from a")
	require.NoError(t, cu.SetCurrentContext(b))
	require.NoError(t, cu.MemcpyDtoH(ptrOf(host), pb, n))

	// A destroyed context's memory goes with it.
	free0, _, err := cu.MemInfo()
	require.NoError(t, err)
	big, err := cu.MemAlloc(64 << 20)
	require.NoError(t, err)
	free1, _, err := cu.MemInfo()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, free0-free1, int64(64<<20))
	_, _, err = big.AddressRange()
	require.NoError(t, err)
	bb := b
	require.NoError(t, bb.Destroy())
	require.NoError(t, cu.SetCurrentContext(a))
	_, _, err = big.AddressRange()
	assert.ErrorIs(t, err, cu.NotFound, "the allocation went with its context")
}

// TestContextLimits: cuCtxGetLimit gives an H100's defaults, cuCtxSetLimit
// keeps a value or clamps it as cuda.h allows, and a limit cuda.h does not
// name is CUDA_ERROR_UNSUPPORTED_LIMIT.
func TestContextLimits(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	for _, tc := range []struct {
		limit   cu.Limit
		initial int64
		set     int64
		want    int64
		err     error
	}{
		{cu.StackSize, 1024, 64 + 16*int64(rand.IntN(1000)), -1, nil},
		{cu.PrintfFIFOSize, 1 << 20, 4 << 20, 4 << 20, nil},
		{cu.MallocHeapSize, 8 << 20, 1 << 30, 1 << 30, nil},
		{cu.DevRuntimeSyncDepth, 2, 24, 24, nil},
		{cu.DevRuntimeSyncDepth, 24, 25, 24, cu.InvalidValue},
		{cu.DevRuntimePendingLaunchCount, 2048, 4096, 4096, nil},
		{cu.Limit(limitMaxL2FetchGranular), 32, 1000, 128, nil},
		{cu.Limit(limitPersistingL2Cache), 0, 1 << 40, maxPersistingL2CacheBytes, nil},
		{cu.Limit(7), -1, 1, -1, cu.UnsupportedLimit},
	} {
		got, err := cu.Limits(tc.limit)
		if tc.initial < 0 {
			assert.Equal(t, cu.UnsupportedLimit, err, "limit %d", tc.limit)
		} else {
			require.NoError(t, err, "limit %d", tc.limit)
			assert.Equal(t, tc.initial, got, "limit %d before it is set", tc.limit)
		}
		err = cu.SetLimit(tc.limit, tc.set)
		switch {
		case tc.err == cu.UnsupportedLimit:
			assert.Equal(t, cu.UnsupportedLimit, err, "set limit %d", tc.limit)
			continue
		case tc.err != nil:
			assert.Equal(t, tc.err, err, "set limit %d to %d", tc.limit, tc.set)
		default:
			require.NoError(t, err, "set limit %d to %d", tc.limit, tc.set)
		}
		want := tc.want
		if want < 0 {
			want = tc.set
		}
		got, err = cu.Limits(tc.limit)
		require.NoError(t, err)
		assert.Equal(t, want, got, "limit %d after setting %d", tc.limit, tc.set)
	}
}

// TestStackSizeLimitWaits: setting CU_LIMIT_STACK_SIZE "will take effect
// immediately, and if necessary, the device will block until all preceding
// requested tasks are complete" (cuda.h): it returns only once the
// context's queued work is done.
func TestStackSizeLimitWaits(t *testing.T) {
	lockedDriver(t)
	ctx := makeContext(t, cu.SchedAuto)
	p, err := cu.MemAlloc(1 << 20)
	require.NoError(t, err)
	c := drv.currentContext()
	resume, err := sim.Pause(c.legacy)
	require.NoError(t, err)
	defer resume()
	require.NoError(t, cu.MemsetD8(p, 7, 1<<20), "a memset queued behind the pause")
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cu.SetCurrentContext(ctx); err != nil {
			done <- err
			return
		}
		done <- cu.SetLimit(cu.StackSize, 2048)
	}()
	select {
	case err := <-done:
		t.Fatalf("cuCtxSetLimit(CU_LIMIT_STACK_SIZE) returned (%v) with the context's work still queued", err)
	case <-time.After(100 * time.Millisecond):
	}
	resume()
	require.NoError(t, <-done)
	got, err := cu.Limits(cu.StackSize)
	require.NoError(t, err)
	assert.Equal(t, int64(2048), got)
}

// TestCacheAndSharedMemConfig: the cache preference is kept, the shared
// memory bank size stays four bytes (fixed on the emulated H100), and
// values cuda.h does not name are refused.
func TestCacheAndSharedMemConfig(t *testing.T) {
	lockedDriver(t)
	makeContext(t, cu.SchedAuto)
	got, err := cu.CurrentCacheConfig()
	require.NoError(t, err)
	assert.Equal(t, cu.PreferNone, got, "the default")
	for _, c := range []cu.FuncCacheConfig{cu.PreferShared, cu.PreferL1, cu.PreferEqual, cu.PreferNone} {
		require.NoError(t, cu.SetCurrentCacheConfig(c))
		got, err := cu.CurrentCacheConfig()
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	assert.Equal(t, cu.InvalidValue, cu.SetCurrentCacheConfig(4))
	for _, c := range []cu.SharedConfig{cu.DefaultBankSize, cu.FourByteBankSize, cu.EightByteBankSize} {
		require.NoError(t, cu.SetSharedMemConfig(c))
		got, err := cu.SharedMemConfig()
		require.NoError(t, err)
		assert.Equal(t, cu.FourByteBankSize, got, "fixed four-byte banks, after setting %d", c)
	}
	assert.Equal(t, cu.InvalidValue, cu.SetSharedMemConfig(3))

	require.NoError(t, cu.SetCurrentContext(cu.CUContext{}))
	_, err = cu.CurrentCacheConfig()
	assert.Equal(t, cu.InvalidContext, err, "no context current")
	_, err = cu.Limits(cu.StackSize)
	assert.Equal(t, cu.InvalidContext, err, "no context current")
}

// TestDeviceUUID: each device has its own UUID, the same every call.
func TestDeviceUUID(t *testing.T) {
	lockedDriver(t)
	n, err := cu.NumDevices()
	require.NoError(t, err)
	seen := make(map[[16]byte]int)
	for i := range n {
		u, err := cu.Device(i).UUID()
		require.NoError(t, err)
		again, err := cu.Device(i).UUID()
		require.NoError(t, err)
		assert.Equal(t, u, again)
		assert.Equal(t, [16]byte(u), deviceUUID(i))
		assert.NotContains(t, seen, [16]byte(u), "device %d's UUID is another's", i)
		seen[u] = i
	}
	_, err = cu.Device(n).UUID()
	assert.Equal(t, cu.InvalidDevice, err)
	v, err := cu.Device(0).Attribute(cu.ClockRate)
	require.NoError(t, err)
	assert.Positive(t, v, "CU_DEVICE_ATTRIBUTE_CLOCK_RATE")
}

// ptrOf is the address of b's first byte.
func ptrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

//go:build cuda && linux && !cudaemu

package cupti

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	rand "github.com/cuarray/cuarray/internal/testrand"
)

// TestCountsManagedMigrationsOnAGPU writes managed memory from the host, prefetches it to the
// GPU, reads half of it back on the host (on demand: CPU page faults) and prefetches the rest
// back: the counter sees at least the array's bytes go each way, and the data comes back
// unchanged.
func TestCountsManagedMigrationsOnAGPU(t *testing.T) {
	if err := cu.Init(); err != nil {
		t.Skipf("needs a GPU: the CUDA driver did not initialize: %v", err)
	}
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		t.Skipf("needs a GPU: %d devices (%v)", n, err)
	}
	dev := cu.Device(0)
	if concurrent, err := dev.Attribute(cu.ConcurrentManagedAccess); err != nil || concurrent == 0 {
		t.Skipf("needs a GPU with concurrent managed access (prefetch and on-demand migration): %d (%v)", concurrent, err)
	}
	lib, err := Open()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("needs libcupti, loaded at run time (set %s to its path): %v", EnvLibrary, err)
	}
	require.NoError(t, err)
	t.Logf("libcupti: %s", lib.Path())

	// counting from before the context exists, as CUPTI's own unified-memory sample does
	c, err := lib.Start()
	require.NoError(t, err, "CUPTI counts unified memory on this GPU")
	stopped := false
	defer func() {
		if !stopped {
			_, _ = c.Stop()
		}
	}()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, err := dev.RetainPrimaryCtx()
	require.NoError(t, err)
	defer func() { assert.NoError(t, dev.ReleasePrimaryCtx()) }()
	require.NoError(t, cu.SetCurrentContext(ctx))

	r := rand.For(t)
	const page = 64 << 10
	size := int64(page * (64 + r.IntN(64))) // 4 to 8 MiB
	ptr, err := cu.MemAllocManaged(size, cu.AttachGlobal)
	require.NoError(t, err)
	defer func() { assert.NoError(t, cu.MemFree(ptr)) }()
	host := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&ptr))), size)
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	copy(host, want) // populated on the host

	require.NoError(t, ptr.MemPrefetchAsync(size, dev, cu.NoStream))
	require.NoError(t, cu.Synchronize())
	half := size / 2
	assert.Equal(t, want[:half], host[:half], "read on the host, on demand")
	require.NoError(t, ptr.MemPrefetchAsync(size, cu.CPU, cu.NoStream))
	require.NoError(t, cu.Synchronize())
	assert.Equal(t, want, host, "the data made the round trip unchanged")

	tot, err := c.Stop()
	stopped = true
	require.NoError(t, err)
	t.Logf("%d bytes of managed memory: %v (counting %v)", size, tot, c.Kinds())
	assert.GreaterOrEqual(t, tot.BytesHtoD, size, "the prefetch to the GPU moved the whole array")
	assert.GreaterOrEqual(t, tot.BytesDtoH, size, "the reads and the prefetch back moved it all back")
	if len(c.Kinds()) == len(AllKinds) {
		assert.Positive(t, tot.CPUPageFaults, "the host's reads of GPU-resident pages faulted")
	}
	assert.Zero(t, tot.Dropped, "CUPTI dropped no record")
	assert.Equal(t, tot.Records, int64(len(c.Records())), "every record kept (fewer than KeptRecords)")
}

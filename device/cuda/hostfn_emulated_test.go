//go:build cuda && cudaemu && linux

package cuda_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

// On the emulated driver host functions run one at a time in the whole
// process, the strictest reading of cuLaunchHostFunc's "Host functions
// without a mandated order (such as in independent streams) execute in
// undefined order and may be serialized" (a guess): while a host function
// holds a stream of cuda:0, a hold queued on a stream of cuda:1 is not
// reached, and it is once the first is let go. A program that needs the
// second to run while the first waits deadlocks, as it may on a GPU.
func TestHostFunctionsSerializedAcrossDevices(t *testing.T) {
	devs := openTwo(t)
	a, err := devs[0].NewStream()
	require.NoError(t, err)
	defer a.Close()
	b, err := devs[1].NewStream()
	require.NoError(t, err)
	defer b.Close()

	resumeA := testdev.HoldReached(t, a)
	h, ok := b.(driver.ReachedHolder)
	require.True(t, ok, "%T tells when its hold is reached", b)
	reached, resumeB, err := h.HoldReached()
	require.NoError(t, err)
	defer resumeB()
	select {
	case <-reached:
		resumeA()
		t.Fatal("cuda:1's host function ran while cuda:0's held the process's host function worker")
	case <-time.After(100 * time.Millisecond):
	}
	resumeA()
	select {
	case <-reached:
	case <-time.After(testdev.PeekDeadline):
		t.Fatalf("cuda:1's host function did not run within %v of cuda:0's returning", testdev.PeekDeadline)
	}
	resumeB()
	require.NoError(t, b.Synchronize())
	require.NoError(t, a.Synchronize())
}

// On the emulated driver a device allocation or a page-locked host
// allocation issued between the commands of two streams keeps them from
// overlapping, as the Programming Guide's implicit synchronization says:
// work queued on stream B after it waits for the work queued before it on
// stream A, here a hold, and runs once the hold is let go.
func TestAllocationSerializesStreams(t *testing.T) {
	devs := openTwo(t)
	d := devs[0]
	for _, tc := range []struct {
		name    string
		between func(t *testing.T) (undo func())
	}{
		{"Malloc", func(t *testing.T) func() {
			p, err := d.Malloc(1 << 12)
			require.NoError(t, err)
			return func() { require.NoError(t, d.Free(p)) }
		}},
		{"HostAlloc", func(t *testing.T) func() {
			h, err := d.HostAlloc(1<<12, 0)
			require.NoError(t, err)
			return func() { require.NoError(t, d.HostFree(h)) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := d.NewStream()
			require.NoError(t, err)
			defer a.Close()
			b, err := d.NewStream()
			require.NoError(t, err)
			defer b.Close()
			p, err := d.Malloc(256)
			require.NoError(t, err)
			defer d.Free(p)
			ev, err := d.NewEvent()
			require.NoError(t, err)
			defer ev.Close()

			resume := testdev.HoldReached(t, a)
			undo := tc.between(t)
			require.NoError(t, b.MemsetAsync(p, 7, 256))
			require.NoError(t, b.Record(ev))
			time.Sleep(50 * time.Millisecond)
			done, err := ev.Query()
			require.NoError(t, err)
			resume()
			require.False(t, done, "work on stream B after %s ran while stream A, before it, was held", tc.name)
			require.NoError(t, ev.Synchronize(), "B's work runs once A's hold is let go")
			undo()
		})
	}
}

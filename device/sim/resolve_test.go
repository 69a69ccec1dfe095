package sim_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// A kernel whose accesses are known only as it runs finds each address's
// allocation through the resolver: device memory at the size asked for,
// mapped host memory, and nothing for unmapped host memory or freed memory.
func TestLaunchResolving(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	n := int64(1 + rand.IntN(1000))
	p, err := dev.Malloc(n)
	require.NoError(t, err)
	freed, err := dev.Malloc(64)
	require.NoError(t, err)
	require.NoError(t, dev.Free(freed))
	mapped, err := dev.HostAlloc(4096, driver.Mapped)
	require.NoError(t, err)
	plain, err := dev.HostAlloc(4096, 0)
	require.NoError(t, err)
	hostAddr := func(h *driver.HostMem) uint64 { return uint64(uintptr(unsafe.Pointer(&h.Bytes[0]))) }

	type want struct {
		ok   bool
		base uint64
		size int
	}
	for _, tc := range []struct {
		name string
		addr uint64
		want want
	}{
		{"the first byte", uint64(p), want{true, uint64(p), int(n)}},
		{"the last byte asked for", uint64(p) + uint64(n) - 1, want{true, uint64(p), int(n)}},
		{"the alignment padding: found, but past the bytes", uint64(p) + uint64(n), want{n%sim.Alignment != 0, uint64(p), int(n)}},
		{"freed memory", uint64(freed), want{}},
		{"mapped host memory", hostAddr(mapped) + 100, want{true, hostAddr(mapped), 4096}},
		{"host memory not mapped", hostAddr(plain), want{}},
		{"nothing", 0x1000, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			require.NoError(t, dev.LaunchResolving(nil, nil, func(resolve sim.Resolver) error {
				base, mem, ok := resolve(tc.addr)
				got = want{ok, base, len(mem)}
				return nil
			}))
			require.NoError(t, dev.Synchronize())
			if !tc.want.ok {
				assert.False(t, got.ok)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// A kernel's illegal access (an error wrapping ErrContextFailed) is sticky:
// every later call fails with it, as on a GPU; any other error is the
// stream's alone.
func TestLaunchResolvingFaults(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	// On the default stream with nothing queued sim runs a kernel at once,
	// so its error may come from the launch or from the synchronize after.
	ran := func(err error) error {
		if err == nil {
			err = dev.Synchronize()
		}
		return err
	}
	require.ErrorIs(t, ran(dev.LaunchResolving(nil, nil, func(sim.Resolver) error {
		return fmt.Errorf("kernel k: not run: %w", driver.ErrInvalidValue)
	})), driver.ErrInvalidValue)
	_, err := dev.Malloc(16)
	require.NoError(t, err, "an error that is not a fault leaves the device usable")

	require.ErrorIs(t, ran(dev.LaunchResolving(nil, []driver.Range{{Ptr: devarray.Ptr(0x1000), N: 4}}, func(sim.Resolver) error {
		return fmt.Errorf("kernel k: an illegal memory access at 0x1000: %w", driver.ErrContextFailed)
	})), driver.ErrContextFailed)
	_, err = dev.Malloc(16)
	require.ErrorIs(t, err, driver.ErrContextFailed, "the fault is sticky")
}

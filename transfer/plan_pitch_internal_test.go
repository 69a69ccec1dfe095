//go:build linux

package transfer

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

// reserve returns n bytes of address space that are never touched: the
// planner reads a host side's layout, not its bytes. The test skips where
// the system will not map that much.
func reserve(t *testing.T, n int) []byte {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot reserve %d bytes of address space: %v", n, err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	return mem
}

// The planner charges the direct path one driver copy per row stack a
// pitched copy can take (a pitch up to driver.MaxPitch), and the most it
// charges (a layout gathered on the host) for rows stacked further apart;
// a row on its own has no pitch, however wide. With direct a little
// quicker than staged, a layout it can move in a few copies goes direct,
// one it cannot is staged.
func TestChooseRowsPastThePitchLimit(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.Empty(dev, devarray.Uint8, 2, 512) // the planner reads only the host side's layout
	require.NoError(t, err)
	defer a.Free()
	p := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"})
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		require.NoError(t, p.SetCost(PathDirect, dir, Cost{Latency: 10 * time.Microsecond, GBps: 30}, 0))
		require.NoError(t, p.SetCost(PathStaged, dir, Cost{Latency: 15 * time.Microsecond, GBps: 25}, 0))
	}
	o := Options{Profile: p}.withDefaults()
	const wide = driver.MaxPitch + 1 // a row wider than any pitch
	for _, tc := range []struct {
		name  string
		bytes int // address space the layout spans
		host  func(mem []byte) Endpoint
		want  Path
	}{
		{"2 rows of 512 bytes, the largest pitch apart: one pitched copy", driver.MaxPitch + 512,
			func(mem []byte) Endpoint {
				return HostBytes(mem, devarray.Uint8, 2, 512).Strided(0, driver.MaxPitch, 1)
			}, PathDirect},
		{"2 rows of 512 bytes, a byte further apart: no pitched copy", driver.MaxPitch + 1 + 512,
			func(mem []byte) Endpoint {
				return HostBytes(mem, devarray.Uint8, 2, 512).Strided(0, driver.MaxPitch+1, 1)
			}, PathStaged},
		{"2 rows wider than any pitch, last first: a copy each", 2*wide + 4096,
			func(mem []byte) Endpoint {
				return HostBytes(mem, devarray.Uint8, 2, wide).Strided(wide+4096, -(wide + 4096), 1)
			}, PathDirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host(reserve(t, tc.bytes))
			require.NoError(t, host.Err())
			n := host.nbytes()
			c := choose(Dev(a), host, n, o, true)
			assert.Equal(t, tc.want, c.Path, c.Reason)
			assert.Equal(t, tc.want, choose(host, Dev(a), n, o, false).Path, "DtoH")
		})
	}
}

package devarray_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
)

// openDefault opens the default sim device, 4 GiB of memory held in a
// byte slice: what a value that prints its device's fields would print.
func openDefault(t *testing.T) device.Device {
	t.Helper()
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// Arrays, views and the host memory of copies print in a line however
// large the device and the memory, before and after Free and Close.
func TestFormatBounded(t *testing.T) {
	dev := openDefault(t)
	a, err := devarray.FromHost(dev, randomFloat32(512*512), 512, 512)
	require.NoError(t, err)
	view, err := a.Slice(1, 0, 256)
	require.NoError(t, err)
	view, err = view.Permute(1, 0)
	require.NoError(t, err)
	desc, err := a.Descriptor()
	require.NoError(t, err)
	borrowed, err := devarray.Wrap(dev, desc)
	require.NoError(t, err)
	host := make([]byte, 1<<20)
	for i := range host {
		host[i] = byte(rand.Uint32())
	}
	strided, err := devarray.NewHostStrided(host, 0, []int{256, 512}, []int64{4, 1024}, 4)
	require.NoError(t, err)

	type value struct {
		name string
		v    any
		want []string // in %v
	}
	live := []value{
		{"owned array", a, []string{"float32 [512 512]", "sim:0", "strides [2048 4]", "owned"}},
		{"strided view", view, []string{"float32 [256 512]", "strides [4 2048]", "view"}},
		{"borrowed array", borrowed, []string{"borrowed"}},
		{"nil array", (*devarray.DevArray)(nil), []string{"DevArray(nil)"}},
		{"zero array", &devarray.DevArray{}, []string{"DevArray(nil)"}},
		{"descriptor", desc, []string{"[512 512]"}},
		{"host place", devarray.Place{Host: host}, []string{"host 1048576 bytes"}},
		{"device place", devarray.Place{Dev: a.Ptr()}, []string{"device 0x"}},
		{"2-D copy", devarray.Memcpy2D{Dst: devarray.Place{Host: host}, Src: devarray.Place{Dev: a.Ptr()}, Width: 2048, Height: 512}, []string{"host 1048576 bytes"}},
		{"3-D copy", devarray.Memcpy3D{Dst: devarray.Place{Dev: a.Ptr()}, Src: devarray.Place{Host: host}, Width: 2048, Height: 512, Depth: 1}, []string{"host 1048576 bytes"}},
		{"host strided", strided, []string{"[256 512]", "strides [4 1024]"}},
	}
	check := func(t *testing.T, values []value) {
		for _, tc := range values {
			t.Run(tc.name, func(t *testing.T) {
				out := fmtcheck.Bounded(t, tc.v)
				for _, w := range tc.want {
					assert.Contains(t, out["%v"], w)
				}
			})
		}
	}
	t.Run("live", func(t *testing.T) { check(t, live) })

	require.NoError(t, borrowed.Free())
	require.NoError(t, a.Free())
	t.Run("freed", func(t *testing.T) {
		check(t, []value{
			{"owned array", a, []string{"float32 [512 512]", "owned", "freed"}},
			{"view", view, []string{"view", "freed"}},
			{"borrowed array", borrowed, []string{"borrowed", "freed"}},
		})
	})

	b, err := devarray.FromHost(dev, randomFloat32(64), 8, 8)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{{"array", b, []string{"float32 [8 8]", "device closed"}}})
	})
}

// GoString writes fmt's form of a pointer with the description as a
// comment, and a byte slice as its length and address.
func TestGoStringForms(t *testing.T) {
	dev := openDefault(t)
	a, err := devarray.FromHost(dev, randomFloat32(16), 4, 4)
	require.NoError(t, err)
	defer a.Free()
	assert.Regexp(t, `^\(\*devarray\.DevArray\)\(0x[0-9a-f]+\) /\* DevArray\(float32 \[4 4\] on sim:0 .*\) \*/$`, a.GoString())
	assert.Equal(t, "(*devarray.DevArray)(nil)", (*devarray.DevArray)(nil).GoString())
	assert.Regexp(t, `^devarray\.Place\{Dev:0x0, Host:\[\]byte\{ /\* 3 bytes at 0x[0-9a-f]+ \*/ \}\}$`, devarray.Place{Host: []byte{1, 2, 3}}.GoString())
	assert.Equal(t, "devarray.Place{Dev:0x100, Host:[]byte(nil)}", devarray.Place{Dev: 0x100}.GoString())
}

// Printing an array never waits for its buffer's lock, which is held
// while a borrowed array's release function runs and while Hold makes
// its error: printing the array from there returns.
func TestFormatInsideRelease(t *testing.T) {
	dev := openDefault(t)
	a, err := devarray.FromHost(dev, randomFloat32(64), 8, 8)
	require.NoError(t, err)
	defer a.Free()
	desc, err := a.Descriptor()
	require.NoError(t, err)
	var borrowed *devarray.DevArray
	var printed string
	borrowed, err = devarray.Wrap(dev, desc, devarray.OnFree(func() error {
		printed = fmt.Sprint(borrowed)
		return nil
	}))
	require.NoError(t, err)
	require.NoError(t, borrowed.Free())
	assert.Contains(t, printed, "DevArray(float32 [8 8] on sim:0")
	assert.Contains(t, borrowed.String(), "freed")
}

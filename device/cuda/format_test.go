//go:build cuda

package cuda

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/fmtcheck"
)

// A GPU, its streams and events print in a line, without a driver call,
// while open and after Close; so does a value that holds the device in a
// field its String cannot reach (its allocations and page-locked memory
// are behind a pointer fmt does not follow).
func TestFormatBounded(t *testing.T) {
	skipWithoutGPU(t)
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	p, err := d.Malloc(1 << 20)
	require.NoError(t, err)
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(rand.Uint32())
	}
	require.NoError(t, d.CopyHtoD(p, src))
	h, err := d.HostAlloc(1<<20, driver.Mapped)
	require.NoError(t, err)
	copy(h.Bytes, src)
	s, err := d.NewStream()
	require.NoError(t, err)
	legacy, err := d.ExternalStream(driver.LegacyDefaultStream)
	require.NoError(t, err)
	ev, err := d.NewEvent()
	require.NoError(t, err)
	require.NoError(t, s.Record(ev))
	_, err = d.Malloc(1 << 60)
	require.Error(t, err, "more memory than any GPU has")

	type value struct {
		name string
		v    any
		want []string // in %v
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
	t.Run("open", func(t *testing.T) {
		check(t, []value{
			{"device", d, []string{"cuda:0 ", "1.00 MiB in use)"}},
			{"nil device", (*Device)(nil), []string{"cuda.Device(nil)"}},
			{"stream", s, []string{"cuda:0 stream 0x"}},
			{"default stream", legacy, []string{"cuda:0 stream 0x1 (borrowed)"}},
			{"event", ev, []string{"cuda:0 event"}},
			{"host memory", h, []string{"page-locked 1.00 MiB (mapped)"}},
			{"out of memory", err, []string{"cuda"}},
			{"device in a field", struct{ d *Device }{d}, nil},
			{"driver error", &DriverError{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}, []string{"CUDA_ERROR_OUT_OF_MEMORY (2)"}},
			{"missing function", &MissingFunctionError{Symbol: "cuMemcpy3DAsync_v2", Needs: 12000, Driver: 11040}, []string{"cuMemcpy3DAsync_v2"}},
			{"init error", &InitError{Err: driver.ErrNoDevice}, []string{"no CUDA GPU answered"}},
		})
	})
	for _, verb := range []string{"%d", "%x", "%q"} {
		assert.Less(t, len(fmt.Sprintf(verb, d)), fmtcheck.MaxBytes, "%s of the device", verb)
		assert.Less(t, len(fmt.Sprintf(verb, struct{ d *Device }{d})), fmtcheck.MaxBytes, "%s of a value holding the device", verb)
	}

	require.NoError(t, ev.Synchronize())
	require.NoError(t, ev.Close())
	require.NoError(t, s.Close())
	t.Run("closed", func(t *testing.T) {
		check(t, []value{
			{"stream", s, []string{"(closed)"}},
			{"event", ev, []string{"(closed)"}},
		})
	})
	require.NoError(t, d.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{
			{"device", d, []string{"cuda:0 (closed)"}},
			{"default stream", legacy, []string{"device closed"}},
		})
	})
}

// %+v of a device adds its ledger's totals to String, as sim's does; %v
// and %s are String.
func TestDeviceFormatPlusV(t *testing.T) {
	skipWithoutGPU(t)
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	n := int64(1000 + rand.IntN(100000))
	p, err := d.Malloc(n)
	require.NoError(t, err)
	defer d.Free(p)
	plus := fmt.Sprintf("%+v", d)
	assert.True(t, strings.HasPrefix(plus, d.String()+" {ledger: device memory "), plus)
	assert.Contains(t, plus, "allocations 1, frees 0", plus)
	assert.Equal(t, d.String(), fmt.Sprintf("%v", d))
	assert.Equal(t, d.String(), fmt.Sprintf("%s", d))
	assert.Equal(t, d.GoString(), fmt.Sprintf("%#v", d))
}

package sim_test

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// waitTime is how long a call must stay unreturned to count as waiting for
// a paused stream.
const waitTime = 100 * time.Millisecond

// A stream's copies with pageable memory behave as on a GPU: into pageable
// memory the call returns once the copy is complete, from pageable memory
// it waits for the stream's earlier work first and stages the bytes, while
// page-locked memory's copies are queued at once.
func TestPageableStreamCopiesWait(t *testing.T) {
	const n = 4096
	for _, tc := range []struct {
		name     string
		pageable bool
		toDevice bool
		waits    bool
	}{
		{"DtoHAsync into pageable memory returns complete", true, false, true},
		{"HtoDAsync from pageable memory waits for the stream", true, true, true},
		{"DtoHAsync into page-locked memory is queued", false, false, false},
		{"HtoDAsync from page-locked memory is queued", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := sim.New(sim.Config{Memory: 1 << 20})
			require.NoError(t, err)
			defer dev.Close()
			want := testdev.RandomBytes(n)
			d, err := dev.Malloc(n)
			require.NoError(t, err)
			host := make([]byte, n)
			if !tc.pageable {
				h, err := dev.HostAlloc(n, 0)
				require.NoError(t, err)
				defer dev.HostFree(h)
				host = h.Bytes
			}
			if tc.toDevice {
				copy(host, want)
			} else {
				require.NoError(t, dev.CopyHtoD(d, want))
			}
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer s.Close()
			resume, err := sim.Pause(s)
			require.NoError(t, err)
			defer resume()
			done := make(chan error, 1)
			go func() {
				if tc.toDevice {
					done <- s.CopyHtoDAsync(d, host)
				} else {
					done <- s.CopyDtoHAsync(host, d)
				}
			}()
			select {
			case err := <-done:
				require.NoError(t, err)
				assert.False(t, tc.waits, "returned while the stream's earlier work was held")
			case <-time.After(waitTime):
				assert.True(t, tc.waits, "waited for the held stream")
				resume()
				require.NoError(t, <-done)
			}
			if tc.toDevice && tc.pageable {
				copy(host, testdev.RandomBytes(n)) // staged at the call: later changes are not copied
			}
			resume()
			require.NoError(t, s.Synchronize())
			if tc.toDevice {
				got := make([]byte, n)
				require.NoError(t, dev.CopyDtoH(got, d))
				assert.Equal(t, want, got)
			} else {
				assert.Equal(t, want, append([]byte(nil), host...))
			}
			require.NoError(t, dev.Free(d))
		})
	}
}

// Host memory partly page-locked is refused by every copy entry point with
// a *driver.PartlyLockedError (a case of driver.ErrInvalidValue, as the
// driver answers), and nothing is copied.
func TestPartlyPageLockedCopiesAreRefused(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	defer dev.Close()
	page := os.Getpagesize()
	mem := testdev.RandomBytes(4 * page)
	h, err := dev.Register(mem[page:2*page], 0)
	require.NoError(t, err)
	defer dev.Unregister(h)
	const n = 1024
	d, err := dev.Malloc(2 * n)
	require.NoError(t, err)
	defer dev.Free(d)
	require.NoError(t, dev.CopyHtoD(d, testdev.RandomBytes(2*n)))
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, part := range []struct {
		name string
		b    []byte
	}{
		{"starting before the registration", mem[page-n/2 : page+n/2]},
		{"ending after it", mem[2*page-n/2 : 2*page+n/2]},
	} {
		b := part.b[:n]
		before := append([]byte(nil), b...)
		rows := devarray.Memcpy2D{Width: n / 2, Height: 2, SrcPitch: n / 2, DstPitch: n / 2}
		up, down := rows, rows
		up.Src, up.Dst = devarray.Place{Host: b}, devarray.Place{Dev: d}
		down.Src, down.Dst = devarray.Place{Dev: d}, devarray.Place{Host: b}
		for _, call := range []struct {
			name string
			run  func() error
		}{
			{"CopyHtoD", func() error { return dev.CopyHtoD(d, b) }},
			{"CopyDtoH", func() error { return dev.CopyDtoH(b, d) }},
			{"CopyHtoDAsync", func() error { return s.CopyHtoDAsync(d, b) }},
			{"CopyDtoHAsync", func() error { return s.CopyDtoHAsync(b, d) }},
			{"Memcpy2D to the device", func() error { return dev.Memcpy2D(up) }},
			{"Memcpy2D to the host", func() error { return dev.Memcpy2D(down) }},
			{"Memcpy2DAsync to the device", func() error { return s.Memcpy2DAsync(up) }},
			{"Memcpy2DAsync to the host", func() error { return s.Memcpy2DAsync(down) }},
		} {
			err := call.run()
			assert.ErrorIs(t, err, driver.ErrInvalidValue, "%s, %s", call.name, part.name)
			var pe *driver.PartlyLockedError
			if assert.ErrorAs(t, err, &pe, "%s, %s", call.name, part.name) {
				assert.Equal(t, uintptr(unsafe.Pointer(&mem[page])), pe.LockedAddr, "%s, %s: names the registration", call.name, part.name)
				assert.Equal(t, int64(page), pe.LockedN, "%s, %s", call.name, part.name)
				assert.True(t, pe.Registered, "%s, %s", call.name, part.name)
			}
		}
		require.NoError(t, s.Synchronize())
		assert.Equal(t, before, b, "%s: nothing was written", part.name)
	}
}

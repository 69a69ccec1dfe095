package sim_test

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/sim"
)

// A stream waits for an event of another sim device ("h_event may be from
// a different context or device than h_stream", cuStreamWaitEvent), and
// CopyPeerAsync queued on a stream of either device waits for that
// stream's earlier work only, then moves the bytes.
func TestCrossDeviceWaitAndCopyPeerAsync(t *testing.T) {
	for _, tc := range []struct {
		name   string
		onDest bool // queue the copy on a stream of the destination device
	}{
		{"on the source's stream", false},
		{"on the destination's stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := sim.New(sim.Config{Ordinal: 0, Memory: 1 << 20})
			require.NoError(t, err)
			defer a.Close()
			b, err := sim.New(sim.Config{Ordinal: 1, Memory: 1 << 20})
			require.NoError(t, err)
			defer b.Close()
			const n = 4096 + 7
			src, err := a.Malloc(n)
			require.NoError(t, err)
			dst, err := b.Malloc(n)
			require.NoError(t, err)
			want := make([]byte, n)
			_, _ = rand.Read(want)
			require.NoError(t, a.CopyHtoD(src, want))

			held, err := a.NewStream()
			require.NoError(t, err)
			defer held.Close()
			resume, err := sim.Pause(held)
			require.NoError(t, err)
			defer resume()
			ev, err := a.NewEvent()
			require.NoError(t, err)
			defer ev.Close()
			require.NoError(t, held.Record(ev))

			on := a
			if tc.onDest {
				on = b
			}
			s, err := on.NewStream()
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.WaitEvent(ev), "a wait for another device's event")
			require.NoError(t, sim.CopyPeerAsync(s, dst, b, src, a, n))
			done, err := on.NewEvent()
			require.NoError(t, err)
			defer done.Close()
			require.NoError(t, s.Record(done))
			time.Sleep(20 * time.Millisecond)
			finished, err := done.Query()
			require.NoError(t, err)
			assert.False(t, finished, "the copy waits for the other device's event")
			resume()
			require.NoError(t, s.Synchronize())
			got := make([]byte, n)
			require.NoError(t, b.CopyDtoH(got, dst))
			assert.Equal(t, want, got, "the bytes arrived")
		})
	}
}

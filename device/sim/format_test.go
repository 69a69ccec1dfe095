package sim_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
)

// The default sim device holds 4 GiB of memory in a byte slice. It, its
// streams and its events print in a line, with every verb a user reaches
// for, open and closed; so does a value that holds the device in a field
// its String cannot reach (fmt then walks the fields itself).
func TestFormatBounded(t *testing.T) {
	dev, err := sim.New(sim.Config{})
	require.NoError(t, err)
	defer dev.Close()
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory)
	tuned, err := sim.New(sim.Config{Ordinal: 3, Memory: 64 << 20, Latency: time.Millisecond, CheckStreams: true, NoMapHost: true,
		Link: &sim.Link{PinnedGBps: 25, PageableGBps: 12}})
	require.NoError(t, err)
	defer tuned.Close()

	p, err := dev.Malloc(3 << 20)
	require.NoError(t, err)
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(rand.Uint32())
	}
	require.NoError(t, dev.CopyHtoD(p, src))
	s, err := dev.NewStream()
	require.NoError(t, err)
	nb, err := dev.NewNonBlockingStream()
	require.NoError(t, err)
	legacy, err := dev.ExternalStream(driver.LegacyDefaultStream)
	require.NoError(t, err)
	perThread, err := tuned.ExternalStream(driver.PerThreadDefaultStream)
	require.NoError(t, err)
	resume, err := sim.Pause(s)
	require.NoError(t, err)
	pending, err := dev.NewEvent()
	require.NoError(t, err)
	require.NoError(t, s.Record(pending))
	done, err := dev.NewEvent()
	require.NoError(t, err)

	// A race the checker reports, for its error.
	s1, err := tuned.NewStream()
	require.NoError(t, err)
	s2, err := tuned.NewStream()
	require.NoError(t, err)
	q, err := tuned.Malloc(4096)
	require.NoError(t, err)
	require.NoError(t, s1.MemsetAsync(q, 1, 4096))
	raceErr := s2.MemsetAsync(q, 2, 4096)
	var race *sim.StreamRaceError
	require.ErrorAs(t, raceErr, &race)

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
			{"device", dev, []string{"sim:0 (4.00 GiB, 3.00 MiB in use"}},
			{"device with options", tuned, []string{"sim:3 (64.00 MiB, 4.00 KiB in use, latency 1ms, check=streams, maphost=false, link 25/12 GB/s)"}},
			{"zero device", &sim.Device{}, []string{"sim:0"}},
			{"nil device", (*sim.Device)(nil), []string{"sim.Device(nil)"}},
			{"stream", s, []string{"sim:0 stream 0x", "queued"}},
			{"non-blocking stream", nb, []string{"sim:0 stream 0x"}},
			{"default stream", legacy, []string{"sim:0 stream 0x1 (borrowed)"}},
			{"per-thread stream", perThread, []string{"sim:3 stream 0x", "per-thread default"}},
			{"pending event", pending, []string{"sim:0 event (pending)"}},
			{"event", done, []string{"sim:0 event (complete)"}},
			{"race", raceErr, []string{"race"}},
			{"race error", race, []string{"race"}},
			{"config", sim.Config{Link: &sim.Link{PinnedGBps: 1}}, nil},
			{"device in a field", struct{ dev *sim.Device }{dev}, nil},
			{"stream in a field", struct{ s driver.Stream }{s}, nil},
		})
	})
	// Verbs a String does not serve walk the fields: the memory is not among them.
	for _, verb := range []string{"%d", "%x", "%q"} {
		assert.Less(t, len(fmt.Sprintf(verb, dev)), fmtcheck.MaxBytes, "%s of the device", verb)
		assert.Less(t, len(fmt.Sprintf(verb, struct{ dev *sim.Device }{dev})), fmtcheck.MaxBytes, "%s of a value holding the device", verb)
	}

	resume()
	require.NoError(t, s.Synchronize())
	require.NoError(t, tuned.Synchronize())
	require.NoError(t, s.Close())
	require.NoError(t, done.Close())
	dev.FailFault(1) // the next operation faults
	assert.Error(t, dev.Memset(p, 0, 16))
	t.Run("closed", func(t *testing.T) {
		check(t, []value{
			{"faulted device", dev, []string{"faulted"}},
			{"stream", s, []string{"closed"}},
			{"event", done, []string{"(closed)"}},
		})
	})
	require.NoError(t, dev.Close())
	require.NoError(t, tuned.Close())
	t.Run("device closed", func(t *testing.T) {
		check(t, []value{
			{"device", dev, []string{"sim:0 (closed)"}},
			{"stream", nb, []string{"closed"}},
			{"default stream", legacy, []string{"closed"}},
			{"event", pending, []string{"sim:0 event"}},
		})
	})
}

package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// An event synchronize reports the first error of its stream's work
// between the record before it and its own, at every call, and the
// stream's Synchronize does not report that error again; an error the
// event took that was not the stream's first leaves the stream's first
// to its Synchronize. Each case queues copies, some failing on the
// stream (FailCopy), with an event recorded after each group.
func TestEventSynchronizeReportsItsStreamsErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail       []bool // per group of one copy and a record: whether its copy fails
		eventErrs  []bool // whether each group's event synchronize reports an error
		streamErrs bool   // whether the stream's Synchronize then reports one
	}{
		{"no failure", []bool{false, false}, []bool{false, false}, false},
		{"the first copy fails", []bool{true, false}, []bool{true, false}, false},
		{"the second copy fails", []bool{false, true}, []bool{false, true}, false},
		{"both fail, only the second event waited for", []bool{true, true}, []bool{true, true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := newDevice(t, sim.Config{Memory: 1 << 20})
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer s.Close()
			p, err := dev.Malloc(64)
			require.NoError(t, err)
			defer dev.Free(p)
			var evs []driver.Event
			for _, fail := range tc.fail {
				if fail {
					dev.FailCopy(1)
				}
				require.NoError(t, s.CopyDtoDAsync(p, p+32, 32), "queueing succeeds; a failure is the stream's")
				ev, err := dev.NewEvent()
				require.NoError(t, err)
				defer ev.Close()
				require.NoError(t, s.Record(ev))
				evs = append(evs, ev)
				for done := false; !done; { // the copy has run (the countdown is the device's), its error not yet collected
					done, err = ev.Query()
					require.NoError(t, err)
				}
			}
			last := len(evs) - 1
			for i, want := range tc.eventErrs {
				if tc.streamErrs && i != last {
					continue // this case waits for the last event only
				}
				for range 2 { // the same answer at every call
					if want {
						assert.ErrorIs(t, evs[i].Synchronize(), driver.ErrInjected, "event %d", i)
					} else {
						assert.NoError(t, evs[i].Synchronize(), "event %d", i)
					}
				}
			}
			if tc.streamErrs {
				assert.ErrorIs(t, s.Synchronize(), driver.ErrInjected, "the stream's first error, which no event synchronize reported")
			} else {
				assert.NoError(t, s.Synchronize(), "every error was reported by an event")
			}
			assert.NoError(t, s.Synchronize(), "reported once")
		})
	}
}

//go:build cuda

package conformance

import (
	"testing"
	"time"
)

// observeWithoutTheEventsContext: cuEventSynchronize, cuEventQuery and
// cuStreamSynchronize on a thread with no context current, and with another
// device's primary context current, of an event recorded (and a stream
// made) in device 0's. The CUDA C++ Programming Guide says the event calls
// "will succeed even if the input event is associated to a device that is
// different from the current device"; it says nothing of a thread with
// none current (the runtime always has one), nor of a stream synchronize:
// the emulated driver's answers there are its guesses, the strict ones.
// cuarray's event waits ask first with whatever context is current and
// again, with its own, on an error.
func observeWithoutTheEventsContext(t *testing.T, add func(name, got string)) {
	s, code := StreamCreate(0)
	ok(t, code, "cuStreamCreate")
	defer StreamDestroy(s)
	ev, code := EventCreate(0)
	ok(t, code, "cuEventCreate")
	defer EventDestroy(ev)
	ok(t, EventRecord(ev, s), "cuEventRecord")
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")

	others := []struct {
		name string
		ctx  uintptr
	}{{"no context current", 0}}
	if n, code := DeviceCount(); code == Success && n > 1 {
		ctx1, code := PrimaryRetain(1)
		ok(t, code, "cuDevicePrimaryCtxRetain(1)")
		defer PrimaryRelease(1)
		others = append(others, struct {
			name string
			ctx  uintptr
		}{"device 1's primary context current", ctx1})
	} else {
		add("cuEventSynchronize with device 1's primary context current", "not observed: one device")
		add("cuEventQuery with device 1's primary context current", "not observed: one device")
		add("cuStreamSynchronize with device 1's primary context current", "not observed: one device")
	}
	for _, o := range others {
		for _, c := range []struct {
			name string
			call func() int
		}{
			{"cuEventSynchronize", func() int { return EventSynchronize(ev) }},
			{"cuEventQuery", func() int { return EventQuery(ev) }},
			{"cuStreamSynchronize", func() int { return StreamSynchronize(s) }},
		} {
			select {
			case got := <-onThread(o.ctx, c.call):
				add(c.name+" with "+o.name, ErrorName(got))
			case <-time.After(returnTime):
				add(c.name+" with "+o.name, "blocked")
			}
		}
	}
}

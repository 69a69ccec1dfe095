package bench

import (
	"errors"
	"slices"
	"time"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// LatencyMaxBytes is the largest copy whose time the table also reports as
// latency, in µs (Result.LatencyMicros).
const LatencyMaxBytes = 64 << 10

// eventTimer times a copy between two events recorded on the copy's own
// stream before and after it: the device's time for the copy, without the
// cost of queueing it and waiting for it.
type eventTimer struct {
	s          driver.Stream
	start, end driver.Event
}

// newEventTimer returns a timer with its own stream and two events.
func newEventTimer(dev driver.Device) (*eventTimer, error) {
	s, err := dev.NewStream()
	if err != nil {
		return nil, err
	}
	t := &eventTimer{s: s}
	if t.start, err = dev.NewEvent(); err == nil {
		t.end, err = dev.NewEvent()
	}
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// copy makes one copy of src into dst on the timer's stream between the
// two events, and returns the time between them; ok is false when the
// device could not time the events, though the copy went well.
func (t *eventTimer) copy(c *transfer.Copier, dst, src transfer.Endpoint, opts ...transfer.Option) (event time.Duration, ok bool, err error) {
	return t.time(func(s driver.Stream) (func() error, error) {
		op, err := c.CopyAsync(s, dst, src, opts...)
		if err != nil {
			return nil, err
		}
		return op.Wait, nil
	})
}

// time queues work on the timer's stream between the two events (queue
// returns what waits for it) and returns the time between them; ok is
// false when the device could not time the events.
func (t *eventTimer) time(queue func(s driver.Stream) (wait func() error, err error)) (event time.Duration, ok bool, err error) {
	if err := t.s.Record(t.start); err != nil {
		return 0, false, err
	}
	wait, err := queue(t.s)
	if err != nil {
		return 0, false, errors.Join(err, t.s.Synchronize())
	}
	err = t.s.Record(t.end)
	err = errors.Join(err, wait())
	if err == nil {
		err = t.end.Synchronize()
	}
	if err != nil {
		return 0, false, errors.Join(err, t.s.Synchronize())
	}
	if event, err = t.end.Elapsed(t.start); err != nil {
		return 0, false, nil // events without timing: the wall-clock figure stands alone
	}
	return event, true, nil
}

// Close releases the stream and the events.
func (t *eventTimer) Close() error {
	if t == nil {
		return nil
	}
	var err error
	for _, e := range []driver.Event{t.start, t.end} {
		if e != nil {
			err = errors.Join(err, e.Close())
		}
	}
	return errors.Join(err, t.s.Close())
}

// median returns the median of times (the mean of the middle two for an
// even count).
func median(times []time.Duration) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return sorted[n/2]
}

// setEvent fills in res's event-timed median, GB/s and, for a small copy,
// latency, from the event times of its repeats (nil: not timed by events).
func (res *Result) setEvent(events []time.Duration) {
	if len(events) == 0 {
		return
	}
	med := median(events)
	res.EventMedianSeconds = med.Seconds()
	res.EventGBps = float64(res.Size) / max(med.Seconds(), 1e-9) / 1e9
	res.setLatency()
}

// setLatency fills in the latency of a copy of at most LatencyMaxBytes:
// the event-timed median where there is one, else the wall-clock one.
func (res *Result) setLatency() {
	if res.Size > LatencyMaxBytes {
		return
	}
	s := res.MedianSeconds
	if res.EventMedianSeconds > 0 {
		s = res.EventMedianSeconds
	}
	us := s * 1e6
	res.LatencyMicros = &us
}

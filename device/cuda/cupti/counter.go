package cupti

import (
	"errors"
	"fmt"
	"sync"
)

// backend is what a Counter needs of CUPTI; the cuda build's is libcupti, loaded at run time.
type backend interface {
	// start configures the counters of kinds, registers the buffer callbacks and enables
	// unified-memory counter records.
	start(kinds []CounterKind) error
	// flush has CUPTI deliver every buffer (a forced flush) and takes the unified-memory
	// records delivered since the last flush, as bytes, with the counts of records of other
	// kinds skipped and of records CUPTI dropped.
	flush() (raw []byte, other, dropped int64, err error)
	// stop disables unified-memory counter records.
	stop() error
}

// Library is libcupti, loaded. It stays loaded for the life of the process.
type Library struct {
	path string
	be   backend
}

// Path is the file Open loaded.
func (l *Library) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// KeptRecords is how many records a Counter keeps for Records; Totals count every one.
const KeptRecords = 4096

// Counter counts unified-memory migrations from Start to Stop.
type Counter struct {
	be    backend
	kinds []CounterKind

	mu      sync.Mutex
	totals  Totals
	kept    []Record
	stopped bool
}

// running guards the one Counter a process may run.
var running struct {
	sync.Mutex
	on bool
}

// Start starts counting. It asks CUPTI for AllKinds and, where CUPTI refuses some of them,
// for BasicKinds (Kinds says which it counts). It returns ErrBusy while another Counter of the
// process runs, and CUPTI's *Error where CUPTI refuses (matching ErrUnavailable where the
// result means it cannot count here).
func (l *Library) Start() (*Counter, error) {
	if l == nil || l.be == nil {
		return nil, fmt.Errorf("cupti: start: %w", ErrNil)
	}
	running.Lock()
	defer running.Unlock()
	if running.on {
		return nil, fmt.Errorf("cupti: start: %w", ErrBusy)
	}
	kinds := AllKinds
	err := l.be.start(kinds)
	var cerr *Error
	if errors.As(err, &cerr) && cerr.Result != ResultNotInitialized {
		kinds = BasicKinds
		err = l.be.start(kinds)
	}
	if err != nil {
		return nil, err
	}
	running.on = true
	return &Counter{be: l.be, kinds: append([]CounterKind(nil), kinds...)}, nil
}

// Kinds are the counter kinds this Counter counts.
func (c *Counter) Kinds() []CounterKind {
	if c == nil {
		return nil
	}
	return append([]CounterKind(nil), c.kinds...)
}

// Flush has CUPTI deliver the records it holds and returns the totals so far. Synchronize
// the work first: CUPTI delivers only completed records. After Stop it returns ErrStopped.
func (c *Counter) Flush() (Totals, error) {
	if c == nil {
		return Totals{}, fmt.Errorf("cupti: %w", ErrNil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.totals, fmt.Errorf("cupti: flush: %w", ErrStopped)
	}
	return c.totals, c.take()
}

// take flushes and counts what was delivered; c.mu is held. Where the bytes hold a bad
// record it counts none of them.
func (c *Counter) take() error {
	raw, other, dropped, err := c.be.flush()
	if err != nil {
		return err
	}
	recs, err := ParseRecords(raw)
	if err != nil {
		return err
	}
	next := c.totals
	for _, r := range recs {
		if err := next.Add(r); err != nil {
			return err
		}
	}
	next.OtherRecords += other
	next.Dropped += dropped
	c.totals = next
	if room := KeptRecords - len(c.kept); room > 0 {
		c.kept = append(c.kept, recs[:min(room, len(recs))]...)
	}
	return nil
}

// Stop delivers the last records, stops counting and returns the totals. A second Stop
// returns the same totals. The Counter is stopped, and another may start, even when the
// last flush fails.
func (c *Counter) Stop() (Totals, error) {
	if c == nil {
		return Totals{}, fmt.Errorf("cupti: %w", ErrNil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.totals, nil
	}
	c.stopped = true
	ferr := c.take()
	serr := c.be.stop()
	// records finished between the flush and the disable
	if ferr == nil && serr == nil {
		ferr = c.take()
	}
	running.Lock()
	running.on = false
	running.Unlock()
	return c.totals, errors.Join(ferr, serr)
}

// Records are the first KeptRecords records counted, in the order CUPTI delivered them.
func (c *Counter) Records() []Record {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.kept...)
}

package pool

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// FromMemPool makes the pool take its segments from the stream-ordered
// pool mp of its device (Device.DefaultMemPool or NewMemPool) rather than
// from the device's own allocator: each segment is a MallocFromPoolAsync
// and goes back with a FreeAsync (cuMemAllocFromPoolAsync and
// cuMemFreeAsync on CUDA). The ledger counts the segments under
// accounting.StreamOrdered, and mp's reserved and used bytes in its pool
// figures; the pool's cached bytes are counted under StreamOrdered too.
//
// A segment for a block wanted on a stream is allocated on that stream,
// which uses it at once; the rest of the segment waits for an event
// recorded after the allocation before another stream may take it, as a
// block freed on a stream does. A segment for the default stream (Alloc,
// or AllocAsync with a nil stream) is allocated on a stream of the pool's
// own, and the pool waits for that stream before it hands the block out,
// as cuMemAlloc returns memory ready for every stream. Segments go back on
// the pool's own stream once no work is left on their blocks. Release
// closes that stream; the pool makes a new one when it grows again.
//
// The two caches stack: the caching pool serves most requests from its
// own segments without a driver call, and mp keeps what the caching pool
// gives back up to its release threshold, for the caching pool's next
// segment or for other users of mp.
func FromMemPool(mp driver.MemPool) Option {
	return func(p *Pool) { p.src = &memPoolSource{dev: p.dev, mp: mp} }
}

// memPoolSource takes segments from a stream-ordered pool.
type memPoolSource struct {
	dev driver.Device
	mp  driver.MemPool
	own driver.Stream // for default-stream segments and for frees; made at first use
}

func (m *memPoolSource) kind() accounting.Kind { return accounting.StreamOrdered }

// stream returns the source's own stream, making it at first use.
func (m *memPoolSource) stream() (driver.Stream, error) {
	if m.mp == nil {
		return nil, fmt.Errorf("no stream-ordered pool given: %w", driver.ErrInvalidValue)
	}
	if m.own == nil {
		s, err := m.dev.NewStream()
		if err != nil {
			return nil, err
		}
		m.own = s
	}
	return m.own, nil
}

func (m *memPoolSource) malloc(n int64, s driver.Stream) (devarray.Ptr, driver.Stream, error) {
	if m.mp == nil {
		return 0, nil, fmt.Errorf("no stream-ordered pool given: %w", driver.ErrInvalidValue)
	}
	if s != nil {
		ptr, err := s.MallocFromPoolAsync(n, m.mp)
		return ptr, s, err
	}
	own, err := m.stream()
	if err != nil {
		return 0, nil, err
	}
	ptr, err := own.MallocFromPoolAsync(n, m.mp)
	if err != nil {
		return 0, nil, err
	}
	// The allocation may wait on its stream for another stream's free
	// (the pool's allow-internal-dependencies reuse): ready for every
	// stream only once the stream has passed it.
	if err := own.Synchronize(); err != nil {
		return 0, nil, errors.Join(err, own.FreeAsync(ptr))
	}
	return ptr, nil, nil
}

func (m *memPoolSource) free(ptr devarray.Ptr) error {
	if c, ok := m.dev.(interface{ Closed() bool }); ok && c.Closed() {
		// The device's Close freed its pools' memory: nothing is left to
		// give back (as the device's own Free says after a Close).
		return fmt.Errorf("free %v: %w", ptr, driver.ErrClosed)
	}
	own, err := m.stream()
	if err != nil {
		return err
	}
	return own.FreeAsync(ptr)
}

// reclaim waits for the frees queued on the source's stream and trims mp
// to nothing it holds unused: memory the caching pool gave back, kept by
// mp up to its release threshold, becomes the device's again.
func (m *memPoolSource) reclaim() error {
	if m.mp == nil || m.own == nil {
		return nil
	}
	if err := m.own.Synchronize(); err != nil {
		return err
	}
	return m.mp.TrimTo(0)
}

func (m *memPoolSource) close() error {
	if m.own == nil {
		return nil
	}
	err := m.own.Close()
	m.own = nil
	return err
}

package pool

import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Option chooses something about a Pool that New makes.
type Option func(*Pool)

// segmentSource is where a pool's segments come from and go back to: the
// device's own allocator (cuMemAlloc and cuMemFree), or a stream-ordered
// pool (FromMemPool). Its methods are called with the pool's lock held.
type segmentSource interface {
	// kind is the ledger kind the segments are counted under.
	kind() accounting.Kind
	// malloc allocates a segment of n bytes for a block wanted on stream s
	// (nil: the default stream). on is nil when the segment is ready for
	// every stream and the host; else it is the stream the allocation was
	// queued on, which may use the segment at once, where other streams
	// may only after an event recorded on on after the allocation.
	malloc(n int64, s driver.Stream) (ptr devarray.Ptr, on driver.Stream, err error)
	// free gives back a segment none of whose blocks has work left on any
	// stream.
	free(ptr devarray.Ptr) error
	// reclaim makes memory the source holds but the pool gave back
	// allocatable by the device again, after the device ran out.
	reclaim() error
	// close releases what the source made for itself (Pool.Release); it
	// makes it again when used after.
	close() error
}

// deviceSource takes segments from the device's own allocator.
type deviceSource struct{ dev driver.Device }

func (d deviceSource) kind() accounting.Kind { return accounting.Device }

func (d deviceSource) malloc(n int64, _ driver.Stream) (devarray.Ptr, driver.Stream, error) {
	ptr, err := d.dev.Malloc(n)
	return ptr, nil, err
}

func (d deviceSource) free(ptr devarray.Ptr) error { return d.dev.Free(ptr) }

func (d deviceSource) reclaim() error { return nil } // the device's Free gave it back

func (d deviceSource) close() error { return nil }

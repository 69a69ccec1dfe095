package transfer

import (
	"github.com/cuarray/cuarray/devarray"
)

// hostLayout copies between host memory in any layout and ranges of its
// packed C-order bytes, for the staged path's chunks and host-to-host
// copies, through devarray.HostStrided's specialised loops.
type hostLayout struct {
	h *devarray.HostStrided
}

// strided returns the host endpoint's elements as a devarray.HostStrided.
func (e Endpoint) strided() (*devarray.HostStrided, error) {
	return devarray.NewHostStrided(e.mem, e.zero(), e.arr.Shape(), e.arr.Strides(), e.arr.DType().Size())
}

// newHostLayout describes a host endpoint, whose elements Wrap has
// checked to lie inside its memory.
func newHostLayout(e Endpoint) hostLayout {
	h, err := e.strided()
	if err != nil {
		// Not reached: the endpoint's view was bounds-checked when it was
		// made. An empty layout moves nothing rather than something wrong.
		h, _ = devarray.NewHostStrided(nil, 0, []int{0}, nil, 1)
	}
	return hostLayout{h: h}
}

// gather copies packed bytes [lo, lo+len(dst)) of the elements into dst,
// on this goroutine: the staged path runs several at once. Callers pass
// ranges inside the packed bytes (a staged copy's chunks); a range
// outside them copies nothing.
func (l hostLayout) gather(dst []byte, lo int64) { _ = l.h.Gather(dst, lo) }

// scatter copies src into packed bytes [lo, lo+len(src)) of the elements.
func (l hostLayout) scatter(src []byte, lo int64) { _ = l.h.Scatter(src, lo) }

// disjoint reports whether no two elements share memory, as far as
// devarray.HostStrided.Disjoint proves it: where they may, chunks of the
// packed bytes must be scattered one after another, in order.
func (l hostLayout) disjoint() bool { return l.h.Disjoint() }

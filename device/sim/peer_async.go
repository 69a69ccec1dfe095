package sim

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// CopyPeerAsync queues on stream s a copy of n bytes from src on device
// from to dst on device to, as cuMemcpyPeerAsync does: s is a stream of
// one of the two devices, the call returns at once, and the copy runs when
// s reaches it, after s's earlier work and nothing else; s's later work
// waits for it. The stream race checker of s's device sees the copy's
// access to that device's memory.
func CopyPeerAsync(s driver.Stream, dst devarray.Ptr, to *Device, src devarray.Ptr, from *Device, n int64) error {
	st, ok := simStream(s)
	if !ok || from == nil || to == nil || from == to || (st.d != from && st.d != to) || n < 0 {
		return fmt.Errorf("sim: copy peer async: want a stream of one of two different sim devices and n ≥ 0: %w", driver.ErrInvalidValue)
	}
	ranges := []driver.Range{{Ptr: src, N: n}}
	if st.d == to {
		ranges = []driver.Range{{Ptr: dst, N: n}}
	}
	return st.d.launch(s, ranges, func() error { return from.copyPeer(dst, to, src, n) })
}

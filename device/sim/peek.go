package sim

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Peek returns a copy of n bytes of device memory at p as they are now,
// without waiting for any stream: what another process, or a stream that
// waits for no other, would read. Tests use it to check that a
// synchronous call's result is there the moment the call returns. It is
// not device work: it counts no fault position, and still reads after a
// fault (Device.FailFault).
func (d *Device) Peek(p devarray.Ptr, n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("sim: peek %d bytes: %w", n, driver.ErrInvalidValue)
	}
	var out []byte
	err := d.inspect([]driver.Range{{Ptr: p, N: n}}, func(mem [][]byte) error {
		out = append([]byte(nil), mem[0]...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: peek: %w", err)
	}
	return out, nil
}

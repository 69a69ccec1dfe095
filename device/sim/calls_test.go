package sim_test

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// deviceCall is one call of a device, its streams or events, by name.
type deviceCall struct {
	name string
	call func() error
}

// everyCall lists a call of each kind a device takes (allocating, freeing,
// copying, launching, queuing) on device memory p and q, host bytes src,
// page-locked and registered memory, a stream and an event: what the
// fault and Close tests check each says the right error.
func everyCall(dev *sim.Device, p, q devarray.Ptr, src []byte, pinned, reg *driver.HostMem, s driver.Stream, ev driver.Event) []deviceCall {
	return []deviceCall{
		{"Malloc", func() error { _, err := dev.Malloc(256); return err }},
		{"Free", func() error { return dev.Free(p) }},
		{"CopyHtoD", func() error { return dev.CopyHtoD(p, src) }},
		{"CopyDtoH", func() error { return dev.CopyDtoH(make([]byte, 16), p) }},
		{"CopyDtoD", func() error { return dev.CopyDtoD(q, p, 16) }},
		{"Memset", func() error { return dev.Memset(p, 1, 16) }},
		{"Memcpy2D", func() error {
			return dev.Memcpy2D(devarray.Memcpy2D{Dst: devarray.Place{Dev: q}, Src: devarray.Place{Dev: p}, Width: 16, Height: 2, DstPitch: 32, SrcPitch: 32})
		}},
		{"Access", func() error {
			return dev.Access([]driver.Range{{Ptr: p, N: 16}}, func([][]byte) error { return nil })
		}},
		{"Launch", func() error {
			return dev.Launch(s, []driver.Range{{Ptr: p, N: 16}}, func([][]byte) error { return nil })
		}},
		{"MemInfo", func() error { _, _, err := dev.MemInfo(); return err }},
		{"HostAlloc", func() error { _, err := dev.HostAlloc(4096, 0); return err }},
		{"HostFree", func() error { return dev.HostFree(pinned) }},
		{"Register", func() error { _, err := dev.Register(testdev.RandomBytes(4096), 0); return err }},
		{"Unregister", func() error { return dev.Unregister(reg) }},
		{"NewStream", func() error { _, err := dev.NewStream(); return err }},
		{"NewEvent", func() error { _, err := dev.NewEvent(); return err }},
		{"Record", func() error { return s.Record(ev) }},
		{"WaitEvent", func() error { return s.WaitEvent(ev) }},
		{"CopyHtoDAsync", func() error { return s.CopyHtoDAsync(p, src) }},
		{"Stream.Synchronize", s.Synchronize},
	}
}

package kernels

import (
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// init registers the pack kernels with package devarray, whose copies of
// strided arrays (devarray.StridedCopy) pack on the device through them.
func init() { devarray.RegisterPacker(packerOf) }

// packerOf returns the pack kernels of a Backend's device: the device's
// shared Kernels on a GPU (loaded once), fresh ones on sim.
func packerOf(b devarray.Backend) (devarray.Packer, error) {
	var dev driver.Device
	switch d := b.(type) {
	case driver.Device:
		dev = d
	case interface{ Device() driver.Device }:
		dev = d.Device()
	default:
		return nil, fmt.Errorf("kernels: backend %T has no device to run pack kernels on: %w", b, devarray.ErrNoBackend)
	}
	k, err := shared(dev)
	if err != nil {
		return nil, err
	}
	return ledgerPacker{k}, nil
}

// ledgerPacker records each pack and unpack in the device's ledger, as a
// device-to-device kernel copy, as package transfer records its own.
type ledgerPacker struct{ k *Kernels }

func (p ledgerPacker) Pack(dst, src *devarray.DevArray) error {
	return p.record(src.NBytes(), func() error { return p.k.Pack(dst, src) })
}

func (p ledgerPacker) Unpack(dst, src *devarray.DevArray) error {
	return p.record(src.NBytes(), func() error { return p.k.Unpack(dst, src) })
}

func (p ledgerPacker) record(n int64, f func() error) error {
	start := time.Now()
	if err := f(); err != nil {
		return err
	}
	p.k.dev.Ledger().RecordCopy(accounting.DtoD, accounting.PathKernel, n, time.Since(start))
	return nil
}

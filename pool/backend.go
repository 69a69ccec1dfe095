package pool

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
)

// The Pool is a devarray.Backend: arrays made on it take their memory from
// the cache and give it back when freed. Copies and memsets go to the device.
var _ devarray.Backend = (*Pool)(nil)

// DeviceID returns the pool's device (the zero DeviceID for a Pool without one).
func (p *Pool) DeviceID() devarray.DeviceID {
	if p.valid() != nil {
		return devarray.DeviceID{}
	}
	return p.dev.DeviceID()
}

// Malloc is Alloc, for devarray.Backend.
func (p *Pool) Malloc(n int64) (devarray.Ptr, error) { return p.Alloc(n) }

// Memset sets n bytes at dst on the device.
func (p *Pool) Memset(dst devarray.Ptr, value byte, n int64) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: memset: %w", err)
	}
	return p.dev.Memset(dst, value, n)
}

// CopyHtoD copies host bytes to the device.
func (p *Pool) CopyHtoD(dst devarray.Ptr, src []byte) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: copy HtoD: %w", err)
	}
	return p.dev.CopyHtoD(dst, src)
}

// CopyDtoH copies device bytes to the host.
func (p *Pool) CopyDtoH(dst []byte, src devarray.Ptr) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: copy DtoH: %w", err)
	}
	return p.dev.CopyDtoH(dst, src)
}

// Memcpy2D makes a pitched copy on the device.
func (p *Pool) Memcpy2D(c devarray.Memcpy2D) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: copy 2D: %w", err)
	}
	return p.dev.Memcpy2D(c)
}

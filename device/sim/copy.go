package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// copyFunc moves the bytes of one copy and says what it was, for the ledger.
type copyFunc func() (accounting.Direction, accounting.Path, int64, error)

// runCopy runs one copy with the memory read-locked, and records it.
func (d *Device) runCopy(op string, f copyFunc) error {
	if injected(&d.copyCountdown) {
		return fmt.Errorf("sim: %s: %w", op, driver.ErrInjected)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	start := time.Now()
	dir, path, n, err := f()
	if err != nil {
		return fmt.Errorf("sim: %s: %w", op, err)
	}
	d.ledger.RecordCopy(dir, path, n, time.Since(start))
	return nil
}

func (d *Device) htod(dst devarray.Ptr, src []byte) copyFunc {
	return func() (accounting.Direction, accounting.Path, int64, error) {
		b, err := d.devMem(dst, int64(len(src)))
		if err != nil {
			return 0, 0, 0, err
		}
		copy(b, src)
		return accounting.HtoD, d.hostPath(src), int64(len(src)), nil
	}
}

func (d *Device) dtoh(dst []byte, src devarray.Ptr) copyFunc {
	return func() (accounting.Direction, accounting.Path, int64, error) {
		b, err := d.devMem(src, int64(len(dst)))
		if err != nil {
			return 0, 0, 0, err
		}
		copy(dst, b)
		return accounting.DtoH, d.hostPath(dst), int64(len(dst)), nil
	}
}

func (d *Device) dtod(dst, src devarray.Ptr, n int64) copyFunc {
	return func() (accounting.Direction, accounting.Path, int64, error) {
		s, err := d.devMem(src, n)
		if err != nil {
			return 0, 0, 0, err
		}
		t, err := d.devMem(dst, n)
		if err != nil {
			return 0, 0, 0, err
		}
		copy(t, s)
		return accounting.DtoD, accounting.PathD2D, n, nil
	}
}

// CopyHtoD copies len(src) bytes from host memory to the device.
func (d *Device) CopyHtoD(dst devarray.Ptr, src []byte) error {
	return d.runCopy("copy HtoD", d.htod(dst, src))
}

// CopyDtoH copies len(dst) bytes from the device to host memory.
func (d *Device) CopyDtoH(dst []byte, src devarray.Ptr) error {
	return d.runCopy("copy DtoH", d.dtoh(dst, src))
}

// CopyDtoD copies n bytes within the device.
func (d *Device) CopyDtoD(dst, src devarray.Ptr, n int64) error {
	return d.runCopy("copy DtoD", d.dtod(dst, src, n))
}

// Memcpy2D copies p.Height rows of p.Width bytes between pitched regions of
// host or device memory, as cuMemcpy2D does.
func (d *Device) Memcpy2D(p devarray.Memcpy2D) error {
	return d.runCopy("copy 2D", d.memcpy2D(p))
}

func (d *Device) memcpy2D(p devarray.Memcpy2D) copyFunc {
	return func() (accounting.Direction, accounting.Path, int64, error) {
		if p.Width < 0 || p.Height < 0 || p.SrcPitch < p.Width || p.DstPitch < p.Width {
			return 0, 0, 0, fmt.Errorf("width %d, height %d, pitches %d and %d: pitches must be at least the width: %w",
				p.Width, p.Height, p.SrcPitch, p.DstPitch, driver.ErrInvalidValue)
		}
		src, err := d.region(p.Src, p.SrcPitch, p.Width, p.Height)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("source: %w", err)
		}
		dst, err := d.region(p.Dst, p.DstPitch, p.Width, p.Height)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("destination: %w", err)
		}
		for i := int64(0); i < p.Height; i++ {
			copy(dst[i*p.DstPitch:i*p.DstPitch+p.Width], src[i*p.SrcPitch:i*p.SrcPitch+p.Width])
		}
		dir, path := accounting.DtoD, accounting.PathD2D
		switch {
		case p.Src.OnHost() && p.Dst.OnHost():
			dir, path = accounting.HtoH, accounting.PathDirect
		case p.Src.OnHost():
			dir, path = accounting.HtoD, d.hostPath(p.Src.Host)
		case p.Dst.OnHost():
			dir, path = accounting.DtoH, d.hostPath(p.Dst.Host)
		}
		return dir, path, p.Width * p.Height, nil
	}
}

// region returns the bytes a pitched copy touches on one side.
func (d *Device) region(pl devarray.Place, pitch, width, height int64) ([]byte, error) {
	var n int64
	if height > 0 {
		if height > 1 && pitch > (math.MaxInt64-width)/(height-1) {
			return nil, fmt.Errorf("pitch %d × %d rows: %w", pitch, height, driver.ErrInvalidValue)
		}
		n = (height-1)*pitch + width
	}
	if pl.OnHost() {
		if n > int64(len(pl.Host)) {
			return nil, fmt.Errorf("host buffer of %d bytes, copy needs %d: %w", len(pl.Host), n, driver.ErrInvalidValue)
		}
		return pl.Host[:n], nil
	}
	return d.devMem(pl.Dev, n)
}

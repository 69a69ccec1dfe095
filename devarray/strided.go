package devarray

import (
	"errors"
	"fmt"
	"slices"
)

// maxPitch is the largest row pitch of a pitched copy: CUDA's
// CU_DEVICE_ATTRIBUTE_MAX_PITCH, driver.MaxPitch.
const maxPitch = 1<<31 - 1

// A GPU's copy engines move a pitched copy row by row, and many rows of
// a few bytes (a column of a big matrix) crawl: a strided copy moves a
// layout with a pitched driver copy when its rows are at least
// MinPitchedWidth bytes wide or there are at most MaxNarrowRows of them,
// else a kernel packs it on the device and one contiguous copy crosses
// the link (the pack costs a temporary allocation and a launch, which a
// few narrow rows do not repay). Both values are judgements, not yet
// measured on a GPU.
const (
	MinPitchedWidth = 256
	MaxNarrowRows   = 1024
)

// Pitched is one pitched copy between two layouts of the same elements:
// Depth slices of Height rows of Width bytes, row y of slice z at
// z*Pitch*SliceHeight + y*Pitch bytes from element 0 on each side (A and
// B). Depth and Height are 1 for a plain contiguous copy.
type Pitched struct {
	Width, Height, Depth     int64
	PitchA, SliceHeightA     int64
	PitchB, SliceHeightB     int64
	ContiguousA, ContiguousB bool
}

// PitchedPair returns the single pitched copy (1-D, 2-D or 3-D) that moves
// the elements of shape between layout a and layout b (byte strides, nil
// meaning C-contiguous), if there is one: after dropping axes of length 1
// and merging axes contiguous on both sides, at most three axes remain,
// the innermost contiguous on both sides (or one element wide), every
// stride positive, the row pitches at least the width and at most the
// driver's maximum, and each slice stride a multiple of its row pitch of
// at least the height. A layout with no elements has none.
func PitchedPair(shape []int, a, b []int64, itemsize int64) (Pitched, bool) {
	la, err := newLayout(shape, a, itemsize)
	if err != nil || la.size == 0 {
		return Pitched{}, false
	}
	lb, err := newLayout(shape, b, itemsize)
	if err != nil {
		return Pitched{}, false
	}
	p := Pitched{
		ContiguousA: isCContiguous(la.shape, la.strides, itemsize),
		ContiguousB: isCContiguous(lb.shape, lb.strides, itemsize),
	}
	// Drop length-1 axes and merge those contiguous on both sides.
	var sh []int
	var sa, sb []int64
	for i, n := range la.shape {
		if n == 1 {
			continue
		}
		if k := len(sh) - 1; k >= 0 && sa[k] == int64(n)*la.strides[i] && sb[k] == int64(n)*lb.strides[i] {
			sh[k] *= n
			sa[k], sb[k] = la.strides[i], lb.strides[i]
			continue
		}
		sh, sa, sb = append(sh, n), append(sa, la.strides[i]), append(sb, lb.strides[i])
	}
	p.Width, p.Height, p.Depth = itemsize, 1, 1
	if k := len(sh) - 1; k >= 0 && sa[k] == itemsize && sb[k] == itemsize {
		p.Width = int64(sh[k]) * itemsize
		sh, sa, sb = sh[:k], sa[:k], sb[:k]
	}
	p.PitchA, p.PitchB = p.Width, p.Width
	p.SliceHeightA, p.SliceHeightB = 1, 1
	switch len(sh) {
	case 0:
		return p, true
	case 1, 2:
	default:
		return Pitched{}, false
	}
	k := len(sh) - 1
	p.Height, p.PitchA, p.PitchB = int64(sh[k]), sa[k], sb[k]
	for _, pitch := range []int64{p.PitchA, p.PitchB} {
		if pitch < p.Width || pitch > maxPitch {
			return Pitched{}, false
		}
	}
	p.SliceHeightA, p.SliceHeightB = p.Height, p.Height
	if k == 1 {
		p.Depth = int64(sh[0])
		var ok bool
		if p.SliceHeightA, ok = sliceHeight(sa[0], p.PitchA, p.Height); !ok {
			return Pitched{}, false
		}
		if p.SliceHeightB, ok = sliceHeight(sb[0], p.PitchB, p.Height); !ok {
			return Pitched{}, false
		}
	}
	return p, true
}

// sliceHeight returns the rows of pitch a slice stride spans, when it is
// a whole number of at least height.
func sliceHeight(stride, pitch, height int64) (int64, bool) {
	if stride <= 0 || stride%pitch != 0 || stride/pitch < height {
		return 0, false
	}
	return stride / pitch, true
}

// StridedSteps are the operations a strided copy between device and host
// memory is made of. A Backend provides them synchronously for DevArray's
// copies; package transfer provides them on a stream for its own. Temp
// arrays are the steps' to free once the copy is done.
type StridedSteps interface {
	CopyHtoD(dst Ptr, src []byte) error
	CopyDtoH(dst []byte, src Ptr) error
	Memcpy2D(p Memcpy2D) error
	// Memcpy3D copies a box; ok is false when the steps have no 3-D copy.
	Memcpy3D(p Memcpy3D) (ok bool, err error)
	// Temp returns a C-contiguous device array of a's dtype and shape.
	Temp(a *DevArray) (*DevArray, error)
	// Pack gathers the elements of src (any strides) into the
	// C-contiguous dst on the device, in one kernel launch; Unpack
	// scatters them back.
	Pack(dst, src *DevArray) error
	Unpack(dst, src *DevArray) error
	// HostTemp returns n bytes of host memory for a strided host side to
	// be gathered into, or scattered from: pinned memory for a pinned side.
	HostTemp(n int64) ([]byte, error)
	// Scatter is called, for a copy to the host, to scatter the packed
	// bytes into a strided host side once the device has delivered them;
	// steps that queue their work wait for it first.
	Scatter(h *HostStrided, packed []byte) error
}

// StridedCopy moves the elements of the device array dev to or from host
// memory h (any layout, the same shape and dtype) in the fewest device
// operations: one pitched copy when PitchedPair finds one with rows of at
// least MinPitchedWidth bytes or at most MaxNarrowRows rows (a plain copy
// when both sides are contiguous);
// else at most one pack (or unpack) kernel on the device side, a gather
// (or scatter) in host memory on the host side, and one contiguous copy.
// Never a copy per row or per block. It is the one code path of every
// strided host-device copy: DevArray's CopyTo and CopyFrom, package
// transfer's direct and pinned paths, the C library.
func StridedCopy(steps StridedSteps, dev *DevArray, h *HostStrided, toDevice bool) error {
	item := dev.DType().Size()
	n := dev.NBytes()
	if n != h.Len() {
		return fmt.Errorf("devarray: strided copy: %d bytes on the device, %d on the host: %w", n, h.Len(), ErrHostSize)
	}
	if !slices.Equal(dev.Shape(), h.origShape) {
		return fmt.Errorf("devarray: strided copy: device shape %v, host shape %v: %w", dev.Shape(), h.origShape, ErrShape)
	}
	if n == 0 {
		return nil
	}
	p, ok := PitchedPair(dev.Shape(), dev.Strides(), h.strides(), item)
	if ok && (p.Width >= MinPitchedWidth || p.Height*p.Depth <= MaxNarrowRows) {
		done, err := pitchedCopy(steps, p, dev.Ptr(), h.at(), toDevice)
		if done || err != nil {
			return err
		}
	}
	// Device side packed on the device, host side in host memory.
	d := dev
	if !dev.IsContiguous() {
		t, err := steps.Temp(dev)
		if err != nil {
			return err
		}
		if !toDevice {
			if err := steps.Pack(t, dev); err != nil {
				return err
			}
		}
		d = t
	}
	packed := h.at()
	if !h.Contiguous() {
		var err error
		if packed, err = steps.HostTemp(n); err != nil {
			return err
		}
		if toDevice {
			if err := h.Gather(packed, 0); err != nil {
				return err
			}
		}
	}
	if toDevice {
		if err := steps.CopyHtoD(d.Ptr(), packed[:n]); err != nil {
			return err
		}
		if d != dev {
			return steps.Unpack(dev, d)
		}
		return nil
	}
	if err := steps.CopyDtoH(packed[:n], d.Ptr()); err != nil {
		return err
	}
	if !h.Contiguous() {
		return steps.Scatter(h, packed)
	}
	return nil
}

// pitchedCopy issues p as one driver copy between device memory at d and
// host memory host (side A is the device, B the host). done is false when
// the steps have no 3-D copy.
func pitchedCopy(steps StridedSteps, p Pitched, d Ptr, host []byte, toDevice bool) (done bool, err error) {
	dev, hst := Place{Dev: d}, Place{Host: host}
	switch {
	case p.Height*p.Depth == 1 && toDevice:
		return true, steps.CopyHtoD(d, host[:p.Width])
	case p.Height*p.Depth == 1:
		return true, steps.CopyDtoH(host[:p.Width], d)
	case p.Depth == 1:
		c := Memcpy2D{Width: p.Width, Height: p.Height}
		if toDevice {
			c.Dst, c.Src, c.DstPitch, c.SrcPitch = dev, hst, p.PitchA, p.PitchB
		} else {
			c.Dst, c.Src, c.DstPitch, c.SrcPitch = hst, dev, p.PitchB, p.PitchA
		}
		return true, steps.Memcpy2D(c)
	}
	c := Memcpy3D{Width: p.Width, Height: p.Height, Depth: p.Depth}
	if toDevice {
		c.Dst, c.Src, c.DstPitch, c.SrcPitch, c.DstHeight, c.SrcHeight = dev, hst, p.PitchA, p.PitchB, p.SliceHeightA, p.SliceHeightB
	} else {
		c.Dst, c.Src, c.DstPitch, c.SrcPitch, c.DstHeight, c.SrcHeight = hst, dev, p.PitchB, p.PitchA, p.SliceHeightB, p.SliceHeightA
	}
	return steps.Memcpy3D(c)
}

// strides returns the host side's byte strides as given, nil when contiguous.
func (h *HostStrided) strides() []int64 { return h.origStrides }

// at returns the host memory from element 0 on.
func (h *HostStrided) at() []byte { return h.mem[h.zero:] }

// backendSteps are a Backend's synchronous operations, for DevArray's own
// copies: pitched copies through the Backend, Memcpy3D where the Backend
// has it, pack kernels from the registered Packer.
type backendSteps struct {
	b     Backend
	temps []*DevArray
}

func (s *backendSteps) CopyHtoD(dst Ptr, src []byte) error { return s.b.CopyHtoD(dst, src) }
func (s *backendSteps) CopyDtoH(dst []byte, src Ptr) error { return s.b.CopyDtoH(dst, src) }
func (s *backendSteps) Memcpy2D(p Memcpy2D) error          { return s.b.Memcpy2D(p) }

func (s *backendSteps) Memcpy3D(p Memcpy3D) (bool, error) {
	b, ok := s.b.(interface{ Memcpy3D(Memcpy3D) error })
	if !ok {
		return false, nil
	}
	return true, b.Memcpy3D(p)
}

func (s *backendSteps) Temp(a *DevArray) (*DevArray, error) {
	if _, err := s.packer(); err != nil { // find out before allocating
		return nil, err
	}
	t, err := Empty(s.b, a.DType(), a.Shape()...)
	if err != nil {
		return nil, fmt.Errorf("devarray: temporary for a strided copy: %w", err)
	}
	s.temps = append(s.temps, t)
	return t, nil
}

func (s *backendSteps) packer() (Packer, error) {
	if p, ok := s.b.(Packer); ok {
		return p, nil
	}
	if f := packerFor.Load(); f != nil {
		return (*f)(s.b)
	}
	return nil, fmt.Errorf("devarray: a strided device array needs a pack kernel, and none is linked in (import package kernels or transfer): %w", ErrNoBackend)
}

func (s *backendSteps) Pack(dst, src *DevArray) error {
	p, err := s.packer()
	if err != nil {
		return err
	}
	return p.Pack(dst, src)
}

func (s *backendSteps) Unpack(dst, src *DevArray) error {
	p, err := s.packer()
	if err != nil {
		return err
	}
	return p.Unpack(dst, src)
}

func (s *backendSteps) HostTemp(n int64) ([]byte, error) { return make([]byte, n), nil }

func (s *backendSteps) Scatter(h *HostStrided, packed []byte) error { return h.Scatter(packed, 0) }

// free frees the temporaries; the synchronous steps have completed.
func (s *backendSteps) free() error {
	var errs []error
	for _, t := range s.temps {
		errs = append(errs, t.Free())
	}
	s.temps = nil
	return errors.Join(errs...)
}
